"""``rust-bertscore serve`` under hostile and heavy traffic, against a real server on loopback:
read timeouts, the connection cap, bounded and cancellable work, fairness between a large
request and small ones, strict JSON errors. (The timed figures: ``benches/serve_abuse.py``.)

Every wait is bounded (a deadline or a socket timeout); every server started here is stopped.
"""

from __future__ import annotations

import json
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from test_serve import CLIENT_TIMEOUT, HOST, WORDS, Server, _get, _post, _request, _start, _stop

from rust_bertscore import score


def _pairs(n: int, seed: int, words: int = 24) -> tuple[list[str], list[str]]:
    """``n`` pairs of distinct texts (nothing cached), ``words`` words each."""
    rng = np.random.default_rng(seed)
    texts = [" ".join(rng.choice(WORDS, words)) + f" {seed} {i}." for i in range(2 * n)]
    return texts[:n], texts[n:]


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    s = _start(
        *("--max-body-bytes", "262144", "--max-pairs", "600", "--read-timeout", "3"),
        *("--max-connections", "6", "--request-timeout", "120", "-b", "16", "-q"),
    )
    try:
        yield s
    finally:
        _stop(s)


def _until(check: Callable[[], bool], what: str, timeout: float = CLIENT_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"never happened: {what}")


def _health(server: Server) -> dict[str, Any]:
    return _get(server, "/health")[1]


def _raw(server: Server, data: bytes) -> socket.socket:
    sock = socket.create_connection((HOST, server.port), timeout=CLIENT_TIMEOUT)
    sock.sendall(data)
    return sock


def _read_all(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    sock.close()
    return b"".join(chunks)


def _head(length: int, extra: str = "") -> bytes:
    return (
        f"POST /score HTTP/1.1\r\nHost: {HOST}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {length}\r\n{extra}\r\n"
    ).encode()


def _status_and_json(raw: bytes) -> tuple[int, Any]:
    head, _, body = raw.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


@pytest.mark.parametrize(
    "sent",
    [b"", b"POST /sco", _head(100), _head(100) + b'{"cands": '],
    ids=["nothing", "half a request line", "headers without body", "half a body"],
)
def test_a_stalled_connection_gets_408_json_and_is_closed(server: Server, sent: bytes) -> None:
    status, answer = _status_and_json(_read_all(_raw(server, sent)))
    assert status == 408
    assert "--read-timeout" in answer["error"]


def test_past_max_connections_a_request_gets_503_json(server: Server) -> None:
    idle = [_raw(server, b"") for _ in range(6)]  # within the read timeout of 3 s
    try:
        body = json.dumps({"cands": ["a"], "refs": ["a"]}).encode()
        status, answer = _status_and_json(_read_all(_raw(server, _head(len(body)) + body)))
        assert status == 503 and "--max-connections" in answer["error"]
        assert _health(server)["status"] == "ok"  # probes get through past the cap
    finally:
        for sock in idle:
            sock.close()
    _until(lambda: _post(server, {"cands": ["a"], "refs": ["a"]})[0] == 200, "served again")


def test_an_oversized_body_gets_its_413_through_urllib(server: Server) -> None:
    # urllib sends "Connection: close" and the whole body before reading: the server must
    # read (and discard) it before answering, or urllib sees a reset.
    body = json.dumps({"cands": ["word " * 1_000_000], "refs": ["a"]}).encode()
    status, answer = _request(server, "/score", body, "POST")
    assert status == 413
    assert "262144" in answer["error"] and "--max-body-bytes" in answer["error"]


def test_too_many_pairs_get_413_naming_the_flag(server: Server) -> None:
    status, answer = _post(server, {"cands": ["a"] * 601, "refs": ["b"] * 601})
    assert status == 413
    assert "601 pairs" in answer["error"] and "600" in answer["error"]
    assert "--max-pairs" in answer["error"]
    status, answer = _post(server, {"cands": ["a"] * 301, "refs": [["b", "c"]] * 301})
    assert status == 413 and "602 pairs" in answer["error"]


STRICT = [
    (b"[" * 30_000 + b"]" * 30_000, 400, "nested too deeply"),
    (b'{"cands": [' + b"7" * 5000 + b'], "refs": ["a"]}', 400, "digits"),
    (b'{"cands": ["a"], "refs": ["b"], "cands": ["c"]}', 400, "duplicate key 'cands'"),
    ('{"cands": ["a"], "refs": ["b"]}'.encode("utf-16"), 400, "not UTF-8"),
    ('{"cands": ["a"], "refs": ["b"]}'.encode("utf-8-sig"), 400, "BOM"),
]


@pytest.mark.parametrize(("body", "status", "says"), STRICT)
def test_strict_json_errors(server: Server, body: bytes, status: int, says: str) -> None:
    got, answer = _post(server, body)
    assert got == status, answer
    assert says in answer["error"]


def test_unknown_content_encoding_gets_415(server: Server) -> None:
    body = json.dumps({"cands": ["a"], "refs": ["b"]}).encode()
    sock = _raw(server, _head(len(body), "Content-Encoding: gzip\r\n") + body)
    status, answer = _status_and_json(_read_all(sock))
    assert status == 415 and "gzip" in answer["error"]


def test_score_with_a_slash_is_a_404_json(server: Server) -> None:
    status, answer = _request(server, "/score/", b'{"cands": [], "refs": []}', "POST")
    assert status == 404 and "/score/" in answer["error"]


def test_health_and_ready_report_the_queue_and_limits(server: Server) -> None:
    assert _post(server, {"cands": ["a warm mat"], "refs": ["the mat"]})[0] == 200
    body = _health(server)
    assert body["queued"] == 0 and body["in_progress"] == 0
    assert body["cache_bytes"] > 0 and body["cache_texts"] >= 2
    limits = body["limits"]
    assert limits["max_pairs"] == 600 and limits["max_body_bytes"] == 262144
    assert limits["request_timeout_s"] == 120 and limits["read_timeout_s"] == 3
    assert limits["max_connections"] == 6 and limits["ready_queue"] == 64
    assert _get(server, "/ready") == (
        200,
        {"ready": True, "queued": 0, "in_progress": 0, "ready_queue": 64},
    )


def test_a_request_in_slices_scores_as_score(server: Server) -> None:
    cands, refs = _pairs(40, seed=1)  # 80 texts: 5 encoder batches of 16, scored in slices
    status, answer = _post(server, {"cands": cands, "refs": refs})
    assert status == 200
    want = score(cands, refs, batch_size=16)
    for i, name in enumerate("PRF"):
        np.testing.assert_array_equal(np.asarray(answer[name], np.float32), want[i])


def _send_large(server: Server, seed: int) -> socket.socket:
    cands, refs = _pairs(600, seed)
    body = json.dumps({"cands": cands, "refs": refs}).encode()
    sock = _raw(server, _head(len(body)) + body)
    _until(lambda: _health(server)["in_progress"] >= 1, "the large request began")
    return sock


def _unanswered(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        sock.recv(1)
    except BlockingIOError:
        return True
    finally:
        sock.setblocking(True)
    return False


def test_a_small_request_is_served_between_slices_of_a_large_one(server: Server) -> None:
    large = _send_large(server, seed=2)
    try:
        status, _ = _post(server, {"cands": ["the cat sat"], "refs": ["a cat sat"]})
        assert status == 200
        assert _unanswered(large)  # answered while the large request was still in the works
    finally:
        large.close()
        _until(lambda: _health(server)["in_progress"] == 0, "the abandoned request stopped")


def test_an_orphaned_request_stops_at_the_next_encoder_batch(server: Server) -> None:
    before = _health(server)
    _send_large(server, seed=3).close()
    _until(lambda: _health(server)["in_progress"] == 0, "the orphaned request stopped")
    after = _health(server)
    assert after["cancelled"] == before["cancelled"] + 1
    assert after["requests_scored"] == before["requests_scored"]  # never scored to the end
    assert _post(server, {"cands": ["a dog"], "refs": ["the dog"]})[0] == 200


def _post_in_thread(server: Server, payload: object) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(_post(server, payload)), daemon=True)
    thread.start()
    return thread, out


def test_request_timeout_answers_503_and_stops_the_work() -> None:
    s = _start("--request-timeout", "0.5", "--max-pairs", "600", "-b", "16", "-q")
    try:
        cands, refs = _pairs(600, seed=4)
        status, answer = _post(s, {"cands": cands, "refs": refs})
        assert status == 503 and "--request-timeout" in answer["error"]
        _until(lambda: _health(s)["in_progress"] == 0, "the timed-out request stopped")
        health = _health(s)
        # past its deadline, or refused as soon as the encoder's rate showed it could not finish
        assert health["timed_out"] + health["refused_too_slow"] == 1
        assert health["requests_scored"] == 0  # its work was stopped, not scored to the end
    finally:
        _stop(s)


@pytest.mark.skipif(
    sys.platform == "win32", reason="SIGTERM is TerminateProcess on Windows: no graceful stop"
)
def test_graceful_timeout_cut_answers_503_and_exits_3() -> None:
    s = _start("--graceful-timeout", "0.5", "--max-pairs", "600", "-b", "16", "-q")
    try:
        cands, refs = _pairs(600, seed=5)
        thread, out = _post_in_thread(s, {"cands": cands, "refs": refs})
        _until(lambda: _health(s)["in_progress"] >= 1, "the large request began")
        s.proc.send_signal(signal.SIGTERM)
        thread.join(CLIENT_TIMEOUT)
        status, answer = out[0]
        assert status == 503 and "--graceful-timeout" in answer["error"]
        assert s.proc.wait(CLIENT_TIMEOUT) == 3
    finally:
        _stop(s)
    assert not any("Traceback" in line for line in s.stderr)
