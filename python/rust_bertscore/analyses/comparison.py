"""The records of a system comparison (:class:`Comparison`, one :class:`SystemComparison` per
system, one :class:`MetricComparison` per metric) and their layouts: the text table (as
sacrebleu's paired-test tables) and tab-separated values. :mod:`rust_bertscore.analyses.compare`
computes them."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

METRICS = ("P", "R", "F")
LABELS = {"P": "P", "R": "R", "F": "F1"}
ALPHA = 0.05
"""Significance level: a p-value below it makes a difference "better" or "worse"."""

VERDICTS = ("better", "worse", "same")
"""A system's verdict against the baseline on one metric (see :func:`verdict`)."""

MARKS = {"better": "*", "worse": "!", "same": ""}
"""The text table's mark after a p-value of each verdict."""


def verdict(delta: float | None, p_value: float | None, alpha: float = ALPHA) -> str:
    """``"better"`` or ``"worse"`` when the two-sided ``p_value`` is below ``alpha`` (the sign
    of ``delta`` says which), else ``"same"`` (no significant difference; also for the
    baseline, whose delta and p are None, and for a NaN p).

    >>> from rust_bertscore.analyses.comparison import verdict
    >>> verdict(0.02, 0.001), verdict(-0.06, 0.001), verdict(-0.06, 0.2), verdict(None, None)
    ('better', 'worse', 'same', 'same')
    """
    if delta is None or p_value is None or not p_value < alpha or delta == 0:
        return "same"
    return "better" if delta > 0 else "worse"


def _test_title(c: Comparison) -> str:
    pct = f"{100 * c.confidence:g}%"
    if c.test == "paired-bs":
        return (
            f"Paired bootstrap resampling test ({c.n_samples} resamples, seed {c.seed}): "
            f"{c.segments} segments, {pct} intervals"
        )
    return (
        f"Paired approximate randomization test ({c.n_samples} trials, seed {c.seed}; "
        f"intervals from {c.n_resamples} bootstrap resamples): {c.segments} segments, "
        f"{pct} intervals"
    )


def _footer(c: Comparison) -> str:
    pct = f"{100 * c.confidence:g}%"
    if c.test == "paired-bs":
        what = (
            "two-sided p-value of 'the system scores the same as the baseline' (twice the "
            "smaller share of resamples where it is not better / not worse)"
        )
    else:
        what = (
            "two-sided p-value of 'the system scores the same as the baseline' (share of "
            "trials with a difference at least as large)"
        )
    return "\n".join(
        [
            f" - each system: mean [{pct} bootstrap interval]; below it: delta = system - "
            "baseline and p",
            f" - p: {what}",
            f" - ({MARKS['better']}) better than the baseline: p < {ALPHA:g} and delta > 0",
            f" - ({MARKS['worse']}) worse than the baseline: p < {ALPHA:g} and delta < 0",
            " - no mark: no significant difference",
        ]
    )


def comparison_text(c: Comparison) -> str:
    """sacrebleu-style table: a line per system with each metric's mean and interval, and under
    each other system a line with its difference from the baseline and the p-value."""
    labels = [f"Baseline: {s.name}" if s.is_baseline else s.name for s in c.systems]
    name_width = max(len("System"), *(len(label) for label in labels))
    cell = 25
    rows: list[str] = []
    header = "System".ljust(name_width) + "".join(f"  {LABELS[m]:<{cell}}" for m in METRICS)
    for s, label in zip(c.systems, labels):
        cells = []
        for m in METRICS:
            x: MetricComparison = getattr(s, m)
            cells.append(f"  {f'{x.mean:.4f} [{x.ci_low:.4f}, {x.ci_high:.4f}]':<{cell}}")
        rows.append((label.ljust(name_width) + "".join(cells)).rstrip())
        if not s.is_baseline:
            cells = []
            for m in METRICS:
                x = getattr(s, m)
                text = f"{x.delta:+.4f} (p = {x.p_value:.4f}){MARKS[x.verdict]}"
                cells.append(f"  {text:<{cell}}")
            rows.append((" " * name_width + "".join(cells)).rstrip())
    width = max(len(line) for line in [header.rstrip(), *rows])
    lines = [_test_title(c)]
    if c.hash:
        lines.append(c.hash)
    lines += ["", header.rstrip(), "-" * width, *rows, "-" * width, _footer(c)]
    return "\n".join(lines) + "\n"


def _num(x: float | str | None) -> str:
    if isinstance(x, str):
        return x
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return f"{x:.6f}"


TSV_FIELDS = (
    "mean",
    "ci_low",
    "ci_high",
    "delta",
    "delta_ci_low",
    "delta_ci_high",
    "p_value",
    "verdict",
)


def comparison_tsv(c: Comparison) -> str:
    """A header (``system``, ``baseline``, then ``<metric>_<field>`` for P, R, F1) and one row per
    system; the baseline's delta, p-value and verdict cells are empty, another system's verdict
    is ``better``, ``worse`` or ``same``."""
    header = ["system", "baseline"] + [
        f"{LABELS[m]}_{f}" if f != "mean" else LABELS[m] for m in METRICS for f in TSV_FIELDS
    ]
    rows = ["\t".join(header)]
    for s in c.systems:
        cells = [s.name.replace("\t", " "), "1" if s.is_baseline else "0"]
        for m in METRICS:
            x = getattr(s, m)
            cells += [
                "" if s.is_baseline and f == "verdict" else _num(getattr(x, f)) for f in TSV_FIELDS
            ]
        rows.append("\t".join(cells))
    return "\n".join(rows) + "\n"


@dataclass(frozen=True)
class MetricComparison:
    """One metric (P, R or F1) of one system.

    Attributes
    ----------
    mean : float
        Corpus mean of the system's segment scores.
    ci_low, ci_high : float
        Percentile bootstrap interval of the mean.
    delta : float or None
        ``mean - baseline mean`` (None for the baseline).
    delta_ci_low, delta_ci_high : float or None
        Paired bootstrap interval of ``delta`` (None for the baseline).
    p_value : float or None
        Two-sided p-value of "the system and the baseline score the same" (paired-bs: twice
        the smaller tail of the paired bootstrap; paired-ar: approximate randomisation). None
        for the baseline.
    verdict : {"better", "worse", "same"}
        ``"better"`` / ``"worse"`` when ``p_value < ALPHA`` (by the sign of ``delta``), else
        ``"same"`` (no significant difference; always for the baseline).

    Examples
    --------
    >>> import numpy as np
    >>> from rust_bertscore.analyses.compare import compare_scores
    >>> base = np.array([0.80, 0.70, 0.75, 0.90, 0.65])
    >>> table = compare_scores({"base": (base, base, base), "new": (base + 0.02,) * 3}, seed=1)
    >>> f = table["new"].F
    >>> round(f.mean, 2), round(f.delta, 6), f.p_value < 0.01, table["base"].F.delta is None
    (0.78, 0.02, True, True)
    >>> f.verdict, table["base"].F.verdict
    ('better', 'same')
    """

    mean: float
    ci_low: float
    ci_high: float
    delta: float | None = None
    delta_ci_low: float | None = None
    delta_ci_high: float | None = None
    p_value: float | None = None
    verdict: str = "same"


@dataclass(frozen=True)
class SystemComparison:
    """One row of the table: a system's P, R and F1.

    Attributes
    ----------
    name : str
        The system's name (its key in ``cands_by_system``, or its file on the command line).
    is_baseline : bool
        True for the first system, which the others are tested against.
    P, R, F : MetricComparison
        Precision, recall and F1.

    Examples
    --------
    >>> import numpy as np
    >>> from rust_bertscore.analyses.compare import compare_scores
    >>> base = np.array([0.80, 0.70, 0.75, 0.90, 0.65])
    >>> table = compare_scores({"base": (base, base, base), "new": (base + 0.02,) * 3}, seed=1)
    >>> [(s.name, s.is_baseline, round(s.P.mean, 2)) for s in table.systems]
    [('base', True, 0.76), ('new', False, 0.78)]
    """

    name: str
    is_baseline: bool
    P: MetricComparison
    R: MetricComparison
    F: MetricComparison


@dataclass(frozen=True)
class Comparison:
    """Every system against the first, as a table.

    Attributes
    ----------
    systems : tuple of SystemComparison
        The baseline first, then the other systems in the order given.
    test : {"paired-bs", "paired-ar"}
        The test behind the p-values.
    n_samples : int
        Resamples (paired-bs) or trials (paired-ar) behind the p-values.
    n_resamples : int
        Bootstrap resamples behind the intervals.
    confidence : float
        Coverage of the intervals.
    seed : int
        Seed of the resamples and trials: the same seed gives the same table.
    segments : int
        Segments (candidates) per system.
    hash : str
        The scorer's settings string ("" when the scores came from elsewhere).

    Examples
    --------
    >>> import numpy as np
    >>> from rust_bertscore.analyses.compare import compare_scores
    >>> base = np.array([0.80, 0.70, 0.75, 0.90, 0.65])
    >>> table = compare_scores({"base": (base, base, base), "new": (base + 0.02,) * 3}, seed=1)
    >>> table.baseline.name, table.test, table.segments, table.to_dict()["systems"][1]["name"]
    ('base', 'paired-bs', 5, 'new')
    >>> table.format_tsv().splitlines()[0].split()[:4]
    ['system', 'baseline', 'P', 'P_ci_low']
    """

    systems: tuple[SystemComparison, ...]
    test: str
    n_samples: int
    n_resamples: int
    confidence: float
    seed: int
    segments: int
    hash: str = ""

    @property
    def baseline(self) -> SystemComparison:
        """The first system."""
        return self.systems[0]

    def __getitem__(self, name: str) -> SystemComparison:
        for s in self.systems:
            if s.name == name:
                return s
        known = ", ".join(repr(s.name) for s in self.systems)
        raise KeyError(f"no system {name!r} in the comparison (systems: {known})")

    def to_dict(self) -> dict[str, Any]:
        """Plain data (for JSON): the settings and a list of systems, metrics keyed P, R, F1
        (each with its ``verdict``: "better", "worse" or "same")."""
        out: dict[str, Any] = {
            k: v for k, v in asdict(self).items() if k not in ("systems", "hash")
        }
        out["baseline"] = self.baseline.name
        out["systems"] = [
            {
                "name": s.name,
                "baseline": s.is_baseline,
                **{LABELS[m]: asdict(getattr(s, m)) for m in METRICS},
            }
            for s in self.systems
        ]
        return out

    def format_text(self) -> str:
        """The table as text, laid out as sacrebleu's paired-test tables."""
        return comparison_text(self)

    def format_tsv(self) -> str:
        """The table as tab-separated values: a header and one row per system."""
        return comparison_tsv(self)
