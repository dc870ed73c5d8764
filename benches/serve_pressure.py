#!/usr/bin/env python3
"""The scoring server under pressure (issue 47), before and after, on loopback only.

Each case runs on a fresh server of each side in turn ("before": ``--before-python``, a venv
with another checkout's package installed; "after": this tree's ``python``), in one run:

1. **queue memory**: ``N`` clients at once, each sending a body just under 8 MiB (1,000 pairs of
   4 KB texts): peak RSS (VmHWM), RSS once all are answered, the answers' statuses, seconds;
2. **long-text flood**: 1 or 4 clients sending 1,000-pair requests of 400-word texts back to
   back while a probe sends one-pair requests for ``--flood-seconds``: the probe's p50 / max;
3. **/health during a huge text**: an 8 M-character pair, and ``/health`` every 20 ms meanwhile:
   p50 / p99 / max of ``/health``, and the pair's own time;
4. **pipelined at SIGTERM**: one connection with three pipelined POSTs (100 pairs, then two of
   one pair), SIGTERM once the first is in progress: what came back, and the exit code.

Run: ``python -m benches.serve_abuse --before-python OTHER_CHECKOUT/.venv/bin/python --only
queue_memory,flood_long,health_huge,sigterm_pipelined`` (``make bench-serve-abuse``).
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
from typing import Any

from .serve_client import (
    HOST,
    VOCAB,
    Server,
    get,
    pairs_body,
    read_until_closed,
    request,
    run_on_sides,
)

MIB = 1024 * 1024


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choices(VOCAB, k=n))


def long_body(pairs: int, words: int, seed: int) -> bytes:
    rng = random.Random(seed)
    texts = [_words(rng, words) + f" {seed}.{i}" for i in range(2 * pairs)]
    return json.dumps({"cands": texts[:pairs], "refs": texts[pairs:]}).encode()


def _send_and_read(body: bytes, port: int, timeout: float) -> int:
    """POST ``body`` on a raw connection; the status (0: no answer)."""
    try:
        sock = socket.create_connection((HOST, port), timeout=timeout)
        head = f"POST /score HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: {len(body)}\r\n\r\n"
        sock.sendall(head.encode() + body)
        first = sock.recv(64)
        sock.close()
        return int(first.split()[1]) if first else 0
    except (OSError, ValueError, IndexError):
        return 0


def queue_memory(server: Server, clients: int) -> dict[str, Any]:
    words = 1000  # about 4 KB a text
    body = long_body(1000, words, seed=clients)
    while len(body) > 8 * MIB - 4096:  # just under the 8 MiB body limit
        words -= 5
        body = long_body(1000, words, seed=clients)
    idle = server.rss_mib()
    statuses: list[int] = []
    lock = threading.Lock()

    def client() -> None:
        status = _send_and_read(body, server.port, 180)
        with lock:
            statuses.append(status)

    start = time.perf_counter()
    threads = [threading.Thread(target=client, daemon=True) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(240)
    seconds = time.perf_counter() - start
    time.sleep(2)
    counts = {str(s): statuses.count(s) for s in sorted(set(statuses))}
    return {
        "clients": clients,
        "body_mib": round(len(body) / MIB, 2),
        "rss_idle_mib": round(idle, 1),
        "peak_rss_mib": round(server.rss_mib("VmHWM"), 1),
        "rss_after_mib": round(server.rss_mib(), 1),
        "statuses": counts,
        "seconds": round(seconds, 1),
    }


FLOOD_BODIES = 12
"""Distinct flood bodies per flooding client, made before the clock starts (and sent in turn):
making them as it goes would take the client's CPU from the server on a small host."""


def flood_long(server: Server, clients: int, seconds: float) -> dict[str, Any]:
    bodies = [
        [long_body(1000, 400, seed=10_000 * (k + 1) + i) for i in range(FLOOD_BODIES)]
        for k in range(clients)
    ]
    stop = time.monotonic() + seconds
    flood_statuses: list[int] = []

    def flooder(k: int) -> None:
        i = 0
        while time.monotonic() < stop:
            body = bodies[k][i % FLOOD_BODIES]
            flood_statuses.append(_send_and_read(body, server.port, seconds + 120))
            i += 1

    threads = [threading.Thread(target=flooder, args=(k,), daemon=True) for k in range(clients)]
    for t in threads:
        t.start()
    time.sleep(1.0)
    lat, bad, i = [], 0, 0
    while time.monotonic() < stop:
        took, (status, _) = _timed(request, server, "/score", pairs_body(1, seed=50_000 + i), 600)
        lat.append(took)
        bad += status != 200
        i += 1
    for t in threads:
        t.join(seconds + 180)
    lat.sort()
    return {
        "flood_clients": clients,
        "probes": len(lat),
        "probe_p50_s": round(statistics.median(lat), 3) if lat else None,
        "probe_max_s": round(lat[-1], 3) if lat else None,
        "probe_non_200": bad,
        "flood_statuses": {str(s): flood_statuses.count(s) for s in sorted(set(flood_statuses))},
    }


def _timed(fn: Any, *args: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - start, out


def health_huge(server: Server) -> dict[str, Any]:
    text = "word " * (8 * MIB // 5 - 20)
    body = json.dumps({"cands": [text], "refs": ["a word"]}).encode()
    out: list[Any] = []
    start = time.perf_counter()
    thread = threading.Thread(
        target=lambda: out.append(_timed(request, server, "/score", body, 600)), daemon=True
    )
    thread.start()
    lat = []
    while thread.is_alive() and time.perf_counter() - start < 600:
        took, _ = _timed(get, server, "/health", 60)
        lat.append(took)
        time.sleep(0.02)
    thread.join(60)
    lat.sort()
    took, (status, _) = out[0] if out else (float("nan"), (0, None))
    return {
        "pair_s": round(took, 2),
        "pair_status": status,
        "health_probes": len(lat),
        "health_p50_ms": round(1000 * statistics.median(lat), 1),
        "health_p99_ms": round(1000 * lat[min(len(lat) - 1, int(0.99 * len(lat)))], 1),
        "health_max_ms": round(1000 * lat[-1], 1),
        "peak_rss_mib": round(server.rss_mib("VmHWM"), 1),
    }


def sigterm_pipelined(server: Server) -> dict[str, Any]:
    big = pairs_body(100, seed=77)
    small = pairs_body(1, seed=78)

    def post(body: bytes) -> bytes:
        head = f"POST /score HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: {len(body)}\r\n\r\n"
        return head.encode() + body

    sock = socket.create_connection((HOST, server.port), timeout=120)
    sock.sendall(post(big) + post(small) + post(small))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        health = get(server, "/health", 10)[1] or {}
        if health.get("in_progress", 0) >= 1:
            break
        time.sleep(0.02)
    server.proc.send_signal(signal.SIGTERM)
    raw = read_until_closed(sock)
    code = server.proc.wait(120)
    # each status line follows the previous body (JSON, no CRLF after it)
    statuses = [int(code) for code in re.findall(rb"HTTP/1\.1 (\d{3}) ", raw)]
    closes = raw.lower().count(b"connection: close")
    return {
        "sent": 3,
        "answered": statuses,
        "unanswered": 3 - len(statuses),
        "connection_close_headers": closes,
        "exit_code": code,
    }


def run_pressure(
    cases: list[str], sides: list[tuple[str, str, str]], flags: list[str], flood_seconds: float
) -> dict[str, Any]:
    """Each case on a fresh server of each side ``(label, python, pythonpath)``."""
    if "--read-timeout" in flags:  # the server's default read timeout (30 s) here
        at = flags.index("--read-timeout")
        flags = flags[:at] + flags[at + 2 :]
    plan: list[tuple[str, list[str], Any]] = []
    for name in cases:
        if name == "queue_memory":
            plan += [
                (f"queue_memory_{n}", flags, lambda s, n=n: queue_memory(s, n)) for n in (100, 250)
            ]
        elif name == "flood_long":
            plan += [
                (f"flood_long_{n}", flags, lambda s, n=n: flood_long(s, n, flood_seconds))
                for n in (1, 4)
            ]
        elif name == "health_huge":
            plan.append((name, flags, health_huge))
        elif name == "sigterm_pipelined":
            plan.append((name, flags, sigterm_pipelined))
    return run_on_sides(plan, sides)
