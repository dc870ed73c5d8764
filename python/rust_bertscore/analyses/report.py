"""The data of the HTML comparison report: :func:`build_report` scores every system with the
token alignments of :func:`~rust_bertscore.analyses.align.align_pairs` (whose P, R and F are
``score()``'s for the same call), runs :func:`~rust_bertscore.analyses.compare.compare_scores`
on them (the figures of ``compare``) and adds the per-segment views: wins, losses and ties,
buckets by reference length and by the baseline's F with paired bootstrap intervals
(:mod:`~rust_bertscore.analyses.report_buckets`), which reference gave each score, which texts
were cut at the model's length, and the word-level analysis of
:mod:`~rust_bertscore.analyses.report_words`.

The segments go in chunks (of whole batches, so that bert_score's padding floor sees the batches
``compare`` sees) whose token vectors take about the scorer's ``round_bytes`` (what one round of
``score()`` holds; at least one batch), every system's candidates of a chunk against the same
references: the token vectors of one chunk are held at a time (the references' found again in
the scorer's cache system after system), and no token vector is kept: only each token's best
match and cosine (see :mod:`rust_bertscore.analyses.report_html` for the page).

>>> from rust_bertscore.analyses.report import length_bucket
>>> length_bucket([3, 8, 12, 25, 31, 70]).tolist()
[0, 0, 1, 2, 3, 5]
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..engine.settings import batch_size_or
from ..errors import InputTypeError, InputValueError, RustBertScoreWarning
from ..stages.scored_tokens import warn_truncated
from .align import Alignment, align_pairs, tokens_memo
from .compare import DEFAULT_SEED, Comparison, compare_scores
from .report_buckets import (
    LENGTH_CUTOFFS,
    LENGTH_EDGES,
    LENGTH_LABELS,
    TIE,
    BucketRow,
    buckets,
    check_cutoffs,
    length_bucket,
    length_labels,
    score_labels,
    win_loss_tie,
)
from .report_chunks import best_of_references, chunks_for
from .report_words import (
    WordBucket,
    buckets_of_words,
    count_tokens,
    poorest_words,
    reference_words,
)

if TYPE_CHECKING:
    from ..engine.settings import RefsArg
    from .seams import Scorer

__all__ = [
    "LENGTH_CUTOFFS",
    "LENGTH_EDGES",
    "LENGTH_LABELS",
    "TIE",
    "BucketRow",
    "Report",
    "SystemSegments",
    "WordBucket",
    "buckets",
    "build_report",
    "length_bucket",
    "win_loss_tie",
]


def _no_ints() -> np.ndarray:
    return np.zeros((0, 3), np.int64)


def _no_flags() -> np.ndarray:
    return np.zeros(0, bool)


@dataclass(frozen=True)
class SystemSegments:
    """One system's segments: texts, scores as ``score()`` gives them, and the alignment of
    each candidate with its reference (with several references, the one of highest F).

    Attributes
    ----------
    name : str
    cands : list of str
    P, R, F : numpy.ndarray
        ``score()``'s scores (with several references, each the max over them, as bert_score).
    alignments : sequence of Alignment
        Per segment, the alignment with the reference of highest F (``ref_index``); a list
        from :func:`build_report`.
    best_ref : numpy.ndarray of int64, shape (n, 3)
        Per segment, the index (within its references) of the reference that gave P, R and F:
        bert_score maxes each over the references on its own, so they may differ; all 0 with
        one reference per segment.
    truncated : numpy.ndarray of bool, shape (n,)
        The candidate was cut at the model's maximum length (``long_texts="truncate"``).

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
    >>> s.best_ref.shape, s.truncated.tolist()
    ((3, 3), [False, False, False])
    """

    name: str
    cands: list[str]
    P: np.ndarray
    R: np.ndarray
    F: np.ndarray
    alignments: Sequence[Alignment]
    best_ref: np.ndarray = field(default_factory=_no_ints)
    truncated: np.ndarray = field(default_factory=_no_flags)


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
        By reference length, and by the baseline's F (quintiles, or the thresholds given).
    sources : list of str or None
        Each segment's source text, when given.
    ref_truncated : numpy.ndarray of bool, shape (n,)
        Some reference of the segment was cut at the model's maximum length.
    words : dict of name to list of WordBucket
        Per system, recall of the reference tokens by frequency bucket
        (:func:`~rust_bertscore.analyses.report_words.word_buckets`).
    poor_words : dict of name to list of (token, times, mean cosine)
        Per system, the reference tokens most often matched poorly
        (:func:`~rust_bertscore.analyses.report_words.poor_words`).

    Examples
    --------
    >>> from rust_bertscore import BERTScorer
    >>> from rust_bertscore.analyses.report import build_report
    >>> refs = ["the cat sat", "it rains", "a dog ran"]
    >>> systems = {"a": refs, "b": ["a cat", "sun", "dogs"]}
    >>> rep = build_report(BERTScorer(), systems, refs, n_samples=50)
    >>> rep.comparison.baseline.name, rep.wins["b"], rep.ref_lengths.tolist()
    ('a', (0, 3, 0), [3, 2, 3])
    >>> rep.sources is None, [w.label for w in rep.words["b"]]
    (True, ['1'])
    """

    comparison: Comparison
    segments: dict[str, SystemSegments]
    refs: list[list[str]]
    ref_lengths: np.ndarray
    wins: dict[str, tuple[int, int, int]]
    length_buckets: list[BucketRow]
    f_buckets: list[BucketRow]
    sources: list[str] | None = None
    ref_truncated: np.ndarray = field(default_factory=_no_flags)
    words: dict[str, list[WordBucket]] = field(default_factory=dict)
    poor_words: dict[str, list[tuple[str, int, float]]] = field(default_factory=dict)


def _check_sources(sources: Sequence[str] | None, n: int) -> list[str] | None:
    if sources is None:
        return None
    if isinstance(sources, str) or not isinstance(sources, Sequence):
        raise InputTypeError(
            f"sources must be a list of str (one per segment), got {type(sources).__name__}"
        )
    out = list(sources)
    if len(out) != n:
        raise InputValueError(
            f"sources has {len(out)} texts but there are {n} references: give one source "
            "per segment"
        )
    for i, s in enumerate(out):
        if not isinstance(s, str):
            raise InputTypeError(f"sources[{i}] must be a str, got {type(s).__name__}")
    return out


def _score_buckets(
    base_f: np.ndarray, cuts: Sequence[float] | None
) -> tuple[np.ndarray, list[str]]:
    """Each segment's bucket by the baseline's F and the labels: the (checked) thresholds
    given, else the quintiles."""
    if cuts is not None:
        return np.searchsorted(np.asarray(cuts), base_f, side="right"), score_labels(cuts)
    qs = np.quantile(base_f, [0.2, 0.4, 0.6, 0.8])
    bounds = [float(np.min(base_f)), *qs.tolist(), float(np.max(base_f))]
    labels = [f"Q{k + 1} {bounds[k]:.3f}-{bounds[k + 1]:.3f}" for k in range(5)]
    return np.searchsorted(qs, base_f, side="right"), labels


def build_report(
    scorer: Scorer,
    cands_by_system: Mapping[str, Sequence[str]],
    refs: RefsArg,
    test: str = "paired-bs",
    n_samples: int | None = None,
    seed: int | None = DEFAULT_SEED,
    confidence: float = 0.95,
    batch_size: int | None = None,
    sources: Sequence[str] | None = None,
    length_cutoffs: Sequence[int] | None = None,
    score_cutoffs: Sequence[float] | None = None,
    chunk_pairs: int | None = None,
) -> Report:
    """Score and align every system and compute what the report shows.

    Parameters are those of :func:`~rust_bertscore.analyses.compare.compare_systems`; the
    systems table is the one it gives (same scores, same test, same seed). Besides:

    sources : list of str, optional
        Each segment's source text (shown with the segment).
    length_cutoffs : list of int, optional
        Ascending thresholds of the reference-length buckets, as compare-mt's
        ``bucket_cutoffs`` (``[10, 20]``: 0-9, 10-19, 20+ tokens); default
        :data:`LENGTH_CUTOFFS`.
    score_cutoffs : list of float, optional
        Ascending thresholds of the buckets by the baseline's F (``[0.8, 0.9]``: <0.8,
        0.8-0.9, >=0.9); default: its quintiles.
    chunk_pairs : int, optional
        Align about this many pairs of a system at a time (rounded up to whole batches);
        default: as many as hold about ``scorer.round_bytes`` of token vectors. Memory only:
        the figures do not depend on it.

    Examples
    --------
    >>> from rust_bertscore import BERTScorer
    >>> from rust_bertscore.analyses.report import build_report
    >>> refs = ["the cat sat", "it rains", "a dog ran"]
    >>> systems = {"a": refs, "b": ["a cat", "sun", "dogs"]}
    >>> rep = build_report(BERTScorer(), systems, refs, n_samples=50)
    >>> [row.label for row in rep.length_buckets], len(rep.f_buckets) <= 5
    (['0-10'], True)
    >>> rep = build_report(BERTScorer(), systems, refs, n_samples=50, length_cutoffs=[3])
    >>> [(row.label, row.n) for row in rep.length_buckets]
    [('0-2', 1), ('3+', 2)]
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
    source_list = _check_sources(sources, n)
    cutoffs: tuple[int, ...] = (
        LENGTH_CUTOFFS
        if length_cutoffs is None
        else tuple(int(c) for c in check_cutoffs(length_cutoffs, "length_cutoffs", integer=True))
    )
    score_cuts = None if score_cutoffs is None else check_cutoffs(score_cutoffs, "score_cutoffs")
    if chunk_pairs is not None and (
        isinstance(chunk_pairs, bool) or not isinstance(chunk_pairs, int) or chunk_pairs < 1
    ):
        raise InputValueError(f"chunk_pairs must be an int >= 1, got {chunk_pairs!r}")
    systems: dict[str, list[str]] = {}
    for name, cands in cands_by_system.items():
        if isinstance(cands, str) or len(cands) != n:
            got = "a string" if isinstance(cands, str) else f"{len(cands)} candidates"
            raise InputValueError(
                f"system {name!r} has {got} but there are {n} references: every system "
                "needs one candidate per reference"
            )
        systems[str(name)] = list(cands)
    if len(systems) != len(cands_by_system):
        raise InputValueError("system names must differ as strings (they name the table's rows)")
    ref_list = list(refs)
    single = all(isinstance(r, str) for r in ref_list)
    ref_groups = [[r] if isinstance(r, str) else list(r) for r in ref_list]
    batch = batch_size_or(scorer.batch_size, batch_size)
    parts: dict[str, list[tuple[np.ndarray, np.ndarray, list[Alignment]]]] = {
        k: [] for k in systems
    }
    tokens = scorer.pipeline.tokens
    # Each text tokenised once for all systems and their score() calls; the truncation warning
    # once for the whole report (align_pairs' score() calls would give one per chunk).
    with tokens_memo(scorer), warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message=".*longer than the model's maximum", category=RustBertScoreWarning
        )
        for part in chunks_for(scorer, systems, ref_groups, batch, chunk_pairs):
            chunk_refs = ref_list[part]
            for name, cands in systems.items():
                records = align_pairs(scorer, cands[part], chunk_refs, batch)
                parts[name].append(best_of_references(records, part.start, part.stop - part.start))
        flat_refs = [r for g in ref_groups for r in g]
        ref_tokens = tokens.tokenize(flat_refs)
        cand_cut = {k: tokens.tokenize(c).cut for k, c in systems.items()}
    cut_texts = {flat_refs[i] for i in ref_tokens.cut}
    for name, cut in cand_cut.items():
        cut_texts.update(systems[name][i] for i in cut)
    warn_truncated(len(cut_texts), scorer.tokenizer.max_length)
    owner = np.repeat(np.arange(n), [len(g) for g in ref_groups])
    ref_truncated = np.zeros(n, bool)
    ref_truncated[owner[np.asarray(ref_tokens.cut, np.int64)]] = True
    segments: dict[str, SystemSegments] = {}
    for name, cands in systems.items():
        prf = np.concatenate([p for p, _, _ in parts[name]]) if n else np.zeros((0, 3))
        best = np.concatenate([b for _, b, _ in parts[name]]) if n else np.zeros((0, 3), np.int64)
        kept = [a for _, _, al in parts[name] for a in al]
        truncated = np.zeros(n, bool)
        truncated[np.asarray(cand_cut[name], np.int64)] = True
        if single:
            best[:] = 0
        segments[name] = SystemSegments(
            name, cands, prf[:, 0], prf[:, 1], prf[:, 2], kept, best, truncated
        )
    del parts
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
    tokenizer = scorer.tokenizer
    special = tokenizer.special_ids
    first_refs = tokenizer.encode([g[0] if g else "" for g in ref_groups])
    ref_lengths = np.array([sum(t not in special for t in ids) for ids in first_refs], np.int64)
    f_by_system = {k: s.F for k, s in segments.items()}
    used_seed = table.seed
    length_rows = buckets(
        f_by_system,
        length_bucket(ref_lengths, cutoffs),
        length_labels(cutoffs),
        used_seed,
        confidence=confidence,
    )
    f_of, f_labels = _score_buckets(base.F, score_cuts)
    f_rows = buckets(f_by_system, f_of, f_labels, used_seed, confidence=confidence)
    text_of: dict[int, str] = {}
    for ids in ref_tokens.ids:
        for i in ids:
            if i not in text_of:
                text_of[i] = tokenizer.token_text(int(i))
    frequency = count_tokens(ref_tokens.ids, text_of, special, ref_tokens.keep)
    words: dict[str, list[WordBucket]] = {}
    poor: dict[str, list[tuple[str, int, float]]] = {}
    for k, seg in segments.items():
        tokens_of, cosines = reference_words(seg.alignments, special)
        words[k] = buckets_of_words(tokens_of, cosines, frequency)
        poor[k] = poorest_words(tokens_of, cosines)
    return Report(
        table,
        segments,
        ref_groups,
        ref_lengths,
        wins,
        length_rows,
        f_rows,
        source_list,
        ref_truncated,
        words,
        poor,
    )
