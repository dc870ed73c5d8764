"""Reading a store's segments afresh: entries and their last use, damaged stretches, what
``store show`` reports, and pruning (least recently used out, compaction)."""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from . import records
from .files import (
    O_BINARY,
    Entry,
    next_data,
    open_segment,
    read_at,
    read_within,
    release,
    remove,
    segment_sizes,
    try_lock,
    unlock,
    write_all,
)
from .records import HEADER_BYTES, KIND_VECTORS, Header


@dataclass(frozen=True)
class StoreInfo:
    """What :meth:`EmbeddingStore.info` and :meth:`EmbeddingStore.prune` report.

    Attributes
    ----------
    directory : str
    entries : int
        Distinct entries (texts of one model, layer and precision).
    entry_bytes : int
        Bytes of one copy of each entry (headers included).
    file_bytes : int
        Bytes of the segment files (duplicates, touches and damaged records included).
    segments, active_segments : int
        Segment files, and those a live process may still write to.
    damaged : int
        Records found torn or with a bad checksum.
    oldest_use, newest_use : float or None
        Least and most recent use of an entry (seconds since the epoch).
    """

    directory: str
    entries: int
    entry_bytes: int
    file_bytes: int
    segments: int
    active_segments: int
    damaged: int
    oldest_use: float | None
    newest_use: float | None

    def as_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


def scan_headers(fd: int, start: int, size: int) -> tuple[list[tuple[int, Header]], int]:
    """``(offset, header)`` of the whole records in ``[start, size)``, and the offset where
    the scan stopped: at ``size``, or at a torn or damaged header or a record that runs past
    ``size`` (a record still being written, or damage)."""
    found = []
    pos = start
    while pos + HEADER_BYTES <= size:
        header = records.unpack_header(read_at(fd, HEADER_BYTES, pos))
        if header is None or pos + HEADER_BYTES + header.nbytes > size:
            later = resync(fd, pos + 1, size)
            if later is None:
                break
            pos = later
            continue
        found.append((pos, header))
        pos += HEADER_BYTES + header.nbytes
    return found, pos


def resync(fd: int, start: int, size: int) -> int | None:
    """The offset of the next whole record after damage at ``start - 1``, or None (the
    damage runs to the end, or the record there is still being written)."""
    chunk = 1 << 20
    pos = start
    while pos + HEADER_BYTES <= size:
        data = next_data(fd, pos)  # a record starts with MAGIC, never inside a hole
        if data is None:
            return None
        pos = max(pos, data)
        if pos + HEADER_BYTES > size:
            return None
        block = read_at(fd, min(chunk, size - pos), pos)
        at = block.find(records.MAGIC)
        while at >= 0:
            header = records.unpack_header(read_at(fd, HEADER_BYTES, pos + at))
            if header is not None and pos + at + HEADER_BYTES + header.nbytes <= size:
                return pos + at
            at = block.find(records.MAGIC, at + 1)
        pos += max(1, len(block) - len(records.MAGIC) + 1)
    return None


def skipped_gaps(found: list[tuple[int, Header]], end: int) -> int:
    """Damaged stretches a scan skipped over (gaps between consecutive records)."""
    gaps, pos = 0, 0
    for at, header in found:
        gaps += at != pos
        pos = at + HEADER_BYTES + header.nbytes
    return gaps


class Survey:
    """Every segment read afresh: entries, their last use, damaged records; the base of
    :meth:`EmbeddingStore.info` and of pruning."""

    def __init__(self, segments: Path, lock_inactive: bool = False) -> None:
        self.segments = segments
        self.fds: dict[str, int] = {}
        self.locked: set[str] = set()
        self.active: set[str] = set()
        self.deferred = 0  # segments a compaction could not delete (open elsewhere: Windows)
        self.sizes: dict[str, int] = {}
        self.entries: dict[bytes, list[Entry]] = {}  # every copy
        self.used: dict[bytes, float] = {}
        self.damaged = 0
        # Regular files only: a directory, FIFO or link named *.seg is never opened, and
        # open_segment refuses one swapped in after the listing.
        for name in sorted(segment_sizes(segments)):
            fd = open_segment(segments / name)
            if fd is None:
                continue
            self.fds[name] = fd
            size = os.fstat(fd).st_size
            self.sizes[name] = size
            # A segment whose lock we cannot take has a live writer; when only surveying,
            # test and release. An empty one may be a writer's that is not locked yet (where
            # segments are created in place, files.SegmentWriter): never idle, never locked.
            if size == 0 or not try_lock(fd):
                self.active.add(name)
            elif lock_inactive:
                self.locked.add(name)
            else:
                unlock(fd)
            found, end = scan_headers(fd, 0, size)
            for pos, header in found:
                if header.kind == KIND_VECTORS:
                    self.entries.setdefault(header.key, []).append(
                        Entry(name, pos + HEADER_BYTES, header)
                    )
                self.used[header.key] = max(self.used.get(header.key, 0.0), header.time)
            if end < size and name not in self.active:
                self.damaged += 1  # a torn or damaged record stopped the scan
            self.damaged += skipped_gaps(found, end)

    def close(self) -> None:
        for name, fd in self.fds.items():
            if name in self.locked:
                release(fd)
            else:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.fds.clear()
        self.locked.clear()

    def info(self, directory: str) -> StoreInfo:
        try:
            uses = [self.used[k] for k in self.entries]
            return StoreInfo(
                directory=directory,
                entries=len(self.entries),
                entry_bytes=sum(HEADER_BYTES + es[0].header.nbytes for es in self.entries.values()),
                file_bytes=sum(self.sizes.values()),
                segments=len(self.sizes),
                active_segments=len(self.active),
                damaged=self.damaged,
                oldest_use=min(uses) if uses else None,
                newest_use=max(uses) if uses else None,
            )
        finally:
            self.close()

    def compact(self, target: int) -> None:
        """Rewrite the inactive segments' most recently used entries into one new segment,
        within ``target`` bytes for the whole store, and delete the inactive segments (those
        still open elsewhere, on Windows, are left for a later prune: :attr:`deferred`).
        Closes the survey's files."""
        inactive = [n for n in self.sizes if n not in self.active]
        if not inactive:
            return
        pinned = sum(self.sizes[n] for n in self.active)
        in_active = {
            k for k, es in self.entries.items() if any(e.segment in self.active for e in es)
        }
        candidates = sorted(
            (k for k in self.entries if k not in in_active),
            key=lambda k: self.used.get(k, 0.0),
            reverse=True,
        )
        budget = target - pinned
        tag = uuid.uuid4().hex[:12]
        tmp = self.segments / f".{tag}.seg.tmp"
        kept = 0
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_BINARY, 0o666)
        try:
            for key in candidates:
                copies = self.entries[key]
                size = HEADER_BYTES + copies[0].header.nbytes
                if kept + size > budget:
                    continue  # a smaller, older entry may still fit
                value = None
                # Newest first: a copy written again after a bad one (a store that healed).
                for entry in reversed(copies):
                    payload = read_within(
                        self.fds[entry.segment], entry.header.nbytes, entry.offset
                    )
                    value = records.decode_payload(entry.header, payload)
                    if value is not None:
                        break
                    self.damaged += 1
                if value is None:
                    continue
                write_all(fd, records.vectors_record(key, self.used.get(key, 0.0), value))
                kept += size
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        os.close(fd)
        if not kept:
            remove(tmp)
        else:
            try:
                os.rename(tmp, self.segments / f"{time.time_ns():x}-{os.getpid()}-{tag}.seg")
            except PermissionError:  # Windows: a virus scanner or indexer has the file open
                remove(tmp)
                return  # nothing deleted: the next prune compacts again
        self.close()  # our own handles would block the deletions on Windows
        self.deferred = sum(not remove(self.segments / name) for name in inactive)


def survey_store(directory: Path, target: int | None, *, wait: bool) -> StoreInfo:
    """Scan every segment of the store in ``directory``; with ``target``, also evict and
    compact first, under the store's prune lock (or, without ``wait``, only scan when another
    process holds it)."""
    segments = directory / "segments"
    if target is None:
        return Survey(segments).info(str(directory))
    segments.mkdir(parents=True, exist_ok=True)
    lock_fd = os.open(directory / "prune.lock", os.O_RDWR | os.O_CREAT | O_BINARY, 0o666)
    try:
        if not try_lock(lock_fd, wait):
            return Survey(segments).info(str(directory))
        survey = Survey(segments, lock_inactive=True)
        try:
            survey.compact(target)
        finally:
            survey.close()
        return Survey(segments).info(str(directory))
    finally:
        release(lock_fd)
