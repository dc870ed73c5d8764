"""Scoring datasets on Ray Data and Apache Spark, with the numbers of one ``score()`` call.

>>> from rust_bertscore.distributed import score_dataset, summarize   # doctest: +SKIP
>>> scored = score_dataset(ds, "hyp", "ref", idf=True, concurrency=4)  # doctest: +SKIP

* :class:`BERTScoreBatch`: the batch operator both engines run (pandas DataFrame, pyarrow Table
  or dict of NumPy arrays in; the same rows plus P, R, F out).
* :func:`score_dataset`, :func:`summarize`, :func:`plan_dataset`: Ray Data.
* :func:`score_spark`, :func:`summarize_spark`, :func:`plan_spark`, :func:`map_in_pandas`: Spark.
* :func:`batching`: rows per engine batch and partitions from the token budget.
* :mod:`.plan`: the engine-independent first pass (IDF document frequencies, padding floors).
* :mod:`.passes`: the per-batch work of that pass, run on the workers.

Neither Ray nor PySpark is imported until one of their functions is called (extras ``[ray]``
and ``[spark]``).
"""

from __future__ import annotations

from typing import Any

from ..errors import WorkerPythonError
from .batching import Batching, batching
from .columns import DistributedInputError
from .operator import SCORE_COLUMNS, BERTScoreBatch
from .plan import ScorePlan
from .summary import Summary

_RAY = ("score_dataset", "summarize", "plan_dataset", "number_rows")
_SPARK = (
    "score_spark",
    "summarize_spark",
    "plan_spark",
    "map_in_pandas",
    "score_schema",
    "number_rows_spark",
)

__all__ = [
    "SCORE_COLUMNS",
    "BERTScoreBatch",
    "Batching",
    "DistributedInputError",
    "ScorePlan",
    "Summary",
    "WorkerPythonError",
    "batching",
    *_RAY,
    *_SPARK,
]


def __getattr__(name: str) -> Any:
    if name in _RAY:
        from . import ray_engine

        return getattr(ray_engine, name)
    if name in _SPARK:
        from . import spark_engine

        return getattr(spark_engine, name)
    raise AttributeError(f"module 'rust_bertscore.distributed' has no attribute {name!r}")
