"""Spark on a real standalone cluster: a master and two workers in their own JVMs (started with
``spark-class``, on the loopback interface), the job through ``spark://127.0.0.1:PORT``. The
numbers are ``score()``'s with IDF and reference lists; a worker SIGKILLed mid-job (with its
executor and Python workers) loses no row and changes no number, and a shared embedding store
written during the kill serves no damaged entry. docs/distributed.md's "Standalone cluster"
section gives these commands.

Marked ``cluster``: ``pytest -m cluster`` runs these alone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from cluster_procs import alive, descendants, end, free_port
from distributed_data import check_scores, shuffled_rows

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (make test installs it)")
pd = pytest.importorskip("pandas", reason="pandas is not installed (make test installs it)")

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


class Standalone:
    """A standalone master and workers, each ``spark-class`` started in its own session so
    that its JVM and everything it starts (executors, Python workers) form one process group
    that can be ended by the id of the process started here."""

    def __init__(self, root: Path) -> None:
        from pyspark.find_spark_home import _find_spark_home

        self.spark_class = str(Path(_find_spark_home()) / "bin" / "spark-class")
        self.root = root
        self.port = free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_DAEMON_MEMORY": "256m",
            "PYSPARK_PYTHON": sys.executable,
        }
        self.procs: dict[str, subprocess.Popen] = {}

    def _start(self, name: str, *args: str, ready: str, timeout: float = 120) -> None:
        log = self.root / f"{name}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [self.spark_class, *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env,
                cwd=self.root,
                start_new_session=True,
            )
        self.procs[name] = proc
        deadline = time.monotonic() + timeout
        while ready not in log.read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{name} did not start:\n{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.3)

    def start_master(self) -> None:
        self._start(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host", "127.0.0.1",
            "--port", str(self.port),
            "--webui-port", str(free_port()),
            ready="I have been elected leader",
        )

    def start_worker(self, name: str) -> None:
        work = self.root / name
        work.mkdir()
        self._start(
            name,
            "org.apache.spark.deploy.worker.Worker",
            "--host", "127.0.0.1",
            "--cores", "1",
            "--memory", "1g",
            "--webui-port", str(free_port()),
            "--work-dir", str(work),
            self.url,
            ready="Successfully registered with master",
        )

    def tree(self, name: str) -> set[int]:
        """The pids of ``name``'s process and everything below it now."""
        pid = self.procs[name].pid
        return {pid, *descendants(pid)}

    def kill(self, name: str) -> None:
        """SIGKILL ``name``'s process group (its JVM, executor and Python workers)."""
        proc = self.procs[name]
        doomed = self.tree(name)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        end(doomed, grace=0)

    def stop(self) -> None:
        """End every process started here (and what they started), workers first."""
        for name in sorted(self.procs, key=lambda n: n == "master"):
            proc = self.procs[name]
            if proc.poll() is None:
                tree = self.tree(name)
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=20)
                end(tree, grace=5.0)


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    cluster = Standalone(tmp_path_factory.mktemp("spark-standalone"))
    try:
        cluster.start_master()
        cluster.start_worker("worker-1")
        cluster.start_worker("worker-2")
        yield cluster
    finally:
        cluster.stop()
        left = [p for n in cluster.procs for p in {cluster.procs[n].pid} if alive(p)]
        assert not left, f"cluster processes still run: {left}"


@pytest.fixture(scope="module")
def spark(standalone):
    from pyspark.sql import SparkSession

    with pytest.MonkeyPatch.context() as mp:
        # The workers' Python: this interpreter (both workers run on this machine).
        mp.setenv("PYSPARK_PYTHON", sys.executable)
        mp.setenv("PYSPARK_DRIVER_PYTHON", sys.executable)
        mp.setenv("SPARK_LOCAL_IP", "127.0.0.1")
        session = (
            SparkSession.builder.master(standalone.url)
            .appName("rust-bertscore-cluster-tests")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.executor.memory", "512m")
            .config("spark.executor.cores", "1")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.execution.arrow.maxRecordsPerBatch", "16")
            .getOrCreate()
        )
        session.sparkContext.setLogLevel("ERROR")
        try:
            yield session
        finally:
            session.stop()


def _rows(seed: int) -> tuple[list[str], list[list[str]]]:
    return shuffled_rows(ROWS, seed=seed, multi=0.4)


def _frame(spark, cands: list, refs: list):
    """The rows over :data:`PARTITIONS` partitions, cached (each pass reads them again)."""
    frame = pd.DataFrame({"hyp": cands, "ref": refs, "row": np.arange(len(cands))})
    df = spark.createDataFrame(frame).repartition(PARTITIONS).cache()
    df.count()
    return df


def _executors(standalone: Standalone, name: str) -> list[int]:
    """Python workers under worker ``name`` (its executor is running tasks)."""
    tree = standalone.tree(name)
    out = []
    for pid in tree:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().decode("utf-8", "replace")
        except OSError:
            continue
        if "pyspark" in cmd and "daemon" in cmd:
            out.append(pid)
    return out


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
        _frame(spark, cands, refs), "hyp", "ref", index_col="row", idf=True, model_type=model,
        num_threads=1, store=str(store),
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
        busy = [_executors(standalone, w) for w in ("worker-1", "worker-2")]
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
        _frame(spark, cands, refs), "hyp", "ref", model_type=model, num_threads=1,
        batch_independent=True, store=str(store),
    ).toPandas()
    check_scores(again, score(cands, refs, model_type=model, batch_independent=True), atol=1e-6)
    assert EmbeddingStore(store).info().entries > 0
    print(f"worker-2 killed with {killed_at[0]} of {killed_at[1]} scoring tasks done")
