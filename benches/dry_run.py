#!/usr/bin/env python3
"""A dry run of 10^6 rows through the distributed code path, with a tiny model, in minutes.

Not a speed figure (the model is a random-weight 3-layer, 64-wide BERT): it checks that what a
10^7-row job does works at 10^6 rows and what memory it takes. The path is the engines' own,
without an engine: the rows cut into partitions and engine batches
(:func:`rust_bertscore.distributed.batching`), the first pass (:func:`~rust_bertscore.
distributed.plan.first_pass`: pair counts, IDF document frequencies, padding floors over every
row), then one :class:`~rust_bertscore.distributed.BERTScoreBatch` per worker scoring the
partitions in turn, with ``on_error="null"`` (one row in ``--bad-every`` is bad and must come back
null with its message) and an embedding store (``store=DIR``) shared by the workers, as a store
on a network filesystem is in a 10^7-row job.

Rows: each side is drawn (seeded) from a pool of ``--pool`` distinct texts of 6 to 12 words of
the model's vocabulary, so most texts occur several times and the store answers them: the store
and its look-ups are exercised at the job's row count while the encoder works on the pool only.

Prints and writes (``--json``): rows, partitions, rows per batch, the first pass's time, the
scoring time, the plan's pickled size (what every worker receives), the store's entries and
size, the bad rows, and the peak RSS of the driver and of the largest worker.

Usage: ``python -m benches.dry_run [--rows 1000000] [--model DIR] [--json PATH]``; the model
defaults to ``$RUST_BERTSCORE_TINY_DIR/bert`` (``../shared/reference/tiny/bert``), else the tests'
copy (tests/data/reference/tiny/bert).
"""

from __future__ import annotations

import argparse
import functools
import itertools
import multiprocessing
import os
import pickle
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benches.common import ROOT, load_average, write_json

WORKERS = 2


def model_dir() -> Path:
    """The tiny BERT: ``$RUST_BERTSCORE_TINY_DIR/bert``, the shared reference set's, or the
    tests' copy."""
    env = os.environ.get("RUST_BERTSCORE_TINY_DIR")
    for base in ([Path(env)] if env else []) + [
        ROOT.parent / "shared" / "reference" / "tiny",
        ROOT / "tests" / "data" / "reference" / "tiny",
    ]:
        if (base / "bert" / "model.safetensors").is_file():
            return base / "bert"
    raise SystemExit("dry_run: no tiny BERT checkpoint found (set RUST_BERTSCORE_TINY_DIR)")


def make_rows(model: Path, rows: int, pool: int, bad_every: int, seed: int = 0) -> dict[str, Any]:
    """The rows as a dict of columns (``hyp``, ``ref`` object arrays, ``row``); every
    ``bad_every``-th candidate is None (a bad row)."""
    words = [
        w
        for w in (model / "vocab.txt").read_text(encoding="utf-8").split()
        if w.isalpha() and not w.startswith("[")
    ]
    rng = np.random.default_rng(seed)

    def texts() -> np.ndarray:
        lengths = rng.integers(6, 13, size=pool)
        picks = rng.integers(0, len(words), size=int(lengths.sum()))
        out = np.empty(pool, dtype=object)
        cut = np.concatenate([[0], np.cumsum(lengths)])
        for i in range(pool):
            out[i] = " ".join(words[j] for j in picks[cut[i] : cut[i + 1]])
        return out

    hyp = texts()[rng.integers(0, pool, size=rows)]
    ref = texts()[rng.integers(0, pool, size=rows)]
    if bad_every:
        hyp[bad_every - 1 :: bad_every] = None
    return {"hyp": hyp, "ref": ref, "row": np.arange(rows, dtype=np.int64)}


_JOB: dict[str, Any] = {}
"""What the worker processes get from the driver when they start: the batches, then the scoring
operator."""


def _start_worker(job: dict[str, Any]) -> None:
    """A worker's initializer: keep the driver's ``job`` (batches, operator factory)."""
    _JOB.clear()
    _JOB.update(job)


def _map(fn: Any, where: tuple[int, int]) -> Any:
    part, batch = where
    return fn(_JOB["batches"][part][batch])


def _score_partition(part: int) -> tuple[int, np.ndarray, np.ndarray, int, bytes]:
    """One partition on a worker (its operator, built once per worker process, kept)."""
    from rust_bertscore.distributed.summary import partial_sums

    op = _JOB.setdefault("op", _JOB["make_op"]())
    index, scores, errors, sums = [], [], 0, []
    for batch in _JOB["batches"][part]:
        out = op(batch)
        index.append(out["row"])
        scores.append(np.stack([out["P"], out["R"], out["F"]]))
        errors += sum(e is not None for e in out["error"])
        sums.append(partial_sums([out["P"], out["R"], out["F"]]))
    op.scorer.store.flush()  # type: ignore[union-attr]
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return (
        rss,
        np.concatenate(index),
        np.concatenate(scores, axis=1),
        errors,
        b"".join(len(s).to_bytes(4, "little") + s for s in sums),
    )


def dry_run(
    rows: int,
    model: Path,
    store: Path,
    *,
    pool: int = 50_000,
    bad_every: int = 10_000,
    workers: int = WORKERS,
) -> dict[str, Any]:
    """Score ``rows`` rows as the engines do, on ``workers`` spawned worker processes (see the
    module docstring); the figures, the scores (``"scores"``: P, R, F in row order) and the
    rows (``"rows_data"``)."""
    from rust_bertscore import EmbeddingStore
    from rust_bertscore.distributed import BERTScoreBatch, Summary, batching
    from rust_bertscore.distributed.plan import first_pass

    t0 = time.perf_counter()
    data = make_rows(model, rows, pool, bad_every)
    sample = [t for t in data["hyp"][:2000] if t is not None]
    plan_b = batching(sample, workers, refs=list(data["ref"][:2000]), num_rows=rows)
    step = plan_b.rows_per_batch
    bounds = np.linspace(0, rows, plan_b.partitions + 1).astype(np.int64)
    _JOB.clear()
    _JOB["batches"] = [
        [
            {k: v[lo : min(lo + step, int(hi))] for k, v in data.items()}
            for lo in range(int(start), int(hi), step)
        ]
        for start, hi in itertools.pairwise(bounds)
    ]
    where = [(p, b) for p, part in enumerate(_JOB["batches"]) for b in range(len(part))]
    made = time.perf_counter() - t0
    # Spawned, not forked: a fork of a driver with threads (a test process, a notebook) can
    # inherit a lock another thread held and hang on it.
    context = multiprocessing.get_context("spawn")
    job = {"batches": _JOB["batches"]}

    t1 = time.perf_counter()
    with context.Pool(workers, initializer=_start_worker, initargs=(job,)) as procs:
        plan = first_pass(
            lambda fn: procs.imap(functools.partial(_map, fn), where),
            lambda: False,
            "hyp",
            "ref",
            "row",
            num_rows=rows,
            batch_size=64,
            floors=True,
            idf=True,
            model_type=str(model),
            lang=None,
            on_error="null",
        )
    planned = time.perf_counter() - t1
    _JOB["make_op"] = functools.partial(
        BERTScoreBatch,
        "hyp",
        "ref",
        index_col="row",
        plan=plan,
        on_error="null",
        num_threads=1,
        model_type=str(model),
        num_layers=3,
        idf=True,
        cache_bytes=0,
        store=str(store),
    )
    scores = np.full((3, rows), np.nan, dtype=np.float32)
    errors, sums, worker_rss = 0, [], 0
    t2 = time.perf_counter()
    job["make_op"] = _JOB["make_op"]
    with context.Pool(workers, initializer=_start_worker, initargs=(job,)) as procs:
        for rss, index, got, bad, packed in procs.imap_unordered(
            _score_partition, range(len(_JOB["batches"]))
        ):
            scores[:, index] = got
            errors += bad
            worker_rss = max(worker_rss, rss)
            while packed:
                size = int.from_bytes(packed[:4], "little")
                sums.append(packed[4 : 4 + size])
                packed = packed[4 + size :]
    scored = time.perf_counter() - t2
    shared = EmbeddingStore(store)
    info = shared.info()
    shared.close()
    summary = Summary.combine(sums)
    figures = {
        "rows": rows,
        "workers": workers,
        "partitions": plan_b.partitions,
        "rows_per_batch": step,
        "distinct_texts_per_side": pool,
        "bad_rows": errors,
        "rows_made_s": round(made, 2),
        "first_pass_s": round(planned, 2),
        "scoring_s": round(scored, 2),
        "total_s": round(time.perf_counter() - t0, 2),
        "plan_mb": round(len(pickle.dumps(plan, protocol=pickle.HIGHEST_PROTOCOL)) / 2**20, 2),
        "store_entries": int(info.entries),
        "store_mb": round(info.file_bytes / 2**20, 1),
        "mean_F": round(summary.F, 6),
        "scored_rows": summary.count,
        "driver_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "worker_peak_rss_mb": round(worker_rss / 1024, 1),
        "load": load_average(),
    }
    _JOB.clear()
    return {**figures, "scores": scores, "rows_data": data}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--pool", type=int, default=50_000)
    parser.add_argument("--bad-every", type=int, default=10_000)
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    model = args.model or model_dir()
    with tempfile.TemporaryDirectory() as tmp:
        got = dry_run(
            args.rows, model, Path(tmp) / "store", pool=args.pool, bad_every=args.bad_every
        )
    figures = {k: v for k, v in got.items() if k not in ("scores", "rows_data")}
    for key, value in figures.items():
        print(f"{key:>24}: {value}")
    want = args.rows // args.bad_every if args.bad_every else 0
    ok = figures["bad_rows"] == want and figures["scored_rows"] == args.rows - want
    print("dry run:", "passed" if ok else "FAILED")
    write_json(args.json, figures)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
