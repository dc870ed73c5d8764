"""``BERTScorer.pairwise`` against ``score()`` on the expanded pairs, and MBR selection against
utilities computed independently from ``score()`` with NumPy."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

import rust_bertscore as rb
from conftest import TINY_BERT, wmt_pairs
from rust_bertscore.analyses.mbr import choose, utilities

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


LONG = " ".join(CANDS[:16])  # 683 content tokens: past 512 (and tiny BERT's 128)
OPTIONS = [
    pytest.param({"long_texts": "window", "window_stride": 16}, False, id="window-stride16"),
    pytest.param({"long_texts": "window", "window_stride": 16}, True, id="window-stride16-idf"),
    pytest.param({"exclude_punctuation": True}, False, id="no-punc"),
    pytest.param({"exclude_punctuation": True}, True, id="no-punc-idf"),
    pytest.param({"exclude_special_tokens": True}, False, id="no-special"),
    pytest.param({"exclude_special_tokens": True}, True, id="no-special-idf"),
    pytest.param({"beta": 2.0}, False, id="beta2"),
    pytest.param({"beta": 2.0}, True, id="beta2-idf"),
    pytest.param(
        {
            "long_texts": "window",
            "window_stride": 16,
            "exclude_punctuation": True,
            "exclude_special_tokens": True,
            "beta": 2.0,
        },
        True,
        id="all-idf",
    ),
]


@pytest.mark.filterwarnings("ignore::rust_bertscore.RustBertScoreWarning")
@pytest.mark.parametrize(("options", "idf"), OPTIONS)
def test_pairwise_honours_the_options(options: dict, idf: bool) -> None:
    """Each option as score() applies it: a long text in windows, excluded tokens dropped
    (texts emptied by them: bert_score's empty-text rule), IDF renormalised, F-beta."""
    cands = [*CANDS[20:26], LONG, "!!! ...", "", CANDS[21]]  # a long, an emptied, an empty text
    refs = [*REFS[20:25], "« ? »", LONG, CANDS[20]]
    scorer = rb.BERTScorer(
        model_type=TINY_BERT,
        batch_independent=True,
        idf=idf,
        idf_sents=refs if idf else None,
        **options,
    )
    got = scorer.pairwise(cands, refs)
    want = expanded(scorer, cands, refs)
    assert_grids(got, want)
    # The options change these numbers (so the comparison above can tell them apart).
    plain = rb.BERTScorer(
        model_type=TINY_BERT, batch_independent=True, idf=idf, idf_sents=refs if idf else None
    )
    assert np.nanmax(np.abs(plain.pairwise(cands, refs)[2] - got[2])) > 1e-3
    # By blocks within a small round_bytes (vectors wait in a spill store), the same numbers.
    scorer.round_bytes = 300 * 4 * 128
    assert_grids(scorer.pairwise(cands, refs), got)


def test_pairwise_warns_once_about_cut_texts() -> None:
    scorer = rb.BERTScorer(model_type=TINY_BERT)
    with pytest.warns(rb.RustBertScoreWarning, match="1 text was longer") as caught:
        scorer.pairwise([LONG, CANDS[0]], [REFS[0], LONG])
    assert len(caught) == 1 and caught[0].filename == __file__
    with pytest.warns(rb.RustBertScoreWarning, match="1 text was longer") as caught:
        scorer.mbr([LONG, CANDS[0], CANDS[1]])
    assert len(caught) == 1 and caught[0].filename == __file__


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


def test_mbr_pick_under_beta() -> None:
    """With beta=2 the utility is F2: computed here from score()'s P and R of a plain scorer,
    it picks another sample than F1 does for these samples, and mbr() follows it."""
    samples = [CANDS[0], REFS[0], CANDS[1] + " " + CANDS[2], CANDS[0][: len(CANDS[0]) // 2]]
    samples.append(REFS[0] + " " + CANDS[5])
    plain = rb.BERTScorer(model_type=TINY_BERT, batch_independent=True)
    p, r, _ = (s.astype(np.float64) for s in expanded(plain, samples, samples))
    f1, f2 = 2 * p * r / (p + r), 5 * p * r / (4 * p + r)
    n = len(samples)
    u1, u2 = ((f.sum(axis=1) - np.diag(f)) / (n - 1) for f in (f1, f2))
    assert int(np.argmax(u1)) != int(np.argmax(u2))  # the samples tell beta apart
    assert plain.mbr(samples).index == int(np.argmax(u1))
    result = rb.BERTScorer(model_type=TINY_BERT, beta=2).mbr(samples)
    np.testing.assert_allclose(result.utilities, u2, atol=1e-6)
    assert result.index == int(np.argmax(u2)) and result.sample == samples[result.index]
    batch = rb.BERTScorer(model_type=TINY_BERT, beta=2).mbr_batch([samples, samples[:3]])
    assert batch[0].index == result.index
    np.testing.assert_allclose(batch[0].utilities, u2, atol=1e-6)


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
