"""Streaming with bert_score's scoring batches kept whole.

bert_score scores the (flattened) pairs of one call in consecutive batches of ``batch_size`` and
its padding floor depends on the longest text of each batch. The command line scores its input
in chunks; for the numbers to equal one ``score()`` call on the whole input, every chunk must
start on a batch boundary. Where every candidate has the same number of references, chunk sizes
are rounded so that they do; otherwise (JSONL with reference lists of different lengths) a first
pass records each batch's longest candidate and reference, and each chunk is scored with the
floor flags those give.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from ..analyses.corpus import BatchMaxima, pair_lengths
from ..engine.settings import Scores
from ..scoring.scorer import BERTScorer
from .chunks import Chunk, Source


def aligned_chunk_size(size: int, group_size: int, batch_size: int) -> int:
    """The smallest number of candidates >= ``size`` whose ``group_size`` references each make
    a whole number of scoring batches of ``batch_size`` pairs."""
    step = batch_size // math.gcd(batch_size, group_size)
    return max(1, -(-size // step)) * step


def flattened(chunk: Chunk) -> tuple[list[str], list[str]]:
    """The chunk's (candidate, reference) pairs as bert_score flattens them."""
    if chunk.refs and not isinstance(chunk.refs[0], str):
        cands = [c for c, group in zip(chunk.cands, chunk.refs) for _ in group]
        refs = [r for group in chunk.refs for r in group]
        return cands, refs
    return list(chunk.cands), [str(r) for r in chunk.refs]


def scored_chunks(
    scorer: BERTScorer,
    source: Source,
    chunk_size: int,
    batch_size: int,
) -> Iterator[Scores]:
    """P, R, F of each chunk of ``source``, equal to one ``scorer.score()`` call on the whole
    input with ``batch_size`` (bert_score's padding floor included unless the scorer is
    batch-independent)."""
    group = source.group_size
    if scorer.batch_independent or group is not None:
        size = chunk_size if group is None else aligned_chunk_size(chunk_size, group, batch_size)
        for chunk in source.chunks(size):
            yield scorer.score(chunk.cands, chunk.refs, batch_size=batch_size)  # type: ignore[misc]
        return
    maxima = BatchMaxima(batch_size)
    for chunk in source.chunks(chunk_size):
        maxima.add(*pair_lengths(scorer.scored_tokens, *flattened(chunk)))
    start = 0
    for chunk in source.chunks(chunk_size):
        cand_lengths, ref_lengths = pair_lengths(scorer.scored_tokens, *flattened(chunk))
        floors = maxima.floors(start, cand_lengths, ref_lengths)
        start += len(cand_lengths)
        yield scorer.score(  # type: ignore[misc]
            chunk.cands, chunk.refs, batch_size=batch_size, pad_floor=floors
        )


def scored_chunks_keeping_bad_lines(
    scorer: BERTScorer, source: Source, chunk_size: int, batch_size: int
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, list[str | None]]]:
    """``--on-error null``: P, R, F (NaN on bad lines) and every line's problem (None when
    good) of each chunk. The good lines get the numbers of one ``scorer.score()`` call on them
    alone: bad lines are left out of the padding floor's batches (a first pass over the good
    lines) and of IDF (the caller's document frequencies count good lines only)."""
    maxima = None
    if not scorer.batch_independent:
        maxima = BatchMaxima(batch_size)
        for chunk in source.chunks(chunk_size):
            good = chunk.good()
            if good.cands:
                maxima.add(*pair_lengths(scorer.scored_tokens, *flattened(good)))
    start = 0
    for chunk in source.chunks(chunk_size):
        good = chunk.good()
        errors = chunk.errors or [None] * len(chunk.cands)
        keep = np.fromiter((e is None for e in errors), bool, len(errors))
        scores = [np.full(len(errors), np.nan, dtype=np.float32) for _ in range(3)]
        if good.cands:
            floors = None
            if maxima is not None:
                cand_lengths, ref_lengths = pair_lengths(scorer.scored_tokens, *flattened(good))
                floors = maxima.floors(start, cand_lengths, ref_lengths)
                start += len(cand_lengths)
            got = scorer.score(good.cands, good.refs, batch_size=batch_size, pad_floor=floors)  # type: ignore[misc]
            for out, values in zip(scores, got):
                out[keep] = values
        yield scores[0], scores[1], scores[2], errors
