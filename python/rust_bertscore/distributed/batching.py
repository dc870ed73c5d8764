"""Rows per engine batch and partitions from the scorer's token budget, not a fixed row count.

Every engine batch is one ``score()`` call on a worker: it pays a fixed cost (the batch's
conversion to and from Python lists, its tokenization, its padding-floor lookup) and, when it is
small, more padding, since the encoder sorts texts by length only within the batch. A batch of
32 WMT rows spends a noticeable share of its time on that; one that fills the token budget of an
in-process scoring round (:data:`TOKENS_PER_BATCH`) does not. So :func:`batching` takes the
rows' mean length and gives the rows per batch that fill the budget, no more than a round of
pairs (``engine.settings.PAIRS_PER_CHUNK``: a worker's memory stays bounded), and no more than an
even share of the rows (every worker gets work); partitions are a few batches each, a multiple
of the workers, at least two per worker (a slow partition does not hold the job alone).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..engine.settings import PAIRS_PER_CHUNK
from ..errors import InputValueError

TOKENS_PER_BATCH = 65_536
"""Token budget of one engine batch (candidates and references together)."""

MIN_ROWS_PER_BATCH = 64
"""Fewest rows per batch (unless the dataset has fewer)."""

BATCHES_PER_PARTITION = 4
"""Engine batches per partition (Spark task, Ray block group) once the rows allow it."""

TOKENS_PER_WORD = 1.3
"""Subword tokens per whitespace word: the estimate for English WordPiece/BPE text."""

SAMPLE = 1000
"""Texts read to estimate the mean length."""


@dataclass(frozen=True)
class Batching:
    """Rows per engine batch and partitions for a dataset.

    Attributes
    ----------
    rows_per_batch : int
        For ``score_dataset(rows_per_batch=...)`` and Spark's
        ``spark.sql.execution.arrow.maxRecordsPerBatch``.
    partitions : int
        For ``ds.repartition(...)`` / ``df.repartition(...)``.
    tokens_per_row : float
        The estimate they come from (candidate and reference).

    Examples
    --------
    >>> from rust_bertscore.distributed import Batching
    >>> Batching(rows_per_batch=885, partitions=12, tokens_per_row=74.0).partitions
    12
    """

    rows_per_batch: int
    partitions: int
    tokens_per_row: float


def tokens_per_row(cands: Sequence[str], refs: Sequence[str] | None = None) -> float:
    """Estimated tokens of a row (candidate and reference, with their special tokens) from a
    sample of the texts; the reference is taken as long as the candidate when not given.

    Examples
    --------
    >>> from rust_bertscore.distributed.batching import tokens_per_row
    >>> round(tokens_per_row(["a b c d e f g h i j"]), 1)
    30.0
    """

    def mean_tokens(texts: Sequence[str]) -> float:
        step = max(1, len(texts) // SAMPLE)
        sample = [t for t in texts[::step] if isinstance(t, str)]
        if not sample:
            return 2.0
        return 2.0 + TOKENS_PER_WORD * sum(len(t.split()) for t in sample) / len(sample)

    cand = mean_tokens(cands)
    return cand + (cand if refs is None else mean_tokens(refs))


def batching(
    cands: Sequence[str],
    workers: int,
    *,
    refs: Sequence[str] | None = None,
    num_rows: int | None = None,
    token_budget: int = TOKENS_PER_BATCH,
) -> Batching:
    """Rows per batch and partitions for ``workers`` scoring workers (actors, executor cores).

    Parameters
    ----------
    cands : sequence of str
        The candidates, or a sample of them (then give ``num_rows``).
    workers : int
        Scoring workers working at once.
    refs : sequence of str, optional
        The references (or a sample); by default as long as the candidates.
    num_rows : int, optional
        Rows of the dataset (default ``len(cands)``).
    token_budget : int
        Tokens per engine batch.

    Returns
    -------
    Batching

    Examples
    --------
    >>> from rust_bertscore.distributed import batching
    >>> cands = ["a sentence of about twelve words, as a WMT line has them"] * 30_000
    >>> batching(cands, 2)
    Batching(rows_per_batch=1861, partitions=6, tokens_per_row=35.2)
    >>> batching(cands[:3000], 2).rows_per_batch  # an even share: every worker gets work
    750
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InputValueError(f"workers must be a positive int, got {workers!r}")
    if isinstance(token_budget, bool) or not isinstance(token_budget, int) or token_budget < 1:
        raise InputValueError(f"token_budget must be a positive int, got {token_budget!r}")
    n = len(cands) if num_rows is None else int(num_rows)
    if n < 0:
        raise InputValueError(f"num_rows must be >= 0, got {num_rows!r}")
    per_row = tokens_per_row(cands, refs)
    rows = min(PAIRS_PER_CHUNK, max(MIN_ROWS_PER_BATCH, int(token_budget / per_row)))
    rows = max(1, min(rows, -(-n // (2 * workers))))
    partitions = max(2 * workers, -(-n // (rows * BATCHES_PER_PARTITION)))
    partitions = -(-partitions // workers) * workers
    return Batching(rows, partitions, round(per_row, 2))
