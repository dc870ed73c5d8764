#!/usr/bin/env python3
"""Real clusters on this machine, on unique rows: for each size, the wall time of one job on a
two-node Ray cluster and on a Spark standalone cluster (master and two one-core workers),
against one cold in-process ``score()`` call on the same rows with the same two cores; the
fixed cost of a job (start, model load, first batch) apart from its per-row cost.

Rows (benches/unique_rows.py): the 3,004 WMT pairs (``$RUST_BERTSCORE_WMT_DIR``, default
``../shared/data/wmt``), then distinct pairs made half-and-half from two WMT lines: every
candidate and reference is a text of its own. Every job (each size, each fixed-cost probe, the
warm-ups) gets a disjoint slice, so no process of the bench has encoded a measured row before
(Spark reuses its Python workers; Ray starts new actors for every job).

Per size and engine: wall time, pairs/s, overhead against in-process, and the per-row cost once
the fixed cost is taken off. Each engine job is paired with an in-process call on the same rows
run just before it (``score()`` keeps no embedding cache, so it is cold each time): on a shared
machine the two then meet the same load. The fixed cost is measured directly: the same job on
64 fresh rows less one in-process ``score()`` of 64 rows (for Ray: numbering, first pass, two
actors started and their model loaded, the first batch; for Spark: the tasks of the three
stages, on Python workers that already hold the model from the warm-up). With
two sizes or more a least-squares line ``wall = fixed + n * per_row`` is fitted too.

Batching: rows per engine batch and partitions come from :func:`rust_bertscore.distributed.
batching` (the scorer's token budget over the rows' mean length), not a fixed 32.

The clusters are the ``cluster`` tests' (benches/cluster_launch.py: loopback only, every process
ended by its id afterwards). One run per figure; the load average is printed with each.

Usage: ``python -m benches.clusters [--sizes 3000,30000] [--no-ray] [--no-spark] [--lost]
[--json PATH]``; ``$CLUSTER_BENCH_SIZES`` gives the default sizes (3000).
"""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benches.cluster_launch import RayNodes, SparkStandalone
from benches.common import load_average, machine, wmt_pairs, write_json
from benches.unique_rows import slices, unique_pairs

WORKERS = 2
"""Ray nodes (one 1-CPU actor each) and Spark workers (one core each): the machine's 2 cores."""

PROBE_ROWS = 64
"""Rows of the fixed-cost job."""

WARM_ROWS = 256
"""Rows of each cluster's warm-up job (the model converted and cached on disk, the JVMs warm)."""

Rows = tuple[list[str], list[str]]


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def sizes_from(text: str) -> list[int]:
    """``"3000,30000"`` -> [3000, 30000].

    Examples
    --------
    >>> sizes_from("3000, 30000")
    [3000, 30000]
    """
    sizes = [int(s) for s in text.replace(" ", "").split(",") if s]
    if not sizes or min(sizes) < 1:
        raise SystemExit(f"sizes must be positive integers, got {text!r}")
    return sizes


def fit(points: list[tuple[int, float]]) -> dict[str, float] | None:
    """Least squares ``wall = fixed + n * per_row`` over (n, wall) points (two or more sizes).

    Examples
    --------
    >>> fit([(1000, 12.0), (3000, 32.0)])
    {'fixed_s': 2.0, 'per_row_ms': 10.0}
    """
    if len({n for n, _ in points}) < 2:
        return None
    n = np.array([p[0] for p in points], dtype=float)
    wall = np.array([p[1] for p in points], dtype=float)
    slope, intercept = np.polyfit(n, wall, 1)
    return {"fixed_s": round(float(intercept), 3), "per_row_ms": round(float(slope) * 1e3, 4)}


class RayBench:
    """Two nodes (2 logical CPUs each, one 1-CPU actor each)."""

    def __init__(self) -> None:
        self.nodes = RayNodes()
        self.node = self.nodes.add_node()

    def job(self, rows: Rows, kill: bool = False) -> dict[str, float]:
        import pandas as pd
        import ray

        from rust_bertscore.distributed import batching, score_dataset

        plan = batching(rows[0], WORKERS)
        frame = pd.DataFrame({"hyp": rows[0], "ref": rows[1]})
        t0 = time.perf_counter()
        ds = ray.data.from_pandas(frame)
        scored = score_dataset(
            ds,
            "hyp",
            "ref",
            idf=True,
            concurrency=WORKERS,
            rows_per_batch=plan.rows_per_batch,
            index_col="row",
        )
        got, first, node = 0, 0.0, self.node if kill else None
        for batch in scored.iter_batches(batch_format="pandas", batch_size=None):
            got += len(batch)
            first = first or time.perf_counter() - t0
            if node is not None and self.nodes.actors(node):
                self.nodes.remove_node(node)
                node = None
        assert got == len(rows[0]), got
        return {"wall_s": time.perf_counter() - t0, "first_batch_s": first}

    def stop(self) -> None:
        self.nodes.stop()


class SparkBench:
    """A master and two one-core workers."""

    def __init__(self, root: Path) -> None:
        self.cluster = SparkStandalone(root)
        self.cluster.start(workers=WORKERS)
        self.spark = self.cluster.session("rust-bertscore-bench")

    def job(self, rows: Rows) -> dict[str, float]:
        import pandas as pd

        from rust_bertscore.distributed import batching, score_spark

        plan = batching(rows[0], WORKERS)
        self.spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", plan.rows_per_batch)
        frame = pd.DataFrame({"hyp": rows[0], "ref": rows[1], "row": np.arange(len(rows[0]))})
        df = self.spark.createDataFrame(frame).repartition(plan.partitions, "row").cache()
        df.count()  # the rows in the executors before the clock starts, as a real table is
        t0 = time.perf_counter()
        scored = score_spark(df, "hyp", "ref", index_col="row", idf=True, num_threads=1)
        assert len(scored.toPandas()) == len(rows[0])
        wall = time.perf_counter() - t0
        df.unpersist()
        return {"wall_s": wall, "partitions": plan.partitions}

    def stop(self) -> None:
        self.spark.stop()
        self.cluster.stop()


def in_process(rows: Rows) -> float:
    from rust_bertscore import score

    return _timed(lambda: score(rows[0], rows[1], idf=True, nthreads=WORKERS))


def engine_figures(
    name: str,
    job: Callable[[Rows], dict[str, float]],
    warm: Rows,
    probe: Rows,
    runs: list[tuple[int, Rows]],
) -> dict[str, Any]:
    """Warm-up, the fixed-cost probe, then one job per size (``runs``: (n, rows)).

    Each job is paired with one in-process ``score()`` of the same rows run just before it, so
    that both meet the same load on a shared machine (``score()`` keeps no embedding cache, so
    the second call on the rows is as cold as the first). The fixed cost is the probe job's wall
    time less an in-process call on as many rows; the per-row cost is the rest of a job's time
    over its rows, and its overhead is against the paired in-process time per row."""
    job(warm)
    base_probe = in_process(probe)
    probe_s = job(probe)["wall_s"]
    fixed = max(0.0, probe_s - base_probe)
    print(
        f"{name}: {PROBE_ROWS}-row job {probe_s:6.1f} s (in process {base_probe:.1f} s), "
        f"fixed cost {fixed:6.1f} s   load {load_average()}"
    )
    out: dict[str, Any] = {
        "probe_s": round(probe_s, 2),
        "probe_in_process_s": round(base_probe, 2),
        "fixed_s": round(fixed, 2),
        "sizes": {},
    }
    for n, rows in runs:
        base_load = load_average()
        base = in_process(rows)
        got = job(rows)
        wall = got["wall_s"]
        per_row = (wall - fixed) / n
        fig = {
            **{k: round(v, 2) for k, v in got.items()},
            "in_process_s": round(base, 2),
            "in_process_load": base_load,
            "pairs_per_s": round(n / wall, 1),
            "in_process_pairs_per_s": round(n / base, 1),
            "overhead_pct": round(100 * (wall / base - 1), 1),
            "per_row_ms": round(1e3 * per_row, 3),
            "in_process_per_row_ms": round(1e3 * base / n, 3),
            "per_row_overhead_pct": round(100 * (per_row * n / base - 1), 1),
            "load": load_average(),
        }
        out["sizes"][str(n)] = fig
        print(
            f"{name}: {n:>7} pairs {wall:7.1f} s ({fig['pairs_per_s']:.1f} pairs/s), in process "
            f"{base:7.1f} s ({fig['in_process_pairs_per_s']:.1f} pairs/s): overhead "
            f"{fig['overhead_pct']:+6.1f}%, per row {fig['per_row_ms']:.2f} ms "
            f"({fig['per_row_overhead_pct']:+.1f}%)   load {base_load} / {fig['load']}"
        )
    out["fit"] = fit([(int(n), s["wall_s"]) for n, s in out["sizes"].items()])
    out["in_process_fit"] = fit([(int(n), s["in_process_s"]) for n, s in out["sizes"].items()])
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default = os.environ.get("CLUSTER_BENCH_SIZES", "3000")
    parser.add_argument("--sizes", default=default, help=f"pairs per job (default {default})")
    parser.add_argument("--no-ray", action="store_true")
    parser.add_argument("--no-spark", action="store_true")
    parser.add_argument("--lost", action="store_true", help="also each size with a node lost")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    sizes = sizes_from(args.sizes)
    lines = wmt_pairs("clusters", 10**9)
    if lines is None:
        return 0
    try:
        import pandas  # noqa: F401
        import pyspark  # noqa: F401
        import ray  # noqa: F401
    except ImportError as e:
        print(f"skipped: {e.name} is not installed (make deps installs ray, pyspark, pandas)")
        return 0
    for name in ("ray", "ray.data"):
        logging.getLogger(name).setLevel(logging.ERROR)
    from rust_bertscore import score

    # Disjoint rows: warm-up, Ray probe, Spark probe, then one slice per size
    # (and per size with --lost: the lost-node job's own rows).
    parts = [WARM_ROWS, PROBE_ROWS, PROBE_ROWS, *sizes, *(sizes if args.lost else [])]
    cands, refs = unique_pairs(*lines, sum(parts))
    rows = [(cands[s], refs[s]) for s in slices(parts)]
    warm, probes, measured = rows[0], rows[1:3], rows[3 : 3 + len(sizes)]
    lost_rows = rows[3 + len(sizes) :]
    figures: dict[str, Any] = {"machine": machine(), "workers": WORKERS, "load": load_average()}
    print(
        f"{machine().get('Model name', '?')}, {WORKERS} cores; sizes {sizes}; load {load_average()}"
    )
    load_s = _timed(lambda: score(warm[0][:16], warm[1][:16], idf=True))  # model loaded once
    figures["in_process_model_load_s"] = round(load_s, 2)
    print(f"in process: model load and 16 rows {load_s:.1f} s")
    runs = list(zip(sizes, measured))
    if not args.no_ray:
        ray_bench = RayBench()
        try:
            figures["ray"] = engine_figures("Ray", ray_bench.job, warm, probes[0], runs)
            for (n, _), part in zip(runs, lost_rows):
                lost = ray_bench.job(part, kill=True)["wall_s"]
                figures["ray"]["sizes"][str(n)]["lost_node_s"] = round(lost, 2)
                print(f"Ray: {n:>7} pairs, second node killed mid-job {lost:7.1f} s")
        finally:
            ray_bench.stop()
    if not args.no_spark:
        with tempfile.TemporaryDirectory() as root:
            spark_bench = SparkBench(Path(root))
            try:
                figures["spark"] = engine_figures("Spark", spark_bench.job, warm, probes[1], runs)
            finally:
                spark_bench.stop()
    figures["load_after"] = load_average()
    print(f"load average after: {load_average()}")
    write_json(args.json, figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
