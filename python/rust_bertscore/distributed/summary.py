"""Corpus-level means of scored rows, from per-batch partial sums an engine combines."""

from __future__ import annotations

import math
import pickle
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Summary:
    """Mean P, R and F over ``count`` scored rows (NaN when there are none). Rows with null
    scores (bad rows kept with ``on_error="null"``) are left out of the means and the count.

    Examples
    --------
    >>> from rust_bertscore.distributed import Summary
    >>> s = Summary.from_sums([1.8, 1.6, 1.7], count=2)
    >>> round(s.P, 6), round(s.F, 6), s.count
    (0.9, 0.85, 2)
    """

    P: float
    R: float
    F: float
    count: int

    @classmethod
    def from_sums(cls, sums: Sequence[float], count: int) -> Summary:
        """From float64 sums of P, R and F over ``count`` rows."""
        if count == 0:
            return cls(math.nan, math.nan, math.nan, 0)
        p, r, f = (float(s) / count for s in sums)
        return cls(p, r, f, int(count))

    @classmethod
    def combine(cls, parts: Iterable[bytes]) -> Summary:
        """From :func:`partial_sums` results of every batch."""
        sums = np.zeros(3, dtype=np.float64)
        count = 0
        for part in parts:
            s, n = pickle.loads(part)
            sums += s
            count += n
        return cls.from_sums(sums.tolist(), count)


def partial_sums(columns: Sequence[Sequence[float]]) -> bytes:
    """Float64 sums of a batch's P, R and F columns over its scored rows (nulls and NaN left
    out) and their count, pickled."""
    arrays = [np.asarray([np.nan if v is None else v for v in c], np.float64) for c in columns]
    if not arrays:
        return pickle.dumps((np.zeros(3, dtype=np.float64), 0))
    scored = ~np.logical_or.reduce([np.isnan(a) for a in arrays])
    sums = np.array([a[scored].sum() for a in arrays], dtype=np.float64)
    return pickle.dumps((sums, int(scored.sum())))
