"""Token alignments (``BERTScorer.align`` / ``align_batch``): records whose P/R/F equal
``score()``, whose token matches rebuild those scores, and whose padding-floor flags reproduce
bert_score's batch-dependent scores (reference/pad_floor_cases.json, from bert_score 0.3.13)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import rust_bertscore as rb
from conftest import FAMILIES, REFERENCE, TINY, wmt_pairs
from rust_bertscore.analyses.align import Alignment, floored_sides
from rust_bertscore.integrations.plot import similarity_matrix

BASELINE = str(REFERENCE / "baseline_minilm_l6.csv")
PAIRS = [
    ("the coffee was cold", "the coffee is hot"),
    ("She took the road north.", "she would take the northern road"),
    ("a", "a new customer came in and sat down by the window"),
    ("", "an empty candidate"),
]


def _scorer(family: str, **kw) -> rb.BERTScorer:
    return rb.BERTScorer(model_type=str(TINY / family), num_layers=2, **kw)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize(("cand", "ref"), PAIRS)
def test_align_equals_score_alone(family: str, cand: str, ref: str) -> None:
    scorer = _scorer(family)
    a = scorer.align(cand, ref)
    P, R, F = rb.score([cand], [ref], model_type=str(TINY / family), num_layers=2)
    np.testing.assert_array_equal(np.float32([a.P, a.R, a.F]), [P[0], R[0], F[0]])
    assert not a.candidate.floored and not a.reference.floored
    assert (a.index, a.ref_index, a.rescaled) == (0, None, False)
    # The token matches rebuild the scores (an empty side scores 0, as bert_score).
    if cand.strip():
        assert a.candidate.weighted_mean() == pytest.approx(a.P, abs=1e-6)
        assert a.reference.weighted_mean() == pytest.approx(a.R, abs=1e-6)
    else:
        assert a.P == 0 and a.R == 0
        assert [t.weight for t in a.candidate.tokens] == [0.0, 0.0]


def test_tokens_weights_and_matches_are_the_heatmaps() -> None:
    cand, ref = PAIRS[1]
    model = str(TINY / "bert")
    a = _scorer("bert").align(cand, ref)
    sim = similarity_matrix(cand, ref, model_type=model, num_layers=2)
    assert [t.token for t in a.candidate.tokens] == sim.cand_tokens
    assert [t.token for t in a.reference.tokens] == sim.ref_tokens
    np.testing.assert_array_equal([t.weight for t in a.candidate.tokens], sim.cand_weights)
    np.testing.assert_array_equal([t.match for t in a.candidate.tokens], sim.cand_matches)
    np.testing.assert_array_equal([t.match for t in a.reference.tokens], sim.ref_matches)
    rows = np.arange(len(a.candidate.tokens))
    np.testing.assert_allclose(
        [t.cosine for t in a.candidate.tokens], sim.matrix[rows, sim.cand_matches], atol=1e-6
    )
    assert a.candidate.tokens[0].piece == "[CLS]" and a.candidate.tokens[0].weight == 0
    assert [t.position for t in a.reference.tokens] == list(range(len(a.reference.tokens)))


def test_readable_tokens_drop_byte_level_markers() -> None:
    a = _scorer("roberta").align("the coffee was cold", "the coffee was cold")
    pieces = [t.piece for t in a.candidate.tokens]
    assert any(p.startswith("Ġ") for p in pieces)
    assert not any("Ġ" in t.token for t in a.candidate.tokens)
    assert (a.candidate.tokens[1].piece, a.candidate.tokens[1].token) == ("Ġthe", "the")
    # Identical texts: every token matches itself with cosine 1.
    content = [t for t in a.candidate.tokens if t.weight > 0]
    assert all(t.match == t.position for t in content)
    assert all(abs(t.cosine - 1) < 1e-6 for t in content)
    assert abs(a.F - 1.0) < 1e-6


def test_records_are_frozen_and_json_ready() -> None:
    a = _scorer("bert").align(*PAIRS[0])
    assert isinstance(a, Alignment)
    with pytest.raises(AttributeError):
        a.P = 0.0  # type: ignore[misc]
    d = json.loads(json.dumps(a.to_dict()))
    assert d["F1"] == a.F and d["candidate"]["text"] == PAIRS[0][0]
    assert d["reference"]["tokens"][1]["token"] == a.reference.tokens[1].token
    assert set(d["candidate"]["tokens"][0]) == {
        "position",
        "token",
        "piece",
        "id",
        "weight",
        "match",
        "cosine",
        "scored",
        "excluded",
    }


def test_batch_records_equal_score_in_order() -> None:
    scorer = _scorer("electra")
    cands = [c for c, _ in PAIRS]
    refs = [r for _, r in PAIRS]
    records = scorer.align_batch(cands, refs, batch_size=2)
    P, R, F = scorer.score(cands, refs, batch_size=2)
    assert [r.index for r in records] == [0, 1, 2, 3]
    np.testing.assert_array_equal(np.float32([r.P for r in records]), P)
    np.testing.assert_array_equal(np.float32([r.R for r in records]), R)
    np.testing.assert_array_equal(np.float32([r.F for r in records]), F)
    assert [r.candidate.text for r in records] == cands


def test_multi_reference_records_max_to_score() -> None:
    scorer = _scorer("distilbert")
    cands = ["the coffee was cold", "She took the road north."]
    refs = [["the coffee is hot", "cold coffee", "tea"], ["the northern road"]]
    records = scorer.align_batch(cands, refs)
    assert [(r.index, r.ref_index) for r in records] == [(0, 0), (0, 1), (0, 2), (1, 0)]
    assert [r.reference.text for r in records] == [*refs[0], *refs[1]]
    P, R, F = scorer.score(cands, refs)
    for i, want in enumerate(zip(P, R, F)):
        mine = [r for r in records if r.index == i]
        got = [max(getattr(r, k) for r in mine) for k in ("P", "R", "F")]
        np.testing.assert_array_equal(np.float32(got), want)


def test_idf_and_rescaled_scorers() -> None:
    refs = [r for _, r in PAIRS[:3]]
    cands = [c for c, _ in PAIRS[:3]]
    scorer = _scorer("bert", idf=True, idf_sents=refs)
    a = scorer.align(cands[0], refs[0])
    P, R, F = scorer.score(cands[:1], refs[:1])
    np.testing.assert_array_equal(np.float32([a.P, a.R, a.F]), [P[0], R[0], F[0]])
    assert a.candidate.weighted_mean() == pytest.approx(a.P, abs=1e-6)
    weights = {t.weight for t in a.reference.tokens if t.piece not in ("[CLS]", "[SEP]")}
    assert len(weights) > 1  # IDF weights, not uniform
    rescaled = _scorer("bert", lang="en", rescale_with_baseline=True, baseline_path=BASELINE)
    b = rescaled.align(cands[0], refs[0])
    P, R, F = rescaled.score(cands[:1], refs[:1])
    np.testing.assert_array_equal(np.float32([b.P, b.R, b.F]), [P[0], R[0], F[0]])
    assert b.rescaled and b.hash == rescaled.hash
    with pytest.raises(ValueError, match="IDF weights are not computed"):
        _scorer("bert", idf=True).align("a", "b")


def test_align_errors() -> None:
    scorer = _scorer("bert")
    with pytest.raises(TypeError, match="use align_batch"):
        scorer.align(["a"], ["b"])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"ref cannot be encoded"):
        scorer.align("a", "b\ud800")
    with pytest.raises(ValueError, match=r"refs\[1\] cannot be encoded"):
        scorer.align_batch(["a", "b"], ["c", "\udc80"])
    with pytest.raises(ValueError, match="Different number"):
        scorer.align_batch(["a", "b"], ["c"])
    with pytest.raises(ValueError, match="batch_size must be a positive int"):
        scorer.align_batch(["a"], ["c"], batch_size=0)
    with pytest.raises(ValueError, match="all_layers=False"):
        _scorer("bert", all_layers=True).align("a", "b")
    assert scorer.align_batch([], []) == []


def test_batch_independent_scorer_is_never_floored() -> None:
    cands, refs = ["a", "the coffee was cold"], ["a new customer came in", "the coffee"]
    scorer = _scorer("bert", batch_independent=True)
    records = scorer.align_batch(cands, refs, batch_size=2)
    assert not any(r.candidate.floored or r.reference.floored for r in records)
    floored = _scorer("bert").align_batch(cands, refs, batch_size=2)
    assert any(r.candidate.floored or r.reference.floored for r in floored)


def test_floored_sides_by_hand() -> None:
    # Batches of 2: (pair 0, pair 1), (pair 2). Pair 0's reference (3 tokens) is shorter than
    # pair 1's (5): pair 0's candidate is floored; pair 1's candidate (4) is shorter than pair
    # 0's (6): pair 1's reference is floored. Pair 2 is alone: nothing is floored.
    cand_floored, ref_floored = floored_sides([6, 4, 2], [3, 5, 9], 2)
    assert cand_floored.tolist() == [True, False, False]
    assert ref_floored.tolist() == [False, True, False]
    cand_floored, ref_floored = floored_sides([6, 4, 2], [3, 5, 9], 3)
    assert cand_floored.tolist() == [True, True, False]
    assert ref_floored.tolist() == [False, True, True]


def _pad_floor_cases() -> list[dict]:
    with open(REFERENCE / "pad_floor_cases.json", encoding="utf-8") as f:
        return [c for c in json.load(f)["cases"] if not c["kwargs"].get("all_layers")]


@pytest.mark.parametrize("case", _pad_floor_cases(), ids=lambda c: c["name"])
def test_scored_matches_give_bert_scores_batch_floor(minilm_dir: Path, case: dict) -> None:
    """Token values as scored (``max(cosine, 0)`` on floored sides) rebuild bert_score's
    batch-dependent P and R; the raw cosines rebuild each pair scored alone."""
    kw = case["kwargs"]
    refs = case["refs"]
    idf_sents = [r for g in refs for r in g] if isinstance(refs[0], list) else refs
    scorer = rb.BERTScorer(
        model_type=str(minilm_dir),
        num_layers=kw["num_layers"],
        idf=kw.get("idf", False),
        idf_sents=idf_sents if kw.get("idf") else None,
    )
    records = scorer.align_batch(case["cands"], refs, batch_size=kw["batch_size"])
    n = len(case["cands"])
    got = np.zeros((2, n))
    got.fill(-np.inf)
    for r in records:
        got[0, r.index] = max(got[0, r.index], r.candidate.weighted_mean())
        got[1, r.index] = max(got[1, r.index], r.reference.weighted_mean())
    want = np.array([case["expected"]["P"], case["expected"]["R"]])
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)
    # The records' P/R/F are score()'s, which applies the floor too.
    for key in ("P", "R", "F"):
        best = np.full(n, -np.inf)
        for r in records:
            best[r.index] = max(best[r.index], getattr(r, key))
        np.testing.assert_allclose(best, case["expected"][key], rtol=0, atol=1e-5, err_msg=key)
    floored = [r for r in records if r.candidate.floored or r.reference.floored]
    assert floored, "these cases are chosen to exercise the floor"
    moved = [
        side
        for r in records
        for side in (r.candidate, r.reference)
        if abs(side.weighted_mean() - side.weighted_mean(scored=False)) > 1e-6
    ]
    assert all(side.floored for side in moved)  # only floored sides move


@pytest.mark.parametrize("family", ["albert", "mbart", "mpnet", "bart"])
def test_other_tokenizer_back_ends(family: str) -> None:
    cand, ref = PAIRS[0]
    a = _scorer(family).align(cand, ref)
    P, R, F = rb.score([cand], [ref], model_type=str(TINY / family), num_layers=2)
    np.testing.assert_array_equal(np.float32([a.P, a.R, a.F]), [P[0], R[0], F[0]])
    assert not any(t.token.startswith(("▁", "Ġ")) for t in a.candidate.tokens)
    assert all(t.token for t in a.candidate.tokens)


# -- the scorer's options (long texts in windows, exclusions, beta) ------------------------------

LONG = " ".join(wmt_pairs()[0][:6])  # about 250 tokens: past tiny BERT's 128
OPTION_SETS = [
    pytest.param({"long_texts": "window", "window_stride": 16}, id="window-stride16"),
    pytest.param({"exclude_punctuation": True}, id="no-punc"),
    pytest.param({"exclude_special_tokens": True}, id="no-special"),
    pytest.param({"beta": 2.0, "idf": True}, id="beta2-idf"),
    pytest.param(
        {
            "long_texts": "window",
            "exclude_punctuation": True,
            "exclude_special_tokens": True,
            "beta": 2.0,
        },
        id="all",
    ),
]


def _unit_rows(v: np.ndarray) -> np.ndarray:
    v = v.astype(np.float64)
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


@pytest.mark.filterwarnings("ignore::rust_bertscore.RustBertScoreWarning")
@pytest.mark.parametrize("options", OPTION_SETS)
def test_align_honours_the_options(options: dict) -> None:
    """Every token of a long text (vectors from the windows), excluded tokens flagged and never
    matched, P/R/F equal to score() with the options; checked against embed()'s vectors."""
    cands = [LONG, "Hello, world! It's a test.", "!!!", "the coffee was cold"]
    refs = ["the coffee is hot.", LONG[200:], "a test -- surely.", "(the) coffee: hot"]
    kw = {"idf_sents": refs} if options.get("idf") else {}
    scorer = _scorer("bert", **options, **kw)
    records = scorer.align_batch(cands, refs, batch_size=2)
    P, R, F = scorer.score(cands, refs, batch_size=2)
    np.testing.assert_array_equal(np.float32([[a.P, a.R, a.F] for a in records]).T, [P, R, F])
    embs = scorer.embed(cands + refs)
    beta = options.get("beta", 1.0)
    for k, a in enumerate(records):
        c, r = embs[k], embs[len(cands) + k]
        for side, mine, other in ((a.candidate, c, r), (a.reference, r, c)):
            assert [t.id for t in side.tokens] == mine.ids.tolist()
            assert [t.excluded for t in side.tokens] == mine.excluded.tolist()
            sim = _unit_rows(mine.vectors) @ _unit_rows(other.vectors).T
            sim[:, other.excluded] = -np.inf
            for t in side.tokens:
                if t.excluded or other.excluded.all():  # excluded, or nothing to match
                    assert t.match == -1 and np.isnan(t.cosine)
                    assert t.weight == 0 or not t.excluded
                else:
                    assert t.match == int(sim[t.position].argmax())
                    assert t.cosine == pytest.approx(sim[t.position].max(), abs=1e-5)
                    assert not other.excluded[t.match]
        emptied = any(not (~e.excluded & ~e.special).any() for e in (c, r))
        if emptied:  # bert_score's empty-text rule
            assert a.P == 0 and a.R == 0
            continue
        p, r_ = a.candidate.weighted_mean(), a.reference.weighted_mean()
        assert [p, r_] == pytest.approx([a.P, a.R], abs=1e-5)
        f_beta = (1 + beta**2) * p * r_ / (beta**2 * p + r_)
        assert abs(a.F - f_beta) <= 1e-5
    first = json.loads(json.dumps(records[1].to_dict()))["candidate"]["tokens"][0]
    assert first["excluded"] == options.get("exclude_special_tokens", False)
    assert (first["cosine"] is None) == first["excluded"]
