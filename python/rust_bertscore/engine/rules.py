"""bert_score's rules around the kernel's pair scores: empty texts, weightless texts, weights
checks and the multi-reference max (the kernel's ``multi_ref_max``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .. import _core
from ..errors import warn


def weightless_sides(
    cand_weightless: np.ndarray, ref_weightless: np.ndarray, two_tokens: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """Pairs whose candidate (P side) or reference (R side) weighs 0 in all and is not "empty"
    (2 tokens), or None when there are none.

    bert_score divides by the side's weight sum, so that side's score is 0/0 = NaN, F is NaN
    and then set to 0, while the other side is computed as usual (its maxima do not depend on
    weights). With idf this happens to a text whose every token is in every reference, or to
    a T5 text that encodes to ``</s>`` alone; the kernel scores such a pair 0 on both sides.
    """
    nan_p = cand_weightless & ~two_tokens
    nan_r = ref_weightless & ~two_tokens
    return (nan_p, nan_r) if (nan_p.any() or nan_r.any()) else None


def score_weightless(
    prf: tuple[np.ndarray, np.ndarray, np.ndarray],
    nan_sides: tuple[np.ndarray, np.ndarray],
    vectors: np.ndarray,
    offsets: np.ndarray,
    unit_weights: np.ndarray,
    local: np.ndarray,
    floors: tuple[np.ndarray | None, np.ndarray | None],
) -> None:
    """Give the pairs of :func:`weightless_sides` bert_score's numbers, in place: the
    weightless side NaN, F 0, the other side scored again with the weightless texts' weights
    set to 1 (which changes no maximum)."""
    nan_p, nan_r = nan_sides
    redo = np.flatnonzero(nan_p | nan_r)
    n = len(prf[0])
    p2, r2, _ = _core.score_ragged(
        vectors,
        offsets,
        unit_weights,
        local[:n][redo],
        local[n:][redo],
        floor_precision=None if floors[0] is None else floors[0][redo],
        floor_recall=None if floors[1] is None else floors[1][redo],
    )
    prf[0][redo] = np.where(nan_p[redo], np.nan, p2)
    prf[1][redo] = np.where(nan_r[redo], np.nan, r2)
    prf[2][redo] = 0.0


def max_over_groups(prf: np.ndarray, offsets: Sequence[int]) -> np.ndarray:
    """P, R and F each maxed over every candidate's references (last axis), by the kernel's
    ``_core.multi_ref_max`` (a NaN in a group gives NaN, as bert_score's ``torch.max``)."""
    arr = np.asarray(prf, dtype=np.float32)
    bounds = np.asarray(offsets, dtype=np.int64)
    if arr.ndim == 2:
        return np.stack(_core.multi_ref_max(arr[0], arr[1], arr[2], bounds))
    # (3, layers, pairs): layer by layer.
    per_layer = [
        _core.multi_ref_max(arr[0, i], arr[1, i], arr[2, i], bounds) for i in range(arr.shape[1])
    ]
    groups = len(bounds) - 1
    return np.stack(
        [
            np.stack([layer[k] for layer in per_layer])
            if per_layer
            else np.zeros((0, groups), np.float32)
            for k in range(3)
        ]
    )


def warn_empty(
    empty: np.ndarray, cand_idx: np.ndarray, ref_idx: np.ndarray, warned: set[str]
) -> None:
    """bert_score's warnings for empty texts (``empty``: one flag per text, see
    ``TokenizedTexts.empty``), each at most once per call (``warned``), issued from
    :meth:`BERTScorer.score`'s frame (``ScoringPipeline.score`` -> ``score_pairs`` -> its
    block -> here)."""
    if "cand" not in warned and len(cand_idx) and empty[cand_idx].any():
        warned.add("cand")
        warn("Warning: Empty candidate sentence detected; setting raw BERTscores to 0.", 6)
    if "ref" not in warned and len(ref_idx) and empty[ref_idx].any():
        warned.add("ref")
        warn("Warning: Empty reference sentence detected; setting raw BERTScores to 0.", 6)


def check_weights(weights: Sequence[np.ndarray], texts: Sequence[str]) -> None:
    """ValueError naming the text when a weight is NaN (an idf dict without that token)."""
    for i, w in enumerate(weights):
        if np.isnan(w).any():
            raise ValueError(
                f"the idf dict has no weight for a token of text {texts[i]!r:.60}: give a "
                "defaultdict (as bert_score's get_idf_dict returns) or weights for every token id"
            )
