"""The boundary with the outside: how a file from outside is opened, and how a call into a
foreign parser or runtime fails.

**Opening.** :func:`open_regular` is the one way a file from outside is opened for reading: it
opens without blocking (``O_NONBLOCK``: a FIFO planted where a file is expected returns at once
instead of waiting for a writer for ever), then examines the open descriptor (``fstat``, not the
path, so what is checked is what is read) and refuses anything but a regular file, and a file
over its caller's limit, before a byte is read; reads are bounded by the file's real size.
:func:`check_regular` does the same checks without reading, for a library that must be handed
a path (ONNX Runtime, sentencepiece); it opens the file too, so a FIFO never reaches the
library.

**Recorded.** Every file opened here is digested into the active
:func:`~rust_bertscore.support.read_record.recording`, if any: a tokenizer's identity is the
files its loader read.

**Foreign calls.** Rust libraries (``tokenizers``) raise ``pyo3_runtime.PanicException``, a
``BaseException`` that ``except Exception`` does not catch, and plain ``Exception`` for
everything else; protobuf, ONNX Runtime and sentencepiece have their own types.
:func:`foreign_call` turns every such error into the caller's typed error naming the file or
text, and leaves ``KeyboardInterrupt``, ``SystemExit``, ``MemoryError`` and the package's own
errors as they are. The process stays usable: a panic unwinds out of the library call.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from ..errors import RustBertScoreError
from . import read_record

OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
    | getattr(os, "O_NOCTTY", 0)
)
"""How :func:`open_regular` opens: read only, never waiting for a FIFO's writer, never becoming
a controlling terminal, not inherited by child processes."""

NO_CAP = 1 << 50
"""``max_bytes`` (1 PiB) for a file with no size cap of its own, whose reads are bounded by what
it holds: weights read by their checked header or archive members, external data by each
tensor's length, a store segment record by record, a file hashed by its real size."""

KEEP = (KeyboardInterrupt, SystemExit, GeneratorExit, MemoryError, RustBertScoreError)
"""What :func:`foreign_call` lets through unchanged."""


def file_kind(mode: int) -> str:
    """What a file of ``st_mode`` ``mode`` is, in words.

    >>> import stat
    >>> file_kind(stat.S_IFIFO), file_kind(stat.S_IFDIR), file_kind(stat.S_IFREG)
    ('a FIFO (named pipe)', 'a directory', 'a regular file')
    """
    for test, name in (
        (stat.S_ISREG, "a regular file"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _fail(error: type[RustBertScoreError], path: Path, what: str) -> RustBertScoreError:
    return error(f"{path}: {what}")


def open_descriptor(
    path: str | os.PathLike[str],
    *,
    max_bytes: int,
    error: type[RustBertScoreError],
    follow_links: bool = True,
) -> tuple[int, int]:
    """``(descriptor, size)`` of the regular file ``path`` opened for reading, which the caller
    closes (``os.close``); the checks of :func:`open_regular`. ``follow_links=False`` refuses a
    symbolic link as the last part of the path (``O_NOFOLLOW``; a store's segments are never
    links)."""
    path = Path(path)
    flags = OPEN_FLAGS | (0 if follow_links else getattr(os, "O_NOFOLLOW", 0))
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except IsADirectoryError:
        raise _fail(error, path, "a directory, expected a regular file") from None
    except OSError as exc:  # a socket (ENXIO), a link refused (ELOOP), no permission
        try:
            mode = os.lstat(path).st_mode if not follow_links else os.stat(path).st_mode
        except OSError:
            mode = stat.S_IFREG
        if stat.S_ISLNK(mode):
            raise _fail(error, path, "a symbolic link, expected a regular file") from None
        if not stat.S_ISREG(mode):
            raise _fail(error, path, f"{file_kind(mode)}, expected a regular file") from None
        raise _fail(error, path, f"cannot be opened ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _fail(error, path, f"{file_kind(info.st_mode)}, expected a regular file")
        if info.st_size > max_bytes:
            raise _fail(error, path, f"{info.st_size} bytes, over the limit of {max_bytes} bytes")
        read_record.note_identity(path, info)  # compared with the key's files after a conversion
        try:
            read_record.note(path, fd, info.st_size)  # digested when a load is recorded
        except OSError as exc:
            raise _fail(error, path, f"cannot be read ({exc.strerror or exc})") from None
    except BaseException:
        os.close(fd)
        raise
    return fd, info.st_size


@contextlib.contextmanager
def open_regular(
    path: str | os.PathLike[str], *, max_bytes: int, error: type[RustBertScoreError]
) -> Iterator[tuple[int, int]]:
    """``(descriptor, size)`` of the regular file ``path``, opened for reading and closed on
    exit; ``error`` naming the file when it is anything but a regular file (a FIFO, a
    directory, a device), over ``max_bytes``, or cannot be opened. A missing file raises
    ``FileNotFoundError`` (callers decide what a missing file means).

    Examples
    --------
    >>> import os, tempfile
    >>> from rust_bertscore.errors import InputValueError
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     fifo = os.path.join(tmp, "config.json")
    ...     os.mkfifo(fifo)
    ...     try:
    ...         with open_regular(fifo, max_bytes=10, error=InputValueError):
    ...             pass
    ...     except InputValueError as e:
    ...         print(str(e).endswith("config.json: a FIFO (named pipe), expected a regular file"))
    True
    """
    fd, size = open_descriptor(path, max_bytes=max_bytes, error=error)
    try:
        yield fd, size
    finally:
        os.close(fd)


def read_regular(
    path: str | os.PathLike[str], *, max_bytes: int, error: type[RustBertScoreError]
) -> bytes:
    """The bytes of the regular file ``path`` (see :func:`open_regular`), read up to its real
    size: a file that grows while it is read is cut at ``max_bytes`` and refused.

    >>> import tempfile
    >>> from rust_bertscore.errors import InputValueError
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     p = Path(tmp, "f.txt"); _ = p.write_bytes(b"12345")
    ...     read_regular(p, max_bytes=5, error=InputValueError)
    b'12345'
    """
    with open_regular(path, max_bytes=max_bytes, error=error) as (fd, size):
        chunks, total = [], 0
        try:
            while total <= max_bytes:
                chunk = os.read(fd, min(max(size - total, 0), 1 << 24) or 1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
        except OSError as exc:
            raise _fail(error, Path(path), f"cannot be read ({exc.strerror or exc})") from None
    if total > max_bytes:
        raise _fail(error, Path(path), f"over the limit of {max_bytes} bytes")
    return b"".join(chunks)


@contextlib.contextmanager
def open_stream(
    path: str | os.PathLike[str], *, max_bytes: int, error: type[RustBertScoreError]
) -> Iterator[io.BufferedReader]:
    """The regular file ``path`` as a binary file object (seekable, for a reader that takes its
    bytes in pieces: a zip archive, a tensor at an offset), after the checks of
    :func:`open_regular`; closed on exit.

    >>> import tempfile
    >>> from rust_bertscore.errors import InputValueError
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     p = Path(tmp, "w.bin"); _ = p.write_bytes(b"abcdef")
    ...     with open_stream(p, max_bytes=10, error=InputValueError) as handle:
    ...         _ = handle.seek(2); handle.read(3)
    b'cde'
    """
    with (
        open_regular(path, max_bytes=max_bytes, error=error) as (fd, _size),
        os.fdopen(fd, "rb", closefd=False) as handle,
    ):
        yield handle


def check_regular(
    path: str | os.PathLike[str], *, max_bytes: int, error: type[RustBertScoreError]
) -> int:
    """The size of the regular file ``path``, for a library that reads the path itself; the
    checks of :func:`open_regular` (the file is opened, so a FIFO is refused, not waited on).

    >>> import tempfile
    >>> from rust_bertscore.errors import InputValueError
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     try:
    ...         check_regular(tmp, max_bytes=10, error=InputValueError)
    ...     except InputValueError as e:
    ...         print("a directory" in str(e))
    True
    """
    with open_regular(path, max_bytes=max_bytes, error=error) as (_fd, size):
        return size


@contextlib.contextmanager
def foreign_call(
    where: str, error: type[RustBertScoreError], keep: tuple[type[BaseException], ...] = ()
) -> Iterator[None]:
    """Run a call into a foreign library: any error it raises but :data:`KEEP` and ``keep`` (a
    Rust panic included) becomes ``error`` naming ``where``.

    >>> from rust_bertscore.errors import InputValueError
    >>> try:
    ...     with foreign_call("tokenizer.json", InputValueError):
    ...         raise BaseException("a panic from a Rust library")
    ... except InputValueError as e:
    ...     print(e)
    tokenizer.json: BaseException: a panic from a Rust library
    """
    try:
        yield
    except KEEP:
        raise
    except BaseException as exc:
        if isinstance(exc, keep):
            raise
        raise error(f"{where}: {type(exc).__name__}: {str(exc)[:500]}") from exc


PINNED_DIR = "/proc/self/fd"
"""Where Linux names a process's open descriptors: a library handed ``PINNED_DIR/N`` opens the
very file :func:`library_path` checked, whatever the path names by then."""


@contextlib.contextmanager
def library_path(
    path: str | os.PathLike[str],
    *,
    max_bytes: int,
    error: type[RustBertScoreError],
    pin: bool = True,
) -> Iterator[str]:
    """The path to hand a library that opens a file itself (tokenizers, sentencepiece, ONNX
    Runtime, OpenVINO, onnx), after the checks of :func:`open_regular`, the file held open
    until the block ends.

    With ``pin`` (and on Linux) the path is the open descriptor's (``/proc/self/fd/N``): the
    library reads the file that was checked even when the name is swapped for a FIFO or a
    link in between. ``pin=False`` hands the name itself, for a library that finds other files
    beside it (an ONNX graph's external data).

    >>> import tempfile
    >>> from rust_bertscore.errors import InputValueError
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     p = Path(tmp, "vocab.txt"); _ = p.write_text("[UNK]\\n")
    ...     with library_path(p, max_bytes=100, error=InputValueError) as name:
    ...         print(Path(name).read_text().strip())  # boundary-exempt: doctest
    [UNK]
    """
    fd, _size = open_descriptor(path, max_bytes=max_bytes, error=error)
    try:
        pinned = f"{PINNED_DIR}/{fd}"
        yield pinned if pin and os.path.exists(pinned) else str(path)
    finally:
        os.close(fd)
