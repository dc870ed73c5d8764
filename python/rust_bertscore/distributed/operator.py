"""``BERTScoreBatch``: the one batch operator both engines run (Ray Data's ``map_batches``,
Spark's ``mapInPandas``), usable on its own with any engine that maps batches of rows."""

from __future__ import annotations

import inspect
import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from ..analyses.corpus import pair_lengths
from ..engine.settings import SCORE_BATCH_SIZE
from ..errors import InputTypeError, InputValueError
from ..scoring.scorer import BERTScorer
from .columns import (
    ERROR_COLUMN,
    Batch,
    DistributedInputError,
    check_on_error,
    checked_rows,
    column,
    column_names,
    good_rows,
    num_rows,
    with_columns,
)
from .passes import flatten, row_index
from .plan import ScorePlan

SCORE_COLUMNS = ("P", "R", "F")
"""Default names of the columns the operator adds."""

_NOT_OPTIONS = {"self", "all_layers", "idf_sents", "batch_size"}
SCORER_OPTIONS = tuple(
    name for name in inspect.signature(BERTScorer.__init__).parameters if name not in _NOT_OPTIONS
)
"""``BERTScorer`` arguments the operator passes through (``batch_size`` is its own argument;
``all_layers`` would give one array per row and is not supported)."""


def check_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The scorer options, or a ``TypeError`` naming an unknown one."""
    unknown = sorted(set(options) - set(SCORER_OPTIONS))
    if unknown:
        hint = " (all_layers is not supported here)" if "all_layers" in unknown else ""
        raise InputTypeError(
            f"unknown BERTScorer option(s) {', '.join(map(repr, unknown))}{hint}; expected some "
            f"of {', '.join(SCORER_OPTIONS)}"
        )
    return dict(options)


class BERTScoreBatch:
    """Map a batch of rows to the same rows plus P, R and F columns.

    The operator is picklable and cheap to ship: its ``BERTScorer`` is built on the worker, on
    the first call, and kept for every later batch that worker maps.

    Parameters
    ----------
    cand_col, ref_col : str
        Candidate column (str cells) and reference column (a str, or a list of str for several
        references: P, R and F are then each the best over the row's references).
    index_col : str, optional
        Column of global row numbers (0..N-1 in input order); needed with ``plan`` when the
        plan has padding floors, and used in error messages.
    plan : ScorePlan, optional
        Corpus-wide statistics from the engines' first pass (``ray_engine.plan_dataset``,
        ``spark_engine.plan_spark``): IDF document frequencies and the padding floor of each
        scoring batch, so that the rows' scores equal one ``score()`` call on the whole dataset.
        Without a plan every batch is scored as one ``score()`` call of its own, and
        ``idf=True`` is refused.
    batch_size : int
        bert_score's scoring batch (pairs; decides the padding floor) and most texts per
        encoder call, as ``score(batch_size=...)``.
    score_cols : (str, str, str)
        Names of the added P, R and F columns.
    num_threads : int, optional
        Threads of the encoder and kernel on the worker (default: ``RUST_BERTSCORE_NUM_THREADS``
        or all cores); give each worker its share of the node's cores.
    on_error : {"raise", "null"}
        A bad row (candidate or reference missing, not a str, or not encodable as UTF-8; an
        empty reference list): ``"raise"`` raises :class:`DistributedInputError` naming it;
        ``"null"`` gives it NaN (null in Arrow and Spark) P, R and F and its message in
        ``error_col``, and scores the other rows as if it were absent. A plan must have been
        made with the same ``on_error``.
    error_col : str
        Column of messages with ``on_error="null"`` (None for good rows); not added otherwise.
    **options
        ``BERTScorer`` arguments: ``model_type``, ``revision``, ``num_layers``, ``idf``,
        ``device``, ``lang``, ``rescale_with_baseline``, ``baseline_path``, ``precision``,
        ``batch_independent``, ``cache_bytes``, ``nthreads``.

    Examples
    --------
    Any engine that maps batches can run it; here a dict of columns:

    >>> from rust_bertscore.distributed import BERTScoreBatch
    >>> op = BERTScoreBatch("hyp", "ref")
    >>> out = op({"hyp": ["the cat sat", "dogs run"], "ref": ["a cat sat", ["dogs ran", "a dog"]]})
    >>> sorted(out), out["F"].dtype, out["F"].shape
    (['F', 'P', 'R', 'hyp', 'ref'], dtype('float32'), (2,))

    Bad rows kept, with null scores and a message:

    >>> op = BERTScoreBatch("hyp", "ref", on_error="null")
    >>> out = op({"hyp": ["the cat sat", None], "ref": ["a cat sat", "dogs ran"]})
    >>> bool(out["F"][0] > 0.5), bool(out["F"][1] != out["F"][1]), out["error"][1][:35]
    (True, True, "row 1: column 'hyp' holds a missing")
    """

    def __init__(
        self,
        cand_col: str,
        ref_col: str,
        *,
        index_col: str | None = None,
        plan: ScorePlan | None = None,
        batch_size: int = SCORE_BATCH_SIZE,
        score_cols: tuple[str, str, str] = SCORE_COLUMNS,
        num_threads: int | None = None,
        on_error: str = "raise",
        error_col: str = ERROR_COLUMN,
        **options: Any,
    ) -> None:
        for name, value in (("cand_col", cand_col), ("ref_col", ref_col)):
            if not isinstance(value, str) or not value:
                raise InputTypeError(
                    f"{name} must be a column name (a non-empty str), got {value!r}"
                )
        if len(score_cols) != 3 or len(set(score_cols)) != 3:
            raise InputValueError(f"score_cols must be three different names, got {score_cols!r}")
        self.on_error = check_on_error(on_error)
        added = (*score_cols, error_col) if on_error == "null" else tuple(score_cols)
        if len(set(added)) != len(added):
            raise InputValueError(f"error_col {error_col!r} is also a score column")
        clash = {cand_col, ref_col, index_col} & set(added)
        if clash:
            raise InputValueError(f"score column {clash.pop()!r} would overwrite an input column")
        self.error_col = error_col
        self.options = check_options(options)
        self.cand_col = cand_col
        self.ref_col = ref_col
        self.index_col = index_col
        self.plan = plan
        self.batch_size = int(batch_size)
        self.score_cols = tuple(score_cols)
        self.num_threads = num_threads
        idf = bool(self.options.get("idf", False))
        if idf and (plan is None or plan.df is None):
            raise InputValueError(
                "idf=True needs document frequencies over the whole dataset: use "
                "score_dataset()/score_spark(), or pass plan= from plan_dataset()/plan_spark()"
            )
        if plan is not None and plan.maxima is not None and index_col is None:
            raise InputValueError(
                "a plan with padding floors needs index_col, the global row numbers"
            )
        if plan is not None and plan.on_error != self.on_error:
            raise InputValueError(
                f"the plan was made with on_error={plan.on_error!r}, not {self.on_error!r}: bad "
                "rows must be left out of both passes or of neither"
            )
        if plan is not None and plan.batch_size != self.batch_size:
            raise InputValueError(
                f"the plan was made for batch_size={plan.batch_size}, not {self.batch_size}"
            )
        self._scorer: BERTScorer | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_scorer"] = None  # built again on the worker
        return state

    @property
    def scorer(self) -> BERTScorer:
        """The worker's scorer (built on first use)."""
        if self._scorer is None:
            if self.num_threads is not None:
                from .. import _core
                from ..stages.encoder import THREADS_ENV

                os.environ[THREADS_ENV] = str(int(self.num_threads))
                _core.set_num_threads(int(self.num_threads))
            scorer = BERTScorer(batch_size=self.batch_size, **self.options)
            if self.plan is not None and self.plan.df is not None:
                scorer.set_idf_dict(self.plan.idf_dict())
            self._scorer = scorer
        return self._scorer

    def close(self) -> None:
        """Release the worker's scorer (:meth:`~rust_bertscore.BERTScorer.close`) if one
        was built; the next batch builds another.

        Examples
        --------
        >>> from rust_bertscore.distributed import BERTScoreBatch
        >>> op = BERTScoreBatch("hyp", "ref")
        >>> _ = op({"hyp": ["the cat sat"], "ref": ["a cat sat"]})
        >>> op.close()
        >>> _ = op({"hyp": ["the cat sat"], "ref": ["a cat sat"]})  # a new scorer
        """
        scorer, self._scorer = self._scorer, None
        if scorer is not None:
            scorer.close()

    def check_columns(self, names: Iterable[str], where: str = "the dataset") -> None:
        """Raise a ``ValueError`` when a column the operator reads is missing."""
        names = list(names)
        missing = [
            f"{role} {name!r}"
            for role, name in (
                ("candidate column", self.cand_col),
                ("reference column", self.ref_col),
                ("index column", self.index_col),
            )
            if name is not None and name not in names
        ]
        if missing:
            raise InputValueError(
                f"{where} has no {' and no '.join(missing)}; its columns are {names}"
            )

    @property
    def added_columns(self) -> tuple[str, ...]:
        """Names of the columns the operator adds (the scores, then the error column)."""
        if self.on_error == "null":
            return (*self.score_cols, self.error_col)
        return tuple(self.score_cols)

    def __call__(self, batch: Batch) -> Batch:
        """The batch with the score columns added (float32; NaN for bad rows with
        ``on_error="null"``, then the error column)."""
        self.check_columns(column_names(batch), "the batch")
        n = num_rows(batch)
        if self.index_col is not None:
            index = row_index(batch, self.index_col)
        else:
            index = np.arange(n, dtype=np.int64)
        cands, groups, errors = checked_rows(
            column(batch, self.cand_col),
            column(batch, self.ref_col),
            self.cand_col,
            self.ref_col,
            index,
            self.on_error,
        )
        good = good_rows(errors, n)
        scores = [np.full(n, np.nan, dtype=np.float32) for _ in range(3)]
        if good.any():
            for out, got in zip(scores, self._score(cands, groups, index[good])):
                out[good] = got
        new = dict(zip(self.score_cols, scores))
        if self.on_error == "null":
            messages = np.empty(n, dtype=object)
            messages[:] = errors
            new[self.error_col] = messages
        return with_columns(batch, new)

    def _score(
        self, cands: list[str], groups: list[list[str]], index: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """P, R, F of good rows ``index`` (global numbers) with these texts."""
        scorer = self.scorer
        flat_cands, flat_refs, counts = flatten(cands, groups)
        floors = None
        if self.plan is not None and self.plan.maxima is not None and not scorer.batch_independent:
            lengths = pair_lengths(scorer.scored_tokens, flat_cands, flat_refs)
            floors = self.plan.floors(index, counts, *lengths)
        refs: list[str] | list[list[str]] = groups if (counts != 1).any() else flat_refs
        try:
            P, R, F = scorer.score(cands, refs, batch_size=self.batch_size, pad_floor=floors)
        except DistributedInputError:
            raise
        except (TypeError, ValueError) as e:
            raise DistributedInputError(
                f"rows {int(index[0])}..{int(index[-1])} could not be scored: {e}"
            ) from e
        return P, R, F

    def map_pandas(self, frames: Iterable[Batch]) -> Iterator[Batch]:
        """Spark's ``mapInPandas`` protocol: an iterator of DataFrames in, one out."""
        for frame in frames:
            yield self(frame)
