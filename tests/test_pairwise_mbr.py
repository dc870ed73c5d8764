"""``BERTScorer.pairwise`` against ``score()`` on the expanded pairs, and MBR selection against
utilities computed independently from ``score()`` with NumPy."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

import rust_bertscore as rb
from conftest import TINY_BERT, wmt_pairs
from rust_bertscore.mbr import choose, utilities

CANDS, REFS = wmt_pairs()


def expanded(scorer: rb.BERTScorer, cands: list[str], refs: list[str]):
    """score() of every (cand, ref) pair, as (len(cands), len(refs)) arrays (or with layers)."""
    ec = [c for c in cands for _ in refs]
    er = [r for _ in cands for r in refs]
    out = scorer.score(ec, er)
    return [s.reshape(*s.shape[:-1], len(cands), len(refs)) for s in out]


def assert_grids(got, want, atol: float = 1e-6) -> None:
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == np.float32
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        np.testing.assert_allclose(np.nan_to_num(g), np.nan_to_num(w), atol=atol, rtol=0)


@pytest.mark.filterwarnings("ignore::rust_bertscore.RustBertScoreWarning")
def test_pairwise_equals_score_on_the_expanded_pairs() -> None:
    cands = [*CANDS[:9], "", CANDS[2]]  # an empty text and a repeat
    refs = [*REFS[:6], "", CANDS[0]]  # a text that is also a candidate
    scorer = rb.BERTScorer(model_type=TINY_BERT, batch_independent=True)
    got = scorer.pairwise(cands, refs)
    assert got[0].shape == (len(cands), len(refs))
    assert_grids(got, expanded(scorer, cands, refs))


def test_pairwise_with_idf_rescaling_and_all_layers(tmp_path: Path) -> None:
    cands, refs = CANDS[:6], REFS[:5]
    # A token of REFS[0] in every idf sentence weighs 0: with the idf below every token of
    # "the the" weighs 0 (a weightless side: NaN, F 0).
    idf = defaultdict(lambda: 1.0)
    scorer = rb.BERTScorer(model_type=TINY_BERT, batch_independent=True, idf=True)
    ids = scorer.tokenizer.encode(["the the"])[0]
    idf.update({t: 0.0 for t in ids})
    scorer.set_idf_dict(idf)
    with_weightless = [*cands, "the the"]
    assert_grids(scorer.pairwise(with_weightless, refs), expanded(scorer, with_weightless, refs))
    baseline = tmp_path / "b.tsv"
    baseline.write_text("LAYER,P,R,F\n" + "".join(f"{i},0.3,0.4,0.5\n" for i in range(4)))
    scorer = rb.BERTScorer(
        model_type=TINY_BERT,
        batch_independent=True,
        all_layers=True,
        rescale_with_baseline=True,
        baseline_path=str(baseline),
    )
    got = scorer.pairwise(cands, refs)
    assert got[2].shape == (4, 6, 5)
    assert_grids(got, expanded(scorer, cands, refs))


def test_pairwise_by_blocks_encodes_each_text_once() -> None:
    cands, refs = CANDS[:40], [*REFS[:30], *CANDS[:5]]
    whole = rb.BERTScorer(model_type=TINY_BERT, batch_independent=True).pairwise(cands, refs)
    scorer = rb.BERTScorer(model_type=TINY_BERT, batch_independent=True, cache_bytes=0)
    scorer.round_bytes = 200 * 4 * 128  # 200 token rows: many blocks
    got = scorer.pairwise(cands, refs)
    assert scorer.pipeline.vector_source.encoded == len(set(cands + refs))
    assert_grids(got, whole)


def test_pairwise_edge_cases() -> None:
    scorer = rb.BERTScorer(model_type=TINY_BERT)
    p, r, f = scorer.pairwise([], REFS[:3])
    assert p.shape == r.shape == f.shape == (0, 3)
    assert scorer.pairwise(CANDS[:2], [])[2].shape == (2, 0)
    with pytest.raises(TypeError, match="cands"):
        scorer.pairwise("one text", REFS[:2])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="batch_size"):
        scorer.pairwise(CANDS[:2], REFS[:2], batch_size=0)


# ---- MBR ----------------------------------------------------------------------------------------


def independent_utilities(scorer: rb.BERTScorer, samples: list[str]) -> np.ndarray:
    """Mean F of each sample against the others, from score() of the expanded pairs."""
    f = expanded(scorer, samples, samples)[2].astype(np.float64)
    n = len(samples)
    return np.array([np.mean([f[i, j] for j in range(n) if j != i]) for i in range(n)])


def test_mbr_picks_the_highest_mean_f() -> None:
    samples = CANDS[20:32]
    scorer = rb.BERTScorer(model_type=TINY_BERT, batch_independent=True)
    result = scorer.mbr(samples)
    want = independent_utilities(scorer, samples)
    np.testing.assert_allclose(result.utilities, want, atol=1e-6)
    assert result.index == int(np.argmax(want)) and result.sample == samples[result.index]
    assert result.as_dict()["index"] == result.index


def test_mbr_batch_equals_mbr_per_source() -> None:
    sources = [CANDS[0:5], REFS[0:7], CANDS[5:8] + CANDS[0:2], ["lonely"]]
    scorer = rb.BERTScorer(model_type=TINY_BERT)
    batch = scorer.mbr_batch(sources)
    scorer.round_bytes = 150 * 4 * 128  # fewer sources per encoder round, one split in blocks
    small = scorer.mbr_batch(sources)
    for got, again, samples in zip(batch, small, sources):
        one = scorer.mbr(samples)
        assert got.index == again.index == one.index
        np.testing.assert_allclose(got.utilities, one.utilities, atol=1e-6)
        np.testing.assert_allclose(again.utilities, one.utilities, atol=1e-6)


def test_mbr_rules_ties_single_sample_and_errors() -> None:
    scorer = rb.BERTScorer(model_type=TINY_BERT)
    lone = scorer.mbr(["only one"])
    assert lone.index == 0 and lone.sample == "only one" and np.isnan(lone.utilities[0])
    assert lone.as_dict()["utilities"] == [None]
    twins = scorer.mbr([CANDS[1], CANDS[1], CANDS[1]])  # every utility equal: lowest index
    assert twins.index == 0 and len(set(twins.utilities.tolist())) == 1
    assert choose(np.array([0.5, np.nan, 0.7, 0.7])) == 2
    assert choose(np.array([np.nan, np.nan])) == 0
    np.testing.assert_allclose(utilities(np.array([[1.0, 0.2], [0.4, 1.0]])), [0.2, 0.4])
    with pytest.raises(ValueError, match="at least one sample"):
        scorer.mbr([])
    with pytest.raises(ValueError, match=r"sources\[1\] is empty"):
        scorer.mbr_batch([["a"], []])
    with pytest.raises(ValueError, match="all_layers"):
        rb.BERTScorer(model_type=TINY_BERT, all_layers=True).mbr(["a", "b"])
