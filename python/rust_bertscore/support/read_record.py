"""A record of the files a load reads: every file opened through the boundary
(:mod:`rust_bertscore.support.boundary`) while a :func:`recording` is active is digested from
the descriptor that was opened (the very bytes the loader or its library reads), so what
identifies a tokenizer is what its loader read, not a list of names kept by hand: a new family
or a new file (Bertweet's ``bpe.codes``) cannot be missed.

JSON is digested by value (keys sorted, whitespace ignored, the keys that only name where a
copy was made left out: :data:`VOLATILE_JSON_KEYS`); any other file by its bytes.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

VOLATILE_JSON_KEYS = frozenset({"name_or_path", "tokenizer_file", "special_tokens_map_file"})
"""Keys of a JSON object that name where a copy was made, not what it does."""

_CHUNK = 1 << 22


def content_digest(name: str, data: bytes) -> str:
    """SHA-256 hex digest of a file's ``data``: by value for a JSON object or array (``name``
    ending in ``.json``), by bytes otherwise (or when it does not parse).

    >>> content_digest("a.json", b'{"b": 1, "a": 2}') == content_digest("a.json", b'{"a":2,"b":1}')
    True
    >>> named = content_digest("a.json", b'{"a": 1, "name_or_path": "x"}')
    >>> named == content_digest("a.json", b'{"a": 1}')
    True
    >>> content_digest("vocab.txt", b"a\\n") == content_digest("vocab.txt", b"a\\n\\n")
    False
    """
    if name.endswith(".json"):
        try:
            value = json.loads(data)
        except (ValueError, RecursionError):
            value = None
        if isinstance(value, dict):
            value = {k: v for k, v in value.items() if k not in VOLATILE_JSON_KEYS}
        if isinstance(value, (dict, list)):
            data = json.dumps(value, sort_keys=True).encode()
    return hashlib.sha256(data).hexdigest()


class ReadRecord:
    """The files read under one :func:`recording`: their names (relative to ``root`` where
    they lie inside it) and :func:`content_digest`.

    Examples
    --------
    >>> import tempfile
    >>> from rust_bertscore.errors import InputValueError
    >>> from rust_bertscore.support.boundary import read_regular
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = Path(tmp, "bpe.codes").write_bytes(b"a b 1\\n")
    ...     with recording(tmp) as record:
    ...         _ = read_regular(Path(tmp, "bpe.codes"), max_bytes=100, error=InputValueError)
    >>> sorted(record.files), len(record.files["bpe.codes"])
    (['bpe.codes'], 64)
    """

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.root = None if root is None else os.path.abspath(root)
        self.files: dict[str, str] = {}

    def name(self, path: str | os.PathLike[str]) -> str:
        """How ``path`` is named in :attr:`files`."""
        full = os.path.abspath(path)
        if self.root is not None and full.startswith(self.root + os.sep):
            return Path(os.path.relpath(full, self.root)).as_posix()
        return Path(full).name

    def add(self, path: str | os.PathLike[str], fd: int, size: int) -> None:
        """Digest the open file ``fd`` (``size`` bytes) as ``path``; its offset is left as it is."""
        chunks, offset = [], 0
        while offset < size:
            chunk = os.pread(fd, min(_CHUNK, size - offset), offset)
            if not chunk:
                break
            chunks.append(chunk)
            offset += len(chunk)
        name = self.name(path)
        self.files[name] = content_digest(name, b"".join(chunks))


_ACTIVE: contextvars.ContextVar[tuple[ReadRecord, ...]] = contextvars.ContextVar(
    "rust_bertscore_read_records", default=()
)


@contextlib.contextmanager
def recording(root: str | os.PathLike[str] | None = None) -> Iterator[ReadRecord]:
    """Within the block, every file opened through the boundary is added to the record (and to
    any recording around this one)."""
    record = ReadRecord(root)
    token = _ACTIVE.set((*_ACTIVE.get(), record))
    try:
        yield record
    finally:
        _ACTIVE.reset(token)


Opened = list[tuple[str, list[int]]]
"""Files opened through the boundary: absolute path (as opened, links not resolved) and the
identity of what was opened (``os.fstat``: device, inode, size, modification and change
times, in ``support.digests.file_stamp``'s order)."""

_OPENED: contextvars.ContextVar[tuple[Opened, ...]] = contextvars.ContextVar(
    "rust_bertscore_opened_files", default=()
)


@contextlib.contextmanager
def opened_files() -> Iterator[Opened]:
    """Within the block (this thread's context), every file opened through the boundary is
    appended to the list yielded (and to any such list around this one): what a conversion
    read, to compare with the files that were hashed for its cache key.

    >>> import tempfile
    >>> from rust_bertscore.errors import InputValueError
    >>> from rust_bertscore.support.boundary import read_regular
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = Path(tmp, "w.bin").write_bytes(b"abc")
    ...     with opened_files() as opened:
    ...         _ = read_regular(Path(tmp, "w.bin"), max_bytes=100, error=InputValueError)
    >>> [(Path(path).name, identity[2]) for path, identity in opened]
    [('w.bin', 3)]
    """
    opened: Opened = []
    token = _OPENED.set((*_OPENED.get(), opened))
    try:
        yield opened
    finally:
        _OPENED.reset(token)


def stat_identity(info: os.stat_result) -> list[int]:
    """What identifies the file a ``stat`` describes, in :data:`Opened`'s order: device,
    inode, size, modification and change times."""
    return [info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns]


def note_identity(path: str | os.PathLike[str], info: os.stat_result) -> None:
    """Called by the boundary for each file it opens, with the open descriptor's ``fstat``."""
    lists = _OPENED.get()
    if lists:
        identity = stat_identity(info)
        for opened in lists:
            opened.append((os.path.abspath(path), identity))


def note(path: str | os.PathLike[str], fd: int, size: int) -> None:
    """Called by the boundary for each file it opens: added to the active records, if any."""
    for record in _ACTIVE.get():
        record.add(path, fd, size)
