"""Spark on a real standalone cluster: a master and two workers in their own JVMs (started with
``spark-class``, on the loopback interface), the job through ``spark://127.0.0.1:PORT``. The
numbers are ``score()``'s with IDF and reference lists; a worker SIGKILLed mid-job (with its
executor and Python workers) loses no row and changes no number, and a shared embedding store
written during the kill serves no damaged entry. docs/distributed.md's "Standalone cluster"
section gives these commands.

Marked ``cluster``: ``pytest -m cluster`` runs these alone."""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

from benches.cluster_launch import SparkStandalone
from conftest import skip_without_java
from distributed_data import check_scores, shuffled_rows

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (make test installs it)")
pd = pytest.importorskip("pandas", reason="pandas is not installed (make test installs it)")
skip_without_java()

from rust_bertscore import score  # noqa: E402
from rust_bertscore.distributed import score_spark  # noqa: E402

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning:pyspark"),
    pytest.mark.filterwarnings("ignore::rust_bertscore.errors.RustBertScoreWarning"),
]

ROWS = 300
PARTITIONS = 6
"""Tasks per scoring stage: a worker dies with tasks still to run."""


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    """A master and two one-core workers; every process started is ended after the module,
    even when a test fails."""
    cluster = SparkStandalone(tmp_path_factory.mktemp("spark-standalone"))
    try:
        cluster.start(workers=2)
        yield cluster
    finally:
        cluster.stop()
        assert not cluster.running(), f"cluster processes still run: {cluster.running()}"


@pytest.fixture(scope="module")
def spark(standalone):
    saved = os.environ.get("PYSPARK_PYTHON")
    session = standalone.session(
        "rust-bertscore-cluster-tests", **{"spark.sql.execution.arrow.maxRecordsPerBatch": "16"}
    )
    try:
        yield session
    finally:
        session.stop()
        if saved is None:
            os.environ.pop("PYSPARK_PYTHON", None)
        else:
            os.environ["PYSPARK_PYTHON"] = saved


def _rows(seed: int) -> tuple[list[str], list[list[str]]]:
    return shuffled_rows(ROWS, seed=seed, multi=0.4)


def _frame(spark, cands: list, refs: list):
    """The rows over :data:`PARTITIONS` partitions, cached (each pass reads them again)."""
    frame = pd.DataFrame({"hyp": cands, "ref": refs, "row": np.arange(len(cands))})
    df = spark.createDataFrame(frame).repartition(PARTITIONS).cache()
    df.count()
    return df


def test_worker_killed_mid_job_loses_no_row(spark, standalone, minilm_dir, tmp_path):
    """The job through spark://..., executors on both workers running Python tasks; SIGKILL
    worker-2's process group (worker JVM, executor, Python workers) once scoring tasks
    completed and others run: Spark reruns its tasks on worker-1; every row once, with
    score()'s numbers (idf over every reference, reference lists of 1 to 4). Both workers
    wrote one embedding store during the kill: a second job that reads it gets score()'s
    numbers (a record torn by the kill is a miss, never served)."""
    model = str(minilm_dir)
    cands, refs = _rows(seed=32)
    want = score(cands, refs, model_type=model, idf=True)
    store = tmp_path / "store"
    scored = score_spark(
        _frame(spark, cands, refs),
        "hyp",
        "ref",
        index_col="row",
        idf=True,
        model_type=model,
        num_threads=1,
        store=str(store),
    )
    result: dict[str, object] = {}

    def run() -> None:
        try:
            result["out"] = scored.toPandas()
        except Exception as e:  # reported by the main thread
            result["error"] = e

    tracker = spark.sparkContext.statusTracker()
    job = threading.Thread(target=run)
    job.start()
    killed_at = None
    deadline = time.monotonic() + 300
    while job.is_alive() and time.monotonic() < deadline:
        stages = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
        stages = [s for s in stages if s is not None and s.numTasks >= PARTITIONS]
        busy = [standalone.python_workers(w) for w in ("worker-1", "worker-2")]
        if stages and all(busy) and stages[0].numCompletedTasks >= 1:
            killed_at = (stages[0].numCompletedTasks, stages[0].numTasks)
            standalone.kill("worker-2")
            break
        time.sleep(0.2)
    job.join(timeout=300)
    assert not job.is_alive(), "the job did not finish after the kill"
    assert "error" not in result, result.get("error")
    assert killed_at is not None and killed_at[0] < killed_at[1], killed_at
    out = result["out"]
    assert isinstance(out, pd.DataFrame) and len(out) == ROWS
    check_scores(out, want, atol=1e-6)  # rows 0..N-1 once each, score()'s numbers

    from rust_bertscore.store import EmbeddingStore

    # Embeddings do not depend on idf or the padding floor: a batch-independent job (no first
    # pass) reads the same entries.
    again = score_spark(
        _frame(spark, cands, refs),
        "hyp",
        "ref",
        model_type=model,
        num_threads=1,
        batch_independent=True,
        store=str(store),
    ).toPandas()
    check_scores(again, score(cands, refs, model_type=model, batch_independent=True), atol=1e-6)
    assert EmbeddingStore(store).info().entries > 0
    print(f"worker-2 killed with {killed_at[0]} of {killed_at[1]} scoring tasks done")
