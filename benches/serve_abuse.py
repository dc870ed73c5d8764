#!/usr/bin/env python3
"""The scoring server under hostile and heavy traffic, on loopback only (127.0.0.1).

Starts ``rust-bertscore serve`` (a subprocess on a free port of 127.0.0.1, ``--pythonpath``
naming the package to run: this tree's ``python`` by default, another checkout's to measure
the "before") and measures, each case bounded in time and in connections:

1. **stalled connections**: ``--stalled`` connections that send nothing, half a request line,
   or headers without their body; how many the server has closed ``--stall-wait`` seconds
   later, and how long ``/health`` takes meanwhile;
2. **out of descriptors**: the server run with an open-files limit of 256, and 300 stalled
   connections: whether ``/health`` answers within 5 s, and the bytes written to stderr in 10 s;
3. **an orphaned large request**: ``--large`` pairs whose client leaves after 1 s, then one
   pair: its latency, and the server's RSS before and after;
4. **one pair behind a large request** (whose client stays): the pair's latency;
5. **a flood**: ``--flood-clients`` clients sending one-pair requests for ``--flood-seconds``:
   requests/s, non-200 answers, and ``/health`` latency meanwhile;
6. **bad bodies**: the status and whether the answer is JSON, for each;
7. **memory**: RSS idle, and the peak (VmHWM) after one text at the 8 MiB body limit;
8. **the cache filled**: RSS once the default cache (512 MiB) is about full (``cache_bytes``
   of ``/health``; not on a server that does not report it).

9. **under pressure** (``benches/serve_pressure.py``): queue memory at 100 and 250 maximal
   bodies, one-pair latency under a long-text flood (1 and 4 clients), ``/health`` while an
   8 M-character pair is scored, pipelined requests at SIGTERM; each before
   (``--before-python``) and after.
10. **one hostile client** (``benches/serve_hostile.py``, issue 58): headers-only bodies from
   one address and from eight, texts without whitespace, Hangul-and-``!`` small requests,
   nested-array bodies, 1-byte chunks, a slow first request, SIGTERM mid-upload; an honest
   client's latency and ``/health`` meanwhile, before and after.

Run: ``python -m benches.serve_abuse [--pythonpath DIR] [--before-python PY
[--before-pythonpath DIR]] [--only flood,orphan,hostile] [--json PATH]``
(``make bench-serve-abuse``). Flags the server does not know (an older checkout) are left out.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

from .serve_client import HOST, ROOT, Server, get, pairs_body, request, timed
from .serve_hostile import ATTACKS, run_hostile


def raw_post(server: Server, body: bytes) -> socket.socket:
    sock = socket.create_connection((HOST, server.port), timeout=30)
    head = f"POST /score HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: {len(body)}\r\n\r\n"
    sock.sendall(head.encode() + body)
    return sock


def closed_by_server(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        while sock.recv(65536):
            pass
        return True  # EOF
    except BlockingIOError:
        return False
    except OSError:
        return True


def stalled(server: Server, n: int, wait: float) -> dict[str, Any]:
    kinds = [b"", b"POST /sco", b"POST /score HTTP/1.1\r\nContent-Length: 100\r\n\r\n"]
    socks = []
    for i in range(n):
        sock = socket.create_connection((HOST, server.port), timeout=10)
        sock.sendall(kinds[i % 3])
        socks.append(sock)
    health_s, (status, _) = timed(get, server, "/health", 60)
    time.sleep(wait)
    closed = sum(closed_by_server(s) for s in socks)
    for s in socks:
        s.close()
    return {
        "stalled": n,
        "closed_by_server": closed,
        "after_s": wait,
        "health_s": round(health_s, 3),
        "health": status,
    }


def out_of_descriptors(pythonpath: str, flags: list[str]) -> dict[str, Any]:
    server = Server(pythonpath, flags, nofile=256)
    try:
        before = server.stderr_bytes
        socks = []
        for _ in range(300):
            try:
                socks.append(socket.create_connection((HOST, server.port), timeout=5))
            except OSError:
                break
        health_s, (status, _) = timed(get, server, "/health", 5)
        time.sleep(max(0.0, 10 - health_s))
        logged = server.stderr_bytes - before
        for s in socks:
            s.close()
        return {
            "connections": len(socks),
            "health": status,
            "health_s": round(health_s, 3),
            "stderr_bytes_10s": logged,
        }
    finally:
        server.stop()


def orphan(server: Server, large: int) -> dict[str, Any]:
    rss_before = server.rss_mib()
    sock = raw_post(server, pairs_body(large, seed=1))
    time.sleep(1.0)
    sock.close()
    one, (status, _) = timed(request, server, "/score", pairs_body(1, seed=2), 600)
    return {
        "large_pairs": large,
        "one_pair_after_s": round(one, 3),
        "status": status,
        "rss_before_mib": round(rss_before, 1),
        "rss_after_mib": round(server.rss_mib(), 1),
    }


def behind(server: Server, large: int) -> dict[str, Any]:
    sock = raw_post(server, pairs_body(large, seed=3))
    time.sleep(0.5)
    one, (status, _) = timed(request, server, "/score", pairs_body(1, seed=4), 600)
    sock.close()
    time.sleep(1.0)
    return {"large_pairs": large, "one_pair_s": round(one, 3), "status": status}


def flood(server: Server, clients: int, seconds: float) -> dict[str, Any]:
    stop = time.monotonic() + seconds
    counts = {"ok": 0, "other": 0}
    lock = threading.Lock()

    def client(k: int) -> None:
        i = 0
        while time.monotonic() < stop:
            status, _ = request(server, "/score", pairs_body(1, seed=1000 * k + i), 60)
            i += 1
            with lock:
                counts["ok" if status == 200 else "other"] += 1

    threads = [threading.Thread(target=client, args=(k,), daemon=True) for k in range(clients)]
    for t in threads:
        t.start()
    time.sleep(seconds / 2)
    health_s, _ = timed(get, server, "/health", 60)
    for t in threads:
        t.join(120)
    return {
        "clients": clients,
        "requests_per_s": round((counts["ok"] + counts["other"]) / seconds, 1),
        "non_200": counts["other"],
        "health_s": round(health_s, 3),
    }


BAD = {
    "deep nesting": (b"[" * 100_000 + b"]" * 100_000, None, "/score"),
    "5,000-digit integer": (b'{"cands": [' + b"7" * 5000 + b'], "refs": ["a"]}', None, "/score"),
    "duplicate key": (b'{"cands": ["a"], "refs": ["b"], "cands": ["c"]}', None, "/score"),
    "UTF-16 body": ('{"cands": ["a"], "refs": ["b"]}'.encode("utf-16"), None, "/score"),
    "gzip on a plain body": (b'{"cands": ["a"], "refs": ["b"]}', "gzip", "/score"),
    "POST /score/": (b'{"cands": ["a"], "refs": ["b"]}', None, "/score/"),
    "9 MiB body (urllib)": (b'{"cands": ["' + b"a " * (9 << 19) + b'"]}', None, "/score"),
}


def bad_bodies(server: Server) -> dict[str, Any]:
    out = {}
    for name, (body, encoding, path) in BAD.items():
        headers = {"Content-Type": "application/json"}
        if encoding:
            headers["Content-Encoding"] = encoding
        status, answer = request(server, path, body, 60, headers)
        out[name] = f"{status} {'JSON' if isinstance(answer, dict) else repr(answer)[:50]}"
    return out


def memory(server: Server) -> dict[str, Any]:
    idle = server.rss_mib()
    text = "word " * ((8 << 20) // 5 - 20)
    body = json.dumps({"cands": [text], "refs": ["a word"]}).encode()
    status, _ = request(server, "/score", body, 600)
    return {
        "rss_idle_mib": round(idle, 1),
        "one_text_at_body_limit": status,
        "peak_rss_mib": round(server.rss_mib("VmHWM"), 1),
    }


def cache_fill(server: Server, large: int, most: int = 8) -> dict[str, Any]:
    """RSS once the cache is (nearly) full: requests of ``large`` new pairs of 40 words."""
    limit = 512 * 1024 * 1024
    sent = 0
    while sent < most:
        status, _ = request(server, "/score", pairs_body(large, seed=100 + sent, words=40), 600)
        sent += 1
        health = get(server, "/health")[1] or {}
        if status != 200 or health.get("cache_bytes", limit) >= 0.9 * limit:
            break
    return {
        "requests": sent,
        "cache_mib": round(health.get("cache_bytes", 0) / 2**20, 1),
        "rss_mib": round(server.rss_mib(), 1),
        "peak_rss_mib": round(server.rss_mib("VmHWM"), 1),
    }


PRESSURE = ["sigterm_pipelined", "health_huge", "flood_long", "queue_memory"]
"""The cases of :mod:`benches.serve_pressure` (issue 47), before and after."""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pythonpath", default=str(ROOT / "python"))
    ap.add_argument("--stalled", type=int, default=200)
    ap.add_argument("--stall-wait", type=float, default=8.0)
    ap.add_argument("--large", type=int, default=1024)
    ap.add_argument("--flood-clients", type=int, default=32)
    ap.add_argument("--flood-seconds", type=float, default=5.0)
    ap.add_argument(
        "--before-python",
        help="a Python whose environment has the package to compare against (e.g. "
        "another checkout's .venv/bin/python): the pressure cases run on it, then on this tree",
    )
    ap.add_argument(
        "--before-pythonpath",
        default="",
        help="with --before-python: the PYTHONPATH of the package to compare against (e.g. "
        "another checkout's python/, with a built extension in it)",
    )
    ap.add_argument("--pressure-seconds", type=float, default=30.0)
    ap.add_argument("--hostile-seconds", type=float, default=15.0)
    ap.add_argument("--only", help="comma-separated cases to run (default: all)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    flags = ["--read-timeout", "5", "--max-pairs", str(args.large)]
    report: dict[str, Any] = {"pythonpath": args.pythonpath}
    cases: list[tuple[str, Any]] = [
        ("memory", memory),
        ("bad_bodies", bad_bodies),
        ("stalled", lambda s: stalled(s, args.stalled, args.stall_wait)),
        ("behind_large", lambda s: behind(s, args.large)),
        ("orphan", lambda s: orphan(s, args.large)),
        ("flood", lambda s: flood(s, args.flood_clients, args.flood_seconds)),
        ("cache_fill", lambda s: cache_fill(s, args.large)),
    ]
    only = set(args.only.split(",")) if args.only else None
    cases = [(name, case) for name, case in cases if only is None or name in only]
    pressure = [n for n in PRESSURE if only is None or n in only]
    sides = [("after", sys.executable, args.pythonpath)]
    if args.before_python:
        sides.insert(0, ("before", args.before_python, args.before_pythonpath))
    if pressure:
        from .serve_pressure import run_pressure

        report.update(run_pressure(pressure, sides, flags, args.pressure_seconds))
        if args.json:
            args.json.write_text(json.dumps(report, indent=2))
    if only is None or only & {"hostile", *ATTACKS}:
        report.update(run_hostile(sides, args.hostile_seconds, only))
        if args.json:
            args.json.write_text(json.dumps(report, indent=2))
    if not cases and only is not None and "out_of_descriptors" not in only:
        return
    server = Server(args.pythonpath, flags)
    report["flags"] = server.flags
    try:
        for name, case in cases:
            if server.proc.poll() is not None:  # it died in the case before: a fresh one
                server = Server(args.pythonpath, flags)
            try:
                report[name] = case(server)
            except Exception as e:
                report[name] = {"failed": f"{type(e).__name__}: {e}"}
            if server.proc.poll() is not None:
                report[name]["server_exited"] = server.proc.returncode
            print(f"{name}: {json.dumps(report[name])}", flush=True)
    finally:
        report["exit_code"] = server.stop()
    if only is None or "out_of_descriptors" in only:
        report["out_of_descriptors"] = out_of_descriptors(args.pythonpath, flags)
    for key in ("exit_code", "out_of_descriptors"):
        if key in report:
            print(f"{key}: {json.dumps(report[key])}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
