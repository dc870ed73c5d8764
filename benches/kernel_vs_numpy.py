"""The Rust kernel against the machine's sgemm peak, measured in one process.

NumPy's float32 matrix product (its BLAS sgemm) sets the peak: the best GFLOP/s over a few
square sizes and a (7680 x 384) @ (384 x 7680) product (the all-pairs shape below, packed). The
kernel is then timed on

* all pairs: ``pairwise_embeddings`` of 256 x 256 texts of 30 x 384 float32;
* one-to-one: ``score_embeddings`` of 10,000 pairs of 30 x 384 float32 (drawn from 2,000
  distinct arrays, every pair computed in full);

counting ``2 * 30 * 30 * 384`` flops per pair (the similarity matrix). NumPy and the kernel use
the same number of threads (both default to all CPUs; set ``OMP_NUM_THREADS`` /
``OPENBLAS_NUM_THREADS`` and ``RUST_BERTSCORE_NUM_THREADS`` together to change it). The noise of
a shared machine cancels best in the ratios, so read the "of peak" column.

Run: ``make bench-kernel`` or ``python -m benches.kernel_vs_numpy`` (about 20 s).
"""

from __future__ import annotations

import os

import numpy as np

import rust_bertscore
from benches.common import best_time, print_table

TOKENS = 30
DIM = 384
ALL_PAIRS_SIDE = 256
PAIRS = 10_000
POOL = 2_000


def sgemm_peak(rng: np.random.Generator) -> tuple[float, str]:
    """Best float32 matmul GFLOP/s over a few shapes, and the shape that reached it."""
    shapes = [(n, n, n) for n in (1024, 1536, 2048)]
    shapes.append((ALL_PAIRS_SIDE * TOKENS, DIM, ALL_PAIRS_SIDE * TOKENS))
    best, where = 0.0, ""
    for m, k, n in shapes:
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        out = np.empty((m, n), dtype=np.float32)

        def product(a: np.ndarray = a, b: np.ndarray = b, out: np.ndarray = out) -> None:
            np.matmul(a, b, out=out)

        secs = best_time(product, 5)
        gflops = 2.0 * m * k * n / secs / 1e9
        if gflops > best:
            best, where = gflops, f"({m}x{k})@({k}x{n})"
    return best, where


def main() -> None:
    rng = np.random.default_rng(0)
    env = {
        k: os.environ[k]
        for k in (
            "OMP_NUM_THREADS",
            "OPENBLAS_NUM_THREADS",
            "MKL_NUM_THREADS",
            "RUST_BERTSCORE_NUM_THREADS",
        )
        if k in os.environ
    }
    threads = rust_bertscore.get_num_threads()
    print(f"rust_bertscore threads: {threads}; CPUs: {os.cpu_count()}; env: {env or 'none set'}")

    peak, where = sgemm_peak(rng)

    def texts(n: int) -> list[np.ndarray]:
        return [rng.uniform(-1, 1, (TOKENS, DIM)).astype(np.float32) for _ in range(n)]

    cands, refs = texts(ALL_PAIRS_SIDE), texts(ALL_PAIRS_SIDE)
    flops_per_pair = 2.0 * TOKENS * TOKENS * DIM
    rows = [("numpy sgemm (peak)", where, peak)]

    secs = best_time(lambda: rust_bertscore.pairwise_embeddings(cands, refs), 3)
    rows.append(
        (
            "pairwise_embeddings",
            f"{ALL_PAIRS_SIDE}x{ALL_PAIRS_SIDE} texts of {TOKENS}x{DIM}",
            ALL_PAIRS_SIDE**2 * flops_per_pair / secs / 1e9,
        )
    )

    pool = texts(POOL)
    one_c = [pool[k % POOL] for k in range(PAIRS)]
    one_r = [pool[(k * 7 + 1) % POOL] for k in range(PAIRS)]
    secs = best_time(lambda: rust_bertscore.score_embeddings(one_c, one_r), 3)
    rows.append(
        (
            "score_embeddings",
            f"{PAIRS} pairs of {TOKENS}x{DIM}",
            PAIRS * flops_per_pair / secs / 1e9,
        )
    )

    table = [(name, shape, f"{gflops:.1f}", f"{gflops / peak:.2f}") for name, shape, gflops in rows]
    print_table(("", "shape", "GFLOP/s", "of peak"), table, right=(2, 3))


if __name__ == "__main__":
    main()
