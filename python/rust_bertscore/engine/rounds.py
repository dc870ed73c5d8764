"""How the pipeline cuts a call into blocks and rounds, and the padding-floor flags it takes.

Pairs go in blocks (tokenised together; a block is a whole number of bert_score's scoring
batches, so a batch never straddles two blocks) and each block in rounds of a bounded number of
token rows (only a round's texts are encoded and held at once). Scores do not depend on either.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from numpy.typing import ArrayLike


def block_step(block_pairs: int, floor_batch: int | None) -> int:
    """Pairs per block: about ``block_pairs``, a multiple of ``floor_batch`` when there is one."""
    if floor_batch is None:
        return block_pairs
    return max(1, block_pairs // floor_batch) * floor_batch


def round_budget(round_bytes: int, hidden: int, layers: int) -> int:
    """Token rows per round: float32 vectors of ``hidden`` values for ``layers`` layers within
    about ``round_bytes``; at least 1."""
    return max(1, round_bytes // (4 * hidden * layers))


def rounds(pair_tokens: np.ndarray, budget: int) -> Iterator[tuple[int, int]]:
    """``[lo, hi)`` runs of pairs whose tokens (candidate + reference) add up to at most
    ``budget``; a run has at least one pair."""
    n, lo = len(pair_tokens), 0
    ends = np.cumsum(pair_tokens)
    while lo < n:
        base = ends[lo - 1] if lo else 0
        hi = int(np.searchsorted(ends, base + budget, side="right"))
        hi = min(max(hi, lo + 1), n)
        yield lo, hi
        lo = hi


def explicit_floors(
    pad_floor: tuple[ArrayLike, ArrayLike] | None, n_pairs: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """Check a user's ``pad_floor`` flags: two bool arrays of one flag per (flattened) pair."""
    if pad_floor is None:
        return None
    if not isinstance(pad_floor, (tuple, list)) or len(pad_floor) != 2:
        raise TypeError("pad_floor must be a pair (floor_precision, floor_recall) of bool arrays")
    out = []
    for name, flags in zip(("floor_precision", "floor_recall"), pad_floor):
        arr = np.asarray(flags)
        if arr.ndim != 1 or len(arr) != n_pairs:
            raise ValueError(
                f"pad_floor's {name} must hold one flag per pair after multi-reference "
                f"flattening ({n_pairs}), got shape {arr.shape}"
            )
        if arr.dtype.kind not in "biu" and len(arr):
            raise TypeError(f"pad_floor's {name} must be a bool array, got dtype {arr.dtype}")
        out.append(arr.astype(bool))
    return out[0], out[1]
