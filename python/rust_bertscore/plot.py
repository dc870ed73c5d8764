"""``rust_bertscore.plot``: the names of :mod:`rust_bertscore.integrations.plot`, where the
plotting integration lives (bert_score's ``plot_example``, ``similarity_matrix``)."""

from __future__ import annotations

from .integrations.plot import (
    ANNOTATE_MAX_TOKENS,
    PLOT_EXTRA_HINT,
    SimilarityMatrix,
    plot_example,
    plot_similarity,
    require_matplotlib,
    save_example,
    similarity_matrix,
)

__all__ = [
    "ANNOTATE_MAX_TOKENS",
    "PLOT_EXTRA_HINT",
    "SimilarityMatrix",
    "plot_example",
    "plot_similarity",
    "require_matplotlib",
    "save_example",
    "similarity_matrix",
]
