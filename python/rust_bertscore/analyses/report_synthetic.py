"""A large :class:`~rust_bertscore.analyses.report.Report` without the encoder, for the page's
tests and benches: random segment scores (the first system the baseline, each other one
shifted by a fixed amount, so some are better, some worse and some the same), short texts and
minimal alignments.

Every alignment has **no tokens** (empty ``tokens`` tuples, ``ref_index`` 0, not floored): the
page must show such a segment without a token view. The alignments are made when read
(:class:`EmptyAlignments`, a sequence), so that 200,000 x 5 takes a few seconds. The
statistics (table, buckets) are the real ones on those scores; word buckets and poorly matched
words are fixed small lists.

>>> from rust_bertscore.analyses.report_synthetic import synthetic_report
>>> rep = synthetic_report(100, 3, seed=0)
>>> list(rep.segments), len(rep.refs), rep.segments["sys1"].F.shape
(['baseline', 'sys1', 'sys2'], 100, (100,))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import overload

import numpy as np

from ..errors import InputValueError
from .align import Alignment, SideAlignment
from .compare import compare_scores
from .report import Report, SystemSegments
from .report_buckets import (
    LENGTH_CUTOFFS,
    buckets,
    length_bucket,
    length_labels,
    win_loss_tie,
)
from .report_words import FREQUENCY_LABELS, WordBucket

__all__ = ["SHIFTS", "EmptyAlignments", "synthetic_report"]

SHIFTS = (0.02, -0.03, 0.0, -0.01, 0.05)
"""Mean shift of F of the systems after the baseline against it, in turn (cycled)."""

_WORDS = ("the", "cat", "sat", "on", "a", "mat", "dog", "ran", "it", "rains", "today", "we")
_NO_TOKENS = SideAlignment("", (), False)


class EmptyAlignments(Sequence[Alignment]):
    """Segment ``i``'s alignment, made when read: no tokens, reference 0, the segment's P, R
    and F.

    >>> import numpy as np
    >>> from rust_bertscore.analyses.report_synthetic import EmptyAlignments
    >>> al = EmptyAlignments(np.array([0.5, 0.6]), np.array([0.4, 0.7]), np.array([0.45, 0.65]))
    >>> len(al), al[1].index, al[1].F, al[-1].candidate.tokens, len(al[:1])
    (2, 1, 0.65, (), 1)
    """

    def __init__(self, P: np.ndarray, R: np.ndarray, F: np.ndarray) -> None:
        self._prf = np.stack([P, R, F]).astype(np.float64)

    def __len__(self) -> int:
        return int(self._prf.shape[1])

    @overload
    def __getitem__(self, i: int) -> Alignment: ...
    @overload
    def __getitem__(self, i: slice) -> list[Alignment]: ...
    def __getitem__(self, i: int | slice) -> Alignment | list[Alignment]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        n = len(self)
        k = int(i) + n if int(i) < 0 else int(i)
        if not 0 <= k < n:
            raise IndexError(f"segment {i} out of range ({n} segments)")
        p, r, f = (float(x) for x in self._prf[:, k])
        return Alignment(_NO_TOKENS, _NO_TOKENS, p, r, f, k, 0, False, "")


def _texts(rng: np.random.Generator, n: int, pool: list[str]) -> list[str]:
    """``n`` texts: each its number and one of ``pool``'s, drawn."""
    picks = rng.integers(0, len(pool), size=n).tolist()
    return [f"{pool[j]} {i}" for i, j in enumerate(picks)]


def _pool(rng: np.random.Generator, size: int) -> list[str]:
    """``size`` texts of 3 to 30 words of a small vocabulary."""
    words = np.asarray(_WORDS)
    lengths = rng.integers(3, 31, size=size)
    return [" ".join(words[rng.integers(0, len(words), size=k)].tolist()) for k in lengths]


def synthetic_report(n_segments: int, n_systems: int, seed: int = 0) -> Report:
    """A report of ``n_segments`` segments and ``n_systems`` systems (``baseline``, ``sys1``,
    ...) from scores drawn with ``seed``: the same arguments give the same report.

    Scores: the baseline's F uniform in [0.6, 0.95]; system ``k``'s F the baseline's plus
    :data:`SHIFTS` ``[k - 1]`` plus noise (sd 0.02), a tenth of its segments exact ties; P and R
    F plus and minus a small noise. Texts: 3 to 30 words of a small vocabulary and the
    segment's number (every text distinct). The table uses
    100 resamples (paired-bs, seed ``seed``), the buckets 100.

    Examples
    --------
    >>> from rust_bertscore.analyses.report_synthetic import synthetic_report
    >>> a, b = synthetic_report(50, 2, seed=3), synthetic_report(50, 2, seed=3)
    >>> bool((a.segments["sys1"].F == b.segments["sys1"].F).all()), a.refs == b.refs
    (True, True)
    >>> a.segments["sys1"].alignments[0].candidate.tokens
    ()
    """
    if n_segments < 2 or n_systems < 2:
        raise InputValueError(
            f"a synthetic report needs >= 2 segments and >= 2 systems, got {n_segments} x "
            f"{n_systems}"
        )
    rng = np.random.default_rng(seed)
    n = int(n_segments)
    pool = _pool(rng, 4096)
    refs = _texts(rng, n, pool)
    lengths = np.fromiter((r.count(" ") + 1 for r in refs), np.int64, n)
    ref_groups = [[r] for r in refs]
    sources = _texts(rng, n, pool)
    base_f = rng.uniform(0.6, 0.95, size=n)
    names = ["baseline", *(f"sys{k}" for k in range(1, n_systems))]
    segments: dict[str, SystemSegments] = {}
    for k, name in enumerate(names):
        if k == 0:
            f = base_f.copy()
            cands = refs
        else:
            f = base_f + SHIFTS[(k - 1) % len(SHIFTS)] + rng.normal(0.0, 0.02, size=n)
            ties = rng.random(n) < 0.1
            f[ties] = base_f[ties]
            cands = _texts(rng, n, pool)
        f = np.clip(f, 0.0, 1.0)
        p = np.clip(f + rng.normal(0.0, 0.01, size=n), 0.0, 1.0)
        r = np.clip(f - rng.normal(0.0, 0.01, size=n), 0.0, 1.0)
        alignments = EmptyAlignments(p, r, f)
        segments[name] = SystemSegments(
            name,
            cands,
            p,
            r,
            f,
            alignments,
            np.zeros((n, 3), np.int64),
            rng.random(n) < 0.001,
        )
    table = compare_scores(
        {k: (s.P, s.R, s.F) for k, s in segments.items()}, "paired-bs", 100, seed
    )
    base = segments[names[0]]
    f_by_system = {k: s.F for k, s in segments.items()}
    length_rows = buckets(
        f_by_system,
        length_bucket(lengths, LENGTH_CUTOFFS),
        length_labels(LENGTH_CUTOFFS),
        seed,
        100,
    )
    qs = np.quantile(base.F, [0.2, 0.4, 0.6, 0.8])
    bounds = [float(base.F.min()), *qs.tolist(), float(base.F.max())]
    f_labels = [f"Q{k + 1} {bounds[k]:.3f}-{bounds[k + 1]:.3f}" for k in range(5)]
    f_rows = buckets(f_by_system, np.searchsorted(qs, base.F, side="right"), f_labels, seed, 100)
    words = {
        name: [
            WordBucket(label, 10 * (j + 1), 0.9 - 0.02 * j + 0.01 * k, 0.05 + 0.01 * j)
            for j, label in enumerate(FREQUENCY_LABELS)
        ]
        for k, name in enumerate(names)
    }
    poor = {
        name: [(w, 20 - j, 0.3 + 0.01 * j) for j, w in enumerate(sorted(_WORDS))] for name in names
    }
    return Report(
        table,
        segments,
        ref_groups,
        lengths.astype(np.int64),
        {k: win_loss_tie(base.F, segments[k].F) for k in names[1:]},
        length_rows,
        f_rows,
        sources,
        rng.random(n) < 0.001,
        words,
        poor,
    )
