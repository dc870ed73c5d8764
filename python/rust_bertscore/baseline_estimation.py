"""``rust_bertscore.baseline_estimation``: the names of
:mod:`rust_bertscore.integrations.baseline_estimation` (a rescale baseline computed with the
scorer)."""

from __future__ import annotations

from .integrations.baseline_estimation import (
    PAIRS_PER_ROUND,
    compute_baseline,
    corpus_lines,
    random_pairs,
)

__all__ = ["PAIRS_PER_ROUND", "compute_baseline", "corpus_lines", "random_pairs"]
