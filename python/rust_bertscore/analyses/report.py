"""The data of the HTML comparison report: :func:`build_report` scores every system with the
token alignments of :func:`~rust_bertscore.analyses.align.align_pairs` (whose P, R and F are
``score()``'s for the same call), runs :func:`~rust_bertscore.analyses.compare.compare_scores`
on them (the figures of ``compare``) and adds the per-segment views: wins, losses and ties,
and buckets by reference length and by the baseline's F with paired bootstrap intervals.

The vectors come once per distinct text: ``align_pairs`` reads them through the pipeline
(the scorer's cache, store or encoder) and its ``score()`` call finds them in the cache, as
``compare`` finds the references there system after system. No token vector is kept: only
each token's best match and cosine (see :mod:`rust_bertscore.analyses.report_html` for the
page).

>>> from rust_bertscore.analyses.report import length_bucket
>>> length_bucket([3, 8, 12, 25, 31, 70]).tolist()
[0, 0, 1, 2, 3, 5]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputTypeError, InputValueError
from .align import Alignment, align_pairs, tokens_memo
from .compare import DEFAULT_SEED, Comparison, compare_scores
from .stats import paired_bootstrap

if TYPE_CHECKING:
    from ..engine.settings import RefsArg
    from .seams import Scorer

__all__ = [
    "TIE",
    "BucketRow",
    "Report",
    "SystemSegments",
    "buckets",
    "build_report",
    "length_bucket",
    "win_loss_tie",
]

TIE = 1e-6
"""Two F scores closer than this are a tie (equal at the table's six decimals)."""

LENGTH_EDGES = (0, 11, 21, 31, 41, 61)
"""Lower edges of the reference-length buckets (tokens, special tokens left out)."""

LENGTH_LABELS = ("0-10", "11-20", "21-30", "31-40", "41-60", "61+")
"""Labels of the reference-length buckets."""


@dataclass(frozen=True)
class SystemSegments:
    """One system's segments: texts, scores as ``score()`` gives them, and the alignment of
    each candidate with its reference (with several references, the one of highest F).

    Examples
    --------
    >>> from rust_bertscore import BERTScorer
    >>> from rust_bertscore.analyses.report import build_report
    >>> refs = ["the cat sat", "it rains", "a dog ran"]
    >>> systems = {"a": refs, "b": ["a cat", "sun", "dogs"]}
    >>> rep = build_report(BERTScorer(), systems, refs, n_samples=50)
    >>> s = rep.segments["b"]
    >>> len(s.F), s.alignments[0].candidate.tokens[1].token
    (3, 'a')
    """

    name: str
    cands: list[str]
    P: np.ndarray
    R: np.ndarray
    F: np.ndarray
    alignments: list[Alignment]


@dataclass(frozen=True)
class BucketRow:
    """One bucket: its label, its segments and, per system, the mean F with its interval; per
    system but the baseline, ΔF with its paired interval and one-sided p ("not better").

    Examples
    --------
    >>> import numpy as np
    >>> from rust_bertscore.analyses.report import buckets
    >>> base = np.linspace(0.5, 0.9, 10)
    >>> rows = buckets({"a": base, "b": base + 0.01}, np.repeat([0, 1], 5), ["short", "long"], 1)
    >>> rows[0].label, rows[0].n, round(rows[0].delta["b"][0], 6)
    ('short', 5, 0.01)
    """

    label: str
    n: int
    mean: dict[str, tuple[float, float, float]]
    delta: dict[str, tuple[float, float, float, float]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain data: label, n, mean {system: [mean, lo, hi]}, delta {system: [d, lo, hi, p]}."""
        return {
            "label": self.label,
            "n": self.n,
            "mean": {k: list(v) for k, v in self.mean.items()},
            "delta": {k: list(v) for k, v in self.delta.items()},
        }


def length_bucket(lengths: Sequence[int] | np.ndarray) -> np.ndarray:
    """The bucket (index into :data:`LENGTH_LABELS`) of each length: 0-10, 11-20, 21-30,
    31-40, 41-60, 61+ tokens.

    >>> from rust_bertscore.analyses.report import LENGTH_LABELS, length_bucket
    >>> [LENGTH_LABELS[k] for k in length_bucket([0, 10, 11, 60, 61])]
    ['0-10', '0-10', '11-20', '41-60', '61+']
    """
    x = np.asarray(lengths, dtype=np.int64)
    return np.searchsorted(np.asarray(LENGTH_EDGES), x, side="right") - 1


def buckets(
    f_by_system: Mapping[str, np.ndarray],
    bucket_of: np.ndarray,
    labels: Sequence[str],
    seed: int,
    n_resamples: int = 1000,
    confidence: float = 0.95,
) -> list[BucketRow]:
    """Mean F (and ΔF against the first system) of the segments in each bucket, with
    bootstrap intervals (paired for ΔF, as ``compare``'s); ``bucket_of[i]`` is segment ``i``'s
    bucket, an index into ``labels``. A bucket of one segment gets its mean and no interval
    (NaN); an empty one is left out.

    >>> import numpy as np
    >>> from rust_bertscore.analyses.report import buckets
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
        if len(idx) < 2:
            nan = float("nan")
            mean = {name: (float(f[name][0]), nan, nan) for name in names}
            delta = {name: (float(f[name][0] - f[base][0]), nan, nan, nan) for name in others}
        else:
            boot = paired_bootstrap(
                f[base], {n: f[n] for n in others}, n_resamples, seed, confidence
            )
            first = boot[others[0]]
            mean = {base: (first.mean_a, first.a_ci_low, first.a_ci_high)}
            delta = {}
            for name in others:
                r = boot[name]
                mean[name] = (r.mean_b, r.b_ci_low, r.b_ci_high)
                delta[name] = (r.delta, r.ci_low, r.ci_high, r.p_value)
        rows.append(BucketRow(label, len(idx), mean, delta))
    return rows


def win_loss_tie(base: np.ndarray, other: np.ndarray) -> tuple[int, int, int]:
    """Segments where ``other``'s F is above, below and within :data:`TIE` of ``base``'s.

    >>> import numpy as np
    >>> from rust_bertscore.analyses.report import win_loss_tie
    >>> win_loss_tie(np.array([0.5, 0.6, 0.7]), np.array([0.6, 0.6, 0.1]))
    (1, 1, 1)
    """
    d = np.asarray(other, np.float64) - np.asarray(base, np.float64)
    ties = np.abs(d) < TIE
    return int(np.sum(~ties & (d > 0))), int(np.sum(~ties & (d < 0))), int(np.sum(ties))


@dataclass(frozen=True)
class Report:
    """Everything the HTML report shows (see :func:`build_report`).

    Attributes
    ----------
    comparison : Comparison
        The systems table, as ``compare`` gives it for the same inputs and options.
    segments : dict of name to SystemSegments
        Every system's segments, the baseline first.
    refs : list of list of str
        Each segment's references.
    ref_lengths : numpy.ndarray
        Each segment's first reference in tokens (special tokens left out).
    wins : dict of name to (wins, losses, ties)
        Against the baseline, by F (every system but the baseline).
    length_buckets, f_buckets : list of BucketRow
        By reference length, and by the baseline's F (quintiles).

    Examples
    --------
    >>> from rust_bertscore import BERTScorer
    >>> from rust_bertscore.analyses.report import build_report
    >>> refs = ["the cat sat", "it rains", "a dog ran"]
    >>> systems = {"a": refs, "b": ["a cat", "sun", "dogs"]}
    >>> rep = build_report(BERTScorer(), systems, refs, n_samples=50)
    >>> rep.comparison.baseline.name, rep.wins["b"], rep.ref_lengths.tolist()
    ('a', (0, 3, 0), [3, 2, 3])
    """

    comparison: Comparison
    segments: dict[str, SystemSegments]
    refs: list[list[str]]
    ref_lengths: np.ndarray
    wins: dict[str, tuple[int, int, int]]
    length_buckets: list[BucketRow]
    f_buckets: list[BucketRow]


def _best_ref(records: list[Alignment], n: int) -> list[Alignment]:
    """One record per candidate: with several references, the first of highest F."""
    best: list[Alignment | None] = [None] * n
    for r in records:
        b = best[r.index]
        if b is None or (r.F > b.F) or (np.isnan(b.F) and not np.isnan(r.F)):
            best[r.index] = r
    return [b for b in best if b is not None]


def build_report(
    scorer: Scorer,
    cands_by_system: Mapping[str, Sequence[str]],
    refs: RefsArg,
    test: str = "paired-bs",
    n_samples: int | None = None,
    seed: int | None = DEFAULT_SEED,
    confidence: float = 0.95,
    batch_size: int | None = None,
) -> Report:
    """Score and align every system and compute what the report shows.

    Parameters are those of :func:`~rust_bertscore.analyses.compare.compare_systems`; the
    systems table is the one it gives (same scores, same test, same seed).

    Examples
    --------
    >>> from rust_bertscore import BERTScorer
    >>> from rust_bertscore.analyses.report import build_report
    >>> refs = ["the cat sat", "it rains", "a dog ran"]
    >>> systems = {"a": refs, "b": ["a cat", "sun", "dogs"]}
    >>> rep = build_report(BERTScorer(), systems, refs, n_samples=50)
    >>> [row.label for row in rep.length_buckets], len(rep.f_buckets) <= 5
    (['0-10'], True)
    """
    if not isinstance(cands_by_system, Mapping):
        raise InputTypeError(
            "cands_by_system must be a dict {system name: list of candidate texts}, got "
            f"{type(cands_by_system).__name__}"
        )
    if len(cands_by_system) < 2:
        raise InputValueError(
            "a report compares at least 2 systems (a baseline and one more), got "
            f"{len(cands_by_system)}"
        )
    if scorer.all_layers:
        raise InputValueError(
            "report() needs one score per segment: use a scorer without all_layers"
        )
    if isinstance(refs, str):
        raise InputTypeError("refs must be a list of references (one per segment), not a str")
    n = len(refs)
    ref_groups = [[r] if isinstance(r, str) else list(r) for r in refs]
    segments: dict[str, SystemSegments] = {}
    # Each text tokenised once for all systems and their score() calls.
    with tokens_memo(scorer):
        for name, cands in cands_by_system.items():
            if isinstance(cands, str) or len(cands) != n:
                got = "a string" if isinstance(cands, str) else f"{len(cands)} candidates"
                raise InputValueError(
                    f"system {name!r} has {got} but there are {n} references: every system "
                    "needs one candidate per reference"
                )
            cands = list(cands)
            records = align_pairs(scorer, cands, refs, batch_size)
            if all(isinstance(r, str) for r in refs):
                P = np.array([r.P for r in records])
                R = np.array([r.R for r in records])
                F = np.array([r.F for r in records])
            else:  # the multi-reference max, as score() takes it (vectors from the cache)
                P, R, F = (
                    np.asarray(x, np.float64)
                    for x in scorer.score(cands, refs, batch_size=batch_size)
                )
            segments[str(name)] = SystemSegments(str(name), cands, P, R, F, _best_ref(records, n))
    table = compare_scores(
        {k: (s.P, s.R, s.F) for k, s in segments.items()},
        test,
        n_samples,
        seed,
        confidence,
        hash=scorer.hash,
    )
    names = list(segments)
    base = segments[names[0]]
    wins = {k: win_loss_tie(base.F, segments[k].F) for k in names[1:]}
    special = scorer.tokenizer.special_ids
    first_refs = scorer.tokenizer.encode([g[0] if g else "" for g in ref_groups])
    ref_lengths = np.array([sum(t not in special for t in ids) for ids in first_refs], np.int64)
    f_by_system = {k: s.F for k, s in segments.items()}
    used_seed = table.seed
    length_rows = buckets(
        f_by_system, length_bucket(ref_lengths), LENGTH_LABELS, used_seed, confidence=confidence
    )
    qs = np.quantile(base.F, [0.2, 0.4, 0.6, 0.8])
    f_of = np.searchsorted(qs, base.F, side="right")
    bounds = [float(np.min(base.F)), *qs.tolist(), float(np.max(base.F))]
    f_labels = [f"Q{k + 1} {bounds[k]:.3f}-{bounds[k + 1]:.3f}" for k in range(5)]
    f_rows = buckets(f_by_system, f_of, f_labels, used_seed, confidence=confidence)
    return Report(table, segments, ref_groups, ref_lengths, wins, length_rows, f_rows)
