#!/usr/bin/env python3
"""Real clusters on this machine: wall time of one job on a two-node Ray cluster and on a Spark
standalone cluster (master and two one-core workers), against one in-process ``score()`` call
on the same rows, and the cost of losing a node or worker mid-job (the same job with the kill,
minus the job without it).

The clusters are the ``cluster`` tests' (benches/cluster_launch.py: loopback only, every
process ended by its id afterwards). Every figure is the wall time of a whole call as a user
sees it (numbering, the idf and padding-floor first pass, actors or executors, scoring, rows
back in the driver), after one warm-up job on the same cluster. One run each: a kill cannot be
repeated on the same cluster without restarting a node, and on a shared machine a second run
would not be quieter. The load average is printed before and after.

The rows are WMT pairs (``$RUST_BERTSCORE_WMT_DIR``, default ``../shared/data/wmt``); without
them, or without ray/pyspark, the benchmark says why and skips.

Usage: ``python -m benches.clusters [--pairs N] [--no-ray] [--no-spark] [--json PATH]``
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benches.cluster_launch import RayNodes, SparkStandalone
from benches.common import load_average, wmt_pairs, write_json


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def ray_figures(cands: list[str], refs: list[str], base: float) -> dict[str, float]:
    """Two nodes (2 logical CPUs each, one 1-CPU actor each): the job, then the job with the
    second node killed once its actor scores and a first batch is back."""
    import pandas as pd
    import ray

    from rust_bertscore.distributed import score_dataset

    frame = pd.DataFrame({"hyp": cands, "ref": refs})
    nodes = RayNodes()
    try:
        node = nodes.add_node()

        def job(kill: Any = None) -> None:
            ds = ray.data.from_pandas(frame).repartition(4)
            scored = score_dataset(
                ds, "hyp", "ref", idf=True, concurrency=2, rows_per_batch=32, index_col="row"
            )
            rows = 0
            for batch in scored.iter_batches(batch_format="pandas", batch_size=None):
                rows += len(batch)
                if kill is not None and nodes.actors(kill):
                    nodes.remove_node(kill)
                    kill = None
            assert rows == len(cands), rows

        job()  # warm-up: actors load the model, the graph is converted
        plain = _timed(job)
        lost = _timed(lambda: job(kill=node))
    finally:
        nodes.stop()
    return {"ray_s": plain, "ray_lost_node_s": lost, "ray_overhead": plain / base - 1}


def spark_figures(cands: list[str], refs: list[str], base: float) -> dict[str, float]:
    """A master and two one-core workers: the job, then the job with worker-2 SIGKILLed once
    both executors run Python tasks and one scoring task is done."""
    import numpy as np
    import pandas as pd

    from rust_bertscore.distributed import score_spark

    frame = pd.DataFrame({"hyp": cands, "ref": refs, "row": np.arange(len(cands))})
    with tempfile.TemporaryDirectory() as root:
        cluster = SparkStandalone(Path(root))
        try:
            cluster.start(workers=2)
            spark = cluster.session(
                "rust-bertscore-bench", **{"spark.sql.execution.arrow.maxRecordsPerBatch": "32"}
            )
            df = spark.createDataFrame(frame).repartition(6).cache()
            df.count()

            def job() -> None:
                scored = score_spark(df, "hyp", "ref", index_col="row", idf=True, num_threads=1)
                assert len(scored.toPandas()) == len(cands)

            job()  # warm-up
            plain = _timed(job)
            tracker = spark.sparkContext.statusTracker()
            t0 = time.perf_counter()
            runner = threading.Thread(target=job)
            runner.start()
            while runner.is_alive():
                stages = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
                stages = [s for s in stages if s is not None and s.numTasks >= 6]
                busy = all(cluster.python_workers(w) for w in ("worker-1", "worker-2"))
                if stages and busy and stages[0].numCompletedTasks >= 1:
                    cluster.kill("worker-2")
                    break
                time.sleep(0.2)
            runner.join()
            lost = time.perf_counter() - t0
            spark.stop()
        finally:
            cluster.stop()
    return {"spark_s": plain, "spark_lost_worker_s": lost, "spark_overhead": plain / base - 1}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=900)
    parser.add_argument("--no-ray", action="store_true")
    parser.add_argument("--no-spark", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    pairs = wmt_pairs("clusters", args.pairs, files=("hyps.txt", "refs.txt"), cycle=True)
    if pairs is None:
        return 0
    try:
        import pandas  # noqa: F401
        import pyspark  # noqa: F401
        import ray  # noqa: F401
    except ImportError as e:
        print(f"skipped: {e.name} is not installed (make deps installs ray, pyspark, pandas)")
        return 0
    logging.getLogger("ray").setLevel(logging.ERROR)
    from rust_bertscore import score

    cands, refs = pairs
    figures: dict[str, object] = {"pairs": len(cands), "load_before": load_average()}
    print(f"{len(cands)} WMT pairs, idf; load average before: {load_average()}")
    score(cands[:8], refs[:8], idf=True)  # warm-up: the model converted and loaded once
    base = _timed(lambda: score(cands, refs, idf=True))
    figures["in_process_s"] = base
    print(f"in process, one score() call:            {base:7.1f} s")
    if not args.no_ray:
        got = ray_figures(cands, refs, base)
        figures.update(got)
        print(f"Ray, 2 nodes x 1 actor:                  {got['ray_s']:7.1f} s")
        print(f"Ray, second node killed mid-job:         {got['ray_lost_node_s']:7.1f} s")
    if not args.no_spark:
        got = spark_figures(cands, refs, base)
        figures.update(got)
        print(f"Spark standalone, 2 workers x 1 core:    {got['spark_s']:7.1f} s")
        print(f"Spark, worker-2 SIGKILLed mid-job:       {got['spark_lost_worker_s']:7.1f} s")
    figures["load_after"] = load_average()
    print(f"load average after: {load_average()}")
    write_json(args.json, figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
