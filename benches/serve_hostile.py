#!/usr/bin/env python3
"""The scoring server against one hostile client (issue 58), before and after, on loopback.

Each attack runs on a fresh server of each side ("before": ``--before-python`` with
``--before-pythonpath``, another checkout's package; "after": this tree's), for
``--hostile-seconds``, while an honest client at another address (127.0.0.200) sends one-pair
requests back to back and ``/health`` is asked every 50 ms:

1. **headers_only**: 32 connections that send headers declaring an 8 MiB body and nothing
   more (reopened when the server closes them);
2. **many_addresses**: the same, 4 connections from each of 127.0.0.1 to 127.0.0.8
   (``--max-connections-per-client 4``);
3. **no_whitespace**: ``{"cands": ["a." * 1000000], "refs": ["x"]}`` sent back to back;
4. **hangul_small**: 4 clients sending 8-pair requests of Hangul syllables then ``!``;
5. **nested_arrays**: 8 clients sending 8 MiB bodies of nested empty arrays;
6. **one_byte_chunks**: 4 connections streaming a chunked body in 1-byte chunks;
7. **slow_first**: on a fresh server, one ``"a." * 1000000`` pair, then a 256-pair request of
   30-word texts: whether it is scored, and in what time;
8. **sigterm_upload**: SIGTERM while a body is half uploaded (``--graceful-timeout 0.5``): the
   answer's status and type, and the exit code;
9. **long_words** (the attack round's): an 8 MiB text of words of 4,000 characters, sent back
   to back (prefixes with enough tokens ran to 2.1 M characters);
10. **cjk_at_limit**: ``"日"`` times ``--max-whole-chars`` (262,144), read whole, back to back;
11. **slices_8_addresses**: 8 addresses sending one-pair requests of about 510 tokens a text
    (a slice of rows each, unique texts).

For 1-6 and 9-11: the honest client's p50 / max latency and non-200 answers, ``/health`` p50 / p99 /
max, the hostile requests' answers, and the server's peak RSS (VmHWM).

Run: ``python -m benches.serve_abuse --only hostile --before-python PY --before-pythonpath
DIR`` (``make bench-serve-abuse``).
"""

from __future__ import annotations

import json
import random
import re
import signal
import socket
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

from .serve_client import HOST, Server, get, pairs_body, read_until_closed, run_on_sides

HONEST = "127.0.0.200"
MIB = 1024 * 1024
ATTACKS = (
    "headers_only",
    "many_addresses",
    "no_whitespace",
    "hangul_small",
    "nested_arrays",
    "one_byte_chunks",
    "slow_first",
    "sigterm_upload",
    "long_words",
    "cjk_at_limit",
    "slices_8_addresses",
)


def _head(length: int | None) -> bytes:
    framing = "Transfer-Encoding: chunked" if length is None else f"Content-Length: {length}"
    return (
        f"POST /score HTTP/1.1\r\nHost: {HOST}\r\n{framing}\r\nConnection: close\r\n\r\n".encode()
    )


def _connect(server: Server, source: str, timeout: float = 30) -> socket.socket:
    return socket.create_connection(
        (HOST, server.port), timeout=timeout, source_address=(source, 0)
    )


def _post(server: Server, body: bytes, source: str, timeout: float = 120) -> tuple[int, str]:
    """Status and content type of one POST from ``source`` (0: no answer)."""
    try:
        sock = _connect(server, source, timeout)
        sock.sendall(_head(len(body)) + body)
        raw = b""
        while b"\r\n\r\n" not in raw:
            chunk = sock.recv(65536)
            if not chunk:
                break
            raw += chunk
        while chunk := sock.recv(65536):
            pass
        sock.close()
        status = int(raw.split()[1]) if raw else 0
        kind = re.search(rb"(?i)content-type: ([^\r;]+)", raw)
        return status, kind.group(1).decode() if kind else ""
    except (OSError, ValueError, IndexError):
        return 0, ""


def _summary(values: list[float], scale: float = 1.0, digits: int = 3) -> dict[str, Any]:
    if not values:
        return {"n": 0}
    values = sorted(values)
    return {
        "n": len(values),
        "p50": round(scale * statistics.median(values), digits),
        "p99": round(scale * values[min(len(values) - 1, int(0.99 * len(values)))], digits),
        "max": round(scale * values[-1], digits),
    }


def _under_attack(
    server: Server, attack: Callable[[threading.Event], list[Any]], seconds: float
) -> dict[str, Any]:
    """Run ``attack(stop)`` (it returns what the hostile requests got) beside an honest
    client's one-pair requests and ``/health`` probes, for ``seconds``."""
    stop = threading.Event()
    hostile: list[Any] = []
    runner = threading.Thread(target=lambda: hostile.extend(attack(stop)), daemon=True)
    runner.start()
    time.sleep(1.0)  # the attack under way
    health: list[float] = []

    def probe() -> None:
        while not stop.is_set():
            start = time.perf_counter()
            get(server, "/health", 60)
            health.append(time.perf_counter() - start)
            stop.wait(0.05)

    prober = threading.Thread(target=probe, daemon=True)
    prober.start()
    honest: list[float] = []
    statuses: list[int] = []
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end:
        start = time.perf_counter()
        status, _ = _post(server, pairs_body(1, seed=90_000 + i), HONEST)
        honest.append(time.perf_counter() - start)
        statuses.append(status)
        i += 1
    stop.set()
    runner.join(180)
    prober.join(60)
    counts: dict[str, int] = {}
    for got in hostile:
        counts[str(got)] = counts.get(str(got), 0) + 1
    return {
        "honest_s": _summary(honest),
        "honest_statuses": {str(s): statuses.count(s) for s in sorted(set(statuses))},
        "health_ms": _summary(health, 1000, 1),
        "hostile": counts,
        "peak_rss_mib": round(server.rss_mib("VmHWM"), 1),
    }


def _open(sock: socket.socket) -> bool:
    """Whether the server has neither closed ``sock`` nor answered on it."""
    sock.setblocking(False)
    try:
        sock.recv(65536)  # an answer (408) or the end: either way it is done
        return False
    except BlockingIOError:
        return True
    except OSError:
        return False


def _hold_headers(server: Server, sources: list[str], stop: threading.Event) -> list[Any]:
    """Connections that send headers declaring 8 MiB and nothing more, reopened when closed."""
    socks: dict[int, socket.socket] = {}
    closed = 0
    while not stop.is_set():
        for k, source in enumerate(sources):
            sock = socks.get(k)
            if sock is not None:
                if _open(sock):
                    continue
                closed += 1
                sock.close()
            try:
                socks[k] = _connect(server, source, 5)
                socks[k].sendall(_head(8 * MIB))
            except OSError:
                socks.pop(k, None)
        stop.wait(0.1)
    for sock in socks.values():
        sock.close()
    return [f"closed by the server: {closed}"] if closed else []


def _repeat(server: Server, bodies: list[bytes], sources: list[str], stop: threading.Event):
    """Each source sends its bodies back to back until ``stop``; their statuses."""
    got: list[Any] = []

    def client(k: int) -> None:
        i = 0
        while not stop.is_set():
            body = bodies[(i * len(sources) + k) % len(bodies)]  # each body once, if enough
            got.append(_post(server, body, sources[k], 300)[0])
            i += 1

    threads = [threading.Thread(target=client, args=(k,), daemon=True) for k in range(len(sources))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    return got


def _chunks(server: Server, n: int, stop: threading.Event) -> list[Any]:
    """``n`` connections streaming 1-byte chunks, reopened when answered."""
    got: list[Any] = []

    def stream() -> None:
        while not stop.is_set():
            try:
                sock = _connect(server, "127.0.0.1", 30)
            except OSError:
                stop.wait(0.1)
                continue
            try:
                sock.sendall(_head(None))
                while not stop.is_set():
                    sock.sendall(b"1\r\n \r\n" * 64)
            except OSError:
                pass  # the server answered and closed it
            try:
                raw = sock.recv(64)
                got.append(int(raw.split()[1]) if raw else 0)
            except (OSError, ValueError, IndexError):
                got.append(0)
            sock.close()

    threads = [threading.Thread(target=stream, daemon=True) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return got


def _hangul(rng: random.Random) -> str:
    return "".join(chr(rng.randrange(0xAC00, 0xD7A4)) + "!" for _ in range(40))


def slow_first(server: Server) -> dict[str, Any]:
    start = time.perf_counter()
    first = _post(
        server, json.dumps({"cands": ["a." * 1_000_000], "refs": ["x"]}).encode(), HONEST, 300
    )
    first_s = time.perf_counter() - start
    start = time.perf_counter()
    status, _ = _post(server, pairs_body(256, seed=4242), HONEST, 300)
    return {
        "first_status": first[0],
        "first_s": round(first_s, 2),
        "then_256_pairs_status": status,
        "then_256_pairs_s": round(time.perf_counter() - start, 2),
    }


def sigterm_upload(server: Server) -> dict[str, Any]:
    sent = b'{"cands": ["a"], "refs": ["b"]' + b" " * 100_000
    sock = _connect(server, HONEST, 60)
    sock.sendall(_head(200_000) + sent)
    time.sleep(0.3)
    server.proc.send_signal(signal.SIGTERM)
    raw = read_until_closed(sock)
    code = server.proc.wait(60)
    head, _, body = raw.partition(b"\r\n\r\n")
    kind = re.search(rb"(?i)content-type: ([^\r;]+)", head)
    return {
        "status": int(head.split()[1]) if head else 0,
        "content_type": kind.group(1).decode() if kind else "",
        "body": body[:100].decode(errors="replace"),
        "exit_code": code,
    }


def run_hostile(
    sides: list[tuple[str, str, str]], seconds: float, only: set[str] | None = None
) -> dict[str, Any]:
    """Each attack on a fresh server of each side ``(label, python, pythonpath)``."""
    rng = random.Random(58)
    hangul = [
        json.dumps(
            {"cands": [_hangul(rng) for _ in range(8)], "refs": [_hangul(rng) for _ in range(8)]}
        ).encode()
        for _ in range(8)
    ]
    unit = b"[[[[]]]],"
    nested = b'{"cands": [' + unit * ((8 * MIB - 64) // len(unit)) + b'[]], "refs": []}'
    a_dot = json.dumps({"cands": ["a." * 1_000_000], "refs": ["x"]}).encode()
    eight = [f"127.0.0.{k}" for k in range(1, 9)]
    words = ("a" * 4000 + " ") * ((8 * MIB - 100) // 4001)
    long_words = json.dumps({"cands": [words], "refs": ["x"]}).encode()
    cjk = json.dumps({"cands": ["日" * 262_144], "refs": ["x"]}, ensure_ascii=False).encode()

    def pair_text(k: int) -> str:
        return " ".join(
            f"{rng.choice(('alpha', 'beta', 'gamma', 'delta'))}{k}{j}" for j in range(200)
        )

    slices = [
        json.dumps({"cands": [pair_text(2 * k)], "refs": [pair_text(2 * k + 1)]}).encode()
        for k in range(600)
    ]
    plans: dict[str, tuple[list[str], Callable[[Server], dict[str, Any]]]] = {
        "headers_only": (
            [],
            lambda s: _under_attack(s, lambda e: _hold_headers(s, ["127.0.0.1"] * 32, e), seconds),
        ),
        "many_addresses": (
            ["--max-connections-per-client", "4"],
            lambda s: _under_attack(
                s, lambda e: _hold_headers(s, [a for a in eight for _ in range(4)], e), seconds
            ),
        ),
        "no_whitespace": (
            [],
            lambda s: _under_attack(s, lambda e: _repeat(s, [a_dot], ["127.0.0.1"], e), seconds),
        ),
        "hangul_small": (
            [],
            lambda s: _under_attack(s, lambda e: _repeat(s, hangul, eight[:4], e), seconds),
        ),
        "nested_arrays": (
            [],
            lambda s: _under_attack(s, lambda e: _repeat(s, [nested], eight, e), seconds),
        ),
        "one_byte_chunks": ([], lambda s: _under_attack(s, lambda e: _chunks(s, 4, e), seconds)),
        "long_words": (
            [],
            lambda s: _under_attack(
                s, lambda e: _repeat(s, [long_words], ["127.0.0.1"], e), seconds
            ),
        ),
        "cjk_at_limit": (
            [],
            lambda s: _under_attack(s, lambda e: _repeat(s, [cjk], ["127.0.0.1"], e), seconds),
        ),
        "slices_8_addresses": (
            [],
            lambda s: _under_attack(s, lambda e: _repeat(s, slices, eight, e), seconds),
        ),
        "slow_first": ([], slow_first),
        "sigterm_upload": (["--graceful-timeout", "0.5", "--read-timeout", "20"], sigterm_upload),
    }
    chosen = [n for n in ATTACKS if only is None or n in only or "hostile" in only]
    return run_on_sides([(n, *plans[n]) for n in chosen], sides)
