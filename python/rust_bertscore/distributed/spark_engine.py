"""Apache Spark glue: number rows, run the first pass, score with ``mapInPandas``.

PySpark is imported inside the functions, so ``rust_bertscore.distributed`` imports without it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ..engine.settings import SCORE_BATCH_SIZE
from ..stages.options import ScoringOptions
from .columns import ERROR_COLUMN, Batch, check_input_columns, check_on_error
from .operator import SCORE_COLUMNS, BERTScoreBatch, check_options
from .plan import ROW_INDEX, ScorePlan, first_pass, indexing
from .spark_python import check_worker_python
from .summary import Summary

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType


def _require_spark() -> Any:
    try:
        import pyspark
    except ImportError:  # pragma: no cover - exercised only without pyspark
        raise ImportError(
            "rust_bertscore.distributed's Spark engine needs PySpark: pip install "
            "'rust-bertscore[spark]' (or pyspark, pandas and pyarrow)"
        ) from None
    return pyspark


def number_rows_spark(df: DataFrame, name: str = ROW_INDEX) -> tuple[DataFrame, int]:
    """``df`` with a column ``name`` of row numbers 0..N-1 in partition order, and N.

    Uses ``RDD.zipWithIndex``; the numbered DataFrame is persisted (memory and disk), since the
    first pass and the scoring read it again.

    Examples
    --------
    Needs a Spark session (``pip install "rust-bertscore[spark]"``, Java 17+):

    >>> from rust_bertscore.distributed import number_rows_spark            # doctest: +SKIP
    >>> df = spark.createDataFrame([("a", "b"), ("c", "d")], ["hyp", "ref"])  # doctest: +SKIP
    >>> numbered, n = number_rows_spark(df)                                 # doctest: +SKIP
    >>> n                                                                   # doctest: +SKIP
    2
    """
    _require_spark()
    from pyspark import StorageLevel
    from pyspark.sql.types import LongType, StructField, StructType

    schema = StructType([*df.schema.fields, StructField(name, LongType(), False)])
    rows = df.rdd.zipWithIndex().map(lambda pair: (*pair[0], pair[1]))
    numbered = df.sparkSession.createDataFrame(rows, schema)
    numbered = numbered.persist(StorageLevel.MEMORY_AND_DISK)
    return numbered, numbered.count()


def _is_list_column(df: DataFrame, name: str) -> bool:
    from pyspark.sql.types import StringType

    return not isinstance(df.schema[name].dataType, StringType)


def _collect(df: DataFrame) -> Iterator[bytes]:
    # One job per partition, the next one prefetched while the driver combines this one.
    for row in df.toLocalIterator(prefetchPartitions=True):
        yield bytes(row["part"])


def plan_spark(
    df: DataFrame,
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
    on_error: str = "raise",
    revision: str | None = None,
) -> ScorePlan:
    """The first pass over ``df`` (tokenizer only, as ``mapInPandas`` tasks): see
    :mod:`rust_bertscore.distributed.plan`. ``index_col`` must number the rows 0..N-1.

    Examples
    --------
    Needs a Spark session (``pip install "rust-bertscore[spark]"``, Java 17+):

    >>> from rust_bertscore.distributed import number_rows_spark, plan_spark  # doctest: +SKIP
    >>> numbered, n = number_rows_spark(df, "row")                          # doctest: +SKIP
    >>> plan = plan_spark(numbered, "hyp", "ref", "row", idf=True)          # doctest: +SKIP
    """
    _require_spark()
    check_worker_python(df.sparkSession)

    def map_parts(fn: Callable[[Batch], bytes]) -> Iterator[bytes]:
        def parts_of(frames: Iterable[pd.DataFrame]) -> Iterator[pd.DataFrame]:
            import pandas as pd

            for frame in frames:
                yield pd.DataFrame({"part": [fn(frame)]})

        return _collect(df.mapInPandas(parts_of, "part binary"))

    return first_pass(
        map_parts,
        lambda: _is_list_column(df, ref_col),
        cand_col,
        ref_col,
        index_col,
        num_rows=df.count() if num_rows is None else num_rows,
        batch_size=batch_size,
        floors=floors,
        idf=idf,
        model_type=model_type,
        lang=lang,
        options=options,
        on_error=check_on_error(on_error),
        revision=revision,
    )


def score_schema(
    schema: StructType,
    score_cols: tuple[str, str, str] = SCORE_COLUMNS,
    error_col: str | None = None,
) -> StructType:
    """``schema`` with float P, R and F fields added (the output schema of ``mapInPandas``),
    and a string field ``error_col`` when given (for ``on_error="null"``).

    Examples
    --------
    >>> from pyspark.sql.types import StringType, StructField, StructType
    >>> from rust_bertscore.distributed import score_schema
    >>> schema = StructType([StructField("hyp", StringType()), StructField("ref", StringType())])
    >>> [f.name for f in score_schema(schema).fields]
    ['hyp', 'ref', 'P', 'R', 'F']
    """
    _require_spark()
    from pyspark.sql.types import FloatType, StringType, StructField, StructType

    fields = [*schema.fields, *(StructField(c, FloatType(), True) for c in score_cols)]
    if error_col is not None:
        fields.append(StructField(error_col, StringType(), True))
    return StructType(fields)


def map_in_pandas(
    cand_col: str, ref_col: str, **kwargs: Any
) -> Callable[[Iterable[pd.DataFrame]], Iterator[pd.DataFrame]]:
    """A function for ``df.mapInPandas(fn, score_schema(df.schema))``: :class:`BERTScoreBatch`
    (same arguments) over each pandas batch. Without ``plan`` every batch is scored on its own
    (use :func:`score_spark` for the numbers of one ``score()`` call).

    Examples
    --------
    The function maps an iterator of pandas DataFrames, as ``mapInPandas`` calls it; without Spark:

    >>> import pandas as pd
    >>> from rust_bertscore.distributed import map_in_pandas
    >>> fn = map_in_pandas("hyp", "ref")
    >>> [out] = fn(iter([pd.DataFrame({"hyp": ["the cat sat"], "ref": ["a cat sat"]})]))
    >>> list(out.columns), bool(out["F"].iloc[0] > 0.5)
    (['hyp', 'ref', 'P', 'R', 'F'], True)
    """
    return BERTScoreBatch(cand_col, ref_col, **kwargs).map_pandas


def score_spark(
    df: DataFrame,
    cand_col: str,
    ref_col: str,
    *,
    index_col: str | None = None,
    batch_size: int = SCORE_BATCH_SIZE,
    score_cols: tuple[str, str, str] = SCORE_COLUMNS,
    num_threads: int | None = None,
    on_error: str = "raise",
    error_col: str = ERROR_COLUMN,
    **options: Any,
) -> DataFrame:
    """BERTScore of every row of a Spark DataFrame: its rows with ``P``, ``R``, ``F`` columns.

    The numbers equal ``rust_bertscore.score(cands, refs, **options)`` on the same rows in
    the same order (IDF over every reference and bert_score's padding floor included),
    whatever the partitioning.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        Rows with a candidate column (string) and a reference column (string or
        array<string>).
    cand_col, ref_col : str
        Their names.
    index_col : str, optional
        A column numbering the rows 0..N-1 in input order; when absent (or None) rows are
        numbered in partition order with ``zipWithIndex`` (a given name is kept in the
        result, the default one dropped). Not needed with ``batch_independent=True`` and no
        ``idf``.
    batch_size : int
        bert_score's scoring batch (pairs), as ``score()``.
    score_cols : (str, str, str)
        Names of the added float columns.
    num_threads : int, optional
        Encoder and kernel threads per Python worker: set it to the executor's cores divided by
        its tasks (``spark.executor.cores / spark.task.cpus``) to avoid oversubscription.
    on_error : {"raise", "null"}
        ``"raise"``: a bad row (candidate or reference missing, not a string, or not encodable
        as UTF-8; an empty reference list) fails the job with :class:`DistributedInputError`
        naming its row. ``"null"``: it gets null P, R and F and its message in ``error_col``,
        and the other rows get the numbers of one ``score()`` call on them alone (IDF and the
        padding floor over the good rows).
    error_col : str
        Name of the string column added with ``on_error="null"`` (null on good rows).
    **options
        ``BERTScorer``/``score()`` options (``model_type``, ``idf``, ``lang``, ...).

    Returns
    -------
    pyspark.sql.DataFrame
        Lazy, like any DataFrame transformation. Rows per pandas batch follow
        ``spark.sql.execution.arrow.maxRecordsPerBatch``.

    Raises
    ------
    WorkerPythonError
        Spark's Python workers cannot import rust-bertscore. With a local master and
        ``PYSPARK_PYTHON`` unset, the workers are given this process's interpreter first (see
        :mod:`rust_bertscore.distributed.spark_python`).

    Examples
    --------
    Needs a Spark session (``pip install "rust-bertscore[spark]"``, Java 17+; set
    ``PYSPARK_PYTHON`` to this venv's interpreter, see the README):

    >>> from rust_bertscore.distributed import score_spark, summarize_spark  # doctest: +SKIP
    >>> rows = [("the cat sat", "a cat sat")] * 100                         # doctest: +SKIP
    >>> df = spark.createDataFrame(rows, ["hyp", "ref"])                    # doctest: +SKIP
    >>> scored = score_spark(df, "hyp", "ref", idf=True)                    # doctest: +SKIP
    >>> scored.columns                                                       # doctest: +SKIP
    ['hyp', 'ref', 'P', 'R', 'F']
    """
    _require_spark()
    check_worker_python(df.sparkSession)
    options = check_options(options)
    columns = list(df.columns)
    on_error = check_on_error(on_error)
    added = (*score_cols, error_col) if on_error == "null" else tuple(score_cols)
    check_input_columns(columns, cand_col, ref_col, added)
    need = indexing(options, index_col, columns)
    index_col, plan, n = need.index_col, None, None
    if need.number_rows:
        assert index_col is not None
        df, n = number_rows_spark(df, index_col)
    if need.needs_plan:
        assert index_col is not None
        plan = plan_spark(
            df,
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
        )
    fn = map_in_pandas(
        cand_col,
        ref_col,
        index_col=index_col,
        plan=plan,
        batch_size=batch_size,
        score_cols=score_cols,
        num_threads=num_threads,
        on_error=on_error,
        error_col=error_col,
        **options,
    )
    schema = score_schema(df.schema, score_cols, error_col if on_error == "null" else None)
    scored = df.mapInPandas(fn, schema)
    return scored.drop(ROW_INDEX) if need.drop_index else scored


def summarize_spark(df: DataFrame, score_cols: tuple[str, str, str] = SCORE_COLUMNS) -> Summary:
    """Corpus-level mean P, R and F of a scored DataFrame (a Spark aggregation, in double).

    Examples
    --------
    Needs a Spark session (``pip install "rust-bertscore[spark]"``, Java 17+):

    >>> from rust_bertscore.distributed import score_spark, summarize_spark  # doctest: +SKIP
    >>> summarize_spark(score_spark(df, "hyp", "ref")).count                # doctest: +SKIP
    100
    """
    _require_spark()
    from pyspark.sql import functions as F

    p, r, f = score_cols
    row = df.agg(
        F.sum(F.col(p).cast("double")).alias("p"),
        F.sum(F.col(r).cast("double")).alias("r"),
        F.sum(F.col(f).cast("double")).alias("f"),
        F.count(F.col(f)).alias("n"),  # null scores (bad rows kept) are not counted
    ).collect()[0]
    count = int(row["n"])
    sums = [row[k] if row[k] is not None else 0.0 for k in ("p", "r", "f")]
    return Summary.from_sums(sums, count)
