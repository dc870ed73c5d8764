"""Spark's Python workers from a virtual environment, on real ``local[1]`` sessions.

PySpark starts its workers with ``$PYSPARK_PYTHON`` (read when the SparkContext starts), else
``python3`` from the PATH: from a venv, an interpreter that cannot import the package. With a
local master and nothing chosen, ``score_spark`` gives the workers this process's interpreter;
a chosen interpreter that cannot import the package (or cannot start) is named in a one-line
``WorkerPythonError`` that says to set ``PYSPARK_PYTHON``, instead of a Py4J trace.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from conftest import skip_without_java

pytest.importorskip("pyspark", reason="pyspark is not installed (make test installs it)")
pd = pytest.importorskip("pandas", reason="pandas is not installed (make test installs it)")
skip_without_java()

import rust_bertscore as rb  # noqa: E402
from rust_bertscore.distributed import WorkerPythonError, score_spark  # noqa: E402

pytestmark = [
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning:pyspark"),
    pytest.mark.filterwarnings("ignore::rust_bertscore.errors.RustBertScoreWarning"),
]

SYSTEM_PYTHON = "/usr/bin/python3"

CANDS = ["The cat sat on the mat.", "A dog ran in the park.", "It is raining."]
REFS = ["A cat sat on the mat.", "The dog runs in a park.", "The sun is shining."]


def stop_active_session() -> None:
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()


@pytest.fixture
def new_session(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """A factory of fresh ``local[1]`` sessions (each reads ``PYSPARK_PYTHON`` as it starts);
    the last one is stopped afterwards."""
    from pyspark.sql import SparkSession

    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    monkeypatch.delenv("PYSPARK_DRIVER_PYTHON", raising=False)
    stop_active_session()

    def start() -> SparkSession:
        stop_active_session()
        session = (
            SparkSession.builder.master("local[1]")
            .appName("rust-bertscore-worker-python")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "1")
            .getOrCreate()
        )
        session.sparkContext.setLogLevel("OFF")
        return session

    yield start
    stop_active_session()


def frame(spark: object) -> object:
    return spark.createDataFrame(pd.DataFrame({"hyp": CANDS, "ref": REFS}))  # type: ignore[attr-defined]


def test_local_master_without_pyspark_python_uses_this_interpreter(
    new_session, minilm_dir: Path
) -> None:
    spark = new_session()
    assert spark.sparkContext.pythonExec == "python3", "PYSPARK_PYTHON leaked into the test"
    out = score_spark(frame(spark), "hyp", "ref", model_type=str(minilm_dir)).toPandas()
    assert spark.sparkContext.pythonExec == sys.executable
    _, _, F = rb.score(CANDS, REFS, model_type=str(minilm_dir))
    np.testing.assert_allclose(out["F"].to_numpy(), np.asarray(F), atol=1e-6)


def one_line_naming(error: WorkerPythonError, interpreter: str) -> str:
    message = str(error)
    assert "\n" not in message and "Py4J" not in message and "Traceback" not in message
    assert "PYSPARK_PYTHON" in message
    assert repr(interpreter) in message
    assert repr(sys.executable) in message  # the interpreter to set it to
    return message


def test_worker_python_that_cannot_import_the_package_is_named(
    new_session, minilm_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not Path(SYSTEM_PYTHON).is_file():
        pytest.skip(f"no {SYSTEM_PYTHON} here")
    probe = subprocess.run([SYSTEM_PYTHON, "-c", "import rust_bertscore"], capture_output=True)
    if probe.returncode == 0:
        pytest.skip(f"{SYSTEM_PYTHON} can import rust_bertscore here")
    monkeypatch.setenv("PYSPARK_PYTHON", SYSTEM_PYTHON)
    spark = new_session()
    with pytest.raises(WorkerPythonError) as caught:
        score_spark(frame(spark), "hyp", "ref", model_type=str(minilm_dir))
    message = one_line_naming(caught.value, SYSTEM_PYTHON)
    assert "cannot import rust_bertscore (ModuleNotFoundError" in message


def test_worker_python_that_cannot_start_is_named(
    new_session, minilm_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    missing = str(tmp_path / "no-such-python")
    monkeypatch.setenv("PYSPARK_PYTHON", missing)
    spark = new_session()
    with pytest.raises(WorkerPythonError) as caught:
        score_spark(frame(spark), "hyp", "ref", model_type=str(minilm_dir))
    one_line_naming(caught.value, missing)


def test_chosen_interpreter_that_imports_the_package_scores(
    new_session, minilm_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    spark = new_session()
    df = frame(spark)
    first = score_spark(df, "hyp", "ref", model_type=str(minilm_dir)).toPandas()
    second = score_spark(df, "hyp", "ref", model_type=str(minilm_dir)).toPandas()
    np.testing.assert_array_equal(first["F"].to_numpy(), second["F"].to_numpy())
    assert spark.sparkContext.pythonExec == sys.executable
