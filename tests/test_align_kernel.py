"""``_core.align_ragged``: every pair's best matches in one call, against the per-pair NumPy
computation ``align_pairs`` made before it (float64 cosines, ``argmax``: the first maximum)."""

from __future__ import annotations

import numpy as np
import pytest

from rust_bertscore import KernelError
from rust_bertscore._core import align_ragged


def numpy_best(sim: np.ndarray, keep_rows: np.ndarray, keep_cols: np.ndarray):
    """Each row's best kept column and its cosine (-1 and NaN for none): the former
    ``align._side``."""
    sim = np.where(keep_cols[None, :], sim, -np.inf)
    best = sim.argmax(axis=1) if sim.shape[1] else np.zeros(len(sim), dtype=np.int64)
    cos = sim[np.arange(len(best)), best] if sim.shape[1] else np.full(len(sim), -np.inf)
    unmatched = ~keep_rows | ~np.isfinite(cos)
    return np.where(unmatched, -1, best), np.where(unmatched, np.nan, cos)


def unit(v: np.ndarray) -> np.ndarray:
    v = v.astype(np.float64)
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.where(n > 0, n, 1.0)


@pytest.mark.parametrize("masked", [False, True])
def test_equals_the_per_pair_numpy_alignment(masked: bool) -> None:
    rng = np.random.default_rng(7)
    lengths = rng.integers(0, 12, size=9)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    data = rng.normal(size=(int(offsets[-1]), 48)).astype(np.float32)
    data[3] = data[1]  # equal rows: exact ties
    keep = rng.random(len(data)) > 0.25 if masked else np.ones(len(data), bool)
    pc = rng.integers(0, 9, size=20)
    pr = rng.integers(0, 9, size=20)
    cm, cc, co, rm, rc, ro = align_ragged(data, offsets, pc, pr, keep if masked else None)
    assert co.tolist() == np.concatenate([[0], np.cumsum(lengths[pc])]).tolist()
    assert ro.tolist() == np.concatenate([[0], np.cumsum(lengths[pr])]).tolist()
    for k, (c, r) in enumerate(zip(pc, pr)):
        rows, cols = slice(offsets[c], offsets[c + 1]), slice(offsets[r], offsets[r + 1])
        sim = unit(data[rows]) @ unit(data[cols]).T
        for got_m, got_c, want in (
            (cm[co[k] : co[k + 1]], cc[co[k] : co[k + 1]], numpy_best(sim, keep[rows], keep[cols])),
            (
                rm[ro[k] : ro[k + 1]],
                rc[ro[k] : ro[k + 1]],
                numpy_best(sim.T, keep[cols], keep[rows]),
            ),
        ):
            assert got_m.tolist() == want[0].tolist()
            np.testing.assert_allclose(got_c, want[1], rtol=0, atol=1e-6)


def test_bad_input_raises_clear_errors() -> None:
    data = np.ones((5, 2), np.float32)
    with pytest.raises(KernelError, match="pair 0: reference index 2 is out of range"):
        align_ragged(data, [0, 2, 5], [0], [2])
    with pytest.raises(KernelError, match="offsets: must end at 5"):
        align_ragged(data, [0, 2, 6], [0], [1])
    with pytest.raises(KernelError, match="keep and the rows of data"):
        align_ragged(data, [0, 2, 5], [0], [1], [True])
    with pytest.raises(KernelError, match="pair_cand and pair_ref"):
        align_ragged(data, [0, 2, 5], [0, 1], [1])
    bad = data.copy()
    bad[4, 0] = np.nan
    with pytest.raises(KernelError, match="NaN or infinity"):
        align_ragged(bad, [0, 2, 5], [0], [1])
    with pytest.raises(TypeError):
        align_ragged(data.astype(np.int32), [0, 2, 5], [0], [1])
