"""The embedding store's files: locks, whole writes, and a process's own segment."""

from __future__ import annotations

import contextlib
import errno
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from .records import Header

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no locks, one process per store
    fcntl = None  # type: ignore[assignment]


@dataclass(frozen=True)
class Entry:
    segment: str
    offset: int  # of the payload
    header: Header


def try_lock(fd: int, wait: bool = False) -> bool:
    if fcntl is None:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        return False
    return True


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError(errno.EIO, "short write")
        view = view[written:]


class SegmentWriter:
    """This process's open segment: created under a temporary name, locked, renamed."""

    def __init__(self, segments: Path) -> None:
        tag = uuid.uuid4().hex[:12]
        tmp = segments / f".{tag}.seg.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o666)
        try:
            try_lock(fd)
            self.name = f"{time.time_ns():x}-{os.getpid()}-{tag}.seg"
            os.rename(tmp, segments / self.name)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        self.fd = fd
        self.size = 0

    def append(self, data: bytes) -> int:
        """Append ``data``; returns the offset it starts at. A failed write is cut off again
        (best effort) so no torn record stays behind."""
        start = self.size
        try:
            write_all(self.fd, data)
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, start)
            raise
        self.size += len(data)
        return start

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)
