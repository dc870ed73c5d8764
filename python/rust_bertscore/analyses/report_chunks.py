"""The report generator's chunks: segments aligned a chunk at a time (so that no more token
vectors are held than a chunk's), and each chunk's alignments reduced to what the report keeps
per segment (see :func:`~rust_bertscore.analyses.report.build_report`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from .align import Alignment

if TYPE_CHECKING:
    from .seams import Scorer

__all__ = ["best_of_references", "chunks_for", "segment_chunks", "shifted"]


def segment_chunks(
    pairs_per_segment: Sequence[int],
    batch: int,
    target: float,
    size_per_segment: Sequence[float] | None = None,
) -> Iterator[slice]:
    """Consecutive slices of segments, each of at least ``target`` in size (a segment's size:
    ``size_per_segment``, else its pairs; the last chunk may be smaller) and ending where the
    pairs so far are a multiple of ``batch``: bert_score's batches of the whole call never
    straddle two chunks (ragged reference groups may make a chunk longer).

    >>> from rust_bertscore.analyses.report_chunks import segment_chunks
    >>> list(segment_chunks([1] * 10, batch=2, target=4))
    [slice(0, 4, None), slice(4, 8, None), slice(8, 10, None)]
    >>> list(segment_chunks([3, 3, 3, 3], batch=2, target=2))
    [slice(0, 2, None), slice(2, 4, None)]
    >>> list(segment_chunks([1] * 4, batch=1, target=50, size_per_segment=[40, 20, 60, 5]))
    [slice(0, 2, None), slice(2, 3, None), slice(3, 4, None)]
    """
    sizes = pairs_per_segment if size_per_segment is None else size_per_segment
    start, size, total = 0, 0.0, 0
    for i, (k, w) in enumerate(zip(pairs_per_segment, sizes)):
        size += w
        total += k
        if size >= target and total % batch == 0:
            yield slice(start, i + 1)
            start, size = i + 1, 0.0
    if start < len(pairs_per_segment):
        yield slice(start, len(pairs_per_segment))


def best_of_references(
    records: list[Alignment], offset: int, n: int
) -> tuple[np.ndarray, np.ndarray, list[Alignment]]:
    """Per segment of a chunk (``n`` segments, the first numbered ``offset`` in the whole
    call): P, R and F maxed over its references (NaN if any is NaN, as ``score()``), shape
    (n, 3); the index of the reference that gave each, shape (n, 3); and the alignment of
    highest F (the first of them), numbered in the whole call.

    >>> from rust_bertscore import BERTScorer
    >>> from rust_bertscore.analyses.align import align_pairs
    >>> from rust_bertscore.analyses.report_chunks import best_of_references
    >>> records = align_pairs(BERTScorer(), ["the cat sat"], [["dogs run", "a cat sat"]])
    >>> prf, best, kept = best_of_references(records, offset=5, n=1)
    >>> best.tolist(), kept[0].index, kept[0].ref_index
    ([[1, 1, 1]], 5, 1)
    """
    prf = np.full((n, 3), -np.inf)
    nan = np.zeros((n, 3), bool)
    best = np.zeros((n, 3), np.int64)
    kept: list[Alignment | None] = [None] * n
    for r in records:
        i = r.index
        values = (r.P, r.R, r.F)
        for m, v in enumerate(values):
            if np.isnan(v):
                nan[i, m] = True
            elif v > prf[i, m]:
                prf[i, m] = v
                best[i, m] = r.ref_index or 0
        b = kept[i]
        if b is None or (r.F > b.F) or (np.isnan(b.F) and not np.isnan(r.F)):
            kept[i] = r
    prf[nan] = np.nan
    out = []
    for k in kept:
        assert k is not None
        out.append(k if offset == 0 else shifted(k, offset))
    return prf, best, out


def shifted(r: Alignment, offset: int) -> Alignment:
    """The record with ``offset`` added to its index (chunks number their segments from 0).

    >>> from rust_bertscore import BERTScorer
    >>> from rust_bertscore.analyses.report_chunks import shifted
    >>> shifted(BERTScorer().align("a cat", "the cat"), 7).index
    7
    """
    return Alignment(
        r.candidate, r.reference, r.P, r.R, r.F, r.index + offset, r.ref_index, r.rescaled, r.hash
    )


def chunks_for(
    scorer: Scorer,
    systems: Mapping[str, list[str]],
    ref_groups: list[list[str]],
    batch: int,
    chunk_pairs: int | None,
) -> list[slice]:
    """The segment chunks of :func:`~rust_bertscore.analyses.report.build_report`:
    ``chunk_pairs`` pairs each, else as many as take about ``scorer.round_bytes`` of token
    vectors, and at most half the scorer's cache (a segment's: its references' and the longest
    of its candidates'; call it within :func:`~rust_bertscore.analyses.align.tokens_memo` to
    tokenise once for the report).

    >>> from rust_bertscore import BERTScorer
    >>> from rust_bertscore.analyses.report_chunks import chunks_for
    >>> refs = [["the cat sat"], ["it rains"], ["a dog ran"]]
    >>> chunks_for(BERTScorer(), {"a": ["a cat", "sun", "dogs"]}, refs, 1, chunk_pairs=2)
    [slice(0, 2, None), slice(2, 3, None)]
    >>> chunks_for(BERTScorer(), {"a": ["a cat", "sun", "dogs"]}, refs, 1, chunk_pairs=None)
    [slice(0, 3, None)]
    """
    pairs = [len(g) for g in ref_groups]
    if chunk_pairs is not None:
        return list(segment_chunks(pairs, batch, chunk_pairs))
    tokens = scorer.pipeline.tokens

    def lengths(texts: list[str]) -> np.ndarray:
        ids = tokens.tokenize(texts).ids
        return np.fromiter((len(t) for t in ids), np.int64, len(ids))

    ref_rows = lengths([r for g in ref_groups for r in g])
    starts = np.cumsum([0, *pairs[:-1]])
    rows = np.add.reduceat(ref_rows, starts) if pairs else ref_rows
    rows = rows + np.max([lengths(c) for c in systems.values()], axis=0)
    hidden = scorer.pipeline.runtime.encoder.hidden_size or 1024
    # the chunk's vectors must stay in the cache for align_pairs' score() call to find them
    cache = scorer.pipeline.cache.max_bytes
    held = min(scorer.round_bytes, cache // 2) if cache > 0 else scorer.round_bytes
    budget = max(1, held // (4 * hidden))
    return list(segment_chunks(pairs, batch, budget, rows.tolist()))
