"""Atomic file writes: a reader sees the old file or the whole new one, never half of it.

Portable: on Windows a file another process has open cannot be replaced for that moment
(:func:`replace` retries) and only a handle that may write can be flushed (:func:`fsync_path`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path


def _read_umask() -> int:
    # Read once at import: os.umask can only be read by setting it, which is not thread-safe.
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _read_umask()

REPLACE_RETRIES = 4 if os.name == "nt" else 0
"""Times :func:`replace` tries again after a ``PermissionError`` (50, 100, 200, 400 ms apart):
Windows refuses to replace a file that a reader or a virus scanner holds open for a moment.
Elsewhere that error means no permission, and it is raised at once."""


def replace(src: str | Path, dst: str | Path) -> None:
    """``os.replace(src, dst)``, tried :data:`REPLACE_RETRIES` more times on ``PermissionError``."""
    for attempt in range(REPLACE_RETRIES + 1):
        try:
            os.replace(src, dst)
            return
        except PermissionError:
            if attempt == REPLACE_RETRIES:
                raise
            time.sleep(0.05 * 2**attempt)


@contextlib.contextmanager
def atomic_path(target: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; on success it replaces ``target`` atomically.

    On an exception (Ctrl-C included) the temporary file is removed and ``target`` is untouched.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        with open(
            tmp_path, "rb+"
        ) as f:  # boundary-exempt: fsync of the file this package just wrote
            os.fsync(f.fileno())
        # mkstemp creates the file 0600; give it the permissions a plain open() would.
        os.chmod(tmp_path, 0o666 & ~_UMASK)
        replace(tmp_path, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp_path.unlink()
        raise


def write_text_atomic(target: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``target`` atomically."""
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")


def copy_file_atomic(src: str | Path, target: str | Path) -> None:
    """Copy ``src`` to ``target`` atomically (nothing to do when they are the same file)."""
    target = Path(target)
    if target.exists() and os.path.samefile(src, target):
        return
    with atomic_path(target) as tmp:
        shutil.copyfile(src, tmp)


def _fsync_open(path: Path, flags: int) -> None:
    fd = os.open(path, flags)  # boundary-exempt: fsync of what this package just wrote
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_path(path: Path) -> None:
    """Flush the file at ``path`` to disk: through a read-only descriptor, or, where that
    fails (Windows: ``FlushFileBuffers`` needs write access), one that may write."""
    try:
        _fsync_open(path, os.O_RDONLY)
    except OSError:
        if path.is_dir():
            raise
        _fsync_open(path, os.O_RDWR | getattr(os, "O_BINARY", 0))


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):  # directories cannot be opened on Windows
        fsync_path(path)


def write_files_atomic(out_path: str | os.PathLike[str], write: Callable[[Path], None]) -> Path:
    """Atomically write a file that may come with companion files (an ONNX graph and its
    external data): let ``write`` produce ``out_path`` (plus any external-data files) in a
    private temporary directory beside it, then move the results into place with
    ``os.replace``.

    Data files move first and the graph last (after removing an old graph, so an old graph never
    pairs with new data). On any error nothing is left behind and ``out_path`` is untouched.
    """
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        staged = staging / out.name
        write(staged)
        if not staged.is_file():
            raise OSError(f"{staged}: the writer produced no file")
        extras = sorted(p for p in staging.iterdir() if p != staged)
        for path in [*extras, staged]:
            fsync_path(path)
        if extras:
            out.unlink(missing_ok=True)
            for path in extras:
                replace(path, out.parent / path.name)
        replace(staged, out)
        _fsync_dir(out.parent)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out
