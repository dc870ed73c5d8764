"""The arguments of the significance tests of :mod:`rust_bertscore.analyses.stats`, checked.

Each check returns the value as the kernel takes it (an ``int``, a ``float``, a contiguous
float64 array) or raises an error that names the argument: :class:`~rust_bertscore.errors.
InputTypeError` for a value of the wrong type, :class:`~rust_bertscore.errors.KernelError` (a
``ValueError``) for one of the right type out of range, as the kernel itself would.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence

import numpy as np

from ..errors import InputTypeError, KernelError


def _integer(name: str, value: object, expected: str) -> int:
    """``value`` as an ``int``; InputTypeError (``name`` must be ``expected``) for anything
    other than an int or a NumPy integer, bools included."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InputTypeError(f"{name} must be {expected}, got {value!r}")
    return int(value)


def check_count(name: str, value: object) -> int:
    """A count argument: an int >= 1.

    Parameters
    ----------
    name : str
        The argument's name, for the error (``n_resamples``, ``n_trials``).
    value : object
        What was passed.

    Returns
    -------
    int

    Examples
    --------
    >>> from rust_bertscore.analyses.stats_checks import check_count
    >>> check_count("n_trials", 10)
    10
    >>> check_count("n_trials", 0)
    Traceback (most recent call last):
    ...
    rust_bertscore.KernelError: n_trials must be at least 1, got 0
    """
    count = _integer(name, value, "an int >= 1")
    if count < 1:
        raise KernelError(f"{name} must be at least 1, got {count}")
    return count


def check_seed(seed: object) -> int:
    """A seed: an int in [0, 2**64), or None for a fresh one drawn from the OS.

    Examples
    --------
    A given seed is kept, None draws one:

    >>> from rust_bertscore.analyses.stats_checks import check_seed
    >>> check_seed(7), 0 <= check_seed(None) < 2**64
    (7, True)
    """
    if seed is None:
        return secrets.randbits(64)
    value = _integer("seed", seed, "None or an int in [0, 2**64)")
    if not 0 <= value < 2**64:
        raise KernelError(f"seed must be None or an int in [0, 2**64), got {value}")
    return value


def check_confidence(confidence: object) -> float:
    """A confidence level: a number strictly between 0 and 1.

    Examples
    --------
    >>> from rust_bertscore.analyses.stats_checks import check_confidence
    >>> check_confidence(0.9)
    0.9
    >>> check_confidence(1.0)
    Traceback (most recent call last):
    ...
    rust_bertscore.KernelError: confidence must be strictly between 0 and 1, got 1.0
    """
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float, np.floating)):
        raise InputTypeError(f"confidence must be a float in (0, 1), got {confidence!r}")
    value = float(confidence)
    if not 0.0 < value < 1.0:  # also rejects NaN
        raise KernelError(f"confidence must be strictly between 0 and 1, got {value}")
    return value


def check_scores(name: str, scores: object) -> np.ndarray:
    """One system's segment scores, argument ``name``: a 1-D array of numbers, as contiguous
    float64 (the kernel checks the values: at least 2, all finite).

    Examples
    --------
    >>> from rust_bertscore.analyses.stats_checks import check_scores
    >>> check_scores("a", [0.5, 0.75]).dtype
    dtype('float64')
    >>> check_scores("a", [[0.5, 0.75]])
    Traceback (most recent call last):
    ...
    rust_bertscore.KernelError: a must be a 1-D array of segment scores, got shape (1, 2)
    """
    try:
        x = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputTypeError(
            f"{name} must be a 1-D array of numbers, got {type(scores).__name__}"
        ) from None
    if x.ndim != 1:
        raise KernelError(f"{name} must be a 1-D array of segment scores, got shape {x.shape}")
    return np.ascontiguousarray(x)


def _row_lengths(scores: object) -> list[int] | None:
    """Lengths of the rows of a sequence of sequences (None if it is not one)."""
    if isinstance(scores, (str, bytes)) or not isinstance(scores, Sequence):
        return None
    try:
        return [len(row) for row in scores]
    except TypeError:
        return None


def check_systems(scores: object) -> tuple[np.ndarray, list[str] | None, bool]:
    """``b``, one system or several, as a (systems x segments) float64 array, its names (for a
    mapping ``{name: scores}``, else None) and whether it was a single system (1-D).

    Examples
    --------
    >>> from rust_bertscore.analyses.stats_checks import check_systems
    >>> x, names, single = check_systems({"x": [0.5, 0.75], "y": [0.25, 1.0]})
    >>> x.shape, names, single
    ((2, 2), ['x', 'y'], False)
    >>> check_systems({})
    Traceback (most recent call last):
    ...
    rust_bertscore.KernelError: b is an empty mapping: give at least one system
    """
    if isinstance(scores, Mapping):
        if not scores:
            raise KernelError("b is an empty mapping: give at least one system")
        names = [str(k) for k in scores]
        rows = [check_scores(f"b[{k!r}]", v) for k, v in scores.items()]
        lengths = {len(r) for r in rows}
        if len(lengths) > 1:
            sizes = ", ".join(f"{n}: {len(r)}" for n, r in zip(names, rows))
            raise KernelError(f"the systems of b must have the same number of segments ({sizes})")
        return np.ascontiguousarray(np.stack(rows)), names, False
    try:
        x = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError):
        row_lengths = _row_lengths(scores)
        if row_lengths is not None and len(set(row_lengths)) > 1:
            raise KernelError(
                f"the systems (rows) of b must have the same number of segments, got {row_lengths}"
            ) from None
        raise InputTypeError(
            f"b must be a 1-D or 2-D array of numbers or a mapping, got {type(scores).__name__}"
        ) from None
    if x.ndim == 1:
        return np.ascontiguousarray(x[None, :]), None, True
    if x.ndim == 2:
        if x.shape[0] == 0:
            raise KernelError("b has no systems (rows): give at least one")
        return np.ascontiguousarray(x), None, False
    raise KernelError(
        f"b must be 1-D (one system) or 2-D (systems x segments), got shape {x.shape}"
    )


def check_resampling(
    confidence: object, n_resamples: object, seed: object
) -> tuple[float, int, int]:
    """The checked ``(confidence, n_resamples, seed)`` of a bootstrap (a fresh seed for None).

    Examples
    --------
    >>> from rust_bertscore.analyses.stats_checks import check_resampling
    >>> check_resampling(0.95, 1000, 1)
    (0.95, 1000, 1)
    """
    return check_confidence(confidence), check_count("n_resamples", n_resamples), check_seed(seed)


def check_paired(a: object, b: object) -> tuple[np.ndarray, np.ndarray, list[str] | None, bool]:
    """Baseline ``a`` as :func:`check_scores` gives it, then ``b`` as :func:`check_systems` does.

    Examples
    --------
    >>> from rust_bertscore.analyses.stats_checks import check_paired
    >>> x, ys, names, single = check_paired([0.5, 0.75], [0.25, 1.0])
    >>> x.shape, ys.shape, names, single
    ((2,), (1, 2), None, True)
    """
    return (check_scores("a", a), *check_systems(b))
