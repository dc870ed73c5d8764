"""SHA-256 digests of files, hashed once per process: what the graph caches record in their
manifests and check before a cached file is used (``models.graph_cache``,
``models.openvino_graphs``; docs/caches.md gives the cost)."""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from pathlib import Path

from ..errors import InputValueError
from . import read_record
from .boundary import NO_CAP, open_stream

_HASHED: dict[tuple[str, int, int, int, int, int], str] = {}
"""This process's digests of files it hashed, by path, device, inode, size, modification and
change time (:func:`file_sha256`): never written to disk, so every process hashes again."""

_HASHED_MAX = 1024
"""Digests :data:`_HASHED` keeps (one per cached graph file used); past it, it starts again."""

_HASHED_LOCK = threading.Lock()


def file_sha256(path: Path) -> str:
    """SHA-256 hex digest of the bytes of the file ``path``, hashed once per process.

    The digest is kept for this process only, keyed by the path and what ``fstat`` says of the
    open file (device, inode, size, modification and change times, read before its bytes): a
    file replaced or rewritten since gets a new key and is hashed again, and a new process
    hashes every file once. Nothing is memoised on disk, where whoever can replace the file
    could replace the memo too.

    Raises
    ------
    InputValueError
        When the file is not a regular file or cannot be read (``support.boundary``);
        ``FileNotFoundError`` when it is missing.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from rust_bertscore.support.digests import file_sha256
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = Path(tmp) / "f.bin"
    ...     _ = path.write_bytes(b"abc")
    ...     file_sha256(path)[:16]
    'ba7816bf8f01cfea'
    """
    # The boundary's open: a FIFO put in a file's place is refused at once.
    with open_stream(path, max_bytes=NO_CAP, error=InputValueError) as handle:
        info = os.fstat(handle.fileno())
        key = (
            os.path.abspath(path),
            info.st_dev,
            info.st_ino,
            info.st_size,
            info.st_mtime_ns,
            info.st_ctime_ns,
        )
        with _HASHED_LOCK:
            known = _HASHED.get(key)
        if known is not None:
            return known
        digest = hashlib.sha256()
        while chunk := handle.read(8 << 20):
            digest.update(chunk)
    value = digest.hexdigest()
    with _HASHED_LOCK:
        if len(_HASHED) >= _HASHED_MAX:
            _HASHED.clear()
        _HASHED[key] = value
    return value


def file_stamp(path: Path) -> list[str | int]:
    """What a memo of a file's digest is keyed on: its resolved path, device, inode, size,
    modification and change times. The change time cannot be set back (``os.utime`` sets the
    modification time only), so a file rewritten in place with its old size and mtime gets a
    new stamp and is hashed again.

    Raises
    ------
    OSError
        When the file is missing, a dangling link or a link loop (``RuntimeError`` of
        ``Path.resolve`` turned into ``OSError``).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = Path(tmp) / "f.bin"
    ...     _ = path.write_bytes(b"abc")
    ...     len(file_stamp(path)), file_stamp(path)[3]
    (6, 3)
    """
    try:
        real = path.resolve(strict=True)
    except RuntimeError as error:  # a symlink loop
        raise OSError(f"{path}: {error}") from None
    return [str(real), *read_record.stat_identity(real.stat())]


def stamp_identity(stamp: list[str | int]) -> list[int]:
    """The identity part of a :func:`file_stamp` (device, inode, size, modification and change
    times): what ``read_record.opened_files`` records of a file that was opened."""
    return [int(v) for v in stamp[1:]]


def file_sha256s(paths: Sequence[Path]) -> dict[str, str]:
    """``{file name: SHA-256}`` of ``paths`` (:func:`file_sha256`), as the cache manifests
    record the files of an entry.

    >>> import tempfile
    >>> from pathlib import Path
    >>> from rust_bertscore.support.digests import file_sha256s
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = Path(tmp) / "model.onnx"
    ...     _ = path.write_bytes(b"")
    ...     file_sha256s([path])["model.onnx"][:16]
    'e3b0c44298fc1c14'
    """
    return {path.name: file_sha256(path) for path in paths}


def sha256s_match(paths: Sequence[Path], recorded: object) -> bool:
    """Whether ``recorded`` (a manifest's ``sha256``) names exactly the files ``paths`` and
    each one's digest (:func:`file_sha256`); False for anything else: no record (a manifest
    written before digests were recorded), another shape, a file missing or unreadable.

    >>> import tempfile
    >>> from pathlib import Path
    >>> from rust_bertscore.support.digests import file_sha256s, sha256s_match
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = Path(tmp) / "model.onnx"
    ...     _ = path.write_bytes(b"graph")
    ...     record = file_sha256s([path])
    ...     _ = path.write_bytes(b"other")
    ...     sha256s_match([path], record), sha256s_match([path], None)
    (False, False)
    """
    if not isinstance(recorded, dict) or sorted(recorded) != sorted(p.name for p in paths):
        return False
    try:
        return all(file_sha256(path) == recorded[path.name] for path in paths)
    except (OSError, InputValueError):
        return False


def graph_files(graph: Path) -> list[Path]:
    """The graph and its external-data file (``<graph>.data``), when it has one.

    >>> from pathlib import Path
    >>> from rust_bertscore.support.digests import graph_files
    >>> [p.name for p in graph_files(Path("nowhere/model.onnx"))]
    ['model.onnx']
    """
    data = graph.with_name(graph.name + ".data")
    return [graph, data] if data.is_file() else [graph]
