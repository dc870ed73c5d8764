"""Significance statistics over segment-level scores: does system B beat system A?

Three tests, all computed by the Rust kernel (crate ``bertscore-core``, module ``stats``) in
parallel, with the GIL released:

* :func:`bootstrap_ci`: percentile bootstrap interval of a system's corpus mean.
* :func:`paired_bootstrap`: Koehn's (2004) paired bootstrap resampling. Every resample draws the
  same segment indices for both systems; the p-value is the one-sided probability of "B is not
  better than A" (the share of resamples whose mean difference B - A is <= 0), or with
  ``two_sided=True`` the two-sided p of "A and B score the same" (twice the smaller tail).
* :func:`paired_permutation`: paired approximate randomisation (sacrebleu's ``--paired-ar``).
  Every trial swaps A's and B's score of each segment with probability 1/2; the p-value is
  two-sided: the share of trials whose absolute mean difference is at least the observed one.

p-values are add-one estimates, ``(count + 1) / (trials + 1)``, as in sacrebleu: a finite run
never reports 0. ``b`` may be one system (1-D), several (2-D, systems x segments) or a mapping
``{name: scores}``; several systems share every resample, and each gets the numbers it would
get alone with the same seed. The same seed gives the same result on every run and at every
thread count; ``seed=None`` draws a fresh seed, reported in the result.

>>> import numpy as np
>>> from rust_bertscore import paired_bootstrap
>>> a = np.array([0.50, 0.61, 0.47, 0.55, 0.58, 0.52])
>>> r = paired_bootstrap(a, a + 0.1, seed=1)
>>> round(r.delta, 6), r.p_value < 0.01
(0.1, True)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar, overload

import numpy as np

from .. import _core
from .stats_checks import check_count, check_paired, check_resampling, check_scores, check_seed

ScoresLike = np.ndarray | Sequence[float]
SystemsLike = ScoresLike | Sequence[Sequence[float]] | Mapping[str, ScoresLike]


@dataclass(frozen=True)
class BootstrapCI:
    """A corpus mean and its percentile bootstrap interval.

    Attributes
    ----------
    mean : float
        Mean of the scores.
    ci_low, ci_high : float
        The ``confidence`` percentile interval of the mean over the resamples.
    confidence : float
        Coverage of the interval (0.95: the 2.5th and 97.5th percentiles).
    n_resamples : int
        Bootstrap resamples drawn.
    seed : int
        Seed of the resamples (the one drawn when ``seed=None`` was passed).

    Examples
    --------
    >>> from rust_bertscore import bootstrap_ci
    >>> ci = bootstrap_ci([0.50, 0.61, 0.47, 0.55, 0.58, 0.52], seed=1)
    >>> round(ci.mean, 4), ci.ci_low < ci.mean < ci.ci_high, ci.confidence, ci.seed
    (0.5383, True, 0.95, 1)
    """

    mean: float
    ci_low: float
    ci_high: float
    confidence: float
    n_resamples: int
    seed: int


@dataclass(frozen=True)
class PairedBootstrap:
    """System B against baseline A by paired bootstrap resampling.

    Attributes
    ----------
    mean_a, mean_b : float
        Corpus means of A and B.
    delta : float
        ``mean_b - mean_a``.
    ci_low, ci_high : float
        Percentile interval of the mean difference B - A.
    p_value : float
        One-sided p-value of "B is not better than A": ``(#{resamples with delta <= 0} + 1) /
        (n_resamples + 1)``. Small: B is better. Near 1: B is not better (equal or worse).
        With ``two_sided=True``: the two-sided p of "A and B score the same" (small when B is
        better or worse; see :func:`paired_bootstrap`).
    a_ci_low, a_ci_high : float
        Percentile interval of A's own mean, from the same resamples.
    b_ci_low, b_ci_high : float
        Percentile interval of B's own mean, from the same resamples.
    confidence, n_resamples, seed
        As in :class:`BootstrapCI`.

    Examples
    --------
    >>> import numpy as np
    >>> from rust_bertscore import paired_bootstrap
    >>> a = np.array([0.50, 0.61, 0.47, 0.55, 0.58, 0.52])
    >>> r = paired_bootstrap(a, a + 0.1, seed=1)
    >>> round(r.delta, 6), r.ci_low <= r.delta <= r.ci_high, r.p_value < 0.01
    (0.1, True, True)
    """

    mean_a: float
    mean_b: float
    delta: float
    ci_low: float
    ci_high: float
    p_value: float
    a_ci_low: float
    a_ci_high: float
    b_ci_low: float
    b_ci_high: float
    confidence: float
    n_resamples: int
    seed: int


@dataclass(frozen=True)
class PairedPermutation:
    """System B against baseline A by paired approximate randomisation.

    Attributes
    ----------
    mean_a, mean_b, delta : float
        As in :class:`PairedBootstrap`: the corpus means of A and B, ``mean_b - mean_a``.
    p_value : float
        Two-sided p-value of "A and B score the same": ``(#{trials with |delta*| >= |delta|} +
        1) / (n_trials + 1)``. Small: they differ (the sign of ``delta`` says which is better).
    n_trials : int
        Trials drawn.
    seed : int
        Seed of the trials.

    Examples
    --------
    >>> import numpy as np
    >>> from rust_bertscore import paired_permutation
    >>> a = np.array([0.50, 0.61, 0.47, 0.55, 0.58, 0.52])
    >>> r = paired_permutation(a, a + 0.1, seed=1)
    >>> round(r.mean_b - r.mean_a, 6), r.p_value < 0.05
    (0.1, True)
    """

    mean_a: float
    mean_b: float
    delta: float
    p_value: float
    n_trials: int
    seed: int


_R = TypeVar("_R")


def _as_given(
    out: list[_R], names: list[str] | None, single: bool
) -> _R | list[_R] | dict[str, _R]:
    """One result per system of ``b``, shaped as ``b`` was: by name, one, or a list."""
    if names is not None:
        return dict(zip(names, out))
    return out[0] if single else out


# -- the tests -------------------------------------------------------------------------------------


def bootstrap_ci(
    scores: ScoresLike,
    confidence: float = 0.95,
    n_resamples: int = 1000,
    seed: int | None = None,
    *,
    num_threads: int | None = None,
) -> BootstrapCI:
    """Percentile bootstrap interval of the corpus mean of segment scores (a P, R or F array).

    Parameters
    ----------
    scores : array-like of float, shape (N,)
        Segment-level scores, N >= 2, all finite.
    confidence : float
        Coverage of the interval, in (0, 1).
    n_resamples : int
        Bootstrap resamples (>= 1).
    seed : int, optional
        Seed in [0, 2**64); None draws one (reported in the result).
    num_threads : int, optional
        At most this many threads of the shared pool.

    Returns
    -------
    BootstrapCI

    Examples
    --------
    >>> from rust_bertscore import bootstrap_ci
    >>> ci = bootstrap_ci([0.50, 0.61, 0.47, 0.55, 0.58, 0.52], confidence=0.9, seed=1)
    >>> round(ci.mean, 4), round(ci.ci_low, 2), round(ci.ci_high, 2)
    (0.5383, 0.51, 0.57)
    """
    x = check_scores("scores", scores)
    conf, n, s = check_resampling(confidence, n_resamples, seed)
    mean, lo, hi = _core.bootstrap_ci(x, conf, n, s, num_threads=num_threads)
    return BootstrapCI(mean, lo, hi, conf, n, s)


@overload
def paired_bootstrap(
    a: ScoresLike,
    b: Mapping[str, ScoresLike],
    n_resamples: int = ...,
    seed: int | None = ...,
    confidence: float = ...,
    *,
    num_threads: int | None = ...,
    two_sided: bool = ...,
) -> dict[str, PairedBootstrap]: ...
@overload
def paired_bootstrap(
    a: ScoresLike,
    b: ScoresLike | Sequence[Sequence[float]],
    n_resamples: int = ...,
    seed: int | None = ...,
    confidence: float = ...,
    *,
    num_threads: int | None = ...,
    two_sided: bool = ...,
) -> PairedBootstrap | list[PairedBootstrap]: ...
def paired_bootstrap(
    a: ScoresLike,
    b: SystemsLike,
    n_resamples: int = 1000,
    seed: int | None = None,
    confidence: float = 0.95,
    *,
    num_threads: int | None = None,
    two_sided: bool = False,
) -> PairedBootstrap | list[PairedBootstrap] | dict[str, PairedBootstrap]:
    """Koehn's paired bootstrap resampling of system(s) ``b`` against baseline ``a``.

    Parameters
    ----------
    a : array-like of float, shape (N,)
        Segment scores of the baseline (system A), N >= 2.
    b : array-like, shape (N,) or (K, N), or mapping of name to shape (N,)
        Segment scores of system B over the same segments, or of K systems.
    n_resamples : int
        Bootstrap resamples (>= 1).
    seed : int, optional
        Seed in [0, 2**64); None draws one (reported in the result).
    confidence : float
        Coverage of the intervals, in (0, 1).
    num_threads : int, optional
        At most this many threads of the shared pool.
    two_sided : bool
        False (default, Koehn's test): ``p_value`` is the one-sided p of "B is not better
        than A". True: the two-sided p of "A and B score the same", ``min(1, 2 min(p_le,
        p_ge))`` where ``p_le`` is the one-sided p above and ``p_ge`` its mirror ("B is not
        worse": the share of the same resamples whose difference is >= 0); small when B is
        better *or* worse (the sign of ``delta`` says which).

    Returns
    -------
    PairedBootstrap, list of PairedBootstrap, or dict of name to PairedBootstrap
        As ``b``: one result, one per row, or one per name.

    Examples
    --------
    Two systems against one baseline, by name; they share every resample:

    >>> import numpy as np
    >>> from rust_bertscore import paired_bootstrap
    >>> a = np.array([0.50, 0.61, 0.47, 0.55, 0.58, 0.52])
    >>> r = paired_bootstrap(a, {"better": a + 0.1, "same": a}, seed=1)
    >>> round(r["better"].delta, 6), r["better"].p_value < 0.01, r["same"].p_value > 0.5
    (0.1, True, True)

    A worse system has a one-sided p near 1 but a small two-sided one:

    >>> paired_bootstrap(a, a - 0.1, seed=1).p_value
    1.0
    >>> paired_bootstrap(a, a - 0.1, seed=1, two_sided=True).p_value < 0.01
    True
    """
    x, ys, names, single = check_paired(a, b)
    conf, n, s = check_resampling(confidence, n_resamples, seed)
    (_, alo, ahi), rows = _core.paired_bootstrap(x, ys, conf, n, s, num_threads=num_threads)
    p_values = [row[5] for row in rows]
    if two_sided:
        # The same resamples (same seed and N) of the negated scores: their one-sided p counts
        # the resamples whose difference B - A is >= 0 (negation is exact in floating point).
        _, mirrored = _core.paired_bootstrap(-x, -ys, conf, n, s, num_threads=num_threads)
        p_values = [min(1.0, 2.0 * min(p, m[5])) for p, m in zip(p_values, mirrored)]
    out = [
        PairedBootstrap(ma, mb, d, lo, hi, p, alo, ahi, blo, bhi, conf, n, s)
        for (ma, mb, d, lo, hi, _, _, blo, bhi), p in zip(rows, p_values)
    ]
    return _as_given(out, names, single)


@overload
def paired_permutation(
    a: ScoresLike,
    b: Mapping[str, ScoresLike],
    n_trials: int = ...,
    seed: int | None = ...,
    *,
    num_threads: int | None = ...,
) -> dict[str, PairedPermutation]: ...
@overload
def paired_permutation(
    a: ScoresLike,
    b: ScoresLike | Sequence[Sequence[float]],
    n_trials: int = ...,
    seed: int | None = ...,
    *,
    num_threads: int | None = ...,
) -> PairedPermutation | list[PairedPermutation]: ...
def paired_permutation(
    a: ScoresLike,
    b: SystemsLike,
    n_trials: int = 10000,
    seed: int | None = None,
    *,
    num_threads: int | None = None,
) -> PairedPermutation | list[PairedPermutation] | dict[str, PairedPermutation]:
    """Paired approximate randomisation of system(s) ``b`` against baseline ``a``.

    Parameters
    ----------
    a : array-like of float, shape (N,)
        Segment scores of the baseline (system A), N >= 2.
    b : array-like, shape (N,) or (K, N), or mapping of name to shape (N,)
        Segment scores of system B over the same segments, or of K systems.
    n_trials : int
        Randomisation trials (>= 1).
    seed : int, optional
        Seed in [0, 2**64); None draws one (reported in the result).
    num_threads : int, optional
        At most this many threads of the shared pool.

    Returns
    -------
    PairedPermutation, list of PairedPermutation, or dict of name to PairedPermutation
        As ``b``: one result, one per row, or one per name.

    Examples
    --------
    >>> import numpy as np
    >>> from rust_bertscore import paired_permutation
    >>> a = np.array([0.50, 0.61, 0.47, 0.55, 0.58, 0.52])
    >>> [r.p_value < 0.05 for r in paired_permutation(a, [a + 0.1, a - 0.1], seed=1)]
    [True, True]
    """
    x, ys, names, single = check_paired(a, b)
    n, s = check_count("n_trials", n_trials), check_seed(seed)
    rows = _core.paired_permutation(x, ys, n, s, num_threads=num_threads)
    out = [PairedPermutation(ma, mb, d, p, n, s) for ma, mb, d, p in rows]
    return _as_given(out, names, single)
