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

On an x86 CPU with AVX2 (Linux), the measurement is then repeated in a subprocess capped to
AVX2 on both sides (:data:`AVX2_CAP`: the kernel's AVX2 + FMA path, OpenBLAS's Haswell sgemm),
so that an AVX-512 host also shows how the AVX2 path does against an AVX2 peak; a last table
puts the two "of peak" columns side by side. The cap is skipped when ``RUST_BERTSCORE_ISA`` is
already set (the first table is then the capped one).

Run: ``make bench-kernel`` or ``python -m benches.kernel_vs_numpy`` (about 40 s; ``--json``
prints the rows as JSON instead, without the AVX2 rerun).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys

import numpy as np

import rust_bertscore
from benches.common import ROOT, best_time, print_table
from benches.gemm_limits import isa_flags

TOKENS = 30
DIM = 384
ALL_PAIRS_SIDE = 256
PAIRS = 10_000
POOL = 2_000

AVX2_CAP = {"RUST_BERTSCORE_ISA": "avx2", "OPENBLAS_CORETYPE": "Haswell"}
"""The environment of the AVX2 rerun: the kernel's AVX2 path, OpenBLAS's AVX2 sgemm (NumPy's
OpenBLAS picks its kernels at run time; another BLAS ignores the variable)."""

Row = tuple[str, str, float]
"""A line of the table: what was timed, its shape, GFLOP/s."""


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


def measure() -> list[Row]:
    """The sgemm peak, then the kernel's all-pairs and one-to-one rows, in GFLOP/s."""
    rng = np.random.default_rng(0)
    peak, where = sgemm_peak(rng)

    def texts(n: int) -> list[np.ndarray]:
        return [rng.uniform(-1, 1, (TOKENS, DIM)).astype(np.float32) for _ in range(n)]

    cands, refs = texts(ALL_PAIRS_SIDE), texts(ALL_PAIRS_SIDE)
    flops_per_pair = 2.0 * TOKENS * TOKENS * DIM
    rows: list[Row] = [("numpy sgemm (peak)", where, peak)]

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
    return rows


def print_rows(rows: list[Row]) -> None:
    """``rows`` as a table, each against the first (the peak)."""
    peak = rows[0][2]
    table = [(name, shape, f"{gflops:.1f}", f"{gflops / peak:.2f}") for name, shape, gflops in rows]
    print_table(("", "shape", "GFLOP/s", "of peak"), table, right=(2, 3))


def avx2_capped() -> list[Row] | None:
    """:func:`measure` rerun in a subprocess under :data:`AVX2_CAP`; None where the CPU is not
    x86 with AVX2 (as ``/proc/cpuinfo`` says) or ``RUST_BERTSCORE_ISA`` is already set."""
    x86 = platform.machine().lower() in ("x86_64", "amd64")
    if not x86 or not isa_flags()["avx2"] or "RUST_BERTSCORE_ISA" in os.environ:
        return None
    done = subprocess.run(
        [sys.executable, "-m", "benches.kernel_vs_numpy", "--json"],
        env={**os.environ, **AVX2_CAP},
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return [(name, shape, float(gflops)) for name, shape, gflops in json.loads(done.stdout)]


def main() -> None:
    parser = argparse.ArgumentParser(description="The Rust kernel against NumPy's sgemm peak.")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON, no rerun")
    if parser.parse_args().json:
        print(json.dumps(measure()))
        return
    env = {
        k: os.environ[k]
        for k in (
            "OMP_NUM_THREADS",
            "OPENBLAS_NUM_THREADS",
            "MKL_NUM_THREADS",
            "RUST_BERTSCORE_NUM_THREADS",
            "RUST_BERTSCORE_ISA",
            "OPENBLAS_CORETYPE",
        )
        if k in os.environ
    }
    threads = rust_bertscore.get_num_threads()
    print(f"rust_bertscore threads: {threads}; CPUs: {os.cpu_count()}; env: {env or 'none set'}")
    native = measure()
    print_rows(native)

    capped = avx2_capped()
    if capped is None:
        return
    cap = ", ".join(f"{k}={v}" for k, v in AVX2_CAP.items())
    print(f"\nAVX2 on both sides ({cap}):")
    print_rows(capped)
    print("\nOf peak, native and AVX2:")
    side_by_side = [
        (name, f"{gflops / native[0][2]:.2f}", f"{avx2 / capped[0][2]:.2f}")
        for (name, _, gflops), (_, _, avx2) in zip(native[1:], capped[1:], strict=True)
    ]
    print_table(("", "native", "AVX2"), side_by_side, right=(1, 2))


if __name__ == "__main__":
    main()
