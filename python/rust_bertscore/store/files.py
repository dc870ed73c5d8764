"""The embedding store's files: reads at an offset, locks, whole writes, deletions and a
process's own segment. The one module that knows how Windows differs from POSIX:

* no ``os.pread``: :func:`read_at` seeks and reads instead (callers serialise per descriptor);
* no ``fcntl``: :data:`LOCKS` takes ``msvcrt.locking`` on one byte far past the end of the file
  (Windows' locks are mandatory: a locked byte cannot be read through another handle);
* a file opened with ``os.open`` cannot be renamed or deleted while open: a new segment is
  created under its final name when renaming it fails (:class:`SegmentWriter`), a deletion
  that fails is left for a later prune (:func:`remove`), and a store closes its read handles
  after each call (:data:`OPEN_FILES_DELETABLE`);
* files open in text mode unless ``O_BINARY`` is given (:data:`O_BINARY`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..errors import InputValueError
from ..support.boundary import NO_CAP, open_descriptor
from .records import Header

O_BINARY: int = getattr(os, "O_BINARY", 0)
"""Added to every ``os.open`` of a segment: Windows opens files in text mode otherwise (it
would translate line ends); 0 elsewhere."""

OPEN_FILES_DELETABLE: bool = os.name != "nt"
"""Whether a file another handle holds open can be renamed or deleted (POSIX: yes; Windows:
no, ``os.open`` does not share deletion). Where not, a store closes its read handles at the
end of each call, so that a prune in another process can delete the segments it read."""

LOCK_OFFSET = 1 << 40
"""Where the ``msvcrt`` lock sits: one byte at 1 TiB, past the end of every segment (a writer
starts a new segment every 256 MiB, and a compacted one holds at most the store's bound, far
below that in practice)."""

_HELD = frozenset(code for code in (errno.EACCES, getattr(errno, "EDEADLOCK", None)) if code)


@dataclass(frozen=True)
class Entry:
    segment: str
    offset: int  # of the payload
    header: Header


# -- reading -----------------------------------------------------------------------------------


def next_data(fd: int, offset: int) -> int | None:
    """The first offset at or after ``offset`` that holds data, skipping a sparse file's holes
    (``SEEK_DATA``; ``offset`` itself where the OS or file system cannot say), or None when
    only a hole follows. A scan for records jumps over holes, so its time follows the bytes a
    segment really holds, not its apparent size (an 8 GiB hole took 37 s to read through).

    >>> import tempfile
    >>> with tempfile.TemporaryFile() as f:
    ...     _ = f.write(b"abc"); f.flush()
    ...     next_data(f.fileno(), 1)
    1
    """
    seek_data = getattr(os, "SEEK_DATA", None)
    if seek_data is None:
        return offset
    try:
        return os.lseek(fd, offset, seek_data)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            return None  # nothing but a hole to the end
        return offset


def _hole_within(fd: int, offset: int, n: int) -> bool:
    """Whether ``[offset, offset + n)`` of a sparse file holds a hole (``SEEK_HOLE``; False
    where the OS cannot say). A record is written whole, so a hole in one means the file was
    forged or damaged: a 9 GB sparse segment holding 8 KiB declared a 6 GB record, which was
    read into memory."""
    seek_hole = getattr(os, "SEEK_HOLE", None)
    if seek_hole is None:
        return False
    try:
        return os.lseek(fd, offset, seek_hole) < offset + n
    except OSError:
        return False


def read_at(fd: int, n: int, offset: int) -> bytes:
    """Up to ``n`` bytes of ``fd`` from ``offset`` (fewer only at the end of the file).

    ``os.pread`` where the OS has it: one system call, the descriptor's position untouched.
    Elsewhere (Windows) :func:`seek_read`, which moves the position: whoever reads a
    descriptor this way serialises its reads (``EmbeddingStore`` holds its lock, a ``Survey``'s
    descriptors are its own). ``benches/store_reads.py`` measures the two.

    Examples
    --------
    >>> import os, tempfile
    >>> from rust_bertscore.store.files import read_at
    >>> with tempfile.TemporaryFile() as f:
    ...     _ = f.write(b"0123456789"); f.flush()
    ...     read_at(f.fileno(), 4, 3), read_at(f.fileno(), 4, 8)
    (b'3456', b'89')
    """
    pread = getattr(os, "pread", None)
    if pread is None:
        return seek_read(fd, n, offset)
    data: bytes = pread(fd, n, offset)
    if len(data) == n or not data:
        return data  # the usual case: one call
    parts, got = [data], len(data)
    while got < n:  # a short read (Linux reads at most 2 GiB at once)
        more = pread(fd, n - got, offset + got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)


def read_within(fd: int, n: int, offset: int) -> bytes | None:
    """The ``n`` bytes of ``fd`` at ``offset``, or None when the file does not hold them.

    What a record declares is checked against the real size of the open file (``os.fstat``)
    and its holes before anything is read or allocated: a segment cut short (or swapped for a
    shorter file) since it was indexed, or sparse where the record lies, never makes a read ask
    for more memory than the file holds."""
    if n < 0 or offset < 0 or offset + n > os.fstat(fd).st_size:
        return None
    if n and _hole_within(fd, offset, n):  # never written: damage, not a record
        return None
    data = read_at(fd, n, offset)
    return data if len(data) == n else None


def seek_read(fd: int, n: int, offset: int) -> bytes:
    """:func:`read_at` without ``os.pread``: ``os.lseek`` to ``offset``, then ``os.read``
    until ``n`` bytes or the end of the file. Moves the descriptor's position."""
    os.lseek(fd, offset, os.SEEK_SET)
    parts: list[bytes] = []
    got = 0
    while got < n:
        more = os.read(fd, n - got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)


# -- locks -------------------------------------------------------------------------------------


class Locks(Protocol):
    """An exclusive advisory lock on an open file, released by :meth:`unlock` or by closing
    the file; held per open file (another descriptor of the same file, in this process or
    another, cannot take it)."""

    name: str

    def lock(self, fd: int, wait: bool) -> bool: ...

    def unlock(self, fd: int) -> None: ...


class FlockLocks:
    """POSIX: ``fcntl.flock`` on the whole file."""

    name = "flock"

    def __init__(self, fcntl: Any) -> None:
        self.fcntl = fcntl

    def lock(self, fd: int, wait: bool) -> bool:
        try:
            self.fcntl.flock(fd, self.fcntl.LOCK_EX | (0 if wait else self.fcntl.LOCK_NB))
        except BlockingIOError:
            return False
        return True

    def unlock(self, fd: int) -> None:
        self.fcntl.flock(fd, self.fcntl.LOCK_UN)


class MsvcrtLocks:
    """Windows: ``msvcrt.locking`` on the byte at :data:`LOCK_OFFSET`, past the end of the
    file, so that readers of the data are never blocked by Windows' mandatory locks. Waiting
    polls every ``pause`` seconds (``LK_LOCK`` would give up after 10 s)."""

    name = "msvcrt"

    def __init__(self, msvcrt: Any, pause: float = 0.05) -> None:
        self.msvcrt = msvcrt
        self.pause = pause

    def _at_lock_byte(self, fd: int, mode: int) -> None:
        # locking() acts from the file position; put it back after (the store's writer appends,
        # its readers seek before each read, but leave no surprise behind).
        position = os.lseek(fd, 0, os.SEEK_CUR)
        os.lseek(fd, LOCK_OFFSET, os.SEEK_SET)
        try:
            self.msvcrt.locking(fd, mode, 1)
        finally:
            os.lseek(fd, position, os.SEEK_SET)

    def lock(self, fd: int, wait: bool) -> bool:
        while True:
            try:
                self._at_lock_byte(fd, self.msvcrt.LK_NBLCK)
                return True
            except OSError as e:
                if e.errno not in _HELD:
                    raise
            if not wait:
                return False
            time.sleep(self.pause)

    def unlock(self, fd: int) -> None:
        self._at_lock_byte(fd, self.msvcrt.LK_UNLCK)


class NoLocks:
    """Neither ``fcntl`` nor ``msvcrt`` (e.g. WASI): every lock is granted. Then a prune
    cannot tell a segment being written from an idle one; run one writing process per store,
    or prune only while no other process writes (docs/store.md)."""

    name = "none"

    def lock(self, fd: int, wait: bool) -> bool:
        return True

    def unlock(self, fd: int) -> None:
        return None


def default_locks() -> Locks:
    """``flock`` where ``fcntl`` exists, else ``msvcrt.locking``, else no locks."""
    try:
        import fcntl
    except ImportError:
        pass
    else:
        return FlockLocks(fcntl)
    try:
        import msvcrt
    except ImportError:
        return NoLocks()
    return MsvcrtLocks(msvcrt)


LOCKS: Locks = default_locks()
"""The lock backend of every store in this process."""


def try_lock(fd: int, wait: bool = False) -> bool:
    """Take the exclusive lock of ``fd``: True when taken, False when another holder has it
    (only without ``wait``)."""
    return LOCKS.lock(fd, wait)


def unlock(fd: int) -> None:
    """Release the lock taken by :func:`try_lock`."""
    LOCKS.unlock(fd)


def release(fd: int) -> None:
    """Unlock (Windows may release the locks of a closed handle only later) and close."""
    with contextlib.suppress(OSError):
        unlock(fd)
    with contextlib.suppress(OSError):
        os.close(fd)


def open_segment(path: Path) -> int | None:
    """A read descriptor of the segment at ``path``, or None when it is gone or is not a
    regular file.

    Anyone who can write in a shared store's directory may put anything there: a directory, a
    FIFO, a socket or a symbolic link named ``*.seg`` is never read. The open does not follow a
    link (``O_NOFOLLOW``) and does not wait (``O_NONBLOCK``: opening a FIFO would wait for a
    writer for ever), and the descriptor itself is checked (``os.fstat``), so an entry swapped
    after the listing is refused too (``support.boundary.open_descriptor``). (Windows has
    neither flag; it cannot open a directory with ``os.open``.)"""
    try:
        fd, _size = open_descriptor(
            path, max_bytes=NO_CAP, error=InputValueError, follow_links=False
        )
    except (OSError, InputValueError):
        return None
    return fd


def segment_sizes(segments: Path) -> dict[str, int]:
    """Name and size of every segment file in ``segments`` (none when it cannot be listed);
    entries that are not regular files (directories, FIFOs, links, ...) are left out.

    Sizes come from ``os.lstat``, not ``DirEntry.stat()``: on Windows that is the directory's
    copy, which lags while another process appends."""
    try:
        with os.scandir(segments) as it:
            names = [e.name for e in it if e.name.endswith(".seg") and not e.name.startswith(".")]
    except OSError:
        return {}
    sizes = {}
    for name in names:
        with contextlib.suppress(OSError):  # pruned since the listing
            found = os.lstat(segments / name)
            if stat.S_ISREG(found.st_mode):
                sizes[name] = found.st_size
    return sizes


# -- writing and deleting ----------------------------------------------------------------------


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError(errno.EIO, "short write")
        view = view[written:]


def remove(path: Path) -> bool:
    """Delete ``path``: True when it is gone, False when it is still open elsewhere (Windows
    refuses with ``PermissionError``) and is left for a later prune."""
    try:
        path.unlink()
    except FileNotFoundError:
        return True
    except PermissionError:
        return False
    return True


_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | O_BINARY


class SegmentWriter:
    """This process's open segment: created under a temporary name, locked, then renamed into
    place, so that it never shows unlocked under its final name. Where an open file cannot be
    renamed (Windows) it is created under its final name and locked before its first byte: a
    ``Survey`` never takes an empty segment for an idle one."""

    def __init__(self, segments: Path) -> None:
        tag = uuid.uuid4().hex[:12]
        self.name = f"{time.time_ns():x}-{os.getpid()}-{tag}.seg"
        self.path = segments / self.name
        tmp = segments / f".{tag}.seg.tmp"
        fd = os.open(tmp, _CREATE, 0o666)
        try:
            try_lock(fd)
            os.rename(tmp, self.path)
        except PermissionError:
            release(fd)
            with contextlib.suppress(OSError):
                tmp.unlink()
            fd = self._create_in_place()
        except BaseException:
            release(fd)
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        self.fd = fd
        self.size = 0

    def _create_in_place(self) -> int:
        fd = os.open(self.path, _CREATE, 0o666)
        try:
            try_lock(fd, wait=True)  # empty until locked: no Survey locks an empty segment
        except BaseException:
            release(fd)
            with contextlib.suppress(OSError):
                self.path.unlink()
            raise
        return fd

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
        """Unlock and close; a segment left empty (its first write failed) is deleted, as no
        prune would ever take it for idle."""
        release(self.fd)
        if self.size == 0:
            remove(self.path)
