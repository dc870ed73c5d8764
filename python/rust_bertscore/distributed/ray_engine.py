"""Ray Data glue: number rows, run the first pass, score with an actor pool.

Ray is imported inside the functions, so ``rust_bertscore.distributed`` imports without it.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from ..engine.settings import SCORE_BATCH_SIZE
from ..errors import InputValueError
from ..stages.options import ScoringOptions
from .columns import ERROR_COLUMN, Batch, check_input_columns, check_on_error, column
from .operator import SCORE_COLUMNS, BERTScoreBatch, check_options
from .plan import ROW_INDEX, ScorePlan, first_pass, indexing
from .summary import Summary, partial_sums

if TYPE_CHECKING:
    import ray.data

ROWS_PER_BATCH = 256
"""Rows per engine batch: per-worker memory is about this many rows' texts and token vectors."""


def _require_ray() -> Any:
    try:
        import ray
        import ray.data
    except ImportError:  # pragma: no cover - exercised only without ray
        raise ImportError(
            "rust_bertscore.distributed's Ray engine needs Ray Data: pip install "
            "'rust-bertscore[ray]' (or 'ray[data]')"
        ) from None
    return ray


@contextlib.contextmanager
def _ordered(ds: ray.data.Dataset) -> Iterator[None]:
    """Execute ``ds`` with its input order preserved (restored afterwards)."""
    options = ds.context.execution_options
    old = options.preserve_order
    options.preserve_order = True
    try:
        yield
    finally:
        options.preserve_order = old


def number_rows(
    ds: ray.data.Dataset, name: str = ROW_INDEX, rows_per_block: int = ROWS_PER_BATCH
) -> tuple[ray.data.Dataset, int]:
    """``ds`` with a column ``name`` of row numbers 0..N-1 in input order, and N.

    The dataset is materialised once (in Ray's object store, which spills to disk) in input
    order, then each block gets its rows' numbers from the counts of the blocks before it, and
    is cut into blocks of at most ``rows_per_block`` rows so that every actor gets work.

    Examples
    --------
    Needs a Ray runtime (``pip install "rust-bertscore[ray]"``):

    >>> import ray.data                                              # doctest: +SKIP
    >>> items = [{"hyp": "a"}, {"hyp": "b"}]                         # doctest: +SKIP
    >>> ds, n = number_rows(ray.data.from_items(items), "row")       # doctest: +SKIP
    >>> n, ds.take(2)[1]["row"]                                      # doctest: +SKIP
    (2, 1)
    """
    ray = _require_ray()

    @ray.remote
    def _rows(block: Any) -> int:
        return int(block.num_rows)

    @ray.remote
    def _number(block: Any, start: int, pieces: int) -> Any:
        import pyarrow as pa

        numbers = np.arange(start, start + block.num_rows, dtype=np.int64)
        block = block.append_column(name, pa.array(numbers))
        bounds = np.linspace(0, block.num_rows, pieces + 1).astype(np.int64)
        parts = [block.slice(lo, hi - lo) for lo, hi in itertools.pairwise(bounds)]
        return parts[0] if pieces == 1 else tuple(parts)

    with _ordered(ds):
        refs = ds.materialize().to_arrow_refs()
    counts = ray.get([_rows.remote(r) for r in refs])
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    numbered: list[Any] = []
    for ref, start, count in zip(refs, starts[:-1].tolist(), counts):
        pieces = max(1, -(-count // max(1, rows_per_block)))
        out = _number.options(num_returns=pieces).remote(ref, start, pieces)
        numbered.extend([out] if pieces == 1 else out)
    return ray.data.from_arrow_refs(numbered), int(starts[-1])


def _is_list_column(ds: ray.data.Dataset, name: str) -> bool:
    """Whether ``name`` holds lists (several references a row); True when unknown."""
    schema = ds.schema()
    if schema is None:
        return True
    try:
        import pyarrow as pa

        kind = dict(zip(schema.names, schema.types))[name]
        if isinstance(kind, pa.DataType):
            return not (pa.types.is_string(kind) or pa.types.is_large_string(kind))
    except (ImportError, KeyError, AttributeError, TypeError):
        pass
    return True


def _parts(parts: ray.data.Dataset) -> Iterator[bytes]:
    for batch in parts.iter_batches(batch_format="numpy", batch_size=None):
        yield from batch["part"]


def plan_dataset(
    ds: ray.data.Dataset,
    cand_col: str,
    ref_col: str,
    index_col: str,
    *,
    num_rows: int | None = None,
    batch_size: int = SCORE_BATCH_SIZE,
    floors: bool = True,
    idf: bool = False,
    model_type: str | None = None,
    lang: str | None = None,
    options: ScoringOptions | None = None,
    rows_per_batch: int = ROWS_PER_BATCH,
    on_error: str = "raise",
    revision: str | None = None,
) -> ScorePlan:
    """The first pass over ``ds`` (tokenizer only, as Ray tasks): see
    :mod:`rust_bertscore.distributed.plan`. ``index_col`` must number the rows 0..N-1.

    Examples
    --------
    Needs a Ray runtime (``pip install "rust-bertscore[ray]"``):

    >>> from rust_bertscore.distributed import number_rows, plan_dataset  # doctest: +SKIP
    >>> ds, n = number_rows(ray.data.from_items(rows), "row")             # doctest: +SKIP
    >>> plan = plan_dataset(ds, "hyp", "ref", "row", idf=True)            # doctest: +SKIP
    >>> plan.num_rows == n                                                # doctest: +SKIP
    True
    """

    def map_parts(fn: Callable[[Batch], bytes]) -> Iterator[bytes]:
        def part_of(batch: Batch) -> dict[str, np.ndarray]:
            return {"part": np.array([fn(batch)], dtype=object)}

        return _parts(ds.map_batches(part_of, batch_format="pyarrow", batch_size=rows_per_batch))

    return first_pass(
        map_parts,
        lambda: _is_list_column(ds, ref_col),
        cand_col,
        ref_col,
        index_col,
        num_rows=ds.count() if num_rows is None else num_rows,
        batch_size=batch_size,
        floors=floors,
        idf=idf,
        model_type=model_type,
        lang=lang,
        options=options,
        on_error=check_on_error(on_error),
        revision=revision,
    )


def score_dataset(
    ds: ray.data.Dataset,
    cand_col: str,
    ref_col: str,
    *,
    index_col: str | None = None,
    concurrency: int | tuple[int, int] = 1,
    num_cpus: float = 1,
    num_gpus: float = 0,
    rows_per_batch: int = ROWS_PER_BATCH,
    batch_size: int = SCORE_BATCH_SIZE,
    score_cols: tuple[str, str, str] = SCORE_COLUMNS,
    on_error: str = "raise",
    error_col: str = ERROR_COLUMN,
    **options: Any,
) -> ray.data.Dataset:
    """BERTScore of every row of a Ray Dataset: the rows with ``P``, ``R``, ``F`` columns.

    The numbers equal ``rust_bertscore.score(cands, refs, **options)`` on the same rows in the
    same order (IDF over all references of the dataset and bert_score's padding floor
    included), whatever the number of actors or blocks.

    Parameters
    ----------
    ds : ray.data.Dataset
        Rows with a candidate column (str) and a reference column (str, or list of str).
    cand_col, ref_col : str
        Their names.
    index_col : str, optional
        A column numbering the rows 0..N-1 in input order. When absent from ``ds`` (or None)
        the rows are numbered here, which materialises ``ds`` once in Ray's object store; a
        given name is kept in the result, the default one is dropped. Not needed (and no
        materialising) with ``batch_independent=True`` and no ``idf``.
    concurrency : int or (int, int)
        Scoring actors (or a (min, max) autoscaling range); each loads the model once.
    num_cpus, num_gpus : float
        Resources per actor. With ``num_gpus`` > 0 pass ``device="cuda"`` so that ONNX Runtime
        uses its CUDA provider (``onnxruntime-gpu`` installed on the workers).
    rows_per_batch : int
        Rows per ``map_batches`` call: with the texts' token vectors, this bounds a worker's
        memory whatever the dataset's size.
    batch_size : int
        bert_score's scoring batch (pairs; decides the padding floor), as ``score()``.
    score_cols : (str, str, str)
        Names of the added columns.
    on_error : {"raise", "null"}
        ``"raise"``: a bad row (candidate or reference missing, not a str, or not encodable as
        UTF-8; an empty reference list) raises :class:`DistributedInputError` naming its row.
        ``"null"``: it gets null P, R and F and its message in ``error_col``, and the other rows
        get the numbers of one ``score()`` call on them alone (IDF and the padding floor over
        the good rows).
    error_col : str
        Name of the message column added with ``on_error="null"`` (None on good rows).
    **options
        ``BERTScorer``/``score()`` options: ``model_type``, ``num_layers``, ``idf``, ``lang``,
        ``rescale_with_baseline``, ``baseline_path``, ``precision``, ``device``,
        ``batch_independent``, ...

    Returns
    -------
    ray.data.Dataset
        Lazy: nothing is scored until it is consumed (``write_parquet``, ``iter_batches``,
        :func:`summarize`, ...). Its row order follows Ray's ``preserve_order`` setting; keep
        ``index_col`` to sort by input order.

    Examples
    --------
    Needs a Ray runtime (``pip install "rust-bertscore[ray]"``):

    >>> import ray.data                                                   # doctest: +SKIP
    >>> from rust_bertscore.distributed import score_dataset, summarize   # doctest: +SKIP
    >>> rows = [{"hyp": "the cat sat", "ref": "a cat sat"}] * 100     # doctest: +SKIP
    >>> ds = ray.data.from_items(rows)                                    # doctest: +SKIP
    >>> scored = score_dataset(ds, "hyp", "ref", idf=True, concurrency=2)  # doctest: +SKIP
    >>> summarize(scored).count                                           # doctest: +SKIP
    100
    """
    _require_ray()
    options = check_options(options)
    # Names and options are checked before any work.
    columns = list(ds.columns())
    on_error = check_on_error(on_error)
    added = (*score_cols, error_col) if on_error == "null" else tuple(score_cols)
    check_input_columns(columns, cand_col, ref_col, added)
    pool = _actor_pool(concurrency)
    need = indexing(options, index_col, columns)
    index_col, plan, n = need.index_col, None, None
    if need.number_rows:
        assert index_col is not None
        ds, n = number_rows(ds, index_col, rows_per_batch)
    if need.needs_plan:
        assert index_col is not None
        plan = plan_dataset(
            ds,
            cand_col,
            ref_col,
            index_col,
            num_rows=n,
            batch_size=batch_size,
            floors=need.floors,
            idf=need.idf,
            model_type=options.get("model_type"),
            lang=options.get("lang"),
            revision=options.get("revision"),
            options=ScoringOptions.from_mapping(options),
            on_error=on_error,
            rows_per_batch=rows_per_batch,
        )
    kwargs: dict[str, Any] = dict(
        index_col=index_col,
        plan=plan,
        batch_size=batch_size,
        score_cols=score_cols,
        on_error=on_error,
        error_col=error_col,
        num_threads=max(1, int(num_cpus)) if num_gpus == 0 else None,
        **options,
    )
    BERTScoreBatch(cand_col, ref_col, **kwargs)  # fails here, not in the actors, on bad options
    scored = ds.map_batches(
        BERTScoreBatch,
        fn_constructor_args=(cand_col, ref_col),
        fn_constructor_kwargs=kwargs,
        batch_size=rows_per_batch,
        batch_format="pandas",
        compute=pool,
        num_cpus=num_cpus,
        num_gpus=num_gpus,
    )
    if need.drop_index:
        scored = scored.drop_columns([ROW_INDEX])
    return scored


def _actor_pool(concurrency: int | tuple[int, int]) -> Any:
    """Ray's actor pool of ``concurrency`` actors (an int, or a (min, max) range)."""
    import ray.data

    if isinstance(concurrency, tuple):
        low, high = concurrency
        return ray.data.ActorPoolStrategy(min_size=int(low), max_size=int(high))
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise InputValueError(
            f"concurrency must be a positive int or a (min, max) pair, got {concurrency!r}"
        )
    return ray.data.ActorPoolStrategy(size=concurrency)


def summarize(ds: ray.data.Dataset, score_cols: tuple[str, str, str] = SCORE_COLUMNS) -> Summary:
    """Corpus-level mean P, R and F of a scored dataset (float64 sums, computed by Ray).

    Examples
    --------
    Needs a Ray runtime (``pip install "rust-bertscore[ray]"``):

    >>> from rust_bertscore.distributed import score_dataset, summarize   # doctest: +SKIP
    >>> s = summarize(score_dataset(ds, "hyp", "ref"))                    # doctest: +SKIP
    >>> print(f"P={s.P:.4f} R={s.R:.4f} F={s.F:.4f} over {s.count} rows")  # doctest: +SKIP
    """
    _require_ray()
    cols = tuple(score_cols)

    def sums_of(batch: Batch) -> dict[str, np.ndarray]:
        return {"part": np.array([partial_sums([column(batch, c) for c in cols])], dtype=object)}

    parts = ds.map_batches(sums_of, batch_format="pyarrow")
    return Summary.combine(_parts(parts))
