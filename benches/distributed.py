#!/usr/bin/env python3
"""Engine overhead of ``rust_bertscore.distributed`` on one machine: pairs/s of the WMT pairs
scored in process (one ``BERTScorer``, every core) against the same pairs on a local Ray cluster
(1 actor with every core, then one 1-core actor per core) and on Spark ``local[N]``.

Every engine figure is the wall time of a whole call, as a user sees it: numbering the rows, the
first pass (padding floors; idf with ``--idf``), starting the actors and scoring, up to the scored
rows back in the driver (``to_pandas``/``toPandas``). Each configuration runs ``--repeats`` times
after one warm-up run (which converts the model and starts the engine) and the best run is kept.
The load average of the machine (``os.getloadavg``) is printed before and after.

The WMT files are looked for in ``$RUST_BERTSCORE_WMT_DIR`` (default ``../shared/data/wmt``
beside the repository); without them, or without ray/pyspark, the benchmark says why and skips.

Usage: ``python -m benches.distributed [--pairs N] [--repeats N] [--idf] [--json PATH]``
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from benches.common import best_time, load_average, wmt_pairs, write_json


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=3003)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--idf", action="store_true", help="score with idf (a further pass)")
    parser.add_argument("--no-spark", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    pairs = wmt_pairs("distributed", args.pairs, files=("hyps.txt", "refs.txt"), cycle=True)
    if pairs is None:
        return 0
    try:
        import pandas as pd
        import ray
    except ImportError as e:
        print(f"skipped: {e.name} is not installed (pip install 'rust-bertscore[ray]')")
        return 0
    from rust_bertscore import BERTScorer, set_num_threads
    from rust_bertscore.distributed import score_dataset, score_spark

    cores = os.cpu_count() or 1
    cands, refs = pairs
    n = len(cands)
    opts = {"idf": args.idf}
    figures: dict[str, object] = {"pairs": n, "cores": cores, "idf": args.idf}
    print(f"{n} WMT pairs, {cores} cores, idf={args.idf}; load average before: {load_average()}")
    figures["load_before"] = load_average()

    set_num_threads(cores)
    scorer = BERTScorer(cache_bytes=0, idf=args.idf)

    def in_process() -> None:
        if args.idf:
            scorer.compute_idf(refs)
        scorer.score(cands, refs)

    base = best_time(in_process, args.repeats)
    figures["in_process_pairs_per_s"] = n / base
    print(f"in process (1 BERTScorer, {cores} threads): {n / base:8.1f} pairs/s")

    ray.init(
        num_cpus=cores, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR
    )
    ray.data.DataContext.get_current().enable_progress_bars = False
    frame = pd.DataFrame({"hyp": cands, "ref": refs})
    for actors in sorted({1, cores}):
        per_actor = cores // actors

        def on_ray(actors: int = actors, per_actor: int = per_actor) -> None:
            ds = ray.data.from_pandas(frame)
            score_dataset(
                ds, "hyp", "ref", concurrency=actors, num_cpus=per_actor, **opts
            ).to_pandas()

        t = best_time(on_ray, args.repeats)
        key = f"ray_{actors}_actors"
        figures[key + "_pairs_per_s"] = n / t
        figures[key + "_overhead"] = t / base - 1
        print(
            f"Ray, {actors} actor(s) x {per_actor} CPU: {n / t:8.1f} pairs/s, "
            f"overhead {100 * (t / base - 1):5.1f}% of in-process time"
        )
    ray.shutdown()

    if not args.no_spark:
        try:
            from pyspark.sql import SparkSession
        except ImportError:
            print("Spark skipped: pyspark is not installed")
        else:
            spark = (
                SparkSession.builder.master(f"local[{cores}]")
                .config("spark.ui.enabled", "false")
                .getOrCreate()
            )
            spark.sparkContext.setLogLevel("ERROR")
            df = spark.createDataFrame(frame).repartition(cores).cache()
            df.count()

            def on_spark() -> None:
                score_spark(df, "hyp", "ref", num_threads=1, **opts).toPandas()

            t = best_time(on_spark, args.repeats)
            figures["spark_pairs_per_s"] = n / t
            figures["spark_overhead"] = t / base - 1
            print(
                f"Spark local[{cores}], 1 thread per task: {n / t:8.1f} pairs/s, "
                f"overhead {100 * (t / base - 1):5.1f}% of in-process time"
            )
            spark.stop()
    figures["load_after"] = load_average()
    print(f"load average after: {load_average()}")
    write_json(args.json, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
