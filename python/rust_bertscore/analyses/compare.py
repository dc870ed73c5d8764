"""Comparing systems: BERTScore of several systems over the same references, each against the
first (the baseline), with intervals and p-values, laid out as sacrebleu's paired-test tables.

:meth:`BERTScorer.compare <rust_bertscore.BERTScorer.compare>` scores every system with one
scorer (its embedding cache encodes the references once) and calls :func:`compare_scores`,
which runs the statistics of :mod:`rust_bertscore.analyses.stats` on P, R and F1 of every system.

>>> import numpy as np
>>> from rust_bertscore.analyses.compare import compare_scores
>>> base = np.array([0.80, 0.70, 0.75, 0.90, 0.65])
>>> table = compare_scores({"base": (base, base, base), "new": (base + 0.02,) * 3}, seed=1)
>>> table["new"].F.p_value < 0.01, round(table["new"].F.delta, 6)
(True, 0.02)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InputTypeError, InputValueError
from .comparison import (
    ALPHA,
    LABELS,
    METRICS,
    VERDICTS,
    Comparison,
    MetricComparison,
    SystemComparison,
    verdict,
)
from .stats import paired_bootstrap, paired_permutation

if TYPE_CHECKING:
    from ..engine.settings import RefsArg
    from .seams import Scorer

TESTS = {"paired-bs": "paired-bs", "bs": "paired-bs", "paired-ar": "paired-ar", "ar": "paired-ar"}
"""Accepted names of the two tests."""

DEFAULT_SAMPLES = {"paired-bs": 1000, "paired-ar": 10000}
"""Resamples (paired-bs) or trials (paired-ar) when not given, as sacrebleu."""

CI_RESAMPLES = 1000
"""Bootstrap resamples for the intervals of the paired-ar table (sacrebleu's default)."""

DEFAULT_SEED = 12345
"""Seed when not given (sacrebleu's ``SACREBLEU_SEED`` default): tables are reproducible."""

__all__ = [
    "ALPHA",
    "CI_RESAMPLES",
    "DEFAULT_SAMPLES",
    "DEFAULT_SEED",
    "LABELS",
    "METRICS",
    "TESTS",
    "VERDICTS",
    "Comparison",
    "MetricComparison",
    "SystemComparison",
    "compare_scores",
    "compare_systems",
    "verdict",
]


# -- running the tests -----------------------------------------------------------------------------


def _test_name(test: str) -> str:
    if test not in TESTS:
        raise InputValueError(f"test must be 'paired-bs' or 'paired-ar', got {test!r}")
    return TESTS[test]


def compare_scores(
    scores_by_system: Mapping[str, Sequence[np.ndarray]],
    test: str = "paired-bs",
    n_samples: int | None = None,
    seed: int | None = DEFAULT_SEED,
    confidence: float = 0.95,
    hash: str = "",
) -> Comparison:
    """Test every system's segment scores against the first system's.

    Parameters
    ----------
    scores_by_system : mapping of name to (P, R, F)
        Segment scores of every system over the same segments, baseline first (at least two
        systems; each array of shape (N,), N >= 2).
    test : {"paired-bs", "paired-ar"}
        Paired bootstrap resampling or approximate randomisation; both give the two-sided p of
        "the system scores the same as the baseline", and each metric's ``verdict`` ("better",
        "worse" or "same" at :data:`ALPHA`) follows from it and the sign of the difference.
    n_samples : int, optional
        Resamples (paired-bs, default 1000) or trials (paired-ar, default 10000).
    seed : int, optional
        Seed of every resample and trial (default 12345); None draws one.
    confidence : float
        Coverage of the intervals, in (0, 1).
    hash : str
        Settings string to keep with the table.

    Returns
    -------
    Comparison

    Examples
    --------
    Segment scores (P, R, F) of two systems; the second is tested against the first:

    >>> import numpy as np
    >>> from rust_bertscore.analyses.compare import compare_scores
    >>> base = np.array([0.80, 0.70, 0.75, 0.90, 0.65])
    >>> table = compare_scores(
    ...     {"base": (base, base, base), "new": (base + 0.02,) * 3}, test="paired-ar", seed=1
    ... )
    >>> round(table["new"].F.delta, 6), table["new"].F.p_value < 0.1
    (0.02, True)
    """
    test = _test_name(test)
    given = {str(key): value for key, value in scores_by_system.items()}
    if len(given) != len(scores_by_system):
        raise InputValueError("system names must differ as strings (they name the table's rows)")
    names = list(given)
    if len(names) < 2:
        raise InputValueError(
            f"comparing needs at least 2 systems (a baseline and one more), got {len(names)}"
        )
    arrays: dict[str, list[np.ndarray]] = {}
    for name in names:
        prf = given[name]
        if len(prf) != 3:
            raise InputValueError(f"system {name!r}: expected (P, R, F), got {len(prf)} arrays")
        arrays[name] = [np.asarray(x, dtype=np.float64) for x in prf]
        for label, x in zip(LABELS.values(), arrays[name]):
            if x.ndim != 1:
                raise InputValueError(
                    f"system {name!r}: {label} must be 1-D (one score per segment), got shape "
                    f"{x.shape}"
                )
    segments = len(arrays[names[0]][0])
    if segments < 2:
        raise InputValueError(f"comparing needs at least 2 segments per system, got {segments}")
    for name in names:
        lengths = {len(x) for x in arrays[name]}
        if lengths != {segments}:
            raise InputValueError(
                f"system {name!r} has {sorted(lengths)} segments but the baseline "
                f"{names[0]!r} has {segments}: every system must score the same segments"
            )
    for name in names:
        for label, x in zip(LABELS.values(), arrays[name]):
            bad = np.flatnonzero(~np.isfinite(x))
            if len(bad):
                raise InputValueError(
                    f"system {name!r}: {label} of segment {int(bad[0])} is {x[bad[0]]} "
                    f"({len(bad)} segment(s) not finite); the tests need a finite score for "
                    "every segment (bert_score scores NaN a side whose tokens all weigh 0 with idf)"
                )
    if seed is None:
        import secrets

        seed = secrets.randbits(64)
    samples = DEFAULT_SAMPLES[test] if n_samples is None else n_samples
    ci_resamples = samples if test == "paired-bs" else CI_RESAMPLES
    base, others = names[0], names[1:]
    per_metric: dict[str, dict[str, MetricComparison]] = {}
    for m, metric in enumerate(METRICS):
        a = arrays[base][m]
        b = {name: arrays[name][m] for name in others}
        boot = paired_bootstrap(a, b, ci_resamples, seed, confidence, two_sided=True)
        if test == "paired-ar":
            perm = paired_permutation(a, b, samples, seed)
            p_values = {name: perm[name].p_value for name in others}
        else:
            p_values = {name: boot[name].p_value for name in others}
        first = boot[others[0]]
        rows = {base: MetricComparison(first.mean_a, first.a_ci_low, first.a_ci_high)}
        for name in others:
            r = boot[name]
            p = p_values[name]
            rows[name] = MetricComparison(
                r.mean_b,
                r.b_ci_low,
                r.b_ci_high,
                r.delta,
                r.ci_low,
                r.ci_high,
                p,
                verdict(r.delta, p),
            )
        per_metric[metric] = rows
    systems = tuple(
        SystemComparison(name, name == base, *(per_metric[m][name] for m in METRICS))
        for name in names
    )
    return Comparison(systems, test, samples, ci_resamples, float(confidence), seed, segments, hash)


def compare_systems(
    scorer: Scorer,
    cands_by_system: Mapping[str, Sequence[str]],
    refs: RefsArg,
    test: str = "paired-bs",
    n_samples: int | None = None,
    seed: int | None = DEFAULT_SEED,
    confidence: float = 0.95,
    batch_size: int | None = None,
    verbose: bool = False,
) -> Comparison:
    """Score every system with ``scorer`` and test each against the first (see
    :meth:`BERTScorer.compare <rust_bertscore.BERTScorer.compare>`).

    Examples
    --------
    >>> from rust_bertscore import BERTScorer
    >>> from rust_bertscore.analyses.compare import compare_systems
    >>> scorer = BERTScorer()  # the default model, all-MiniLM-L6-v2
    >>> refs = ["The cat sat on the mat.", "It is raining today.", "She reads a book."]
    >>> systems = {
    ...     "a": ["A cat sat on a mat.", "It rains today.", "She is reading a book."],
    ...     "b": ["Dogs bark.", "The sun is out.", "He writes."],
    ... }
    >>> table = compare_systems(scorer, systems, refs, n_samples=200, seed=1)
    >>> table["b"].F.delta < 0, table.segments
    (True, 3)
    """
    test = _test_name(test)
    if not isinstance(cands_by_system, Mapping):
        raise InputTypeError(
            "cands_by_system must be a dict {system name: list of candidate texts}, got "
            f"{type(cands_by_system).__name__}"
        )
    if len(cands_by_system) < 2:
        raise InputValueError(
            "comparing needs at least 2 systems (a baseline and one more), got "
            f"{len(cands_by_system)}"
        )
    if scorer.all_layers:
        raise InputValueError(
            "compare() needs one score per segment: use a scorer without all_layers"
        )
    n_refs = len(refs)
    for name, cands in cands_by_system.items():
        if isinstance(cands, str) or len(cands) != n_refs:
            got = "a string" if isinstance(cands, str) else f"{len(cands)} candidates"
            raise InputValueError(
                f"system {name!r} has {got} but there are {n_refs} references: every system "
                "needs one candidate per reference"
            )
    scores: dict[str, Sequence[np.ndarray]] = {}
    for name, cands in cands_by_system.items():
        if verbose:
            print(f"scoring system {name!r}...")
        out = scorer.score(list(cands), refs, verbose=verbose, batch_size=batch_size)
        scores[str(name)] = out  # type: ignore[assignment]
    return compare_scores(scores, test, n_samples, seed, confidence, hash=scorer.hash)
