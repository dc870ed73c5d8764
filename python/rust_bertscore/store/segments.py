"""``EmbeddingStore``: token vectors kept on disk across processes, in append-only segments.

Layout of a store directory::

    DIR/store.json          format version (written once)
    DIR/prune.lock          taken by whoever evicts (one at a time)
    DIR/segments/*.seg      append-only record files (see ``records.py``)

Each process appends to a segment of its own, created under a temporary name, locked
(``files.LOCKS``: ``flock``, or ``msvcrt.locking`` on Windows) and then renamed into place; it
holds the lock while it may still write. Many small files would cost an ``open`` per text; a
few segments cost one read per text (``files.read_at``: ``pread``, or a seek and a read) and
one ``write`` per batch of texts. Readers index every segment (regular files only) by scanning
its headers (once; then only the bytes added since) and read a payload with one read, checking
its shape (the one asked for), length (within the open file), CRC and values (finite): anything
else is a miss, and the scorer encodes and appends it again. Windows' ways are in ``files.py``.

Least-recently-used eviction works on whole records: a hit appends a small "touch" record
(at most once per :data:`TOUCH_INTERVAL` per entry and process), and :meth:`EmbeddingStore.prune`
copies the most recently used entries of the segments no writer holds into a new segment
until the bound is met, then deletes those segments. Segments held by a live writer are left
as they are. A process that finds the store larger than its bound after a write prunes it to
:data:`PRUNE_TO` of the bound, unless another process is pruning already.

Writes that fail (disk full, read-only directory, no permission) disable writing for this
store object with one ``RustBertScoreWarning``; reading goes on.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import InputTypeError, InputValueError, RustBertScoreWarning
from ..support.inputs import read_memo
from . import files, records
from .files import Entry, SegmentWriter, open_segment, read_within, segment_sizes
from .records import HEADER_BYTES, KIND_VECTORS, Header
from .survey import StoreInfo, scan_headers, survey_store

FORMAT = 1
"""Version of the store's layout and record format."""

DEFAULT_STORE_BYTES = 8 * 1024**3
"""Default size bound of a store (bytes)."""

SEGMENT_BYTES = 256 * 1024**2
"""A writer starts a new segment once its current one holds this many bytes."""

TOUCH_INTERVAL = 600.0
"""Seconds: a process records a use of an entry at most this often."""

PRUNE_TO = 0.8
"""Automatic eviction brings the store down to this fraction of its bound."""


class EmbeddingStore:
    """Token vectors on disk, keyed by 32-byte keys (see ``store.keys``), shared by processes.

    Parameters
    ----------
    directory : path
        The store's directory (created when missing).
    max_bytes : int
        Size bound: after a write that takes the segments past it, the least recently used
        entries are evicted down to :data:`PRUNE_TO` of it.

    Attributes
    ----------
    hits, misses, damaged : int
        Look-ups that found an entry, that did not, and entries found damaged or unusable
        (another shape than asked for; counted as misses too), since creation.
    writable : bool
        False once a write failed (full disk, read-only directory): then nothing more is
        written by this object.

    Examples
    --------
    >>> import tempfile
    >>> from rust_bertscore import BERTScorer, EmbeddingStore
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     store = EmbeddingStore(tmp)
    ...     first = BERTScorer(store=store).score(["a cat sat"], ["the cat sat"])
    ...     again = BERTScorer(store=store).score(["a cat sat"], ["the cat sat"])
    ...     print(store.hits, bool(first[2] == again[2]))
    2 True
    """

    def __init__(self, directory: str | os.PathLike[str], max_bytes: int = DEFAULT_STORE_BYTES):
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, (int, np.integer)):
            raise InputTypeError(f"max_bytes must be an int number of bytes, got {max_bytes!r}")
        if max_bytes < 1:
            raise InputValueError(f"max_bytes must be at least 1, got {max_bytes}")
        self.directory = Path(directory).expanduser()
        if self.directory.exists() and not self.directory.is_dir():
            raise NotADirectoryError(f"embedding store {self.directory}: not a directory")
        self.max_bytes = int(max_bytes)
        self.segments_dir = self.directory / "segments"
        self.hits = self.misses = self.damaged = 0
        self.writable = True
        self._warned = False
        self._reset_process_state()
        self._check_format()

    # -- process-local state -----------------------------------------------------------------
    def _reset_process_state(self) -> None:
        self._pid = os.getpid()
        self._lock = threading.RLock()
        self._index: dict[bytes, list[Entry]] = {}  # every copy of an entry
        self._used: dict[bytes, float] = {}  # last use this process knows of
        self._scanned: dict[str, int] = {}
        self._sizes: dict[str, int] = {}
        self._fds: dict[str, int] = {}
        self._writer: SegmentWriter | None = None

    def _check_process(self) -> None:
        """After a fork: forget the parent's writer (its lock is the parent's) and index."""
        if os.getpid() != self._pid:
            for fd in [*self._fds.values(), *([self._writer.fd] if self._writer else [])]:
                with contextlib.suppress(OSError):
                    os.close(fd)
            self._reset_process_state()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    def __getstate__(self) -> dict[str, object]:
        return {"directory": str(self.directory), "max_bytes": self.max_bytes}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__init__(state["directory"], state["max_bytes"])  # type: ignore[misc,arg-type]

    def __repr__(self) -> str:
        return f"EmbeddingStore({str(self.directory)!r}, max_bytes={self.max_bytes})"

    def _check_format(self) -> None:
        # Missing or unreadable (damaged, too large, not an object): written on the first write.
        found = read_memo(self.directory / "store.json")
        if found is not None and found.get("format", FORMAT) != FORMAT:
            raise InputValueError(
                f"embedding store {self.directory} has format {found.get('format')!r}; this "
                f"rust-bertscore reads format {FORMAT}: use another directory"
            )

    def _write_failed(self, error: OSError) -> None:
        self.writable = False
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if not self._warned:
            self._warned = True
            reason = error.strerror or str(error)
            warnings.warn(
                f"embedding store {self.directory}: cannot write ({reason}); scoring goes on "
                "without storing new vectors",
                RustBertScoreWarning,
                stacklevel=4,
            )

    # -- reading -----------------------------------------------------------------------------
    def _fd(self, name: str) -> int | None:
        """The open read descriptor of segment ``name``; None when it is gone or is not a
        regular file (``files.open_segment``)."""
        fd = self._fds.get(name)
        if fd is None:
            fd = open_segment(self.segments_dir / name)
            if fd is not None:
                self._fds[name] = fd
        return fd

    def _close_readers(self) -> None:
        for fd in self._fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds.clear()

    def _let_go(self) -> None:
        """At the end of a call or before a prune, where open files cannot be deleted
        (Windows): close the read handles, so that a prune can delete what this one read."""
        if not files.OPEN_FILES_DELETABLE:
            self._close_readers()

    def refresh(self) -> None:
        """Index what other processes appended since the last look (and forget segments that
        were pruned away)."""
        with self._lock:
            self._refresh()
            self._let_go()

    def _refresh(self) -> None:
        with self._lock:
            self._check_process()
            current = segment_sizes(self.segments_dir)
            gone = set(self._scanned) - set(current)
            if gone:
                index = {
                    k: [e for e in es if e.segment not in gone] for k, es in self._index.items()
                }
                self._index = {k: es for k, es in index.items() if es}
                for name in gone:
                    self._scanned.pop(name, None)
                    self._sizes.pop(name, None)
                    fd = self._fds.pop(name, None)
                    if fd is not None:
                        with contextlib.suppress(OSError):
                            os.close(fd)
            for name, size in current.items():
                self._sizes[name] = size
                start = self._scanned.get(name, 0)
                if size > start:
                    end = self._scan(name, start, size)
                    if end is None:  # pruned since the listing, or not a regular file now
                        self._sizes.pop(name, None)
                    else:
                        self._scanned[name] = end

    def _scan(self, name: str, start: int, size: int) -> int | None:
        """Index segment ``name`` from ``start`` to ``size`` (at most the open file's size): where
        the scan stopped, or None when the segment cannot be read."""
        fd = self._fd(name)
        if fd is None:
            return None
        try:
            size = min(size, os.fstat(fd).st_size)
            found, end = scan_headers(fd, start, size)
        except OSError:
            return None
        for pos, header in found:
            if header.kind == KIND_VECTORS:
                self._index.setdefault(header.key, []).append(
                    Entry(name, pos + HEADER_BYTES, header)
                )
            if header.time > self._used.get(header.key, 0.0):
                self._used[header.key] = header.time
        return end

    def get_many(
        self, keys: Sequence[bytes], shapes: Sequence[tuple[int, ...]] | None = None
    ) -> list[np.ndarray | None]:
        """The vectors of each key (read-only float32 arrays, all finite), or None where the
        store has none or the entry is damaged.

        Parameters
        ----------
        keys : sequence of bytes
            The entries' keys.
        shapes : sequence of tuple of int, optional
            The shape each key's vectors must have. A copy declaring another is not read,
            counted in :attr:`damaged` and forgotten, so fresh vectors are written again.
        """
        if shapes is not None and len(shapes) != len(keys):
            raise InputValueError(f"{len(keys)} keys but {len(shapes)} shapes")
        with self._lock:
            self._refresh()
            out: list[np.ndarray | None] = []
            now = time.time()
            touched = []
            for i, key in enumerate(keys):
                value = self._read(key, None if shapes is None else tuple(shapes[i]))
                if value is None:
                    self.misses += 1
                else:
                    self.hits += 1
                    if now - self._used.get(key, 0.0) > TOUCH_INTERVAL:
                        touched.append(key)
                        self._used[key] = now
                out.append(value)
            if touched:
                self._append(b"".join(records.touch_record(k, now) for k in touched), [])
            self._let_go()
            return out

    def get(self, key: bytes) -> np.ndarray | None:
        """The vectors of one key, or None."""
        return self.get_many([key])[0]

    def _read(self, key: bytes, shape: tuple[int, ...] | None = None) -> np.ndarray | None:
        """The first intact copy of ``key`` (of ``shape``, when given); damaged or unusable
        copies are counted and forgotten. A payload is read only when the open file holds all
        of it (``files.read_within``): never more memory than the file's bytes."""
        copies = self._index.get(key, [])
        while copies:
            entry = copies[0]
            fd = self._fd(entry.segment)
            if fd is None:  # pruned since the last look (or swapped for a non-file): gone
                copies.pop(0)
                continue
            payload: bytes | None = None
            if shape is None or entry.header.shape == shape:
                try:
                    payload = read_within(fd, entry.header.nbytes, entry.offset)
                except OSError:
                    payload = None
            value = records.decode_payload(entry.header, payload)
            if value is not None:
                return value
            self.damaged += 1
            copies.pop(0)
        self._index.pop(key, None)
        return None

    def __contains__(self, key: bytes) -> bool:
        with self._lock:
            self.refresh()
            return key in self._index

    def __len__(self) -> int:
        with self._lock:
            self.refresh()
            return len(self._index)

    # -- writing -----------------------------------------------------------------------------
    def put_many(self, keys: Sequence[bytes], values: Sequence[np.ndarray]) -> None:
        """Append the entries the store does not hold yet (one write), then evict if the
        store grew past :attr:`max_bytes`. Failures to write warn once and are otherwise
        ignored."""
        if len(keys) != len(values):
            raise InputValueError(f"{len(keys)} keys but {len(values)} values")
        with self._lock:
            self._check_process()
            if not self.writable:
                return
            now = time.time()
            fresh: list[tuple[bytes, Header]] = []
            chunks = []
            seen = set()
            for key, value in zip(keys, values):
                if key in self._index or key in seen:
                    continue
                seen.add(key)
                record = records.vectors_record(key, now, value)
                header = records.unpack_header(record)
                assert header is not None
                fresh.append((key, header))
                chunks.append(record)
            if not chunks:
                return
            if self._append(b"".join(chunks), fresh):
                self._used.update((k, now) for k, _ in fresh)
                if sum(self._sizes.values()) > self.max_bytes:
                    self.prune(int(self.max_bytes * PRUNE_TO), wait=False)

    def _append(self, data: bytes, fresh: list[tuple[bytes, Header]]) -> bool:
        """Append ``data`` (whole records) to this process's segment and index ``fresh``;
        False when writing failed (warned once)."""
        if not self.writable:
            return False
        try:
            if self._writer is None:
                self._start_writer()
            writer = self._writer
            assert writer is not None
            start = writer.append(data)
        except OSError as e:
            self._write_failed(e)
            return False
        pos = start
        for key, header in fresh:
            self._index.setdefault(key, []).append(Entry(writer.name, pos + HEADER_BYTES, header))
            pos += HEADER_BYTES + header.nbytes
        if self._scanned.get(writer.name, 0) == start:
            self._scanned[writer.name] = writer.size
        self._sizes[writer.name] = writer.size
        if writer.size >= SEGMENT_BYTES:
            writer.close()
            self._writer = None
        return True

    def _start_writer(self) -> None:
        self.segments_dir.mkdir(parents=True, exist_ok=True)
        meta = self.directory / "store.json"
        if not meta.is_file():
            from ..support.atomic import write_text_atomic

            write_text_atomic(meta, json.dumps({"format": FORMAT}) + "\n")
        self._writer = SegmentWriter(self.segments_dir)
        self._scanned[self._writer.name] = 0
        self._sizes[self._writer.name] = 0

    def flush(self) -> None:
        """Close this process's segment (its entries stay; a later write starts a new one)."""
        with self._lock:
            if self._writer is not None and os.getpid() == self._pid:
                self._writer.close()
            self._writer = None

    def close(self) -> None:
        """Close every file this object holds."""
        with self._lock:
            self.flush()
            self._close_readers()
            self._scanned.clear()
            self._index.clear()

    # -- eviction and reports ----------------------------------------------------------------
    def info(self) -> StoreInfo:
        """Entries, bytes and segments of the store as it is on disk now."""
        return survey_store(self.directory, None, wait=True)

    def prune(self, max_bytes: int | None = None, *, wait: bool = True) -> StoreInfo | None:
        """Evict least recently used entries until the segments take at most ``max_bytes``
        (default :attr:`max_bytes`), and compact the segments no live process writes to
        (dropping duplicates, touches and damaged records).

        Parameters
        ----------
        max_bytes : int, optional
            The size to get down to.
        wait : bool
            Wait for another process's prune to finish (True), or give up at once (False:
            returns None).

        Returns
        -------
        StoreInfo or None
            The store after pruning.
        """
        target = self.max_bytes if max_bytes is None else int(max_bytes)
        if target < 0:
            raise InputValueError(f"max_bytes must be >= 0, got {target}")
        with self._lock:
            self._check_process()
            self._let_go()
            try:
                result = survey_store(self.directory, target, wait=wait)
            except OSError as e:
                self._write_failed(e)
                return None
            self.refresh()
            return result
