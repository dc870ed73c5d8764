"""The similarity matrix behind ``rust-bertscore show``: the scorer's tokens and vectors, and the
P/R/F1 of its title equal to ``score()`` for the pair."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import rust_bertscore as rb
from conftest import FAMILIES, REFERENCE, TINY, wmt_pairs
from rust_bertscore.integrations.plot import plot_example, plot_similarity, similarity_matrix

PAIRS = [
    ("the coffee was cold", "the coffee is hot"),
    ("She took the road north.", "she would take the northern road"),
    ("a", "a new customer came in and sat down by the window"),
]
BASELINE = str(REFERENCE / "baseline_minilm_l6.csv")


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize(("cand", "ref"), PAIRS)
def test_title_scores_equal_score(family: str, cand: str, ref: str) -> None:
    model = str(TINY / family)
    sim = similarity_matrix(cand, ref, model_type=model, num_layers=2)
    P, R, F = rb.score([cand], [ref], model_type=model, num_layers=2)
    np.testing.assert_array_equal(np.float32([sim.P, sim.R, sim.F]), [P[0], R[0], F[0]])
    assert sim.num_layers == 2 and sim.model_type == model
    # The matrix shown gives the same numbers by greedy matching.
    wc, wr = sim.cand_weights, sim.ref_weights
    p = (sim.matrix.max(axis=1) * wc).sum() / wc.sum()
    r = (sim.matrix.max(axis=0) * wr).sum() / wr.sum()
    np.testing.assert_allclose([p, r], [sim.P, sim.R], rtol=0, atol=1e-6)


def test_matrix_is_the_cosine_of_token_vectors() -> None:
    cand, ref = PAIRS[1]
    sim = similarity_matrix(cand, ref, model_type=str(TINY / "bert"))
    assert sim.matrix.shape == (len(sim.cand_tokens), len(sim.ref_tokens))
    assert sim.cand_tokens[0] == "[CLS]" and sim.cand_tokens[-1] == "[SEP]"
    assert sim.cand_weights[0] == 0 and sim.cand_weights[-1] == 0
    assert np.all(np.abs(sim.matrix) <= 1 + 1e-6)
    # Greedy matching over the matrix gives the title's numbers.
    wc, wr = sim.cand_weights, sim.ref_weights
    p = (sim.matrix.max(axis=1) * wc).sum() / wc.sum()
    r = (sim.matrix.max(axis=0) * wr).sum() / wr.sum()
    assert p == pytest.approx(sim.P, abs=1e-6) and r == pytest.approx(sim.R, abs=1e-6)
    assert sim.matrix[np.arange(len(wc)), sim.cand_matches].max() == sim.matrix.max()


def test_identical_texts_match_themselves() -> None:
    text = "the coffee was cold"
    sim = similarity_matrix(text, text, model_type=str(TINY / "roberta"))
    content = sim.cand_content
    np.testing.assert_array_equal(sim.cand_matches[content], content)
    assert abs(sim.F - 1.0) < 1e-6
    assert sim.cand_tokens[1] == "the"  # byte-level BPE's word marker is not displayed


def test_rescaled_scores_equal_score() -> None:
    cand, ref = PAIRS[0]
    model = str(TINY / "bert")
    sim = similarity_matrix(
        cand, ref, model_type=model, rescale_with_baseline=True, baseline_path=BASELINE
    )
    (P, R, F), hash_ = rb.score(
        [cand],
        [ref],
        model_type=model,
        rescale_with_baseline=True,
        baseline_path=BASELINE,
        return_hash=True,
    )
    np.testing.assert_array_equal(np.float32([sim.P, sim.R, sim.F]), [P[0], R[0], F[0]])
    assert sim.rescaled and sim.hash == hash_


def test_errors() -> None:
    model = str(TINY / "bert")
    with pytest.raises(ValueError, match="candidate is empty"):
        similarity_matrix("  ", "the cat", model_type=model)
    with pytest.raises(ValueError, match="Language"):
        similarity_matrix("a cat", "the cat", model_type=model, rescale_with_baseline=True)
    with pytest.raises(ValueError, match="Baseline not Found"):
        similarity_matrix(
            "a cat", "the cat", model_type=model, rescale_with_baseline=True, lang="xx"
        )
    with pytest.raises(TypeError, match="reference must be a str"):
        similarity_matrix("a cat", ["the cat"], model_type=model)  # type: ignore[arg-type]


def test_plot_writes_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    cand, ref = PAIRS[2]
    sim = similarity_matrix(cand, ref, model_type=str(TINY / "distilbert"))
    out = plot_similarity(sim, tmp_path / "m.png")
    assert out.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    long = " ".join(["word"] * 60)
    sim = similarity_matrix(long, long, model_type=str(TINY / "bert"))
    assert plot_similarity(sim, tmp_path / "long.png").stat().st_size > 10_000


def test_plot_example_is_bert_scores(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "e.png"
    sim = plot_example(*PAIRS[0], model_type=str(TINY / "electra"), fname=str(out))
    assert out.is_file() and 0 < sim.F <= 1
    assert str(out) in capsys.readouterr().err


# -- the scorer's options (long texts in windows, exclusions, beta) ------------------------------

LONG = " ".join(wmt_pairs()[0][:6])  # about 250 tokens: past tiny BERT's 128
OPTION_SETS = [
    pytest.param({"long_texts": "window", "window_stride": 16}, id="window-stride16"),
    pytest.param({"exclude_punctuation": True}, id="no-punc"),
    pytest.param({"exclude_special_tokens": True}, id="no-special"),
    pytest.param({"beta": 2.0}, id="beta2"),
    pytest.param(
        {
            "long_texts": "window",
            "exclude_punctuation": True,
            "exclude_special_tokens": True,
            "beta": 0.5,
        },
        id="all",
    ),
]


@pytest.mark.parametrize("options", OPTION_SETS)
@pytest.mark.parametrize(
    ("cand", "ref"), [(LONG, "Hello, world: a (short) text."), ("The cat -- sat!", LONG[150:])]
)
def test_similarity_matrix_honours_the_options(options: dict, cand: str, ref: str) -> None:
    """The matrix of the tokens score() scores (vectors from the windows, excluded tokens
    absent), checked against embed()'s vectors; P/R/F equal to score() with the options."""
    scorer = rb.BERTScorer(model_type=str(TINY / "bert"), num_layers=2, **options)
    m = scorer.similarity_matrix(cand, ref)
    P, R, F = scorer.score([cand], [ref])
    np.testing.assert_allclose([m.P, m.R, m.F], [P[0], R[0], F[0]], rtol=0, atol=1e-6)
    assert m.hash == scorer.hash.replace("_batch-independent", "")
    c, r = scorer.embed([cand, ref])
    ck, rk = ~c.excluded, ~r.excluded
    assert m.matrix.shape == (ck.sum(), rk.sum())
    vc, vr = (v.astype(np.float64) for v in (c.vectors[ck], r.vectors[rk]))
    cosine = (vc / np.linalg.norm(vc, axis=1)[:, None]) @ (
        vr / np.linalg.norm(vr, axis=1)[:, None]
    ).T
    np.testing.assert_allclose(m.matrix, cosine, atol=1e-5)
    wc, wr = m.cand_weights, m.ref_weights
    np.testing.assert_array_equal(wc, (~c.special[ck]).astype(np.float32))
    p = (m.matrix.max(axis=1) * wc).sum() / wc.sum()
    r_ = (m.matrix.max(axis=0) * wr).sum() / wr.sum()
    b2 = options.get("beta", 1.0) ** 2
    want = [p, r_, (1 + b2) * p * r_ / (b2 * p + r_)]
    np.testing.assert_allclose([m.P, m.R, m.F], want, rtol=0, atol=1e-5)


def test_similarity_matrix_refuses_a_text_emptied_by_exclusions(tmp_path: Path) -> None:
    scorer = rb.BERTScorer(model_type=str(TINY / "bert"), exclude_punctuation=True)
    with pytest.raises(ValueError, match=r"reference has no token left once exclude_punctuation"):
        scorer.similarity_matrix("a cat", "?!")
    with pytest.raises(ValueError, match=r"candidate has no token left once exclude_punct"):
        scorer.plot_example("...", "a cat", fname=str(tmp_path / "x.png"))
    assert not (tmp_path / "x.png").exists()


def test_plot_example_with_exclusions(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    scorer = rb.BERTScorer(
        model_type=str(TINY / "bert"), exclude_punctuation=True, exclude_special_tokens=True
    )
    out = tmp_path / "x.png"
    sim = scorer.plot_example("Hello, world!", "hello -- the world.", fname=str(out))
    assert sim.cand_tokens == ["hel", "##lo", "world"] and out.read_bytes().startswith(b"\x89PNG")


# -- notebooks: the similarity matrix shows as its heatmap ----------------------------------------


def test_repr_png_is_the_heatmap(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from matplotlib.image import imread

    sim = plot_example(*PAIRS[1], model_type=str(TINY / "bert"))
    png = sim._repr_png_()
    assert png is not None and png.startswith(b"\x89PNG\r\n\x1a\n")
    image = imread(io.BytesIO(png))
    assert image.shape[0] > 100 and image.shape[1] > 100
    assert float(image[..., :3].std()) > 0.05  # a picture, not a blank canvas
    # The same picture fname gets.
    saved = imread(plot_similarity(sim, tmp_path / "m.png"))
    assert saved.shape == image.shape and np.array_equal(saved, image)


def test_repr_png_leaves_pyplot_alone() -> None:
    pytest.importorskip("matplotlib")
    code = (
        "import sys, rust_bertscore as rb; "
        f"scorer = rb.BERTScorer(model_type={str(TINY / 'bert')!r}); "
        "m = scorer.similarity_matrix('a cat', 'the cat'); "
        "assert m._repr_png_().startswith(b'\\x89PNG'); "
        "print('matplotlib.pyplot' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_repr_png_without_matplotlib(monkeypatch: pytest.MonkeyPatch) -> None:
    sim = similarity_matrix(*PAIRS[0], model_type=str(TINY / "bert"))
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    assert sim._repr_png_() is None
    assert "SimilarityMatrix(" in repr(sim)  # what IPython shows instead
