"""Token-budget batches and zero-copy packing of encoder outputs (no timing)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rust_bertscore as rb
from conftest import TINY_BERT, wmt_pairs
from rust_bertscore.models.runtime import load_runtime
from rust_bertscore.stages import encoder

BERT = TINY_BERT
CANDS, REFS = wmt_pairs()


# ---- batches and packing ------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(1, 600), max_size=80),
    st.integers(1, 70),
    st.integers(1, 5000),
)
def test_plan_batches_covers_in_order_within_budget(
    lengths: list[int], batch_size: int, max_tokens: int
) -> None:
    sorted_lengths = np.sort(np.asarray(lengths, dtype=np.int64))[::-1]
    spans = encoder.plan_batches(sorted_lengths, batch_size, max_tokens)
    covered = [i for lo, hi in spans for i in range(lo, hi)]
    assert covered == list(range(len(lengths)))
    n = len(sorted_lengths)
    for lo, hi in spans:
        width = max(int(sorted_lengths[lo]), 1)
        assert 1 <= hi - lo <= batch_size
        assert (hi - lo) * sorted_lengths[lo] <= max_tokens or hi - lo == 1
        # Padding: a text joins once the batch holds MIN_BATCH_TOKENS only if it fills
        # MIN_FILL of the width ...
        for i in range(lo + 1, hi):
            full = (i - lo) * width >= encoder.MIN_BATCH_TOKENS
            assert not full or sorted_lengths[i] >= encoder.MIN_FILL * width
        # ... and a batch closes early only for that reason.
        if hi < n and hi - lo < batch_size and (hi - lo + 1) * width <= max_tokens:
            assert (hi - lo) * width >= encoder.MIN_BATCH_TOKENS
            assert sorted_lengths[hi] < encoder.MIN_FILL * width


def test_plan_batches_bounds_padding_of_a_long_tail() -> None:
    """Few texts of very different lengths: the plain cut (64 a batch) padded them by ~70%."""
    rng = np.random.default_rng(0)
    lengths = np.sort(np.minimum(rng.lognormal(3.0, 0.6, size=200).astype(np.int64) + 1, 512))
    lengths = lengths[::-1]
    spans = encoder.plan_batches(lengths, 64, 4096)
    padded = sum((hi - lo) * int(lengths[lo]) for lo, hi in spans)
    assert padded <= 1.15 * lengths.sum()


def test_plan_batches_rejects_bad_sizes() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        encoder.plan_batches(np.array([3]), 0, 10)
    with pytest.raises(ValueError, match="max_tokens"):
        encoder.plan_batches(np.array([3]), 1, 0)


@pytest.mark.parametrize("all_layers", [False, True])
def test_embed_packed_is_embed_back_to_back(all_layers: bool) -> None:
    runtime = load_runtime(BERT, 2 if not all_layers else None, all_layers=all_layers)
    ids = runtime.tokenizer.encode(["a cup of tea", "", "the road to the sea and back", "hi"])
    enc = runtime.encoder
    packed = enc.embed_packed(ids, batch_size=2, extra_rows=5)
    lengths = [len(t) for t in ids]
    assert packed.offsets[-1] == sum(lengths)
    assert packed.data.shape[-2] == sum(lengths) + 5
    assert sorted(packed.order.tolist()) == [0, 1, 2, 3]
    assert [lengths[i] for i in packed.order] == sorted(lengths, reverse=True)
    for j, i in enumerate(packed.order):
        lo, hi = packed.offsets[j], packed.offsets[j + 1]
        piece = packed.data[:, lo:hi] if all_layers else packed.data[lo:hi]
        alone = enc.run([ids[i]])  # one text, no padding
        want = alone[:, 0] if all_layers else alone[0]
        np.testing.assert_allclose(piece, want, atol=2e-5)
        np.testing.assert_allclose(enc.embed(ids, 3)[i], piece, atol=2e-5)


def test_token_budget_gives_the_same_scores() -> None:
    big = rb.BERTScorer(model_type=BERT, cache_bytes=0)
    want = big.score(CANDS[:40], REFS[:40])
    small = rb.BERTScorer(model_type=BERT, cache_bytes=0)
    small.runtime.encoder.max_tokens, old = 16, small.runtime.encoder.max_tokens
    try:
        got = small.score(CANDS[:40], REFS[:40], batch_size=3)
    finally:
        small.runtime.encoder.max_tokens = old
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, atol=1e-6)
