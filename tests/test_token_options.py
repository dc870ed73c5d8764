"""``exclude_punctuation``, ``exclude_special_tokens``, ``beta``, ``embed()``, the options in the
hash, and ``all_layers`` with several references.

Exclusions and beta are checked against a NumPy computation on ``embed()``'s vectors, with the
tokens to drop found here from the token strings (:func:`punctuation_here`), not by the package.
"""

from __future__ import annotations

import unicodedata
import warnings

import numpy as np
import pytest
from numpy_bertscore import numpy_pair_score

import rust_bertscore as rb
from conftest import REFERENCE, TINY, load_cases
from rust_bertscore.engine.text_embedding import TextEmbedding
from rust_bertscore.errors import RustBertScoreWarning
from rust_bertscore.stages.options import ScoringOptions, f_beta
from rust_bertscore.stages.token_filter import is_punctuation, strip_word_markers

MINILM_CASES = load_cases(REFERENCE / "cases.json")
PAIRS = [
    ("Hello, world! It's a test -- isn't it?", "Hello world: a test, (surely)."),
    ("The cat sat on the mat.", "A cat was sitting on the mat..."),
    ("«Quoted» text; with — dashes…", "Quoted text with dashes"),
    ("!!!", "Nothing but words here"),
    ("", "An empty candidate."),
]


def punctuation_here(token: str) -> bool:
    """The issue's definition, written out again: markers stripped, all of category P*."""
    for marker in ("##", "Ġ", "▁"):
        token = token.removeprefix(marker)
    token = token.removesuffix("</w>")
    return bool(token) and all(unicodedata.category(ch)[0] == "P" for ch in token)


def keep_mask(emb: TextEmbedding, punct: bool, special: bool) -> np.ndarray:
    keep = np.ones(len(emb), bool)
    if special:
        keep &= ~emb.special
    if punct:
        keep &= ~(np.array([punctuation_here(t) for t in emb.tokens], bool) & ~emb.special)
    return keep


@pytest.mark.parametrize(
    ("punct", "special", "idf"),
    [(True, False, False), (False, True, False), (True, True, False), (True, True, True)],
)
def test_exclusions_equal_numpy_on_embed_vectors(minilm_dir, punct, special, idf) -> None:
    cands, refs = [c for c, _ in PAIRS], [r for _, r in PAIRS]
    scorer = rb.BERTScorer(
        model_type=str(minilm_dir),
        idf=idf,
        idf_sents=refs if idf else None,
        exclude_punctuation=punct,
        exclude_special_tokens=special,
        batch_independent=True,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RustBertScoreWarning)  # the empty texts
        P, R, F = scorer.score(cands, refs)
    embs = scorer.embed(cands + refs)
    n = len(cands)
    for k in range(n):
        c, r = embs[k], embs[n + k]
        ck, rk = keep_mask(c, punct, special), keep_mask(r, punct, special)
        np.testing.assert_array_equal(c.excluded, ~ck)
        if not (ck & ~c.special).any() or not (rk & ~r.special).any():
            expected = (0.0, 0.0, 0.0)  # bert_score's empty text: nothing but specials left
        else:
            expected = numpy_pair_score(c, r, ck, rk)
        np.testing.assert_allclose([P[k], R[k], F[k]], expected, atol=1e-5, err_msg=f"pair {k}")


def test_exclusions_change_the_scores_and_drop_match_targets(minilm_dir) -> None:
    """A weight of 0 would not be enough: [CLS]/[SEP] weigh 0 without idf, yet excluding them
    changes P and R, because they are no longer match targets."""
    cands, refs = [c for c, _ in PAIRS[:3]], [r for _, r in PAIRS[:3]]
    plain = rb.score(cands, refs, model_type=str(minilm_dir))
    no_special = rb.score(cands, refs, model_type=str(minilm_dir), exclude_special_tokens=True)
    assert np.max(np.abs(plain[0] - no_special[0])) > 1e-4


def test_punctuation_rule() -> None:
    assert strip_word_markers("##,") == ","
    assert strip_word_markers("Ġ...") == "..."
    assert strip_word_markers("▁«") == "«"
    assert strip_word_markers(".</w>") == "."
    for token in ("##,", "Ġ.", "▁?", "!</w>", "—", "…", "«", "'", "--"):
        assert is_punctuation(token), token
    for token in ("Ġ", "##s", "[CLS]", "a.", "$", "+", "€", "", "��"):
        assert not is_punctuation(token), token


def test_exclusions_with_a_sentencepiece_and_a_byte_level_tokenizer() -> None:
    """Word markers of other families: ``▁`` (mBART) and byte-level ``Ġ`` (RoBERTa)."""
    for model in (str(TINY / "mbart"), str(TINY / "roberta")):
        scorer = rb.BERTScorer(
            model_type=model, num_layers=2, exclude_punctuation=True, batch_independent=True
        )
        cand, ref = "Hello, world! A test.", "Hello world: a test, surely."
        (P, R, F) = scorer.score([cand], [ref])
        c, r = scorer.embed([cand, ref])
        ck, rk = keep_mask(c, True, False), keep_mask(r, True, False)
        assert (~ck).sum() >= 2, c.tokens  # the comma, the "!" and the "." at least
        np.testing.assert_allclose([P[0], R[0], F[0]], numpy_pair_score(c, r, ck, rk), atol=1e-5)


# -- beta ----------------------------------------------------------------------------------------


def test_beta_equals_numpy_and_f1_at_one(minilm_dir) -> None:
    cands, refs = [c for c, _ in PAIRS[:3]], [r for _, r in PAIRS[:3]]
    P1, R1, F1 = rb.score(cands, refs, model_type=str(minilm_dir))
    P3, R3, F3 = rb.score(cands, refs, model_type=str(minilm_dir), beta=3)
    np.testing.assert_array_equal(P1, P3)
    np.testing.assert_array_equal(R1, R3)
    p, r = P1.astype(np.float64), R1.astype(np.float64)
    np.testing.assert_allclose(F3, 10 * p * r / (9 * p + r), atol=1e-6)
    assert np.all(np.abs(F3 - R1) < np.abs(F1 - R1))  # F3 leans towards recall
    one = rb.score(cands, refs, model_type=str(minilm_dir), beta=1.0)
    np.testing.assert_array_equal(one[2], F1)


def test_f_beta_rule() -> None:
    p = np.array([0.5, 0.0, np.nan, 0.8], np.float32)
    r = np.array([0.25, 0.0, 0.5, 0.4], np.float32)
    got = f_beta(p, r, 2.0)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, [5 * 0.125 / (2 + 0.25), 0.0, 0.0, 5 * 0.32 / 3.6], rtol=1e-6)
    np.testing.assert_allclose(f_beta(p[:1], r[:1], 1.0), [2 * 0.125 / 0.75], rtol=1e-6)


def test_option_errors(minilm_dir) -> None:
    with pytest.raises(ValueError, match="long_texts"):
        ScoringOptions(long_texts="chunk")
    with pytest.raises(ValueError, match="needs long_texts='window'"):
        ScoringOptions(window_stride=64)
    with pytest.raises(TypeError, match="window_stride"):
        ScoringOptions(long_texts="window", window_stride=1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="beta"):
        ScoringOptions(beta=0)
    with pytest.raises(TypeError, match="exclude_punctuation"):
        ScoringOptions(exclude_punctuation="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="between 1 and 510"):
        rb.score(["a"], ["b"], model_type=str(minilm_dir), long_texts="window", window_stride=511)
    with pytest.raises(ValueError, match="F1, not F-beta"):
        rb.score(
            ["a"],
            ["b"],
            model_type=str(minilm_dir),
            beta=2,
            rescale_with_baseline=True,
            baseline_path=str(REFERENCE / "baseline_minilm_l6.csv"),
        )


# -- the hash ------------------------------------------------------------------------------------


def test_options_are_named_in_the_hash(minilm_dir) -> None:
    (_, h) = rb.score(["a b"], ["a c"], model_type=str(minilm_dir), return_hash=True)
    assert not any(s in h for s in ("window", "punc", "special", "beta"))
    (_, h) = rb.score(
        ["a b"],
        ["a c"],
        model_type=str(minilm_dir),
        return_hash=True,
        long_texts="window",
        window_stride=128,
        exclude_punctuation=True,
        exclude_special_tokens=True,
        beta=3,
    )
    assert h.endswith("_window-stride=128_no-punc_no-special_beta=3")
    scorer = rb.BERTScorer(model_type=str(minilm_dir), long_texts="window")
    assert scorer.hash.endswith("(rust-bertscore)_window")


# -- embed() -------------------------------------------------------------------------------------


def test_embed_gives_bert_scores_hidden_states() -> None:
    """Tokens, ids, special mask and vectors of the tiny BERT equal the PyTorch model's layer."""
    model = str(TINY / "bert")
    data = np.load(TINY / "bert" / "hidden_states.npz")
    scorer = rb.BERTScorer(model_type=model, num_layers=2)
    cases = load_cases(TINY / "cases.json")
    texts = [t for t in cases[0]["cands"][:3]]
    embs = scorer.embed(texts)
    for i, emb in enumerate(embs):  # the npz holds the first three candidates' states
        assert data[f"ids_{i}"].tolist() == emb.ids.tolist()
        np.testing.assert_allclose(emb.vectors, data[f"hidden_{i}"][2], atol=1e-4)
    for emb in embs:
        assert emb.vectors.dtype == np.float32 and emb.weights.dtype == np.float32
        assert emb.tokens[0] == "[CLS]" and emb.tokens[-1] == "[SEP]"
        assert emb.special.tolist() == [True] + [False] * (len(emb) - 2) + [True]
        assert emb.weights.tolist() == [0.0] + [1.0] * (len(emb) - 2) + [0.0]
        assert not emb.excluded.any()
        assert len(emb.tokens) == len(emb.ids) == len(emb.vectors)


def test_embed_recomputes_every_score(minilm_dir) -> None:
    """With the weights and vectors embed() gives, NumPy finds score()'s numbers (idf on)."""
    case = next(c for c in MINILM_CASES if c["name"] == "plain_L6")
    cands, refs = case["cands"][:6], case["refs"][:6]
    scorer = rb.BERTScorer(model_type=str(minilm_dir), idf=True, idf_sents=refs)
    P, R, F = scorer.score(cands, refs, batch_size=1)
    embs = scorer.embed(cands + refs)
    for k in range(6):
        expected = numpy_pair_score(embs[k], embs[6 + k])
        np.testing.assert_allclose([P[k], R[k], F[k]], expected, atol=1e-5)


def test_embed_checks_its_input(minilm_dir) -> None:
    scorer = rb.BERTScorer(model_type=str(minilm_dir))
    with pytest.raises(TypeError):
        scorer.embed("not a list")  # type: ignore[arg-type]
    assert scorer.embed([]) == []


# -- all_layers with several references -----------------------------------------------------------


def test_all_layers_with_several_references_warns_and_keeps_the_shape(minilm_dir) -> None:
    cands = ["The cat sat on the mat.", "It rains."]
    refs = [["A cat sat on a mat.", "Dogs bark."], ["Rain is falling.", "Sunny day.", "Wet."]]
    with pytest.warns(RustBertScoreWarning, match="all_layers with several references"):
        P, R, F = rb.score(cands, refs, model_type=str(minilm_dir), all_layers=True)
    assert P.shape == R.shape == F.shape == (7, 2)
    for k, group in enumerate(refs):
        flat = rb.score([cands[k]] * len(group), group, model_type=str(minilm_dir), all_layers=True)
        for got, each in zip((P, R, F), flat):
            np.testing.assert_array_equal(got[:, k], each.max(axis=1))
