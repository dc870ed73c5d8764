"""The engine-independent first pass: what every worker needs to know about the whole dataset so
that scoring it in pieces gives the numbers of one ``score()`` call on all its rows.

Two things in bert_score depend on more than a pair itself:

* IDF weights count document frequencies over every reference of the call;
* the padding floor: bert_score scores the pairs (flattened over reference lists) in consecutive
  batches of ``batch_size`` and a side is floored when it is shorter than the longest text on
  that side of its batch.

The engines run this in two cheap passes (tokenizer only, no encoder) over the dataset's rows,
each row carrying its global index (its position in the input):

1. :func:`count_pairs` per engine batch -> :meth:`PlanBuilder.add_counts`: each row's number of
   references, giving every row's flattened pair offset (a prefix sum in row order). Skipped
   when the reference column holds plain strings (one pair per row).
2. :func:`batch_statistics` per engine batch -> :meth:`PlanBuilder.add_statistics`: the longest
   candidate and reference of every scoring batch (batch id = flattened index // batch_size) met
   in the engine batch, and the document frequencies of its references; the builder takes the
   maximum / sum over engine batches (a map-side partial aggregation, combined on the driver).

The resulting :class:`ScorePlan` is small (a few integers per row and per scoring batch, and one
count per token id) and goes to every scoring worker with the batch operator.

The per-batch work of both passes (run on the workers) is in :mod:`.passes`; this module holds
the driver side (:class:`PlanBuilder`, :func:`first_pass`) and what the engines share
(:func:`indexing`).
"""

from __future__ import annotations

import functools
import pickle
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..analyses.corpus import BatchMaxima, idf_dict
from ..errors import InputValueError
from ..stages.options import ScoringOptions
from .columns import Batch, DistributedInputError
from .passes import (
    batch_statistics,
    count_pairs,
    flatten,
    load_tokenizer,
    pair_positions,
    row_index,
    statistics_part,
)

# The per-batch functions of the passes live in passes.py; they stay importable from here.
__all__ = [
    "ROW_INDEX",
    "Indexing",
    "PlanBuilder",
    "ScorePlan",
    "batch_statistics",
    "count_pairs",
    "first_pass",
    "flatten",
    "indexing",
    "load_tokenizer",
    "pair_positions",
    "row_index",
    "statistics_part",
]


@dataclass(frozen=True)
class ScorePlan:
    """What scoring workers need about the whole dataset (see the module docstring).

    Attributes
    ----------
    num_rows : int
        Rows of the dataset.
    batch_size : int
        bert_score's scoring batch (pairs), which decides the padding floor.
    pair_offsets : np.ndarray or None
        ``pair_offsets[i]``: flattened index of row ``i``'s first pair (length ``num_rows + 1``);
        None when every row has one reference (the offset is the row index).
    maxima : BatchMaxima or None
        Longest candidate and reference of every scoring batch; None without the floor
        (``batch_independent=True``).
    df : np.ndarray or None
        Document frequency of every token id over all references; None without IDF.
    num_refs : int
        References counted for IDF (the ``M`` of ``ln((M+1)/(df+1))``).
    on_error : {"raise", "null"}
        ``"null"``: bad rows were left out (no pairs, no references counted).

    Examples
    --------
    A plan comes from the engines' first pass (:func:`plan_dataset`, :func:`plan_spark`); by hand,
    one without floors or IDF:

    >>> from rust_bertscore.distributed import ScorePlan
    >>> plan = ScorePlan(num_rows=3, batch_size=64)
    >>> plan.num_pairs, plan.floors(None, None, None, None) is None
    (3, True)
    """

    num_rows: int
    batch_size: int
    pair_offsets: np.ndarray | None = None
    maxima: BatchMaxima | None = None
    df: np.ndarray | None = None
    num_refs: int = 0
    on_error: str = "raise"

    @property
    def num_pairs(self) -> int:
        """Pairs after flattening reference lists."""
        return self.num_rows if self.pair_offsets is None else int(self.pair_offsets[-1])

    def idf_dict(self) -> defaultdict[int, float]:
        """bert_score's idf dict over the dataset's references (unseen ids: ``ln(M+1)``)."""
        if self.df is None:
            raise InputValueError(
                "this plan was made without idf=True: it has no document frequencies"
            )
        return idf_dict(self.df, self.num_refs)

    def floors(
        self,
        index: np.ndarray,
        counts: np.ndarray,
        cand_lengths: np.ndarray,
        ref_lengths: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """Padding-floor flags (precision side, recall side) of the flattened pairs of rows
        ``index`` (in batch order) with ``counts`` pairs each; None without the floor."""
        if self.maxima is None:
            return None
        if len(index) and (int(index.min()) < 0 or int(index.max()) >= self.num_rows):
            bad = int(index.max()) if int(index.max()) >= self.num_rows else int(index.min())
            raise DistributedInputError(
                f"row index {bad} is outside the planned dataset's {self.num_rows} rows"
            )
        positions = pair_positions(self.pair_offsets, index, counts)
        return self.maxima.floors_at(positions, cand_lengths, ref_lengths)


class PlanBuilder:
    """Combines the per-batch results of the two passes into a :class:`ScorePlan`."""

    def __init__(
        self, num_rows: int, batch_size: int, *, floors: bool, idf: bool, on_error: str = "raise"
    ) -> None:
        self.on_error = on_error
        self.num_rows = num_rows
        self.batch_size = batch_size
        self.use_floors = floors
        self.use_idf = idf
        self.pair_offsets: np.ndarray | None = None
        self._counts: np.ndarray | None = None
        self._seen: np.ndarray | None = None
        self._cand_max: np.ndarray | None = None
        self._ref_max: np.ndarray | None = None
        self._df = np.zeros(0, dtype=np.int64)
        self._refs = 0
        self._rows = 0

    # -- pass 1 ------------------------------------------------------------------------------
    def add_counts(self, part: bytes) -> None:
        """Take one :func:`count_pairs` result."""
        index, counts = pickle.loads(part)
        if self._counts is None:
            self._counts = np.zeros(self.num_rows, dtype=np.int64)
            self._seen = np.zeros(self.num_rows, dtype=bool)
        assert self._seen is not None
        _check_index(index, self.num_rows)
        if self._seen[index].any() or len(np.unique(index)) != len(index):
            dup = int(index[self._seen[index]][0]) if self._seen[index].any() else int(index[0])
            raise DistributedInputError(
                f"row index {dup} appears twice: the index column must number the rows 0..N-1"
            )
        self._seen[index] = True
        self._counts[index] = counts

    def finish_counts(self) -> np.ndarray:
        """Every row's flattened pair offset, once all rows were counted."""
        if self._counts is None:
            self._counts = np.zeros(0, dtype=np.int64)
            self._seen = np.zeros(0, dtype=bool)
        assert self._seen is not None
        if not self._seen.all():
            missing = int(np.flatnonzero(~self._seen)[0])
            raise DistributedInputError(
                f"row index {missing} never appeared: the index column must number the rows 0..N-1"
            )
        self.pair_offsets = np.concatenate([[0], np.cumsum(self._counts)]).astype(np.int64)
        self._counts = self._seen = None
        return self.pair_offsets

    # -- pass 2 ------------------------------------------------------------------------------
    @property
    def num_pairs(self) -> int:
        return self.num_rows if self.pair_offsets is None else int(self.pair_offsets[-1])

    def add_statistics(self, part: bytes) -> None:
        """Take one :func:`batch_statistics` result."""
        stats = pickle.loads(part)
        self._rows += int(stats["rows"])
        if "floors" in stats:
            if self._cand_max is None:
                batches = -(-self.num_pairs // self.batch_size)
                self._cand_max = np.zeros(batches, dtype=np.int64)
                self._ref_max = np.zeros(batches, dtype=np.int64)
            assert self._ref_max is not None
            ids, cand_max, ref_max = stats["floors"]
            if len(ids) and int(ids.max()) >= len(self._cand_max):
                raise DistributedInputError(
                    "a row's pairs fall past the dataset's counted pairs: the dataset changed "
                    "between passes, or its index column does not number its rows 0..N-1"
                )
            np.maximum.at(self._cand_max, ids, cand_max)
            np.maximum.at(self._ref_max, ids, ref_max)
        if "idf" in stats:
            tokens, counts, m = stats["idf"]
            top = int(tokens.max()) + 1 if len(tokens) else 0
            if top > len(self._df):
                self._df = np.concatenate([self._df, np.zeros(top - len(self._df), np.int64)])
            self._df[tokens] += counts
            self._refs += int(m)

    def build(self) -> ScorePlan:
        """The plan; checks that pass 2 saw every row once."""
        if (self.use_floors or self.use_idf) and self._rows != self.num_rows:
            raise DistributedInputError(
                f"the first pass saw {self._rows} rows but the dataset has {self.num_rows}: the "
                "dataset changed between passes"
            )
        maxima = None
        if self.use_floors:
            batches = -(-self.num_pairs // self.batch_size)
            cand = self._cand_max if self._cand_max is not None else np.zeros(batches, np.int64)
            ref = self._ref_max if self._ref_max is not None else np.zeros(batches, np.int64)
            maxima = BatchMaxima.from_arrays(self.batch_size, cand, ref)
        return ScorePlan(
            num_rows=self.num_rows,
            batch_size=self.batch_size,
            pair_offsets=self.pair_offsets,
            maxima=maxima,
            df=self._df if self.use_idf else None,
            num_refs=self._refs,
            on_error=self.on_error,
        )


def _check_index(index: np.ndarray, n: int) -> None:
    if len(index) and (int(index.min()) < 0 or int(index.max()) >= n):
        bad = int(index.min()) if int(index.min()) < 0 else int(index.max())
        raise DistributedInputError(
            f"row index {bad} is outside 0..{n - 1}: the index column must number the rows 0..N-1"
        )


# -- what the engines share ------------------------------------------------------------------------

ROW_INDEX = "__rust_bertscore_row__"
"""Name of the row-number column added when the caller gives none (dropped from the result)."""


@dataclass(frozen=True)
class Indexing:
    """What scoring a dataset with some ``score()`` options needs before the scoring pass.

    Attributes
    ----------
    idf, floors : bool
        IDF over every reference; bert_score's padding floor (no ``batch_independent``).
    index_col : str or None
        The row-number column (:data:`ROW_INDEX` when the plan needs one and none was given).
    drop_index : bool
        Whether ``index_col`` is added here only, to drop from the result.
    number_rows : bool
        Whether the engine must number the rows (``index_col`` is not a column of the input).
    """

    idf: bool
    floors: bool
    index_col: str | None
    drop_index: bool
    number_rows: bool

    @property
    def needs_plan(self) -> bool:
        """Whether the first pass (a :class:`ScorePlan`) is needed."""
        return self.idf or self.floors


def indexing(options: Mapping[str, Any], index_col: str | None, columns: Sequence[str]) -> Indexing:
    """The :class:`Indexing` of checked ``score()`` ``options`` over a dataset's ``columns``."""
    idf = bool(options.get("idf", False))
    floors = not bool(options.get("batch_independent", False))
    drop_index = False
    if (idf or floors) and index_col is None:
        index_col, drop_index = ROW_INDEX, True
    # Rows numbered by the engine: needed by the plan, or asked for to sort the result.
    number_rows = index_col is not None and index_col not in columns
    return Indexing(idf, floors, index_col, drop_index, number_rows)


def first_pass(
    map_parts: Callable[[Callable[[Batch], bytes]], Iterable[bytes]],
    list_refs: Callable[[], bool],
    cand_col: str,
    ref_col: str,
    index_col: str,
    *,
    num_rows: int,
    batch_size: int,
    floors: bool,
    idf: bool,
    model_type: str | None,
    lang: str | None,
    options: ScoringOptions | None = None,
    on_error: str = "raise",
    revision: str | None = None,
) -> ScorePlan:
    """Both passes of the plan over a dataset of ``num_rows`` rows.

    ``map_parts(fn)`` runs ``fn`` on every engine batch (on the workers) and yields the results
    on the driver; ``list_refs()`` says whether the reference column holds lists (asked only
    when ``floors``: plain strings need no pair count). With ``on_error="null"`` bad rows are
    left out of the plan (no pairs: the pair count runs even for plain strings; no references
    counted for IDF), so the good rows get the numbers of one ``score()`` call on them alone.
    """
    builder = PlanBuilder(num_rows, batch_size, floors=floors, idf=idf, on_error=on_error)
    if floors and (on_error == "null" or list_refs()):
        counts_of = functools.partial(
            count_pairs, ref_col=ref_col, index_col=index_col, cand_col=cand_col, on_error=on_error
        )
        for part in map_parts(counts_of):
            builder.add_counts(part)
        builder.finish_counts()
    if floors or idf:
        stats_of = functools.partial(
            statistics_part,
            cand_col=cand_col,
            ref_col=ref_col,
            index_col=index_col,
            model_type=model_type,
            lang=lang,
            pair_offsets=builder.pair_offsets,
            batch_size=batch_size,
            floors=floors,
            idf=idf,
            options=options,
            on_error=on_error,
            revision=revision,
        )
        for part in map_parts(stats_of):
            builder.add_statistics(part)
    return builder.build()
