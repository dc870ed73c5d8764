"""BERTScore of one pair in plain NumPy, from ``BERTScorer.embed()`` records: the independent
computation the long-text and token-option tests compare the scorer with."""

from __future__ import annotations

import numpy as np

from rust_bertscore.engine.text_embedding import TextEmbedding


def numpy_pair_score(
    cand: TextEmbedding,
    ref: TextEmbedding,
    cand_keep: np.ndarray | None = None,
    ref_keep: np.ndarray | None = None,
    beta: float = 1.0,
) -> tuple[float, float, float]:
    """P, R, F of one pair (no padding floor): rows kept by the masks (default: all), cosine
    matrix in float64, greedy maxima, means weighted by ``weights``; F-beta, 0 where NaN."""
    ck = np.ones(len(cand), bool) if cand_keep is None else cand_keep
    rk = np.ones(len(ref), bool) if ref_keep is None else ref_keep
    c = cand.vectors[ck].astype(np.float64)
    r = ref.vectors[rk].astype(np.float64)
    if not len(c) or not len(r):
        return 0.0, 0.0, 0.0
    c /= np.linalg.norm(c, axis=1, keepdims=True)
    r /= np.linalg.norm(r, axis=1, keepdims=True)
    sim = c @ r.T
    wc, wr = cand.weights[ck].astype(np.float64), ref.weights[rk].astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = float((sim.max(axis=1) * wc).sum() / wc.sum())
        r_ = float((sim.max(axis=0) * wr).sum() / wr.sum())
        b2 = beta * beta
        f = (1 + b2) * p * r_ / (b2 * p + r_)
    return p, r_, 0.0 if np.isnan(f) else f
