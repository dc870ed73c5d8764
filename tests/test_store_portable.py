"""The store without Unix-only calls: reads without ``os.pread``, ``msvcrt`` locks on a byte
past the end of the file, no locks at all, and files Windows will not rename or delete while
they are open (``store_platforms.py``; ``test_store.py`` runs the store's main tests both ways).
"""

from __future__ import annotations

import errno
import os
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from rust_bertscore.store import EmbeddingStore, files, records
from rust_bertscore.store.survey import Survey

fcntl = pytest.importorskip(
    "fcntl", reason="simulates Windows on a Unix host; on Windows test_store.py runs natively"
)

from store_platforms import (  # noqa: E402
    PLATFORMS,
    FakeMsvcrt,
    Platform,
    key,
    seg_files,
    use_platform,
    vec,
)


def held_by_another(path: Path) -> bool:
    """Whether another open file holds the lock of ``path`` (flock: the fake msvcrt's too)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


@pytest.fixture(params=PLATFORMS)
def platform(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    return use_platform(request.param, tmp_path, monkeypatch)


@pytest.fixture
def portable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Platform:
    return use_platform("portable", tmp_path, monkeypatch)


def filled(directory: Path, n: int) -> EmbeddingStore:
    """A store with ``n`` entries, one flushed (idle) segment each."""
    store = EmbeddingStore(directory)
    for i in range(n):
        store.put_many([key(i)], [vec(i)])
        store.flush()
    return store


# ---- reads at an offset --------------------------------------------------------------------


def test_read_at_reads_the_same_with_and_without_pread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = np.random.default_rng(0).integers(0, 256, 5000, dtype=np.uint8).tobytes()
    (tmp_path / "f").write_bytes(data)
    fd = os.open(tmp_path / "f", os.O_RDONLY)
    try:
        spans = [(0, 76), (100, 1000), (4990, 76), (5000, 10), (0, 5000), (123, 0)]
        with_pread = [files.read_at(fd, n, at) for n, at in spans]
        assert with_pread == [data[at : at + n] for n, at in spans]
        assert os.lseek(fd, 0, os.SEEK_CUR) == 0  # pread leaves the position alone
        monkeypatch.delattr(os, "pread")
        assert [files.read_at(fd, n, at) for n, at in spans] == with_pread
        assert os.lseek(fd, 0, os.SEEK_CUR) == 123  # the seek path ran
        assert [files.seek_read(fd, n, at) for n, at in spans] == with_pread
    finally:
        os.close(fd)


def test_read_at_completes_short_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = bytes(range(256)) * 4
    (tmp_path / "f").write_bytes(data)
    real_pread, real_read = os.pread, os.read
    monkeypatch.setattr(os, "pread", lambda fd, n, at: real_pread(fd, min(n, 7), at))
    monkeypatch.setattr(os, "read", lambda fd, n: real_read(fd, min(n, 7)))
    fd = os.open(tmp_path / "f", os.O_RDONLY)
    try:
        assert files.read_at(fd, 300, 1000) == data[1000:]  # short at the end of the file
        assert files.read_at(fd, 300, 5) == files.seek_read(fd, 300, 5) == data[5:305]
    finally:
        os.close(fd)


# ---- locks ---------------------------------------------------------------------------------


def test_msvcrt_locks_one_byte_past_the_end_and_releases_it(
    tmp_path: Path, portable: Platform
) -> None:
    fake = portable.msvcrt
    assert fake is not None
    store = filled(tmp_path, 3)
    store.put_many([key(9)], [vec(9)])  # a segment being written
    writing = [p for p in seg_files(tmp_path) if held_by_another(p)]
    assert len(writing) == 1
    other = EmbeddingStore(tmp_path)
    assert other.info().active_segments == 1
    pruned = other.prune()
    assert pruned is not None and pruned.entries == 4 and pruned.active_segments == 1
    assert fake.calls
    for call in fake.calls:
        assert call.nbytes == 1 and call.position == files.LOCK_OFFSET
        assert call.position > call.file_size  # readers of the data are never blocked
    modes = [c.mode for c in fake.calls]
    assert FakeMsvcrt.LK_NBLCK in modes and FakeMsvcrt.LK_UNLCK in modes
    store.close()
    other.close()
    assert not any(held_by_another(p) for p in seg_files(tmp_path))
    assert not held_by_another(tmp_path / "prune.lock")


def test_msvcrt_lock_keeps_the_position_polls_when_waiting_and_raises_other_errors(
    tmp_path: Path,
) -> None:
    fake = FakeMsvcrt(refuse=3)
    locks = files.MsvcrtLocks(fake, pause=0.0)
    (tmp_path / "f").write_bytes(b"x" * 100)
    fd = os.open(tmp_path / "f", os.O_RDWR)
    try:
        os.lseek(fd, 42, os.SEEK_SET)
        assert locks.lock(fd, wait=False) is False and len(fake.calls) == 1
        assert locks.lock(fd, wait=True) is True and len(fake.calls) == 4  # two more refusals
        assert os.lseek(fd, 0, os.SEEK_CUR) == 42
        locks.unlock(fd)
        assert fake.calls[-1].mode == FakeMsvcrt.LK_UNLCK

        def broken(fd: int, mode: int, nbytes: int) -> None:
            raise OSError(errno.EBADF, "Bad file descriptor")

        fake.locking = broken  # type: ignore[method-assign]
        with pytest.raises(OSError, match="Bad file descriptor"):
            locks.lock(fd, wait=True)
    finally:
        os.close(fd)


def test_default_locks_flock_then_msvcrt_then_none(monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(files.default_locks(), files.FlockLocks)
    monkeypatch.setitem(sys.modules, "fcntl", None)  # import fcntl raises ImportError
    monkeypatch.setitem(sys.modules, "msvcrt", FakeMsvcrt())
    assert isinstance(files.default_locks(), files.MsvcrtLocks)
    monkeypatch.setitem(sys.modules, "msvcrt", None)
    assert isinstance(files.default_locks(), files.NoLocks)


def test_without_locks_the_store_works_but_sees_no_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delattr(os, "pread")
    monkeypatch.setattr(files, "LOCKS", files.NoLocks())
    store = filled(tmp_path, 3)
    store.put_many([key(3)], [vec(3)])
    other = EmbeddingStore(tmp_path)
    np.testing.assert_array_equal(other.get(key(3)), vec(3))
    info = other.info()
    assert info.entries == 4 and info.active_segments == 0  # the documented limit
    store.flush()
    pruned = other.prune()
    assert pruned is not None and pruned.entries == 4 and pruned.segments == 1
    assert [v is not None for v in store.get_many([key(i) for i in range(4)])] == [True] * 4


# ---- files that cannot be renamed or deleted while open ------------------------------------


def test_an_empty_segment_is_never_idle(tmp_path: Path, platform: Platform) -> None:
    store = filled(tmp_path, 2)
    empty = tmp_path / "segments" / "0-1-empty.seg"  # a writer's, created in place, not locked yet
    empty.touch()
    info = store.info()
    assert info.segments == 3 and info.active_segments == 1
    pruned = store.prune()
    assert pruned is not None and empty.exists() and pruned.entries == 2


def test_a_segment_open_elsewhere_is_deleted_by_a_later_prune(
    tmp_path: Path, portable: Platform
) -> None:
    store = filled(tmp_path, 3)
    before = store.info()
    assert portable.windows is not None
    assert not [p for p in portable.windows.held.values() if p.endswith(".seg")]  # let go
    held = os.open(seg_files(tmp_path)[0], os.O_RDONLY)  # another reader, say
    try:
        pruned = store.prune()  # warns (and fails under filterwarnings=error) on an OSError
        assert pruned is not None and pruned.entries == 3
        assert pruned.segments == 2 and pruned.file_bytes > pruned.entry_bytes  # deferred
        assert store.writable
        got = EmbeddingStore(tmp_path).get_many([key(i) for i in range(3)])
        assert all(np.array_equal(g, vec(i)) for i, g in enumerate(got))  # type: ignore[arg-type]
        survey = Survey(tmp_path / "segments", lock_inactive=True)
        survey.compact(10**9)
        assert survey.deferred == 1  # the held segment, again
    finally:
        os.close(held)
    again = store.prune()
    assert again is not None and again.segments == 1 and again.entries == before.entries
    assert again.file_bytes == again.entry_bytes


def test_a_compaction_whose_rename_is_refused_deletes_nothing(
    tmp_path: Path, platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = filled(tmp_path, 3)
    names = [p.name for p in seg_files(tmp_path)]
    real_rename = os.rename

    def refused(src: str | Path, dst: str | Path) -> None:
        if str(src).endswith(".seg.tmp"):  # a virus scanner has the new segment open
            raise PermissionError(errno.EACCES, "The process cannot access the file", str(src))
        real_rename(src, dst)

    monkeypatch.setattr(os, "rename", refused)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pruned = store.prune()
    assert pruned is not None and pruned.entries == 3 and store.writable
    assert [p.name for p in seg_files(tmp_path)] == names
    assert not list((tmp_path / "segments").glob(".*"))  # no temporary file left
    assert all(v is not None for v in EmbeddingStore(tmp_path).get_many([key(i) for i in range(3)]))


def test_a_segment_made_in_place_is_locked_before_its_first_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "segments").mkdir()

    def refused(src: str | Path, dst: str | Path) -> None:
        raise PermissionError(errno.EACCES, "The process cannot access the file", str(src))

    monkeypatch.setattr(os, "rename", refused)
    writer = files.SegmentWriter(tmp_path / "segments")
    try:
        assert writer.path.exists() and writer.path.stat().st_size == 0
        assert held_by_another(writer.path)
        assert [p.name for p in (tmp_path / "segments").iterdir()] == [writer.name]
    finally:
        writer.close()
    assert not writer.path.exists()  # closed empty: deleted (no prune would ever take it)


def test_a_damaged_header_costs_its_entry_only_without_pread(
    tmp_path: Path, portable: Platform
) -> None:
    store = EmbeddingStore(tmp_path)
    rows = [vec(i, tokens=3 + i) for i in range(20)]
    store.put_many([key(i) for i in range(20)], rows)
    # A damaged header costs its own entry only, found again by resynchronising.
    (seg,) = seg_files(tmp_path)
    raw = bytearray(seg.read_bytes())
    raw[records.HEADER_BYTES // 2] ^= 0xFF
    seg.write_bytes(bytes(raw))
    reader = EmbeddingStore(tmp_path)
    got = reader.get_many([key(i) for i in range(20)])
    assert got[0] is None and all(np.array_equal(g, r) for g, r in zip(got[1:], rows[1:]))  # type: ignore[arg-type]
    assert reader.info().damaged == 1
