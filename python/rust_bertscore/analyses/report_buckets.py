"""The report's per-segment views: wins, losses and ties against the baseline, and buckets of
segments (by reference length, by the baseline's F) with paired bootstrap intervals and the
verdict of every system against the baseline in each bucket.

Bucket edges are set as compare-mt's ``bucket_cutoffs``: ascending thresholds, a value equal to
a threshold going to the bucket above it.

>>> from rust_bertscore.analyses.report_buckets import length_bucket
>>> length_bucket([3, 8, 12, 25, 31, 70]).tolist()
[0, 0, 1, 2, 3, 5]
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputTypeError, InputValueError
from .comparison import verdict
from .stats import paired_bootstrap

__all__ = [
    "LENGTH_CUTOFFS",
    "LENGTH_EDGES",
    "LENGTH_LABELS",
    "TIE",
    "BucketRow",
    "buckets",
    "check_cutoffs",
    "length_bucket",
    "length_labels",
    "score_labels",
    "win_loss_tie",
]

TIE = 1e-6
"""Two F scores closer than this are a tie (equal at the table's six decimals)."""

LENGTH_CUTOFFS = (11, 21, 31, 41, 61)
"""Default thresholds of the reference-length buckets (tokens, special tokens left out)."""

LENGTH_EDGES = (0, *LENGTH_CUTOFFS)
"""Lower edges of the default reference-length buckets."""

LENGTH_LABELS = ("0-10", "11-20", "21-30", "31-40", "41-60", "61+")
"""Labels of the default reference-length buckets."""


@dataclass(frozen=True)
class BucketRow:
    """One bucket: its label, its segments and, per system, the mean F with its interval; per
    system but the baseline, ΔF with its paired interval and two-sided p, and the verdict
    ("better", "worse" or "same", as ``compare``'s).

    Examples
    --------
    >>> import numpy as np
    >>> from rust_bertscore.analyses.report_buckets import buckets
    >>> base = np.linspace(0.5, 0.9, 10)
    >>> rows = buckets({"a": base, "b": base + 0.01}, np.repeat([0, 1], 5), ["short", "long"], 1)
    >>> rows[0].label, rows[0].n, round(rows[0].delta["b"][0], 6), rows[0].verdict["b"]
    ('short', 5, 0.01, 'better')
    """

    label: str
    n: int
    mean: dict[str, tuple[float, float, float]]
    delta: dict[str, tuple[float, float, float, float]] = field(default_factory=dict)
    verdict: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain data: label, n, mean {system: [mean, lo, hi]}, delta {system: [d, lo, hi, p]},
        verdict {system: "better" | "worse" | "same"}."""
        return {
            "label": self.label,
            "n": self.n,
            "mean": {k: list(v) for k, v in self.mean.items()},
            "delta": {k: list(v) for k, v in self.delta.items()},
            "verdict": dict(self.verdict),
        }


def check_cutoffs(cutoffs: Sequence[float], what: str, integer: bool = False) -> tuple[float, ...]:
    """``cutoffs`` checked: a non-empty sequence of finite numbers in strictly ascending order
    (integers >= 1 with ``integer``); raises InputTypeError / InputValueError naming ``what``.

    >>> from rust_bertscore.analyses.report_buckets import check_cutoffs
    >>> check_cutoffs([10, 20, 40], "length_cutoffs", integer=True)
    (10, 20, 40)
    >>> check_cutoffs([0.9, 0.8], "cuts")
    Traceback (most recent call last):
    ...
    rust_bertscore.errors.InputValueError: cuts must be in ascending order, got 0.9 before 0.8
    """
    if isinstance(cutoffs, str | bytes) or not isinstance(cutoffs, Sequence | np.ndarray):
        raise InputTypeError(f"{what} must be a list of numbers, got {type(cutoffs).__name__}")
    values: list[Any] = list(cutoffs)
    if not values:
        raise InputValueError(f"{what} must hold at least one threshold")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int | float | np.integer | np.floating):
            raise InputTypeError(f"{what} must hold numbers, got {v!r}")
        if not math.isfinite(float(v)):
            raise InputValueError(f"{what} must hold finite numbers, got {v!r}")
        if integer and (float(v) != int(v) or int(v) < 1):
            raise InputValueError(f"{what} must hold whole numbers >= 1, got {v!r}")
    for lo, hi in itertools.pairwise(values):
        if not lo < hi:
            raise InputValueError(f"{what} must be in ascending order, got {lo!r} before {hi!r}")
    return tuple(int(v) for v in values) if integer else tuple(float(v) for v in values)


def length_labels(cutoffs: Sequence[int]) -> list[str]:
    """Labels of the length buckets of ``cutoffs``: ``0-(c1-1)``, ``c1-(c2-1)``, ..., ``ck+``.

    >>> from rust_bertscore.analyses.report_buckets import LENGTH_CUTOFFS, length_labels
    >>> length_labels([10, 20, 40]), tuple(length_labels(LENGTH_CUTOFFS))
    (['0-9', '10-19', '20-39', '40+'], ('0-10', '11-20', '21-30', '31-40', '41-60', '61+'))
    """
    edges = [0, *cutoffs]
    labels = [f"{lo}" if hi - 1 == lo else f"{lo}-{hi - 1}" for lo, hi in itertools.pairwise(edges)]
    return [*labels, f"{edges[-1]}+"]


def score_labels(cutoffs: Sequence[float]) -> list[str]:
    """Labels of the score buckets of ``cutoffs``: ``<c1``, ``c1-c2``, ..., ``>=ck``.

    >>> from rust_bertscore.analyses.report_buckets import score_labels
    >>> score_labels([0.8, 0.9])
    ['<0.8', '0.8-0.9', '>=0.9']
    """
    middle = [f"{lo:g}-{hi:g}" for lo, hi in itertools.pairwise(cutoffs)]
    return [f"<{cutoffs[0]:g}", *middle, f">={cutoffs[-1]:g}"]


def length_bucket(
    lengths: Sequence[int] | np.ndarray, cutoffs: Sequence[int] = LENGTH_CUTOFFS
) -> np.ndarray:
    """The bucket (index into :func:`length_labels` of ``cutoffs``) of each length; by
    default 0-10, 11-20, 21-30, 31-40, 41-60, 61+ tokens (:data:`LENGTH_LABELS`).

    >>> from rust_bertscore.analyses.report_buckets import LENGTH_LABELS, length_bucket
    >>> [LENGTH_LABELS[k] for k in length_bucket([0, 10, 11, 60, 61])]
    ['0-10', '0-10', '11-20', '41-60', '61+']
    >>> length_bucket([9, 10, 45], cutoffs=[10, 20, 40]).tolist()
    [0, 1, 3]
    """
    x = np.asarray(lengths, dtype=np.int64)
    return np.searchsorted(np.asarray(cutoffs, np.int64), x, side="right")


def buckets(
    f_by_system: Mapping[str, np.ndarray],
    bucket_of: np.ndarray,
    labels: Sequence[str],
    seed: int,
    n_resamples: int = 1000,
    confidence: float = 0.95,
) -> list[BucketRow]:
    """Mean F (and ΔF against the first system) of the segments in each bucket, with
    bootstrap intervals (paired for ΔF, as ``compare``'s, with its two-sided p and verdict);
    ``bucket_of[i]`` is segment ``i``'s bucket, an index into ``labels``. A bucket of one
    segment gets its mean and no interval (NaN, verdict "same"); an empty one is left out.

    >>> import numpy as np
    >>> from rust_bertscore.analyses.report_buckets import buckets
    >>> f = np.array([0.6, 0.7, 0.8, 0.9])
    >>> rows = buckets({"a": f, "b": f + 0.05}, np.array([0, 0, 2, 2]), ["x", "y", "z"], seed=1)
    >>> [(r.label, r.n, round(r.delta["b"][0], 6)) for r in rows]
    [('x', 2, 0.05), ('z', 2, 0.05)]
    """
    names = list(f_by_system)
    base, others = names[0], names[1:]
    rows = []
    for k, label in enumerate(labels):
        idx = np.flatnonzero(bucket_of == k)
        if len(idx) == 0:
            continue
        f = {name: np.asarray(f_by_system[name], np.float64)[idx] for name in names}
        verdicts = {name: "same" for name in others}
        if len(idx) < 2:
            nan = float("nan")
            mean = {name: (float(f[name][0]), nan, nan) for name in names}
            delta = {name: (float(f[name][0] - f[base][0]), nan, nan, nan) for name in others}
        else:
            boot = paired_bootstrap(
                f[base], {n: f[n] for n in others}, n_resamples, seed, confidence, two_sided=True
            )
            first = boot[others[0]]
            mean = {base: (first.mean_a, first.a_ci_low, first.a_ci_high)}
            delta = {}
            for name in others:
                r = boot[name]
                mean[name] = (r.mean_b, r.b_ci_low, r.b_ci_high)
                delta[name] = (r.delta, r.ci_low, r.ci_high, r.p_value)
                verdicts[name] = verdict(r.delta, r.p_value)
        rows.append(BucketRow(label, len(idx), mean, delta, verdicts))
    return rows


def win_loss_tie(base: np.ndarray, other: np.ndarray) -> tuple[int, int, int]:
    """Segments where ``other``'s F is above, below and within :data:`TIE` of ``base``'s.

    >>> import numpy as np
    >>> from rust_bertscore.analyses.report_buckets import win_loss_tie
    >>> win_loss_tie(np.array([0.5, 0.6, 0.7]), np.array([0.6, 0.6, 0.1]))
    (1, 1, 1)
    """
    d = np.asarray(other, np.float64) - np.asarray(base, np.float64)
    ties = np.abs(d) < TIE
    return int(np.sum(~ties & (d > 0))), int(np.sum(~ties & (d < 0))), int(np.sum(ties))
