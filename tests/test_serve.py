"""``rust-bertscore serve``, tested for real: the server runs as a subprocess on a free loopback
port (``--port 0``: it binds one and prints it), and clients talk HTTP to it.

Every wait is bounded (a deadline or a socket timeout); every server started here is stopped.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from rust_bertscore import score

HOST = "127.0.0.1"
START_TIMEOUT = 180.0
CLIENT_TIMEOUT = 60.0


@dataclass
class Server:
    proc: subprocess.Popen
    port: int
    stderr: list[str]
    pump: threading.Thread

    def url(self, path: str) -> str:
        return f"http://{HOST}:{self.port}{path}"


def _start(*flags: str) -> Server:
    cmd = [sys.executable, "-m", "rust_bertscore", "serve", "--host", HOST, "--port", "0"]
    proc = subprocess.Popen(
        [*cmd, *flags],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    lines: queue.Queue[str | None] = queue.Queue()
    seen: list[str] = []
    log: list[str] = []  # every line, for the tests to read

    def pump() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            log.append(line)
            lines.put(line)
        lines.put(None)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            break
        if line is None:
            break
        seen.append(line)
        if "listening on http://" in line:
            port = int(line.rsplit(":", 1)[1].strip())
            server = Server(proc, port, log, reader)
            _wait_healthy(server, deadline)
            return server
    proc.kill()
    proc.wait(10)
    reader.join(10)
    if proc.stderr is not None:
        proc.stderr.close()
    raise AssertionError(f"the server did not start: {''.join(seen)}")


def _wait_healthy(server: Server, deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            status, _ = _get(server, "/health")
            if status == 200:
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise AssertionError("the server never answered /health")


def _stop(server: Server) -> None:
    if server.proc.poll() is None:
        server.proc.send_signal(signal.SIGTERM)
        try:
            server.proc.wait(30)
        except subprocess.TimeoutExpired:
            server.proc.kill()
            server.proc.wait(10)
    server.pump.join(10)
    if server.proc.stderr is not None:
        server.proc.stderr.close()


def _request(server: Server, path: str, body: bytes | None, method: str) -> tuple[int, Any]:
    req = urllib.request.Request(server.url(path), data=body, method=method)
    if body is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=CLIENT_TIMEOUT) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def _get(server: Server, path: str) -> tuple[int, Any]:
    return _request(server, path, None, "GET")


def _post(server: Server, payload: object) -> tuple[int, Any]:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return _request(server, "/score", body, "POST")


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    # A long wait, so that requests sent together are batched together.
    s = _start("--max-wait-ms", "100", "--max-batch", "16", "--max-body-bytes", "65536", "-q")
    try:
        yield s
    finally:
        _stop(s)


TEXT = (
    "the cat sat on a warm mat while rain fell outside and the old dog slept by a fire "
    "near children who read quietly about ships stars rivers and distant mountains"
)
WORDS = TEXT.split()


def _request_texts(k: int) -> tuple[list[str], list[Any]]:
    """Request ``k``: pairs of different lengths (so bert_score's floor matters), and every third
    request with several references per candidate."""
    rng = np.random.default_rng(k)

    def sentence(n: int) -> str:
        return " ".join(rng.choice(WORDS, n)) + "."

    n = 1 + k % 4
    cands = [sentence(int(rng.integers(2, 20))) for _ in range(n)]
    if k % 3 == 2:
        return cands, [
            [sentence(int(rng.integers(2, 30))) for _ in range(1 + i % 2)] for i in range(n)
        ]
    return cands, [sentence(int(rng.integers(2, 30))) for _ in range(n)]


def test_health_names_the_model(server: Server) -> None:
    status, body = _get(server, "/health")
    assert status == 200
    assert body["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert body["num_layers"] == 6
    assert body["precision"] == "fp32"
    assert body["device"] == "cpu"
    assert body["hash"] == score(["a"], ["a"], return_hash=True)[1]


def test_concurrent_clients_get_score_numbers_per_request(server: Server) -> None:
    n = 24
    requests = [_request_texts(k) for k in range(n)]
    expected = [score(c, r) for c, r in requests]
    before = _get(server, "/health")[1]
    barrier = threading.Barrier(12)

    def client(k: int) -> tuple[int, Any]:
        if k < 12:
            barrier.wait(CLIENT_TIMEOUT)
        cands, refs = requests[k]
        return _post(server, {"cands": cands, "refs": refs})

    with ThreadPoolExecutor(12) as pool:
        answers = list(pool.map(client, range(n)))
    for k, ((status, body), (P, R, F)) in enumerate(zip(answers, expected)):
        assert status == 200, (k, body)
        for name, want in (("P", P), ("R", R), ("F", F)):
            got = np.asarray(body[name], dtype=np.float32)
            # The encoder gives the same vectors alone or batched, and the floor is per request:
            # the very numbers of score() on that request alone.
            np.testing.assert_array_equal(got, want, err_msg=f"request {k}, {name}")
    after = _get(server, "/health")[1]
    scored = after["requests_scored"] - before["requests_scored"]
    batches = after["batches"] - before["batches"]
    assert scored == n
    assert batches < n  # requests sent together were scored together


def test_a_floor_that_batching_across_requests_would_change(server: Server) -> None:
    # "ok" has a reference token whose best cosine is negative (-0.012 on MiniLM). Alone, A's
    # pair has no floor; in one bert_score batch with B's longer candidate its recall side
    # would be floored. The server must give A its own numbers.
    a = (["ok"], ["the quick brown fox jumps over the lazy dog"])
    b = (["a much longer candidate sentence about many other things"], ["a short one"])
    joint = score([*a[0], *b[0]], [*a[1], *b[1]])
    alone = score(*a)
    assert joint[1][0] != alone[1][0]  # the case is a real one
    barrier = threading.Barrier(2)

    def client(t: tuple[list[str], list[str]]) -> tuple[int, Any]:
        barrier.wait(CLIENT_TIMEOUT)
        return _post(server, {"cands": t[0], "refs": t[1]})

    with ThreadPoolExecutor(2) as pool:
        got_a, got_b = pool.map(client, (a, b))
    assert got_a[0] == 200 and got_b[0] == 200
    for i, name in enumerate("PRF"):
        assert np.float32(got_a[1][name][0]) == alone[i][0], name
        assert np.float32(got_b[1][name][0]) == score(*b)[i][0], name


BAD_INPUTS = [
    (b'{"cands": ["a"', 400, None, None),
    (b"\xff\xfe not utf-8", 400, None, None),
    (b'["a", "b"]', 422, None, None),
    (b'{"refs": ["a"]}', 422, "cands", None),
    (b'{"cands": "a cat", "refs": ["a"]}', 422, "cands", None),
    (b'{"cands": ["a", 3], "refs": ["a", "b"]}', 422, "cands", 1),
    (b'{"cands": ["a", "b"], "refs": ["a"]}', 422, "refs", None),
    (b'{"cands": ["a", "b"], "refs": ["a", ["b"]]}', 422, "refs", 1),
    (b'{"cands": ["a", "b"], "refs": [["a"], []]}', 422, "refs", 1),
    (b'{"cands": ["a", "b"], "refs": [["a"], ["b", null]]}', 422, "refs", 1),
    (b'{"cands": ["a", "\\ud800"], "refs": ["a", "b"]}', 422, "cands", 1),
    (b'{"cands": ["a"], "refs": ["a"], "idf": true}', 422, "idf", None),
]


@pytest.mark.parametrize(("body", "status", "field", "index"), BAD_INPUTS)
def test_bad_input_gets_a_4xx_and_the_server_keeps_serving(
    server: Server, body: bytes, status: int, field: str | None, index: int | None
) -> None:
    got, answer = _post(server, body)
    assert got == status, answer
    assert isinstance(answer["error"], str) and answer["error"]
    assert answer.get("field") == field
    assert answer.get("index") == index
    if field is not None and index is not None:
        assert f"{field}[{index}]" in answer["error"]
    ok, scores = _post(server, {"cands": ["the cat sat"], "refs": ["a cat sat"]})
    assert ok == 200 and len(scores["F"]) == 1


def test_oversized_body_gets_413(server: Server) -> None:
    big = {"cands": ["word " * 20_000], "refs": ["a"]}
    status, answer = _post(server, big)
    assert status == 413 and "65536" in answer["error"]
    assert _get(server, "/health")[0] == 200


def test_wrong_method_and_path_get_json_errors(server: Server) -> None:
    assert _get(server, "/score")[0] == 405
    assert _get(server, "/nowhere")[0] == 404
    assert _post(server, {"cands": [], "refs": []}) == (
        200,
        {"P": [], "R": [], "F": [], "hash": _get(server, "/health")[1]["hash"]},
    )


def _raw(server: Server, data: bytes) -> socket.socket:
    sock = socket.create_connection((HOST, server.port), timeout=CLIENT_TIMEOUT)
    sock.sendall(data)
    return sock


def test_clients_that_disconnect_cost_nothing_else(server: Server) -> None:
    body = json.dumps({"cands": ["the cat sat"] * 3, "refs": ["a cat sat"] * 3}).encode()
    head = (
        f"POST /score HTTP/1.1\r\nHost: {HOST}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    # One leaves in the middle of its body, others right after sending a whole request.
    _raw(server, head + body[:10]).close()
    for _ in range(5):
        _raw(server, head + body).close()
    cands, refs = _request_texts(7)
    status, answer = _post(server, {"cands": cands, "refs": refs})
    assert status == 200
    np.testing.assert_array_equal(np.asarray(answer["F"], np.float32), score(cands, refs)[2])
    assert server.proc.poll() is None


@pytest.mark.skipif(
    sys.platform == "win32", reason="SIGTERM is TerminateProcess on Windows: no graceful stop"
)
def test_sigterm_answers_requests_in_flight_and_exits_cleanly() -> None:
    # With --idf, and two requests batched together: each gets IDF over its own references.
    s = _start("--max-wait-ms", "1500", "--idf", "-q")
    try:
        # The third: P and R are NaN under IDF ("the" weighs 0), which JSON writes as null.
        requests = [_request_texts(5), _request_texts(6), (["the"], ["the"])]
        with ThreadPoolExecutor(3) as pool:
            pending = [pool.submit(_post, s, {"cands": c, "refs": r}) for c, r in requests]
            time.sleep(0.5)  # the requests are in the server, waiting for their batch
            s.proc.send_signal(signal.SIGTERM)
            answers = [p.result(CLIENT_TIMEOUT) for p in pending]
        for (status, answer), (cands, refs) in zip(answers, requests):
            assert status == 200
            want = score(cands, refs, idf=True)
            for i, name in enumerate("PRF"):
                got = [np.nan if v is None else v for v in answer[name]]
                np.testing.assert_array_equal(np.asarray(got, np.float32), want[i])
        assert answers[2][1]["P"] == [None] and answers[2][1]["F"] == [0.0]
        assert "_L6_idf_" in answers[0][1]["hash"]
        assert s.proc.wait(30) == 0
        with pytest.raises(OSError):
            socket.create_connection((HOST, s.port), timeout=5).close()
    finally:
        _stop(s)


def test_serve_without_the_extra_says_what_to_install(tmp_path: Any) -> None:
    # A module named starlette that fails to import stands in for a missing extra.
    (tmp_path / "starlette").mkdir()
    (tmp_path / "starlette" / "__init__.py").write_text("raise ImportError('no', name='starlette')")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-m", "rust_bertscore", "serve", "--port", "0"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 1
    assert "pip install 'rust-bertscore[serve]'" in out.stderr
