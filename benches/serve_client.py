"""A scoring server started for a bench, and the HTTP calls the benches make of it, on loopback
only (127.0.0.1): shared by :mod:`benches.serve_abuse` and :mod:`benches.serve_pressure`."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

HOST = "127.0.0.1"  # loopback only, always
ROOT = Path(__file__).resolve().parents[1]


VOCAB = [
    "the",
    "cat",
    "sat",
    "on",
    "a",
    "warm",
    "mat",
    "while",
    "rain",
    "fell",
    "outside",
    "and",
    "an",
    "old",
    "dog",
    "slept",
]
"""The words bench texts are drawn from."""


class Server:
    """``rust-bertscore serve`` on a free port of 127.0.0.1, its stderr counted."""

    def __init__(
        self,
        pythonpath: str,
        flags: list[str],
        nofile: int | None = None,
        python: str = sys.executable,
    ) -> None:
        env = {**os.environ, "PYTHONPATH": pythonpath, "PYTHONUNBUFFERED": "1"}
        if not pythonpath:  # the package installed in ``python``'s environment
            env.pop("PYTHONPATH")
        known = subprocess.run(
            [python, "-m", "rust_bertscore", "serve", "--help"],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        ).stdout
        kept: list[str] = []
        for i, flag in enumerate(flags):
            if flag.startswith("--") and flag in known:
                kept.append(flag)
                if i + 1 < len(flags) and not flags[i + 1].startswith("--"):
                    kept.append(flags[i + 1])
        self.flags = kept

        def limit() -> None:
            if nofile is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        cmd = [python, "-m", "rust_bertscore", "serve", "--host", HOST, "--port", "0"]
        self.proc = subprocess.Popen(
            [*cmd, "-q", *kept],
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            env=env,
            preexec_fn=limit,
        )
        self.stderr_bytes = 0
        self.port = 0
        ready = threading.Event()

        def pump() -> None:
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                self.stderr_bytes += len(line)
                if b"listening on http://" in line and not self.port:
                    self.port = int(line.rsplit(b":", 1)[1])
                    ready.set()

        threading.Thread(target=pump, daemon=True).start()
        if not ready.wait(180):
            self.stop()
            raise SystemExit("the server did not start")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and get(self, "/health", 5)[0] != 200:
            time.sleep(0.2)

    def rss_mib(self, field: str = "VmRSS") -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self) -> int | None:
        self.proc.terminate()
        try:
            return self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(10)


def request(
    server: Server, path: str, body: bytes | None, timeout: float, headers: dict | None = None
) -> tuple[int, Any]:
    """(status, JSON or None) of one urllib request; status 0 with the error when it failed."""
    req = urllib.request.Request(f"http://{HOST}:{server.port}{path}", data=body)
    for k, v in (headers or {"Content-Type": "application/json"}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            raw, status = resp.read(), resp.status
    except urllib.error.HTTPError as e:
        raw, status = e.read(), e.code
    except (OSError, urllib.error.URLError) as e:
        return 0, type(e).__name__ + ": " + str(e)[:60]
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, None


def get(server: Server, path: str, timeout: float = 60) -> tuple[int, Any]:
    return request(server, path, None, timeout)


def timed(fn: Any, *args: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - start, out


def pairs_body(n: int, seed: int, words: int = 20) -> bytes:
    import random

    rng = random.Random(seed)
    texts = [" ".join(rng.choices(VOCAB, k=words)) + f" {seed}.{i}" for i in range(2 * n)]
    return json.dumps({"cands": texts[:n], "refs": texts[n:]}).encode()


def run_on_sides(
    plan: list[tuple[str, list[str], Any]], sides: list[tuple[str, str, str]]
) -> dict[str, Any]:
    """Each case ``(name, flags, case)`` of ``plan`` on a fresh server of each side
    ``(label, python, pythonpath)``: ``case(server)``'s report (or how it failed) under
    ``"<name> <label>"``, printed as it comes."""
    report: dict[str, Any] = {}
    for name, flags, case in plan:
        for label, python, pythonpath in sides:
            server = Server(pythonpath, flags, python=python)
            try:
                got = case(server)
            except Exception as e:
                got = {"failed": f"{type(e).__name__}: {e}"}
            finally:
                if server.proc.poll() is None:
                    server.stop()
            report[f"{name} {label}"] = got
            print(f"{name} {label}: {json.dumps(got)}", flush=True)
    return report


def read_until_closed(sock: Any) -> bytes:
    """Everything the server sends on ``sock`` until it closes it (or the connection fails)."""
    raw = b""
    try:
        while chunk := sock.recv(65536):
            raw += chunk
    except OSError:
        pass
    sock.close()
    return raw
