"""What the store's tests need to run as on Windows, here: no ``os.pread``, ``msvcrt.locking``
instead of ``fcntl.flock``, and files that cannot be renamed, replaced or deleted while open.

:func:`use_platform` ("unix" or "portable") sets a test up for one or the other. The fake
``msvcrt`` keeps Windows' per-handle locks with ``flock`` underneath (both are held per open
file, not per process) and records every call, with the file's position and size at the time.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from rust_bertscore.store import files, key_space, text_key

try:
    import fcntl
except ImportError:  # Windows: the store runs its own msvcrt path, nothing to simulate
    fcntl = None  # type: ignore[assignment]

PLATFORMS = ("unix", "portable") if fcntl is not None else ("native",)
""""unix": the store as it runs here; "portable": as on Windows, simulated on a Unix host with
flock under a fake msvcrt. Where there is no fcntl (Windows) the store's native path is the
Windows one, and it is the only one tested ("native")."""


SPACE = key_space("fp", "fp32", "6", "CPUExecutionProvider", "1.0")
"""The key space of the store tests' entries."""


def vec(seed: int, tokens: int = 5, dim: int = 8) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((tokens, dim)).astype(np.float32)


def key(i: int) -> bytes:
    return text_key(SPACE, [101, i, 102])


def seg_files(d: Path) -> list[Path]:
    return sorted((d / "segments").glob("*.seg"))


@dataclass(frozen=True)
class LockCall:
    fd: int
    mode: int
    position: int
    nbytes: int
    file_size: int


@dataclass
class FakeMsvcrt:
    """``msvcrt.locking`` as Windows has it: ``LK_NBLCK`` fails with ``EACCES`` when another
    handle holds the lock; the calls are recorded. ``refuse`` makes the next that many lock
    attempts fail as if held."""

    LK_UNLCK = 0
    LK_LOCK = 1
    LK_NBLCK = 2
    LK_RLCK = 3
    LK_NBRLCK = 4
    calls: list[LockCall] = field(default_factory=list)
    refuse: int = 0

    def locking(self, fd: int, mode: int, nbytes: int) -> None:
        call = LockCall(fd, mode, os.lseek(fd, 0, os.SEEK_CUR), nbytes, os.fstat(fd).st_size)
        self.calls.append(call)
        if mode == self.LK_UNLCK:
            fcntl.flock(fd, fcntl.LOCK_UN)
            return
        assert mode == self.LK_NBLCK, "the store polls with LK_NBLCK (LK_LOCK gives up after 10 s)"
        if self.refuse:
            self.refuse -= 1
            raise PermissionError(errno.EACCES, "Permission denied")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise PermissionError(errno.EACCES, "Permission denied") from None


class WindowsFiles:
    """``os.open``'s files under ``root`` cannot be renamed, replaced or deleted while this
    process holds them open: ``PermissionError``, as Windows (``os.open`` shares no deletion)."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = os.path.abspath(root)
        self.held: dict[int, str] = {}
        self.refused: list[str] = []
        real_open, real_close = os.open, os.close
        real_rename, real_replace, real_unlink = os.rename, os.replace, os.unlink

        def open_(path, flags, mode=0o777, *, dir_fd=None):  # type: ignore[no-untyped-def]
            fd = real_open(path, flags, mode, dir_fd=dir_fd)
            self.held[fd] = os.path.abspath(path)
            return fd

        def close_(fd: int) -> None:
            self.held.pop(fd, None)
            real_close(fd)

        def rename_(src, dst, **kw):  # type: ignore[no-untyped-def]
            self.check(src, dst)
            real_rename(src, dst, **kw)

        def replace_(src, dst, **kw):  # type: ignore[no-untyped-def]
            self.check(src, dst)
            real_replace(src, dst, **kw)

        def unlink_(path, **kw):  # type: ignore[no-untyped-def]
            self.check(path)
            real_unlink(path, **kw)

        monkeypatch.setattr(os, "open", open_)
        monkeypatch.setattr(os, "close", close_)
        monkeypatch.setattr(os, "rename", rename_)
        monkeypatch.setattr(os, "replace", replace_)
        monkeypatch.setattr(os, "unlink", unlink_)
        monkeypatch.setattr(os, "remove", unlink_)

    def check(self, *paths: object) -> None:
        for path in paths:
            full = os.path.abspath(os.fspath(path))  # type: ignore[call-overload]
            if full.startswith(self.root) and full in self.held.values():
                self.refused.append(os.path.basename(full))
                raise PermissionError(
                    errno.EACCES, "The process cannot access the file (open elsewhere)", full
                )


@dataclass
class Platform:
    name: str
    msvcrt: FakeMsvcrt | None = None
    windows: WindowsFiles | None = None


def use_platform(name: str, root: Path, monkeypatch: pytest.MonkeyPatch) -> Platform:
    """Leave things as they are ("unix"), or take away ``os.pread`` and ``fcntl`` from the store
    and give files Windows' rules under ``root`` ("portable")."""
    if name == "native":
        return Platform(name)
    if name == "unix":
        assert hasattr(os, "pread") and isinstance(files.LOCKS, files.FlockLocks)
        return Platform(name)
    fake = FakeMsvcrt()
    monkeypatch.delattr(os, "pread")
    monkeypatch.setattr(files, "LOCKS", files.MsvcrtLocks(fake, pause=0.001))
    monkeypatch.setattr(files, "OPEN_FILES_DELETABLE", False)
    return Platform(name, fake, WindowsFiles(root, monkeypatch))
