"""Processes of the clusters the ``cluster`` tests start: found through /proc by their parent,
ended by their own ids (never by name), so that nothing else on the machine is touched."""

from __future__ import annotations

import os
import signal
import socket
import time
from collections.abc import Iterable


def free_port() -> int:
    """A TCP port free on the loopback interface now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not count)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def children(parent: int) -> list[tuple[int, str]]:
    """(pid, command line) of the processes whose parent is ``parent``."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid != parent:
                continue
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
        except (OSError, ValueError, IndexError):
            continue
        out.append((int(name), cmd))
    return out


def descendants(root: int) -> set[int]:
    """Every process below ``root`` (children, their children, ...)."""
    found: set[int] = set()
    todo = [root]
    while todo:
        for pid, _ in children(todo.pop()):
            if pid not in found:
                found.add(pid)
                todo.append(pid)
    return found


def end(pids: Iterable[int], grace: float = 10.0) -> list[int]:
    """SIGTERM ``pids``, then SIGKILL those still running after ``grace`` seconds; returns
    the ones that had to be killed."""
    pids = [p for p in pids if alive(p)]
    for pid in pids:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.2)
    killed = [p for p in pids if alive(p)]
    for pid in killed:
        _signal(pid, signal.SIGKILL)
    return killed


def _signal(pid: int, sig: signal.Signals) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass
