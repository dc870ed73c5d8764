"""The overlapped order of a call (engine/overlap.py): each round's vectors fetched on a worker
thread while the kernel scores the round before. Forced on here, on the CPU (it is on by default
on CUDA only): the same numbers as the one-by-one order in every setting that changes a round,
the fetches really on another thread and in order, every distinct text still encoded once, and
an error on either side raised in the caller with no thread left behind."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import rust_bertscore as rb
from conftest import TINY_BERT
from rust_bertscore.engine.overlap import Worker

WORDS = [
    *("the", "a", "cat", "dog", "sat", "ran", "on", "under"),
    *("mat", "tree", "quickly", "slowly", "red", "blue", "big", "small"),
]


def texts(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 14)))) for _ in range(n)]


def small_rounds(scorer: rb.BERTScorer, overlap: bool) -> rb.BERTScorer:
    """Blocks of 8 pairs and rounds of ~24 token rows: a 40-pair call has many of both."""
    pipeline = scorer.pipeline
    pipeline.block_pairs = 8
    pipeline.round_bytes = 24 * 4 * (pipeline.runtime.encoder.hidden_size or 1)
    pipeline.overlap = overlap
    return scorer


CANDS, REFS = texts(40, 1), texts(40, 2)
REFS[5] = CANDS[9]  # texts that come again, within and across blocks
CANDS[30] = REFS[3]
CANDS[12] = ""  # bert_score's empty text


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"idf": True},
        {"all_layers": True},
        {"batch_size": 3},
        {"exclude_punctuation": True},
        {"cache_bytes": 0},
    ],
    ids=["plain", "idf", "all_layers", "batch3", "exclusions", "no-cache"],
)
def test_same_numbers_as_one_by_one(kwargs: dict) -> None:
    batch_size = kwargs.pop("batch_size", 64)
    idf = kwargs.pop("idf", False)
    got = {}
    for overlap in (False, True):
        scorer = small_rounds(rb.BERTScorer(model_type=TINY_BERT, idf=idf, **kwargs), overlap)
        if idf:
            scorer.compute_idf(REFS)
        with pytest.warns(rb.RustBertScoreWarning, match="(?i)empty"):
            got[overlap] = scorer.score(CANDS, REFS, batch_size=batch_size)
    for a, b in zip(got[False], got[True]):
        np.testing.assert_array_equal(a, b)


def test_multi_reference_and_baseline_match() -> None:
    refs = [[r, REFS[(i + 7) % len(REFS)]] for i, r in enumerate(REFS)]
    got = {}
    for overlap in (False, True):
        scorer = small_rounds(rb.BERTScorer(model_type=TINY_BERT), overlap)
        with pytest.warns(rb.RustBertScoreWarning, match="(?i)empty"):
            got[overlap] = scorer.score(CANDS, refs)
    for a, b in zip(got[False], got[True]):
        np.testing.assert_array_equal(a, b)


def test_fetches_run_on_a_worker_in_order_and_encode_each_text_once() -> None:
    scorer = small_rounds(rb.BERTScorer(model_type=TINY_BERT, cache_bytes=0), True)
    pipeline = scorer.pipeline
    source = pipeline.vector_source
    seen: list[tuple[str, list[str]]] = []
    real = source.packed

    def packed(texts, ids, batch_size, memo=None):
        seen.append((threading.current_thread().name, list(texts)))
        return real(texts, ids, batch_size, memo)

    source.packed = packed  # type: ignore[method-assign]
    with pytest.warns(rb.RustBertScoreWarning, match="(?i)empty"):
        scorer.score(CANDS, REFS)
    assert len(seen) > 3
    assert {name for name, _ in seen} == {"rust-bertscore-fetch"}
    # Every distinct text encoded once: the memo saw the rounds in order.
    assert source.encoded == len(set(CANDS) | set(REFS))
    assert threading.active_count() == 1 or all(
        t.name != "rust-bertscore-fetch" for t in threading.enumerate()
    )


def test_one_round_runs_without_a_thread() -> None:
    scorer = rb.BERTScorer(model_type=TINY_BERT)
    scorer.pipeline.overlap = True
    names = []
    real = scorer.pipeline.vector_source.packed

    def packed(texts, ids, batch_size, memo=None):
        names.append(threading.current_thread().name)
        return real(texts, ids, batch_size, memo)

    scorer.pipeline.vector_source.packed = packed  # type: ignore[method-assign]
    scorer.score(["the cat sat"], ["a cat sat"])
    assert names == [threading.main_thread().name]


def test_an_encoder_error_reaches_the_caller() -> None:
    scorer = small_rounds(rb.BERTScorer(model_type=TINY_BERT, cache_bytes=0), True)
    encoder = scorer.pipeline.runtime.encoder
    calls = []
    real = encoder.embed_packed

    def failing(id_lists, batch_size, *, extra_rows=0):
        calls.append(1)
        if len(calls) == 3:
            raise MemoryError("out of memory encoding a batch (test)")
        return real(id_lists, batch_size, extra_rows=extra_rows)

    encoder.embed_packed = failing  # type: ignore[method-assign]
    with (
        pytest.warns(rb.RustBertScoreWarning, match="(?i)empty"),
        pytest.raises(MemoryError, match="test"),
    ):
        scorer.score(CANDS, REFS)
    assert all(t.name != "rust-bertscore-fetch" for t in threading.enumerate())


def test_a_kernel_error_waits_for_the_fetch_in_flight() -> None:
    scorer = small_rounds(rb.BERTScorer(model_type=TINY_BERT, cache_bytes=0), True)
    blocks_seen = []
    pipeline = scorer.pipeline
    from rust_bertscore.engine import blocks as blocks_module

    real = blocks_module.BlockScorer.score_round

    def score_round(self, b, lo, hi, fetched):
        blocks_seen.append(lo)
        if len(blocks_seen) == 2:
            raise RuntimeError("kernel failed (test)")
        return real(self, b, lo, hi, fetched)

    blocks_module.BlockScorer.score_round = score_round  # type: ignore[method-assign]
    try:
        with (
            pytest.warns(rb.RustBertScoreWarning, match="(?i)empty"),
            pytest.raises(RuntimeError, match="kernel failed"),
        ):
            scorer.score(CANDS, REFS)
    finally:
        blocks_module.BlockScorer.score_round = real  # type: ignore[method-assign]
    assert all(t.name != "rust-bertscore-fetch" for t in threading.enumerate())
    # The pipeline is usable afterwards, with the same numbers as before.
    with pytest.warns(rb.RustBertScoreWarning, match="(?i)empty"):
        again = scorer.score(CANDS, REFS)
    pipeline.overlap = False
    with pytest.warns(rb.RustBertScoreWarning, match="(?i)empty"):
        plain = scorer.score(CANDS, REFS)
    for a, b in zip(again, plain):
        np.testing.assert_array_equal(a, b)


def test_worker_returns_values_and_raises_errors() -> None:
    worker: Worker[int] = Worker("w")
    worker.start(lambda: 7)
    assert worker.busy and worker.result() == 7 and not worker.busy

    def boom() -> int:
        raise ValueError("boom")

    worker.start(boom)
    with pytest.raises(ValueError, match="boom"):
        worker.result()
    assert not worker.busy


def test_overlap_is_on_for_cuda_only_by_default() -> None:
    scorer = rb.BERTScorer(model_type=TINY_BERT, device="cpu")
    assert scorer.pipeline.overlap is None and not scorer.pipeline.overlaps
    scorer.pipeline.overlap = True
    assert scorer.pipeline.overlaps


def test_run_seconds_count_the_runtime() -> None:
    scorer = rb.BERTScorer(model_type=TINY_BERT, cache_bytes=0)
    encoder = scorer.pipeline.runtime.encoder
    before, runs = encoder.run_seconds, encoder.runs
    scorer.score(CANDS[:4], REFS[:4])
    assert encoder.runs > runs and encoder.run_seconds > before
