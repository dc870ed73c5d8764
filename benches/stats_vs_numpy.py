"""The Rust statistics against vectorised NumPy, timed in one process.

For 100,000 segment scores and 10,000 resamples (or trials), times

* ``bootstrap_ci``: percentile bootstrap interval of one system's mean. NumPy: draw a block of
  resamples' indices with ``Generator.integers``, gather, mean over each row, then the
  percentiles;
* ``paired_bootstrap``: one system against a baseline, the same indices for both. NumPy: as
  above, gathering both arrays with one index block;
* ``paired_permutation``: approximate randomisation. NumPy: a block of random sign rows times
  the difference vector (a float64 matrix-vector product);

and prints each wall time and the ratio NumPy / Rust, and the same for the process's CPU time
(summed over threads): on a loaded machine the wall times stretch with the load, while the CPU
times say what the work costs (Rust's wall time on an idle machine is about its CPU time divided
by the threads). NumPy works in blocks of ``BLOCK`` resamples
(one (BLOCK x segments) index array at a time: all 10,000 at once would take 8 GB). Both sides
use every CPU by default (NumPy's gathers and ``Generator`` are single-threaded; its BLAS may
use several threads). The machine's load is printed with the results: on a shared machine the
ratio is the figure to read.

Run (build the extension in release mode first, ``maturin develop --release`` or ``make
install``): ``make bench-stats`` or ``python -m benches.stats_vs_numpy`` (about a minute;
``--quick`` times NumPy on a tenth of the resamples and scales its time up).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

import numpy as np

import rust_bertscore as rb
from benches.common import best_wall_cpu, load_average, print_table

BLOCK = 100
"""Resamples NumPy draws at a time."""


def once(f: Callable[[], object]) -> tuple[float, float]:
    w0, c0 = time.perf_counter(), time.process_time()
    f()
    return time.perf_counter() - w0, time.process_time() - c0


# -- NumPy --------------------------------------------------------------------------------------


def np_bootstrap_ci(x: np.ndarray, resamples: int, seed: int) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    n = len(x)
    means = np.empty(resamples)
    for start in range(0, resamples, BLOCK):
        stop = min(start + BLOCK, resamples)
        idx = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = x[idx].mean(axis=1, dtype=np.float64)
    lo, hi = np.quantile(means, [0.025, 0.975])
    return float(lo), float(hi)


def np_paired_bootstrap(
    a: np.ndarray, b: np.ndarray, resamples: int, seed: int
) -> tuple[float, float, float]:
    rng = np.random.default_rng(seed)
    n = len(a)
    deltas = np.empty(resamples)
    for start in range(0, resamples, BLOCK):
        stop = min(start + BLOCK, resamples)
        idx = rng.integers(0, n, size=(stop - start, n))
        deltas[start:stop] = b[idx].mean(axis=1, dtype=np.float64) - a[idx].mean(
            axis=1, dtype=np.float64
        )
    lo, hi = np.quantile(deltas, [0.025, 0.975])
    p = (np.count_nonzero(deltas <= 0) + 1) / (resamples + 1)
    return float(lo), float(hi), float(p)


def np_paired_permutation(a: np.ndarray, b: np.ndarray, trials: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    d = b.astype(np.float64) - a.astype(np.float64)
    observed = abs(d.sum())
    count = 0
    for start in range(0, trials, BLOCK):
        stop = min(start + BLOCK, trials)
        signs = 1.0 - 2.0 * rng.integers(0, 2, size=(stop - start, len(d)), dtype=np.int8)
        count += int(np.count_nonzero(np.abs(signs @ d) >= observed))
    return (count + 1) / (trials + 1)


# -- the run ------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--segments", type=int, default=100_000)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3, help="Rust timings: best of N (3)")
    parser.add_argument(
        "--quick", action="store_true", help="time NumPy on a tenth of the resamples, scaled up"
    )
    args = parser.parse_args()
    n, resamples = args.segments, args.resamples
    np_resamples = max(BLOCK, resamples // 10) if args.quick else resamples
    scale = resamples / np_resamples

    rng = np.random.default_rng(0)
    # float32 scores, as score() returns them (the kernel then resamples float32 copies).
    a = rng.beta(8, 3, size=n).astype(np.float32)
    b = np.clip(a + rng.normal(0.001, 0.05, size=n), 0.0, 1.0).astype(np.float32)

    env = {
        k: os.environ[k]
        for k in ("OMP_NUM_THREADS", "RUST_BERTSCORE_NUM_THREADS")
        if k in os.environ
    }
    print(
        f"{n} segments, {resamples} resamples/trials; rust_bertscore threads: "
        f"{rb.get_num_threads()}; CPUs: {os.cpu_count()}; env: {env or 'none set'}"
    )
    print(f"load average before: {load_average()}")
    if args.quick:
        print(f"NumPy timed on {np_resamples} resamples and scaled x{scale:g}")

    cases = [
        (
            "bootstrap_ci",
            lambda: rb.bootstrap_ci(a, 0.95, resamples, seed=1),
            lambda: np_bootstrap_ci(a, np_resamples, 1),
        ),
        (
            "paired_bootstrap",
            lambda: rb.paired_bootstrap(a, b, resamples, seed=1),
            lambda: np_paired_bootstrap(a, b, np_resamples, 1),
        ),
        (
            "paired_permutation",
            lambda: rb.paired_permutation(a, b, resamples, seed=1),
            lambda: np_paired_permutation(a, b, np_resamples, 1),
        ),
    ]
    rows = []
    for name, rust, numpy in cases:
        rust_s, rust_cpu = best_wall_cpu(rust, args.repeats)
        numpy_s, numpy_cpu = (t * scale for t in once(numpy))
        rows.append(
            (
                name,
                f"{rust_s:.3f}",
                f"{numpy_s:.2f}",
                f"{numpy_s / rust_s:.1f}x",
                f"{rust_cpu:.3f}",
                f"{numpy_cpu:.2f}",
                f"{numpy_cpu / rust_cpu:.1f}x",
            )
        )
    header = ("", "Rust s", "NumPy s", "NumPy/Rust", "Rust CPU s", "NumPy CPU s", "CPU ratio")
    print_table(header, rows, right=range(1, 7))

    # The two implementations estimate the same numbers (different random draws).
    r = rb.paired_bootstrap(a, b, resamples, seed=1)
    lo, hi, p = np_paired_bootstrap(a, b, min(resamples, 2000), 2)
    print(
        f"check, paired_bootstrap: Rust delta CI [{r.ci_low:.5f}, {r.ci_high:.5f}] "
        f"p {r.p_value:.4f}; NumPy (2000 resamples) [{lo:.5f}, {hi:.5f}] p {p:.4f}"
    )
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
