"""The embedding cache (reuse across calls, its LRU bound) and bounded memory while scoring
many pairs in rounds."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import rust_bertscore as rb
from conftest import TINY_BERT, wmt_pairs
from rust_bertscore.engine.rounds import rounds
from rust_bertscore.stages.embeddings import EmbeddingCache

BERT = TINY_BERT
CANDS, REFS = wmt_pairs()


# ---- the embedding cache ------------------------------------------------------------------------


def test_cache_reuse_gives_identical_scores() -> None:
    fresh = rb.BERTScorer(model_type=BERT, cache_bytes=0)
    cached = rb.BERTScorer(model_type=BERT, cache_bytes=64 << 20)
    system_a, system_b = CANDS[:50], CANDS[50:100]
    refs = REFS[:50]
    for system in (system_a, system_b, system_a):
        want = fresh.score(system, refs)
        got = cached.score(system, refs)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, atol=1e-6)
    # Second call: every reference was a hit; the third: everything was.
    assert cached.cache.hits >= len(set(refs)) + len(set(system_a + refs))
    assert len(fresh.cache) == 0 and fresh.cache.nbytes == 0


def test_cache_reuse_all_layers_and_multi_ref() -> None:
    refs = [[r, r + " again"] for r in REFS[:20]]
    fresh = rb.BERTScorer(model_type=BERT, all_layers=True, cache_bytes=0)
    cached = rb.BERTScorer(model_type=BERT, all_layers=True)
    for system in (CANDS[:20], CANDS[20:40]):
        for g, w in zip(cached.score(system, refs), fresh.score(system, refs)):
            assert g.shape == w.shape == (4, 20)
            np.testing.assert_allclose(g, w, atol=1e-6)
    assert cached.cache.hits > 0


def test_cache_is_bounded_and_lru() -> None:
    cache = EmbeddingCache(1000)
    a, b, c = (np.zeros(50, np.float32) for _ in range(3))  # 200 bytes each
    cache.put("a", a)
    cache.put("b", b)
    cache.put("c", c)
    assert cache.get("a") is a  # now most recent
    cache.put("d", np.zeros(100, np.float32))  # 400 bytes: total 1000
    assert cache.nbytes == 1000 and len(cache) == 4
    cache.put("e", np.zeros(50, np.float32))  # evicts the least recent: "b"
    assert cache.get("b") is None and cache.get("a") is not None
    assert cache.nbytes <= 1000
    cache.put("huge", np.zeros(1000, np.float32))  # bigger than the bound: not kept
    assert cache.get("huge") is None and cache.nbytes <= 1000
    cache.put("a", np.zeros(10, np.float32))  # replacing re-counts
    assert cache.nbytes == sum(v.nbytes for v in cache._items.values())
    assert cache.hits == 2 and cache.misses == 2
    cache.clear()
    assert len(cache) == 0 and cache.nbytes == 0 and cache.hits == 0
    with pytest.raises(ValueError, match=">= 0"):
        EmbeddingCache(-1)
    with pytest.raises(TypeError):
        EmbeddingCache(1.5)  # type: ignore[arg-type]


def test_scorer_cache_stays_within_its_bound() -> None:
    bound = 40_000  # a few dozen tiny-model texts
    scorer = rb.BERTScorer(model_type=BERT, cache_bytes=bound)
    scorer.score(CANDS, REFS)
    assert 0 < scorer.cache.nbytes <= bound
    # A round's array larger than a quarter of the bound is not pinned: its texts are copies.
    assert all(v.base is None for v in scorer.cache._items.values())
    assert scorer.cache.nbytes == sum(v.nbytes for v in scorer.cache._items.values())


def test_cache_keeps_views_of_the_packed_array_not_copies() -> None:
    scorer = rb.BERTScorer(model_type=BERT)  # the default bound, 512 MiB
    scorer.score(CANDS, REFS)
    values = list(scorer.cache._items.values())
    bases = {id(b): b for b in map(EmbeddingCache._base, values)}
    # No per-text copy: every entry is a read-only view of a round's packed array.
    assert all(v.base is not None and not v.flags.writeable for v in values)
    assert len(bases) < len(values) / 10
    assert scorer.cache.nbytes == sum(b.nbytes for b in bases.values())
    fresh = rb.BERTScorer(model_type=BERT, cache_bytes=0)
    for g, w in zip(scorer.score(CANDS, REFS), fresh.score(CANDS, REFS)):
        np.testing.assert_array_equal(g, w)
    # A second system against the same references: its round holds the references' rows as
    # hits, which the cache must not keep twice; every byte it counts is an entry's.
    system_b = [" ".join(c.split()[::-1]) for c in CANDS]
    scorer.score(system_b, REFS)
    values = list(scorer.cache._items.values())
    assert len(values) > len(set(CANDS) | set(REFS))
    assert scorer.cache.nbytes == sum(v.nbytes for v in values)


def test_cache_counts_a_viewed_array_once_and_frees_it_with_its_last_view() -> None:
    cache = EmbeddingCache(4000)
    block = np.zeros((10, 10), np.float32)  # 400 bytes
    for k in range(5):
        cache.put(f"t{k}", block[2 * k : 2 * k + 2])
    assert cache.nbytes == 400 and len(cache) == 5
    cache.put("t0", np.ones(20, np.float32))  # replaced by an array of its own
    assert cache.nbytes == 480
    for k in range(1, 5):
        cache.put(f"t{k}", np.ones(1, np.float32))  # the last views go: the block is freed
    assert cache.nbytes == 80 + 4 * 4
    big = np.zeros((40, 10), np.float32)  # 1,600 bytes: more than a quarter of the bound
    cache.put("big", big[:2])
    assert cache.get("big").base is None  # kept as a copy, not pinning ``big``


# ---- bounded memory -----------------------------------------------------------------------------


def test_rounds_cut_pairs_by_token_budget() -> None:
    tokens = np.array([5, 5, 5, 20, 1, 1, 1])
    assert list(rounds(tokens, 10)) == [(0, 2), (2, 3), (3, 4), (4, 7)]
    assert list(rounds(tokens, 1000)) == [(0, 7)]
    assert list(rounds(np.array([], dtype=np.int64), 10)) == []


def test_scorer_holds_only_the_round_in_flight(monkeypatch: pytest.MonkeyPatch) -> None:
    cands, refs = CANDS * 2, REFS[::-1] * 2  # 400 pairs, texts repeat across rounds
    want = rb.BERTScorer(model_type=BERT, cache_bytes=0).score(cands, refs)
    scorer = rb.BERTScorer(model_type=BERT, cache_bytes=0)
    rows_per_call: list[int] = []
    embed_packed = scorer.runtime.encoder.embed_packed

    def spy(ids, batch_size, **kw):
        out = embed_packed(ids, batch_size, **kw)
        rows_per_call.append(out.data.shape[-2])
        return out

    hidden = scorer.runtime.encoder.hidden_size
    budget_rows = 600
    monkeypatch.setattr(scorer.runtime.encoder, "embed_packed", spy)
    scorer.round_bytes = budget_rows * 4 * hidden
    scorer.block_pairs = 64
    tracemalloc.start()
    try:
        got = scorer.score(cands, refs)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, atol=1e-6)
    assert len(rows_per_call) > 10
    assert max(rows_per_call) <= budget_rows
    # All 800 texts' vectors at once would be ~sum(rows) * 4 * hidden bytes; NumPy's peak
    # stays near one round's.
    total_bytes = sum(rows_per_call) * 4 * hidden
    assert peak < total_bytes / 3
