"""The similarity matrix behind one candidate/reference score, and its heatmap (bert_score's
``plot_example`` and ``bert-score-show``).

The matrix is computed from the tokens and encoder the scorer uses: the cosine similarity of
every candidate token vector with every reference token vector. P, R and F1 are greedy matching
over it with bert_score's uniform weights (special tokens weigh 0); they are computed by the
scorer's kernel on the same vectors, so they equal ``score([candidate], [reference])``.
Plotting needs matplotlib (``pip install rust-bertscore[plot]``) and uses its Agg renderer,
without pyplot.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import _core
from .baselines import baseline_values, packaged_baseline, rescale
from .embeddings import TokenWeights, pack
from .registry import choose_model
from .runtime import load_runtime
from .scores import make_hash
from .text import check_text

PLOT_EXTRA_HINT = "pip install rust-bertscore[plot]"

ANNOTATE_MAX_TOKENS = 40
"""Longest side (tokens) whose cells still get their value written in them."""

_WORD_MARKERS = ("Ġ", "▁")


@dataclass(frozen=True)
class SimilarityMatrix:
    """Token similarities of one candidate/reference pair and the scores they give.

    Attributes
    ----------
    cand_tokens, ref_tokens : list of str
        Display strings of every token, special tokens included.
    matrix : np.ndarray
        float32 (len(cand_tokens), len(ref_tokens)): cosine similarities, rescaled with the F
        baseline when ``rescaled`` (as bert_score's plot does).
    cand_weights, ref_weights : np.ndarray
        Token weights (0 for special tokens).
    P, R, F : float
        BERTScore of the pair (rescaled when ``rescaled``).
    model_type : str
    num_layers : int
    rescaled : bool
    hash : str
        The settings string, as ``score(..., return_hash=True)`` gives it.
    """

    cand_tokens: list[str]
    ref_tokens: list[str]
    matrix: np.ndarray
    cand_weights: np.ndarray
    ref_weights: np.ndarray
    P: float
    R: float
    F: float
    model_type: str
    num_layers: int
    rescaled: bool
    hash: str

    @property
    def cand_matches(self) -> np.ndarray:
        """For each candidate token, the reference token it is matched to (precision)."""
        return self.matrix.argmax(axis=1)

    @property
    def ref_matches(self) -> np.ndarray:
        """For each reference token, the candidate token it is matched to (recall)."""
        return self.matrix.argmax(axis=0)

    @property
    def cand_content(self) -> np.ndarray:
        """Indices of the candidate tokens that count (weight > 0)."""
        return np.flatnonzero(self.cand_weights > 0)

    @property
    def ref_content(self) -> np.ndarray:
        """Indices of the reference tokens that count (weight > 0)."""
        return np.flatnonzero(self.ref_weights > 0)


def _display(token: str) -> str:
    for marker in _WORD_MARKERS:
        if token.startswith(marker) and len(token) > 1:
            return token[len(marker) :]
    return token


def _normalise(v: np.ndarray) -> np.ndarray:
    v = v.astype(np.float64)
    norms = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.where(norms > 0, norms, 1.0)


def similarity_matrix(
    candidate: str,
    reference: str,
    model_type: str | None = None,
    num_layers: int | None = None,
    lang: str | None = None,
    rescale_with_baseline: bool = False,
    baseline_path: str | None = None,
    device: str | None = None,
    precision: str = "fp32",
    batch_size: int = 64,
) -> SimilarityMatrix:
    """Cosine similarities of the tokens of ``candidate`` and ``reference``, and their P/R/F1.

    Parameters are those of :func:`rust_bertscore.score` (no IDF: the plot uses uniform
    weights, as bert_score's).

    Raises
    ------
    ValueError
        For an empty text, or rescaling without ``lang`` or ``baseline_path``, or a missing
        baseline file.
    """
    candidate = check_text(candidate, "candidate")
    reference = check_text(reference, "reference")
    for name, text in (("candidate", candidate), ("reference", reference)):
        if not text.strip():
            raise ValueError(f"the {name} is empty: there is no token to show")
    if rescale_with_baseline and lang is None and baseline_path is None:
        raise ValueError(
            "Need to specify Language when rescaling with baseline: pass lang (e.g. "
            "lang='en') or baseline_path"
        )
    model = choose_model(model_type, lang)
    runtime = load_runtime(model, num_layers, device=device, precision=precision)
    tokenizer = runtime.tokenizer
    ids = tokenizer.encode([candidate, reference])
    # Encoded as score([candidate], [reference]) encodes them: one batch of the distinct texts.
    same = candidate == reference
    vectors = runtime.encoder.embed(ids[:1] if same else ids, batch_size)
    cand_vec, ref_vec = vectors[0], vectors[0 if same else 1]
    weights = TokenWeights.uniform(tokenizer.special_ids, tokenizer.vocab_size)
    wc, wr = weights.weights(ids[0]), weights.weights(ids[1])
    sim = _normalise(cand_vec) @ _normalise(ref_vec).T
    # The title's scores come from the scorer's kernel, on the same vectors.
    packed = pack([cand_vec, ref_vec], [wc, wr])
    one, zero = np.ones(1, dtype=np.int64), np.zeros(1, dtype=np.int64)
    prf = _core.score_ragged(packed.data, packed.offsets, packed.weights, zero, one)
    if rescale_with_baseline:
        lang_dir = (lang or "").lower() if model_type is None else (lang or "")
        path = baseline_path or str(packaged_baseline(lang_dir, model))
        if not os.path.isfile(path):
            raise ValueError(f"Baseline not Found for {model} on {lang} at {path}")
        base = baseline_values(path, runtime.num_layers, False)
        prf = tuple(rescale(x, b) for x, b in zip(prf, base))
        sim = rescale(sim, base[2])
    p, r, f = (float(np.asarray(x).reshape(-1)[0]) for x in prf)
    return SimilarityMatrix(
        cand_tokens=[_display(tokenizer.id_to_token(i)) for i in ids[0]],
        ref_tokens=[_display(tokenizer.id_to_token(i)) for i in ids[1]],
        matrix=sim.astype(np.float32),
        cand_weights=wc,
        ref_weights=wr,
        P=float(p),
        R=float(r),
        F=float(f),
        model_type=model,
        num_layers=runtime.num_layers,
        rescaled=rescale_with_baseline,
        hash=make_hash(
            model,
            runtime.num_layers,
            False,
            rescale_with_baseline,
            baseline_path is not None,
            precision,
        ),
    )


def require_matplotlib() -> None:
    """Raise ImportError with the install hint when matplotlib is not installed."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ImportError(
            f"plotting needs matplotlib, which is not installed: {PLOT_EXTRA_HINT}"
        ) from None


def plot_similarity(sim: SimilarityMatrix, fname: str | os.PathLike[str], dpi: int = 100) -> Path:
    """Draw ``sim`` as a heatmap PNG (or any format matplotlib infers from ``fname``).

    Rows are candidate tokens, columns reference tokens, special tokens left out (as
    bert_score's plot). A square marks each candidate token's best reference token (its
    precision match); a dot marks each reference token's best candidate token (its recall
    match). A match on a special token is not drawn.
    """
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle
    from mpl_toolkits.axes_grid1 import make_axes_locatable

    rows, cols = sim.cand_content, sim.ref_content
    values = sim.matrix[np.ix_(rows, cols)]
    h_tokens = [sim.cand_tokens[i] for i in rows]
    r_tokens = [sim.ref_tokens[j] for j in cols]
    annotate = max(len(rows), len(cols)) <= ANNOTATE_MAX_TOKENS
    cell = 0.62 if annotate else 0.3
    label_w = 0.09 * max((len(t) for t in h_tokens), default=1)
    label_h = 0.08 * max((len(t) for t in r_tokens), default=1)
    width = max(5.0, cell * len(cols) + label_w + 2.2)
    height = max(3.5, cell * len(rows) + label_h + 2.2)

    fig = Figure(figsize=(width, height), dpi=dpi)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    image = ax.imshow(values, cmap="Blues", vmin=0, vmax=1, aspect="equal")
    ax.set_xticks(np.arange(len(cols)))
    ax.set_yticks(np.arange(len(rows)))
    ax.set_xticklabels(r_tokens, fontsize=10, rotation=45, ha="right", rotation_mode="anchor")
    ax.set_yticklabels(h_tokens, fontsize=10)
    ax.set_xlabel("Reference (tokenized)", fontsize=12)
    ax.set_ylabel("Candidate (tokenized)", fontsize=12)
    ax.grid(False)
    title = "Similarity Matrix" + (" (after Rescaling)" if sim.rescaled else "")
    ax.set_title(
        f"{title}\nP = {sim.P:.4f}   R = {sim.R:.4f}   F1 = {sim.F:.4f}",
        fontsize=12,
    )
    cax = make_axes_locatable(ax).append_axes("right", size=0.2, pad=0.2)
    fig.colorbar(image, cax=cax)

    row_pos = {int(i): k for k, i in enumerate(rows)}
    col_pos = {int(j): k for k, j in enumerate(cols)}
    for k, i in enumerate(rows):
        j = col_pos.get(int(sim.cand_matches[i]))
        if j is not None:
            ax.add_patch(Rectangle((j - 0.5, k - 0.5), 1, 1, fill=False, edgecolor="#d62728", lw=2))
    for k, j in enumerate(cols):
        i = row_pos.get(int(sim.ref_matches[j]))
        if i is not None:
            ax.plot(k + 0.33, i - 0.33, "o", color="#ff7f0e", ms=4, mec="k", mew=0.5)
    if annotate:
        for k in range(len(rows)):
            for j in range(len(cols)):
                v = float(values[k, j])
                ax.text(
                    j,
                    k + 0.12,
                    f"{v:.3f}",
                    ha="center",
                    va="center",
                    fontsize=7.5,
                    color="k" if v < 0.5 else "w",
                )
    fig.text(
        0.01,
        0.01,
        "red square: best reference token of a candidate token (P); "
        "orange dot: best candidate token of a reference token (R)",
        fontsize=7,
        color="0.3",
    )
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    out = Path(fname)
    fig.savefig(out, dpi=dpi)
    return out


def plot_example(
    candidate: str,
    reference: str,
    model_type: str | None = None,
    num_layers: int | None = None,
    lang: str | None = None,
    rescale_with_baseline: bool = False,
    baseline_path: str | None = None,
    fname: str = "",
) -> SimilarityMatrix:
    """bert_score's ``plot_example``: the heatmap of one pair, saved to ``fname`` if given.

    Returns the :class:`SimilarityMatrix` (bert_score shows the figure with pyplot instead).
    """
    require_matplotlib()
    sim = similarity_matrix(
        candidate,
        reference,
        model_type=model_type,
        num_layers=num_layers,
        lang=lang,
        rescale_with_baseline=rescale_with_baseline,
        baseline_path=baseline_path,
    )
    if fname:
        plot_similarity(sim, fname)
        print("Saved figure to file: ", fname, file=sys.stderr)
    return sim
