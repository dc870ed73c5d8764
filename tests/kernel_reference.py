"""A plain NumPy (float64) implementation of the kernel's documented semantics, for the tests.

Written from the specification (bert_score's ``greedy_cos_idf`` for one unpadded pair, plus the
package's rules for empty sides, zero weights and F), not from the Rust code: no matrix blocking,
no chunking, no rescaled-after-product trick, just the formulas.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np


def as_f64(a: np.ndarray) -> np.ndarray:
    """The values the kernel sees: rounded to float32 first, then exact in float64."""
    return np.asarray(a, dtype=np.float32).astype(np.float64)


def normalize_rows(x: np.ndarray) -> np.ndarray:
    """Each row divided by its Euclidean norm; zero rows unchanged."""
    norms = np.sqrt((x * x).sum(axis=1, keepdims=True))
    return np.divide(x, norms, out=x.copy(), where=norms > 0)


def harmonic(p: float, r: float) -> float:
    """F = 2PR / (P + R); 0 when P + R == 0 or the result is not finite."""
    if p + r == 0:
        return 0.0
    f = 2 * p * r / (p + r)
    return f if math.isfinite(f) else 0.0


def greedy_pair(
    cand: np.ndarray,
    ref: np.ndarray,
    cand_w: np.ndarray | None = None,
    ref_w: np.ndarray | None = None,
    normalize: bool = True,
) -> tuple[float, float, float]:
    """P, R, F of one candidate against one reference."""
    c, r = as_f64(cand), as_f64(ref)
    wc = np.ones(len(c)) if cand_w is None else as_f64(cand_w)
    wr = np.ones(len(r)) if ref_w is None else as_f64(ref_w)
    if len(c) == 0 or len(r) == 0 or wc.sum() == 0 or wr.sum() == 0:
        return 0.0, 0.0, 0.0
    if normalize:
        c, r = normalize_rows(c), normalize_rows(r)
    sim = c @ r.T
    p = float((sim.max(axis=1) * wc).sum() / wc.sum())
    rec = float((sim.max(axis=0) * wr).sum() / wr.sum())
    return p, rec, harmonic(p, rec)


def score_pairs(
    cands: Sequence[np.ndarray],
    refs: Sequence[np.ndarray],
    cand_ws: Sequence[np.ndarray | None] | None = None,
    ref_ws: Sequence[np.ndarray | None] | None = None,
    normalize: bool = True,
) -> np.ndarray:
    """(3, n) array of P, R, F of ``cands[k]`` against ``refs[k]``."""
    n = len(cands)
    cw = cand_ws if cand_ws is not None else [None] * n
    rw = ref_ws if ref_ws is not None else [None] * n
    out = [greedy_pair(cands[k], refs[k], cw[k], rw[k], normalize) for k in range(n)]
    return np.array(out, dtype=np.float64).reshape(n, 3).T


def pairwise(
    cands: Sequence[np.ndarray],
    refs: Sequence[np.ndarray],
    cand_ws: Sequence[np.ndarray | None] | None = None,
    ref_ws: Sequence[np.ndarray | None] | None = None,
    normalize: bool = True,
) -> np.ndarray:
    """(3, len(cands), len(refs)) array: every candidate against every reference."""
    cw = cand_ws if cand_ws is not None else [None] * len(cands)
    rw = ref_ws if ref_ws is not None else [None] * len(refs)
    out = np.zeros((3, len(cands), len(refs)))
    for i, c in enumerate(cands):
        for j, r in enumerate(refs):
            out[:, i, j] = greedy_pair(c, r, cw[i], rw[j], normalize)
    return out


def multi_ref_max(scores: np.ndarray, group_offsets: Sequence[int]) -> np.ndarray:
    """Each row of ``scores`` (P, R, F) maxed over every group ``[o[g], o[g+1])``."""
    groups = itertools.pairwise(group_offsets)
    return np.stack([scores[:, a:b].max(axis=1) for a, b in groups], axis=1)


def rescale(x: np.ndarray, baseline: float) -> np.ndarray:
    return (np.asarray(x, dtype=np.float64) - baseline) / (1.0 - baseline)


def idf(docs: Sequence[Sequence[int]], num_docs: int | None = None) -> dict[int, float]:
    """{id: ln((M+1)/(df+1))} with df counted over the set of ids of each document."""
    m = len(docs) if num_docs is None else num_docs
    df: dict[int, int] = {}
    for doc in docs:
        for token in set(doc):
            df[token] = df.get(token, 0) + 1
    return {token: math.log((m + 1) / (n + 1)) for token, n in df.items()}
