"""The heatmap of a :class:`~rust_bertscore.analyses.similarity.SimilarityMatrix` (bert_score's
``plot_example`` picture): drawing only, no scorer.

Needs matplotlib (``pip install rust-bertscore[plot]``), imported when a figure is drawn, and
uses its Agg renderer, without pyplot. :meth:`BERTScorer.plot_example` and the integration
``rust_bertscore.plot`` call it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

from .similarity import SimilarityMatrix

PLOT_EXTRA_HINT = "pip install rust-bertscore[plot]"

ANNOTATE_MAX_TOKENS = 40
"""Longest side (tokens) whose cells still get their value written in them."""


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


def save_example(sim: SimilarityMatrix, fname: str) -> SimilarityMatrix:
    """The end of bert_score's ``plot_example`` (this module's and ``BERTScorer``'s): ``sim``
    drawn to ``fname`` when it is given, saying so on stderr as bert_score does; returns
    ``sim``."""
    if fname:
        plot_similarity(sim, fname)
        print("Saved figure to file: ", fname, file=sys.stderr)
    return sim
