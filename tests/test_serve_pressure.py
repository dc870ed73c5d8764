"""``rust-bertscore serve`` under pressure, against a real server on loopback (127.0.0.1):
admission by queued tokens (503 + Retry-After at once, memory bounded), `/health` while a huge
text is scored, requests that cannot finish refused, every request received before SIGTERM
answered (pipelined too), HTTP framing errors as JSON, Content-Length with Transfer-Encoding
closing the connection, and the per-client connection cap. (Figures:
``benches/serve_abuse.py``.)

Every wait is bounded (a deadline or a socket timeout); every server started here is stopped.
"""

from __future__ import annotations

import json
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from test_serve import CLIENT_TIMEOUT, HOST, Server, _get, _post, _start, _stop
from test_serve_limits import _pairs

from rust_bertscore import score

MIB = 1024 * 1024


def _exchange(server: Server, data: bytes, timeout: float = CLIENT_TIMEOUT) -> list[Any]:
    """Send ``data`` on one connection and read every response until the server closes it:
    ``(status, headers, body)`` each, parsed by h11 as a client would."""
    sock = socket.create_connection((HOST, server.port), timeout=timeout)
    sock.sendall(data)
    return _responses(sock)


def _responses(sock: socket.socket) -> list[Any]:
    """Each response read off ``sock`` (``Content-Length`` framed, as the server sends them)
    until the server closes it, then ``("closed", True)`` (False: still open after 5 s)."""
    buf, out = b"", []
    while True:
        while b"\r\n\r\n" not in buf:
            chunk = sock.recv(65536)
            if not chunk:
                sock.close()
                out.append(("closed", True))
                return out
            buf += chunk
        head, buf = buf.split(b"\r\n\r\n", 1)
        lines = head.split(b"\r\n")
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers[b"content-length"])
        while len(buf) < length:
            chunk = sock.recv(65536)
            assert chunk, "closed mid-body"
            buf += chunk
        out.append((int(lines[0].split()[1]), headers, json.loads(buf[:length])))
        buf = buf[length:]
        if headers.get(b"connection") == b"close":
            sock.settimeout(5)
            try:
                closed = sock.recv(1) == b""
            except OSError:
                closed = False
            sock.close()
            out.append(("closed", closed))
            return out


def _post_bytes(payload: object) -> bytes:
    body = json.dumps(payload).encode()
    return (
        f"POST /score HTTP/1.1\r\nHost: {HOST}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body


def _rss(server: Server, field: str) -> float:
    for line in Path(f"/proc/{server.proc.pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field}")


SLOW_HOST_OK = ("--request-timeout", "600", "--graceful-timeout", "300")
"""No timeout cuts the request in hand, even on a loaded host."""
BODY = 128 * 1024
BUDGET = 3 * BODY
CACHE = 32 * MIB


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc for the RSS")
def test_hundreds_of_maximal_bodies_stay_within_the_memory_bound() -> None:
    s = _start(
        *("--max-body-bytes", str(BODY), "--max-queued-tokens", str(BUDGET)),
        *("--cache-bytes", str(CACHE), "--max-pairs", "2000", "-b", "16", "-q"),
    )
    try:
        assert _post(s, {"cands": ["warm up"], "refs": ["the warm up"]})[0] == 200
        idle = _rss(s, "VmRSS")
        cands, refs = _pairs(122, seed=11, words=100)  # just under 128 KiB of JSON
        body = _post_bytes({"cands": cands, "refs": refs})
        assert BODY - 8192 < len(body.split(b"\r\n\r\n", 1)[1]) <= BODY
        answers: list[Any] = []
        lock = threading.Lock()

        def client() -> None:
            got = _exchange(s, body)[0]
            with lock:
                answers.append(got)

        threads = [threading.Thread(target=client, daemon=True) for _ in range(200)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        health = _get(s, "/health")[1]
        peak = _rss(s, "VmHWM")
    finally:
        _stop(s)
    statuses = [a[0] for a in answers]
    assert len(answers) == 200 and statuses.count(200) >= 1 and set(statuses) <= {200, 503}
    flags = ("--max-queued-tokens", "--max-client-share")  # one address: its share, first
    busy = [a for a in answers if a[0] == 503 and any(f in a[2]["error"] for f in flags)]
    assert len(busy) >= 150  # most were refused at once, not queued
    assert all(a[1][b"retry-after"].isdigit() for a in busy)
    assert health["queued_tokens"] == 0 and 0 < health["queued_tokens_peak"] <= BUDGET
    # The bound of docs/serving.md: idle + cache + 2 x budget + 3 x max body + one round.
    bound = idle + CACHE + 2 * BUDGET + 3 * BODY + 128 * MIB
    assert peak <= bound, (peak / MIB, bound / MIB, idle / MIB)


def test_a_request_larger_than_the_whole_budget_gets_413() -> None:
    s = _start("--max-body-bytes", "65536", "--max-queued-tokens", "1000", "-q")
    try:
        cands, refs = _pairs(20, seed=12)
        answer = _exchange(s, _post_bytes({"cands": cands, "refs": refs}))
        status, headers, body = answer[0]
        assert status == 413 and "--max-queued-tokens" in body["error"]
        assert headers[b"connection"] == b"close"
        assert _get(s, "/health")[1]["limits"]["max_queued_tokens"] == 1000
    finally:
        _stop(s)


def test_health_answers_while_an_eight_million_character_pair_is_scored() -> None:
    s = _start("-q")
    try:
        text = "word " * (8 * MIB // 5 - 20)
        out: list[Any] = []
        thread = threading.Thread(
            target=lambda: out.append(_post(s, {"cands": [text], "refs": ["a word"]})),
            daemon=True,
        )
        thread.start()
        slowest = 0.0
        while thread.is_alive() and len(out) == 0:
            start = time.perf_counter()
            assert _get(s, "/health")[0] == 200
            slowest = max(slowest, time.perf_counter() - start)
            time.sleep(0.01)
        thread.join(CLIENT_TIMEOUT)
        assert out[0][0] == 200
        # A liveness probe of 2 s passes throughout (the p99 figure: benches/serve_abuse.py).
        assert slowest < 2.0
        want = score(["word " * 2000], ["a word"])[2][0]  # the same first 512 tokens
        assert np.float32(out[0][1]["F"][0]) == want
    finally:
        _stop(s)


def test_a_request_that_cannot_finish_in_time_is_refused_before_its_work() -> None:
    s = _start("--request-timeout", "10", "--max-pairs", "2000", "-b", "16", "-q")
    try:
        cands, refs = _pairs(30, seed=13, words=40)  # the encoder's rate is measured here
        assert _post(s, {"cands": cands, "refs": refs})[0] == 200
        cands, refs = _pairs(1500, seed=14, words=300)  # 900,000 token rows: far past 10 s
        start = time.perf_counter()
        status, answer = _post(s, {"cands": cands, "refs": refs})
        assert status == 503 and "cannot be scored within" in answer["error"]
        health = _get(s, "/health")[1]
        assert health["refused_too_slow"] == 1 and health["timed_out"] == 0
        assert time.perf_counter() - start < 30
    finally:
        _stop(s)


@pytest.mark.skipif(
    sys.platform == "win32", reason="SIGTERM is TerminateProcess on Windows: no graceful stop"
)
def test_sigterm_answers_every_pipelined_request_and_the_exit_code_says_so() -> None:
    s = _start(*SLOW_HOST_OK, "--max-pairs", "600", "-b", "16", "-q")
    try:
        cands, refs = _pairs(100, seed=15)
        first = _post_bytes({"cands": cands, "refs": refs})
        small = _post_bytes({"cands": ["a cat"], "refs": ["the cat"]})
        sock = socket.create_connection((HOST, s.port), timeout=CLIENT_TIMEOUT)
        sock.sendall(first + small + small)  # three requests, pipelined
        deadline = time.monotonic() + CLIENT_TIMEOUT
        while _get(s, "/health")[1]["in_progress"] < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        s.proc.send_signal(signal.SIGTERM)
        answers = _responses(sock)
        assert s.proc.wait(CLIENT_TIMEOUT) == 3  # requests were answered 503 unscored
    finally:
        _stop(s)
    assert [a[0] for a in answers[:-1]] == [200, 503, 503]
    np.testing.assert_array_equal(
        np.asarray(answers[0][2]["F"], np.float32), score(cands, refs, batch_size=16)[2]
    )
    assert all("not scored" in a[2]["error"] for a in answers[1:3])
    assert b"connection" not in answers[1][1] and answers[2][1][b"connection"] == b"close"
    assert answers[-1] == ("closed", True)


@pytest.mark.skipif(
    sys.platform == "win32", reason="SIGTERM is TerminateProcess on Windows: no graceful stop"
)
def test_sigterm_with_one_request_in_hand_answers_it_with_close_and_exits_0() -> None:
    s = _start(*SLOW_HOST_OK, "--max-pairs", "600", "-b", "16", "-q")
    try:
        cands, refs = _pairs(100, seed=16)
        sock = socket.create_connection((HOST, s.port), timeout=CLIENT_TIMEOUT)
        sock.sendall(_post_bytes({"cands": cands, "refs": refs}))
        deadline = time.monotonic() + CLIENT_TIMEOUT
        while _get(s, "/health")[1]["in_progress"] < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        s.proc.send_signal(signal.SIGTERM)
        answers = _responses(sock)
        assert s.proc.wait(CLIENT_TIMEOUT) == 0
    finally:
        _stop(s)
    assert answers[0][0] == 200 and answers[0][1][b"connection"] == b"close"
    assert answers[-1] == ("closed", True)


@pytest.fixture(scope="module")
def server() -> Any:
    s = _start("--max-body-bytes", "65536", "--max-connections-per-client", "3", "-q")
    try:
        yield s
    finally:
        _stop(s)


FRAMING = {
    "bad chunk size": b"POST /score HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"zz\r\n{}\r\n0\r\n\r\n",
    "two Content-Lengths": b"POST /score HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
    b"Content-Length: 7\r\n\r\n12345",
    "NUL in a header": b"POST /score HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n"
    b"Content-Length: 2\r\n\r\n{}",
    "no colon in a header": b"GET /health HTTP/1.1\r\nHost x\r\n\r\n",
}


@pytest.mark.parametrize("raw", FRAMING.values(), ids=FRAMING.keys())
def test_framing_errors_are_answered_as_json(server: Server, raw: bytes) -> None:
    answers = _exchange(server, raw)
    status, headers, body = answers[0]
    assert status == 400 and headers[b"content-type"] == b"application/json"
    assert "malformed HTTP request" in body["error"]
    assert answers[-1] == ("closed", True)


def test_content_length_with_transfer_encoding_closes_after_the_answer(server: Server) -> None:
    payload = b'{"cands": ["a cat"], "refs": ["the cat"]}'
    raw = (
        b"POST /score HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(payload), payload)
    )
    answers = _exchange(server, raw + _post_bytes({"cands": ["b"], "refs": ["c"]}))
    status, headers, body = answers[0]
    assert status == 200 and headers[b"connection"] == b"close" and "F" in body
    assert len(answers) == 2 and answers[-1] == ("closed", True)  # the second never read


def test_max_connections_per_client(server: Server) -> None:
    idle = [socket.create_connection((HOST, server.port), timeout=10) for _ in range(3)]
    try:
        time.sleep(0.2)
        answers = _exchange(server, _post_bytes({"cands": ["a"], "refs": ["b"]}))
        status, headers, body = answers[0]
        assert status == 503 and "--max-connections-per-client" in body["error"]
        assert headers[b"retry-after"] == b"1"
    finally:
        for sock in idle:
            sock.close()
    deadline = time.monotonic() + CLIENT_TIMEOUT
    while _post(server, {"cands": ["a"], "refs": ["b"]})[0] != 200:
        assert time.monotonic() < deadline, "never served again"
        time.sleep(0.1)
    assert _get(server, "/health")[1]["limits"]["max_connections_per_client"] == 3


def test_per_client_cap_is_off_by_default() -> None:
    s = _start("-q")
    try:
        idle = [socket.create_connection((HOST, s.port), timeout=10) for _ in range(20)]
        try:
            assert _post(s, {"cands": ["a"], "refs": ["b"]})[0] == 200
            assert _get(s, "/health")[1]["limits"]["max_connections_per_client"] is None
        finally:
            for sock in idle:
                sock.close()
    finally:
        _stop(s)


def _health_of(s: Server) -> dict[str, Any]:
    return _get(s, "/health")[1]


def _until_true(check: Any, what: str) -> None:
    deadline = time.monotonic() + CLIENT_TIMEOUT
    while not check():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.05)


def test_a_shorter_large_request_passes_a_longer_one_and_cancelled_work_stays_cached() -> None:
    s = _start("--max-pairs", "2000", "--request-timeout", "3600", "-b", "16", "-q")
    big = socket.create_connection((HOST, s.port), timeout=CLIENT_TIMEOUT)
    try:
        cands, refs = _pairs(1500, seed=21)
        big.sendall(_post_bytes({"cands": cands, "refs": refs}))
        _until_true(lambda: _health_of(s)["in_progress"] >= 1, "the long request began")
        mid_cands, mid_refs = _pairs(80, seed=22)  # large too (sliced), but far shorter
        status, answer = _post(s, {"cands": mid_cands, "refs": mid_refs})
        assert status == 200
        np.testing.assert_array_equal(
            np.asarray(answer["F"], np.float32), score(mid_cands, mid_refs, batch_size=16)[2]
        )
        big.setblocking(False)
        with pytest.raises(BlockingIOError):
            big.recv(1)  # the long one, sent first, is still unanswered
        cached = _health_of(s)["cache_texts"]
        big.close()  # its client leaves: the work stops, its slices stay in the cache
        _until_true(lambda: _health_of(s)["in_progress"] == 0, "the orphan stopped")
        health = _health_of(s)
        assert health["cancelled"] + health["dropped"] == 1
        assert health["cache_texts"] >= cached > 2 * 80
    finally:
        big.close()
        _stop(s)
