"""The heatmap of a :class:`~rust_bertscore.analyses.similarity.SimilarityMatrix` (bert_score's
``plot_example`` picture): drawing only, no scorer.

Needs matplotlib (``pip install rust-bertscore[plot]``), imported when a figure is drawn, and
uses its Agg renderer on a ``matplotlib.figure.Figure`` of its own, without pyplot (no global
figure, no backend switched). :meth:`BERTScorer.plot_example`, the integration
``rust_bertscore.plot`` and :meth:`SimilarityMatrix._repr_png_` (the picture Jupyter shows)
call it. It takes any object with a similarity matrix's fields (:class:`HeatmapData`), so the
similarity module can import it without a cycle.
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

import numpy as np

if TYPE_CHECKING:
    from matplotlib.figure import Figure

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


class HeatmapData(Protocol):
    """What the heatmap reads of a
    :class:`~rust_bertscore.analyses.similarity.SimilarityMatrix`."""

    @property
    def cand_tokens(self) -> list[str]: ...
    @property
    def ref_tokens(self) -> list[str]: ...
    @property
    def matrix(self) -> np.ndarray: ...
    @property
    def cand_content(self) -> np.ndarray: ...
    @property
    def ref_content(self) -> np.ndarray: ...
    @property
    def cand_matches(self) -> np.ndarray: ...
    @property
    def ref_matches(self) -> np.ndarray: ...
    @property
    def P(self) -> float: ...
    @property
    def R(self) -> float: ...
    @property
    def F(self) -> float: ...
    @property
    def rescaled(self) -> bool: ...


Sim = TypeVar("Sim", bound=HeatmapData)


def matplotlib_available() -> bool:
    """Whether matplotlib can be imported (the ``[plot]`` extra).

    >>> from rust_bertscore.analyses.heatmap import matplotlib_available
    >>> isinstance(matplotlib_available(), bool)
    True
    """
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def plot_similarity(sim: HeatmapData, fname: str | os.PathLike[str], dpi: int = 100) -> Path:
    """Draw ``sim`` as a heatmap PNG (or any format matplotlib infers from ``fname``).

    Rows are candidate tokens, columns reference tokens, special tokens left out (as
    bert_score's plot). A square marks each candidate token's best reference token (its
    precision match); a dot marks each reference token's best candidate token (its recall
    match). A match on a special token is not drawn.
    """
    require_matplotlib()
    out = Path(fname)
    draw_heatmap(sim, dpi).savefig(out, dpi=dpi)
    return out


def heatmap_png(sim: HeatmapData, dpi: int = 100) -> bytes | None:
    """The heatmap of :func:`plot_similarity` as PNG bytes, or None without matplotlib.

    >>> from rust_bertscore import BERTScorer
    >>> from rust_bertscore.analyses.heatmap import heatmap_png
    >>> png = heatmap_png(BERTScorer().similarity_matrix("the cat sat", "a cat sat"))
    >>> png[:8]
    b'\\x89PNG\\r\\n\\x1a\\n'
    """
    if not matplotlib_available():
        return None
    buffer = io.BytesIO()
    draw_heatmap(sim, dpi).savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def draw_heatmap(sim: HeatmapData, dpi: int = 100) -> Figure:
    """The heatmap of ``sim`` (see :func:`plot_similarity`) as a ``matplotlib.figure.Figure``
    with an Agg canvas of its own, pyplot untouched.

    >>> from rust_bertscore import BERTScorer
    >>> from rust_bertscore.analyses.heatmap import draw_heatmap
    >>> fig = draw_heatmap(BERTScorer().similarity_matrix("the cat sat", "a cat sat"))
    >>> fig.axes[0].get_xlabel()
    'Reference (tokenized)'
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
    return fig


def save_example(sim: Sim, fname: str) -> Sim:
    """The end of bert_score's ``plot_example`` (this module's and ``BERTScorer``'s): ``sim``
    drawn to ``fname`` when it is given, saying so on stderr as bert_score does; returns
    ``sim``."""
    if fname:
        plot_similarity(sim, fname)
        print("Saved figure to file: ", fname, file=sys.stderr)
    return sim
