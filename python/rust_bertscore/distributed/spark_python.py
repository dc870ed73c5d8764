"""Which Python Spark's workers run, and whether it can import rust-bertscore.

Spark starts its Python workers with ``SparkContext.pythonExec``: ``$PYSPARK_PYTHON`` when the
context started, else ``python3`` from the ``PATH``. From a virtual environment, ``python3`` is
usually the system's, which cannot import this package, and the first task fails with a long
Py4J trace. :func:`check_worker_python` runs before a Spark engine's first job:

- local master and no interpreter chosen (``pythonExec`` is the default ``python3`` and
  ``PYSPARK_PYTHON`` is unset): the workers run on this machine, so they are given this
  process's interpreter (``sys.executable``), which imports the package;
- otherwise: one one-task probe job imports the package on a worker; when it cannot, a
  :class:`~rust_bertscore.errors.WorkerPythonError` says so in one line that names
  ``PYSPARK_PYTHON`` and the interpreter to set it to.

The probe's result is remembered per Spark application and interpreter.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from ..errors import WorkerPythonError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_WORKER_PYTHON = "python3"
"""What PySpark runs when ``PYSPARK_PYTHON`` is unset."""

PROBE_SOURCE = """
def probe(_):
    import sys
    try:
        import rust_bertscore
    except BaseException as e:
        return sys.executable, f"{type(e).__name__}: {e}"
    return sys.executable, ""
"""
"""The function the probe job runs on a worker. It is compiled into a namespace that is not an
importable module, so Spark pickles it by value: a function of this package would be pickled
by reference, and unpickling it on a worker that lacks the package would fail before it ran."""

_checked: set[tuple[str, str]] = set()


def _probe_function() -> Any:
    namespace: dict[str, Any] = {"__name__": "rust_bertscore_spark_probe"}
    exec(compile(PROBE_SOURCE, "<rust_bertscore spark probe>", "exec"), namespace)
    return namespace["probe"]


def _first_line(error: BaseException) -> str:
    """The first meaningful line of a (Py4J) error: what the JVM says went wrong."""
    for line in str(error).splitlines():
        line = line.strip()
        if line and not line.startswith(("An error occurred while calling", ": ")):
            return line[:300]
    return type(error).__name__


def worker_python_message(worker: str, problem: str) -> str:
    """The one-line error for workers running ``worker`` that cannot import the package."""
    return (
        f"Spark's Python workers run {worker!r}, which cannot import rust_bertscore "
        f"({problem}); set PYSPARK_PYTHON to an interpreter that has rust-bertscore installed "
        f"(this process runs {sys.executable!r}) before the SparkSession starts"
    )


def check_worker_python(spark: SparkSession) -> None:
    """Make sure Spark's Python workers can import rust-bertscore (see the module docstring).

    Raises
    ------
    WorkerPythonError
        The workers' interpreter cannot import the package, or cannot start.
    """
    try:
        sc = spark.sparkContext
    except Exception:  # Spark Connect: no SparkContext here, nothing to check from the client
        return
    chosen = os.environ.get("PYSPARK_PYTHON") or sc.pythonExec != DEFAULT_WORKER_PYTHON
    if not chosen and str(sc.master).startswith("local"):
        # Every Python function Spark builds from now on reads pythonExec.
        sc.pythonExec = sys.executable
        return
    key = (str(sc.applicationId), str(sc.pythonExec))
    if key in _checked:
        return
    try:
        worker, problem = sc.parallelize([0], 1).map(_probe_function()).collect()[0]
    except Exception as error:
        message = worker_python_message(str(sc.pythonExec), _first_line(error))
        raise WorkerPythonError(message) from None
    if problem:
        raise WorkerPythonError(worker_python_message(worker, problem))
    _checked.add(key)
