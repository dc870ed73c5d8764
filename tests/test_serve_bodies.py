"""``rust-bertscore serve`` against hostile request bodies, on loopback: headers that declare a
large body and send none (they hold none of the queued-token budget), bodies that trickle (408
at the minimum body rate), chunked bodies of tiny chunks (read in linear time, refused past a
bound, the event loop free meanwhile), and SIGTERM in the middle of an upload (503 JSON, exit
code 3).

Every wait is bounded (a deadline or a socket timeout); every server started here is stopped.
"""

from __future__ import annotations

import contextlib
import json
import select
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from test_serve import HOST, Server, _get, _post, _start, _stop

MAX_BODY = 262144
BUDGET = 4 * MAX_BODY
"""The server's --max-queued-tokens: four declared bodies of --max-body-bytes would fill it."""
READ_TIMEOUT = 20.0
"""Long, so that a cut within a few seconds is the minimum body rate's, not the read timeout's."""
SHORT = 5.0
"""Socket timeout where the server must act within a few seconds."""


def small_budget_server() -> Iterator[Server]:
    """A server with bodies of at most :data:`MAX_BODY` and a budget of four of them."""
    s = _start(
        *("--max-body-bytes", str(MAX_BODY), "--max-queued-tokens", str(BUDGET)),
        *("--read-timeout", str(READ_TIMEOUT), "-q"),
    )
    try:
        yield s
    finally:
        _stop(s)


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    yield from small_budget_server()


def _connect(server: Server, data: bytes, timeout: float = SHORT) -> socket.socket:
    sock = socket.create_connection((HOST, server.port), timeout=timeout)
    sock.sendall(data)
    return sock


def _head(length: int | None) -> bytes:
    framing = "Transfer-Encoding: chunked" if length is None else f"Content-Length: {length}"
    return (
        f"POST /score HTTP/1.1\r\nHost: {HOST}\r\nContent-Type: application/json\r\n"
        f"{framing}\r\nConnection: close\r\n\r\n"
    ).encode()


def _answer(sock: socket.socket) -> tuple[int, Any]:
    """The status and JSON body of the response on ``sock`` (read to its close)."""
    chunks = []
    try:
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    except ConnectionResetError:
        pass
    finally:
        sock.close()
    head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
    assert head, "no answer"
    return int(head.split()[1]), json.loads(body)


def _one_pair() -> dict[str, list[str]]:
    return {"cands": ["the cat sat on the mat"], "refs": ["a cat sat on a mat"]}


def test_headers_without_a_body_hold_none_of_the_budget(server: Server) -> None:
    # Four declared bodies of --max-body-bytes would take the whole budget if a declared
    # length were charged; nothing of them arrives, so nothing is charged.
    idle = [_connect(server, _head(MAX_BODY)) for _ in range(4)]
    try:
        time.sleep(0.3)  # the server has read their headers (well within the 1 s of grace)
        status, answer = _post(server, _one_pair())
        assert status == 200, answer
        assert _get(server, "/health")[1]["queued_tokens"] == 0
        # And the minimum body rate closes them within a few seconds, not the read timeout.
        start = time.monotonic()
        for sock in idle:
            status, answer = _answer(sock)
            assert status == 408 and "too slowly" in answer["error"]
        assert time.monotonic() - start < SHORT
    finally:
        for sock in idle:
            sock.close()


def test_a_trickling_body_gets_408(server: Server) -> None:
    sock = _connect(server, _head(100) + b'{"cands": ')
    start = time.monotonic()
    for _ in range(20):  # a byte every 0.25 s, for 5 s at most
        readable, _, _ = select.select([sock], [], [], 0.25)
        if readable:
            break
        try:
            sock.sendall(b" ")
        except OSError:
            break
    status, answer = _answer(sock)
    assert status == 408, answer
    assert "too slowly" in answer["error"] and "bytes a second" in answer["error"]
    assert time.monotonic() - start < SHORT


def _send_in_thread(sock: socket.socket, data: bytes) -> threading.Thread:
    def send() -> None:
        with contextlib.suppress(OSError):  # the server refused the body and closed
            sock.sendall(data)

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


def _health_latencies(server: Server, until: threading.Thread, most: float) -> list[float]:
    """Seconds each ``GET /health`` took while ``until`` runs (``most`` seconds at most)."""
    out: list[float] = []
    deadline = time.monotonic() + most
    while (until.is_alive() and time.monotonic() < deadline) or not out:
        start = time.monotonic()
        # a fresh connection each time (as a probe does)
        sock = socket.create_connection((HOST, server.port), timeout=SHORT)
        sock.sendall(f"GET /health HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\n\r\n".encode())
        status, _ = _answer(sock)
        assert status == 200
        out.append(time.monotonic() - start)
        time.sleep(0.05)
    return out


def test_a_body_of_one_byte_chunks_is_refused_and_health_answers(server: Server) -> None:
    sock = _connect(server, _head(None), timeout=30)
    sender = _send_in_thread(sock, b"1\r\n \r\n" * 200_000 + b"0\r\n\r\n")  # 1.2 MB, 200 KB
    latencies = _health_latencies(server, sender, most=10)
    status, answer = _answer(sock)
    sender.join(10)
    assert status == 400, answer
    assert "too many pieces" in answer["error"], answer
    assert max(latencies) < 1.0, latencies


def _chunked(body: bytes, size: int) -> bytes:
    pieces = [body[i : i + size] for i in range(0, len(body), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"


def test_a_body_of_small_chunks_is_read_in_linear_time(server: Server) -> None:
    # 16-byte chunks, the smallest accepted on average: a 200 KB body in 12,800 chunks is read
    # and scored, and /health answers within a second meanwhile.
    payload = json.dumps(_one_pair()).encode()
    body = payload + b" " * (200_000 - len(payload))
    sock = _connect(server, _head(None), timeout=30)
    start = time.monotonic()
    sender = _send_in_thread(sock, _chunked(body, 16))
    latencies = _health_latencies(server, sender, most=10)
    status, answer = _answer(sock)
    took = time.monotonic() - start
    sender.join(10)
    assert status == 200, answer
    assert max(latencies) < 1.0, latencies
    assert took < 3.0, took


@pytest.mark.skipif(
    sys.platform == "win32", reason="SIGTERM is TerminateProcess on Windows: no graceful stop"
)
def test_sigterm_in_the_middle_of_an_upload_answers_503_json_and_exits_3() -> None:
    s = _start("--graceful-timeout", "0.5", "--read-timeout", str(READ_TIMEOUT), "-q")
    try:
        # 100 KB of the 200 KB declared: ahead of the minimum body rate for 2.5 s.
        sent = b'{"cands": ["a"], "refs": ["b"]' + b" " * 100_000
        sock = _connect(s, _head(200_000) + sent, timeout=30)
        time.sleep(0.3)
        s.proc.send_signal(signal.SIGTERM)
        status, answer = _answer(sock)
        assert status == 503, answer
        assert "--graceful-timeout" in answer["error"]
        assert s.proc.wait(30) == 3
    finally:
        _stop(s)
    assert not any("Traceback" in line for line in s.stderr), "".join(s.stderr)


def test_a_text_the_tokenizer_reads_whole_past_the_limit_gets_413() -> None:
    """A long text with no place to cut it (no whitespace, no punctuation before a letter)
    is read whole by the tokenizer: past --max-whole-chars it is refused at once, naming the
    field, the index and the flag; a text as long that can be cut is scored."""
    s = _start("--max-whole-chars", "50000", "-q")
    try:
        texts = ["a cat", "x" * 60_000]
        status, answer = _post(s, {"cands": ["a cat", "a cat"], "refs": texts})
        assert status == 413, answer
        assert (answer["field"], answer["index"]) == ("refs", 1)
        assert "60000 characters" in answer["error"] and "--max-whole-chars" in answer["error"]
        status, answer = _post(s, {"cands": ["a cat"], "refs": ["a cat " * 20_000]})
        assert status == 200, answer
        # Words of 4,000 characters: found on the worker, when prefixes reach the limit.
        status, answer = _post(s, {"cands": ["a", ("w" * 4000 + " ") * 40], "refs": ["a", "b"]})
        assert status == 413, answer
        assert (answer["field"], answer["index"]) == ("cands", 1)
        assert "--max-whole-chars" in answer["error"]
        assert _get(s, "/health")[1]["limits"]["max_whole_chars"] == 50_000
    finally:
        _stop(s)


def _connect_from(server: Server, source: str, data: bytes) -> socket.socket:
    sock = socket.create_connection((HOST, server.port), timeout=SHORT, source_address=(source, 0))
    sock.sendall(data)
    return sock


def test_one_client_address_holds_at_most_its_share_of_the_budget(server: Server) -> None:
    """One address filled the whole budget with bodies in flight and every other client got
    503: now it holds at most --max-client-share (0.5) of it; past that it gets 503 naming the
    flag, and another address is served."""
    part = b"x" * (200 * 1024)  # of a declared MAX_BODY: charged as it arrives, then stalls
    hogs = [_connect_from(server, "127.0.0.1", _head(MAX_BODY) + part) for _ in range(2)]
    try:
        time.sleep(0.3)  # both parts read and charged: 400 KiB of the 512 KiB share
        third = _connect_from(server, "127.0.0.1", _head(MAX_BODY) + b"x" * MAX_BODY)
        status, answer = _answer(third)
        assert status == 503 and "--max-client-share" in answer["error"], answer
        body = json.dumps(_one_pair()).encode()
        other = _connect_from(server, "127.0.0.2", _head(len(body)) + body)
        status, answer = _answer(other)
        assert status == 200, answer
        assert _get(server, "/health")[1]["refused_over_share"] >= 1
    finally:
        for sock in hogs:
            sock.close()
