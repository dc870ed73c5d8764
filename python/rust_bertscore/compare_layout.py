"""Layouts of a :class:`~rust_bertscore.compare.Comparison`: the text table (as sacrebleu's
paired-test tables) and tab-separated values."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .compare import Comparison, MetricComparison

METRICS = ("P", "R", "F")
LABELS = {"P": "P", "R": "R", "F": "F1"}
ALPHA = 0.05
"""p-values below this are starred in the text table."""


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
            "one-sided p-value of 'the system is not better than the baseline' (share of "
            "resamples where it is not)"
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
            f" - (*) p < {ALPHA:g}",
        ]
    )


def format_text(c: Comparison) -> str:
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
                star = "*" if x.p_value is not None and x.p_value < ALPHA else ""
                text = f"{x.delta:+.4f} (p = {x.p_value:.4f}){star}"
                cells.append(f"  {text:<{cell}}")
            rows.append((" " * name_width + "".join(cells)).rstrip())
    width = max(len(line) for line in [header.rstrip(), *rows])
    lines = [_test_title(c)]
    if c.hash:
        lines.append(c.hash)
    lines += ["", header.rstrip(), "-" * width, *rows, "-" * width, _footer(c)]
    return "\n".join(lines) + "\n"


def _num(x: float | None) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return f"{x:.6f}"


TSV_FIELDS = ("mean", "ci_low", "ci_high", "delta", "delta_ci_low", "delta_ci_high", "p_value")


def format_tsv(c: Comparison) -> str:
    """A header (``system``, ``baseline``, then ``<metric>_<field>`` for P, R, F1) and one row per
    system; the baseline's delta and p-value cells are empty."""
    header = ["system", "baseline"] + [
        f"{LABELS[m]}_{f}" if f != "mean" else LABELS[m] for m in METRICS for f in TSV_FIELDS
    ]
    rows = ["\t".join(header)]
    for s in c.systems:
        cells = [s.name.replace("\t", " "), "1" if s.is_baseline else "0"]
        for m in METRICS:
            x = getattr(s, m)
            cells += [_num(getattr(x, f)) for f in TSV_FIELDS]
        rows.append("\t".join(cells))
    return "\n".join(rows) + "\n"
