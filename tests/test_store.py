"""The persistent embedding store: records, concurrent writers, damaged entries, full or
read-only disks, keys and the LRU bound; then the scorer with a store (same numbers).

The store's own tests run twice (``platform``): as the store runs here, and "portable", as on
Windows (no ``os.pread``, ``msvcrt`` locks, files that cannot be renamed or deleted while
open; ``store_platforms.py``, and ``test_store_portable.py`` for what only that has)."""

from __future__ import annotations

import errno
import multiprocessing
import os
import warnings
from pathlib import Path

import numpy as np
import pytest

import rust_bertscore as rb
from conftest import TINY, TINY_BERT, wmt_pairs
from rust_bertscore.errors import RustBertScoreWarning
from rust_bertscore.store import EmbeddingStore, files, records, segments
from store_platforms import PLATFORMS, Platform, key, seg_files, use_platform, vec

CANDS, REFS = wmt_pairs()


@pytest.fixture(params=PLATFORMS)
def platform(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    return use_platform(request.param, tmp_path, monkeypatch)


# ---- records and the store on its own ----------------------------------------------------------


def test_record_round_trip_and_damage_detection() -> None:
    v = vec(0)
    rec = records.vectors_record(key(1), 12.5, v)
    head = records.unpack_header(rec[: records.HEADER_BYTES])
    assert head is not None and head.shape == (5, 8) and head.time == 12.5
    np.testing.assert_array_equal(records.decode_payload(head, rec[records.HEADER_BYTES :]), v)
    flipped = bytearray(rec)
    flipped[records.HEADER_BYTES + 7] ^= 0x10
    assert records.decode_payload(head, bytes(flipped[records.HEADER_BYTES :])) is None
    assert records.decode_payload(head, rec[records.HEADER_BYTES : -4]) is None  # short
    bad_head = bytearray(rec[: records.HEADER_BYTES])
    bad_head[20] ^= 1
    assert records.unpack_header(bytes(bad_head)) is None
    with pytest.raises(ValueError, match="2- or 3-dimensional"):
        records.vectors_record(key(1), 0.0, np.zeros(3, np.float32))


def test_put_get_2d_3d_and_a_second_reader(tmp_path: Path, platform: Platform) -> None:
    store = EmbeddingStore(tmp_path)
    three = np.random.default_rng(3).standard_normal((4, 6, 8)).astype(np.float32)
    store.put_many([key(1), key(2)], [vec(1), three])
    got = store.get_many([key(1), key(2), key(3)])
    np.testing.assert_array_equal(got[0], vec(1))
    np.testing.assert_array_equal(got[1], three)
    assert got[2] is None and store.hits == 2 and store.misses == 1
    other = EmbeddingStore(tmp_path)  # another process's view: reads what was appended
    np.testing.assert_array_equal(other.get(key(2)), three)
    store.put_many([key(4)], [vec(4)])
    np.testing.assert_array_equal(other.get(key(4)), vec(4))  # appended after it opened
    info = other.info()
    assert info.entries == 3 and info.damaged == 0 and info.segments == 1
    assert info.active_segments == 1  # store's writer holds its lock
    if platform.windows is not None:  # the open segment could not be renamed: made in place
        assert platform.windows.refused and platform.windows.refused[0].endswith(".seg.tmp")


def _writer(directory: str, worker: int, start: object) -> None:
    start.wait()  # type: ignore[attr-defined]
    store = EmbeddingStore(directory)
    for round_ in range(20):
        # Entries 0..19 are written by every worker, 100 * worker + ... by this one alone.
        store.put_many([key(round_), key(1000 + 100 * worker + round_)], [vec(round_), vec(worker)])
    store.close()


@pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="needs fork (not on Windows)"
)
def test_concurrent_writers_same_and_different_entries(tmp_path: Path, platform: Platform) -> None:
    ctx = multiprocessing.get_context("fork")
    start = ctx.Event()
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), w, start)) for w in range(4)]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    store = EmbeddingStore(tmp_path)
    for i in range(20):
        np.testing.assert_array_equal(store.get(key(i)), vec(i))
    for w in range(4):
        for i in range(20):
            np.testing.assert_array_equal(store.get(key(1000 + 100 * w + i)), vec(w))
    info = store.info()
    assert info.entries == 20 + 4 * 20 and info.damaged == 0
    assert len(seg_files(tmp_path)) == 4  # one segment per writer
    # A prune (compaction) keeps every entry once.
    after = store.prune()
    assert after is not None and after.entries == 100 and after.file_bytes == after.entry_bytes


def test_flipped_and_truncated_entries_are_misses(tmp_path: Path, platform: Platform) -> None:
    store = EmbeddingStore(tmp_path)
    store.put_many([key(i) for i in range(3)], [vec(i) for i in range(3)])
    store.close()
    (seg,) = seg_files(tmp_path)
    raw = bytearray(seg.read_bytes())
    size = len(raw) // 3
    raw[records.HEADER_BYTES + 9] ^= 0xFF  # payload of entry 0
    seg.write_bytes(bytes(raw[: 3 * size - 10]))  # entry 2 torn
    reader = EmbeddingStore(tmp_path)
    got = reader.get_many([key(0), key(1), key(2)])
    assert got[0] is None and got[2] is None
    np.testing.assert_array_equal(got[1], vec(1))
    assert reader.damaged == 1 and reader.info().damaged == 1  # the torn tail
    # Written again, the entry is found again (the new copy).
    reader.put_many([key(0), key(2)], [vec(0), vec(2)])
    again = EmbeddingStore(tmp_path).get_many([key(0), key(2)])
    np.testing.assert_array_equal(again[0], vec(0))
    np.testing.assert_array_equal(again[1], vec(2))


def test_lru_eviction_keeps_the_most_recently_used_within_the_bound(
    tmp_path: Path, platform: Platform
) -> None:
    store = EmbeddingStore(tmp_path)
    record = records.HEADER_BYTES + vec(0).nbytes
    for i in range(10):
        store.put_many([key(i)], [vec(i)])
        store.flush()  # a segment per entry: none held by a writer once flushed
    # Use entries 0 and 1 later than the others.
    segments.TOUCH_INTERVAL, old = -1.0, segments.TOUCH_INTERVAL
    try:
        store.get_many([key(0), key(1)])
    finally:
        segments.TOUCH_INTERVAL = old
    store.flush()
    info = store.prune(4 * record)
    assert info is not None and info.file_bytes <= 4 * record and info.entries == 4
    kept = [
        i
        for i, v in enumerate(EmbeddingStore(tmp_path).get_many([key(i) for i in range(10)]))
        if v is not None
    ]
    assert kept[:2] == [0, 1] and kept[2:] == [8, 9]


def test_store_evicts_by_itself_past_its_bound(tmp_path: Path, platform: Platform) -> None:
    record = records.HEADER_BYTES + vec(0).nbytes
    store = EmbeddingStore(tmp_path, max_bytes=5 * record)
    for i in range(12):
        store.put_many([key(i)], [vec(i)])
        store.flush()
    assert store.info().file_bytes <= 5 * record
    assert store.get(key(11)) is not None and store.get(key(0)) is None


def test_full_disk_warns_once_and_reading_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, platform: Platform
) -> None:
    store = EmbeddingStore(tmp_path)
    store.put_many([key(0)], [vec(0)])

    def full(fd: int, data: bytes) -> None:
        os.write(fd, bytes(data)[:10])  # a torn write, then the error
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(files, "write_all", full)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        store.put_many([key(1)], [vec(1)])
        store.put_many([key(2)], [vec(2)])
    assert [str(w.message) for w in caught if w.category is RustBertScoreWarning] == [
        f"embedding store {tmp_path}: cannot write (No space left on device); scoring goes on "
        "without storing new vectors"
    ]
    assert not store.writable
    np.testing.assert_array_equal(store.get(key(0)), vec(0))
    fresh = EmbeddingStore(tmp_path)  # the torn write was cut off again
    assert fresh.get(key(1)) is None and fresh.info().damaged == 0


def test_scorer_on_a_full_disk_scores_the_same_with_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    want = rb.BERTScorer(model_type=TINY_BERT, cache_bytes=0).score(CANDS[:40], REFS[:40])

    def full(fd: int, data: bytes) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(files, "write_all", full)
    scorer = rb.BERTScorer(model_type=TINY_BERT, cache_bytes=0, store=tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = [scorer.score(CANDS[:40], REFS[:40]) for _ in range(2)]
    assert sum(w.category is RustBertScoreWarning for w in caught) == 1
    for scores in got:
        for g, w in zip(scores, want):
            np.testing.assert_array_equal(g, w)


def test_read_only_store_is_read_and_warns_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cands, refs = CANDS[:30], REFS[:30]
    rb.BERTScorer(model_type=TINY_BERT, store=tmp_path).score(refs, refs)

    def read_only(self: object, directory: Path) -> None:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(directory))

    monkeypatch.setattr(files.SegmentWriter, "__init__", read_only)
    scorer = rb.BERTScorer(model_type=TINY_BERT, cache_bytes=0, store=tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = scorer.score(cands, refs)
        scorer.score(cands, refs)
    assert sum(w.category is RustBertScoreWarning for w in caught) == 1
    assert "Read-only file system" in str(caught[0].message)
    assert scorer.store is not None and scorer.store.hits >= len(set(refs))
    want = rb.BERTScorer(model_type=TINY_BERT, cache_bytes=0).score(cands, refs)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, atol=1e-6)


def test_not_a_directory_and_bad_arguments(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError, match="not a directory"):
        EmbeddingStore(tmp_path / "file")
    with pytest.raises(ValueError, match="at least 1"):
        EmbeddingStore(tmp_path, max_bytes=0)
    with pytest.raises(TypeError, match="store must be a directory path"):
        rb.BERTScorer(model_type=TINY_BERT, store=3)  # type: ignore[arg-type]


# ---- the scorer with a store -------------------------------------------------------------------


def test_scores_identical_with_and_without_the_store(tmp_path: Path) -> None:
    cands, refs = CANDS[:60], REFS[:60]
    want = rb.score(cands, refs, model_type=TINY_BERT)
    first = rb.score(cands, refs, model_type=TINY_BERT, store=tmp_path)
    scorer = rb.BERTScorer(model_type=TINY_BERT, cache_bytes=0, store=tmp_path)
    second = scorer.score(cands, refs)
    assert scorer.pipeline.vector_source.encoded == 0  # every text came from the store
    for a, b, c in zip(want, first, second):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)
    # all layers and several references, through the store too
    multi = [[r, r + " too"] for r in refs[:20]]
    want_all = rb.score(cands[:20], multi, model_type=TINY_BERT, all_layers=True)
    rb.score(cands[:20], multi, model_type=TINY_BERT, all_layers=True, store=tmp_path)
    scorer = rb.BERTScorer(model_type=TINY_BERT, all_layers=True, store=tmp_path)
    got_all = scorer.score(cands[:20], multi)
    assert scorer.pipeline.vector_source.encoded == 0
    for g, w in zip(got_all, want_all):
        np.testing.assert_array_equal(g, w)


def test_other_layer_precision_or_model_never_reuses_entries(tmp_path: Path) -> None:
    texts = CANDS[:12]
    rb.BERTScorer(model_type=TINY_BERT, num_layers=2, store=tmp_path).score(texts, texts)
    for other in (
        {"model_type": TINY_BERT, "num_layers": 1},
        {"model_type": TINY_BERT, "num_layers": 2, "all_layers": True},
        {"model_type": TINY_BERT, "num_layers": 2, "precision": "int8", "runtime": "onnxruntime"},
        {"model_type": str(TINY / "roberta"), "num_layers": 2},
    ):
        scorer = rb.BERTScorer(**other, cache_bytes=0, store=tmp_path)  # type: ignore[arg-type]
        want = rb.BERTScorer(**other, cache_bytes=0).score(texts, texts)  # type: ignore[arg-type]
        got = scorer.score(texts, texts)
        assert scorer.pipeline.vector_source.encoded == len(set(texts)), other
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    same = rb.BERTScorer(model_type=TINY_BERT, num_layers=2, cache_bytes=0, store=tmp_path)
    same.score(texts, texts)
    assert same.pipeline.vector_source.encoded == 0


def record_offsets(raw: bytes) -> list[int]:
    """Where each record of a segment starts (walking the headers)."""
    out, pos = [], 0
    while pos < len(raw):
        head = records.unpack_header(raw[pos : pos + records.HEADER_BYTES])
        assert head is not None
        out.append(pos)
        pos += records.HEADER_BYTES + head.nbytes
    return out


def test_a_damaged_entry_is_recomputed_with_the_same_numbers(tmp_path: Path) -> None:
    cands, refs = CANDS[:20], REFS[:20]
    want = rb.score(cands, refs, model_type=TINY_BERT, store=tmp_path)
    (seg,) = seg_files(tmp_path)
    raw = bytearray(seg.read_bytes())
    starts = record_offsets(bytes(raw))
    total = len(starts)
    for k in (0, 3, 7):
        raw[starts[k] + records.HEADER_BYTES + 33] ^= 0x55  # payload byte
    raw[starts[10] + 12] ^= 0x01  # a header byte (in the key)
    seg.write_bytes(bytes(raw))
    scorer = rb.BERTScorer(model_type=TINY_BERT, cache_bytes=0, store=tmp_path)
    got = scorer.score(cands, refs)
    store = scorer.store
    assert store is not None and store.damaged == 3  # read and found damaged
    # ... and the damaged header costs its own entry only: the scan resynchronises.
    assert scorer.pipeline.vector_source.encoded == 4 and store.hits == total - 4
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    # Re-encoded entries were appended again: a third run encodes nothing.
    third = rb.BERTScorer(model_type=TINY_BERT, cache_bytes=0, store=tmp_path)
    third.score(cands, refs)
    assert third.pipeline.vector_source.encoded == 0
    assert third.store is not None and third.store.info().damaged == 1  # the skipped header


def test_each_distinct_text_is_encoded_once_per_call(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = CANDS[:30]
    # Every text is a candidate and a reference, in several blocks and rounds.
    cands = texts * 3
    refs = texts[::-1] * 2 + texts
    scorer = rb.BERTScorer(model_type=TINY_BERT, cache_bytes=0)
    scorer.block_pairs = 16
    scorer.round_bytes = 2 << 20  # the texts still to come fit: each encoded once
    encoder = scorer.pipeline.vector_source.runtime.encoder
    seen: list[int] = []
    real = encoder.embed_packed

    def spy(ids, batch_size, **kw):  # type: ignore[no-untyped-def]
        seen.extend(len(i) for i in ids)
        return real(ids, batch_size, **kw)

    monkeypatch.setattr(encoder, "embed_packed", spy)
    got = scorer.score(cands, refs)
    assert scorer.pipeline.vector_source.encoded == len(set(texts)) == len(seen)
    monkeypatch.undo()
    want = rb.BERTScorer(model_type=TINY_BERT, cache_bytes=0).score(cands, refs)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, atol=1e-6)
