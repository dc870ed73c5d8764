"""The CPU's GEMM ceilings, measured with the libraries the precision paths use.

``M x K @ K x N`` products (2,048 x 1,024 @ 1,024 x 4,096, the size of a MiniLM batch's FFN
GEMM scaled up), best of 10 calls, in GFLOP/s: NumPy's sgemm (OpenBLAS, into a preallocated
output), and OpenVINO's CPU plugin in f32, bf16 (``INFERENCE_PRECISION_HINT``) and int8 (the
MatMuls quantised by NNCF, u8 x s8). OpenVINO runs a chain of :data:`CHAIN` products in one
model (``K -> N -> K ...``), inputs and outputs shared, not copied: with one product a call
also converted and copied 40 MB of input and output, which held bf16 and int8 to about two
thirds of what their GEMMs do inside a model (``benches/op_shares.py`` measured MiniLM's bf16
projections at 1.5x the single product's rate). These are the "limit" rows of
``docs/performance.md``'s CPU precision table: what the best instruction this processor exposes
does in the library used, beside fp32.

Run alone: ``python -m benches.gemm_limits [--threads N]``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import time
from collections.abc import Callable

import numpy as np

M, K, N = 2048, 1024, 4096
"""The product's shape."""

CHAIN = 8
"""Products in OpenVINO's model, alternately ``K x N`` and ``N x K``."""

ISA_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_bf16", "amx_int8")
"""The flags that decide which path is fast."""


def isa_flags() -> dict[str, bool]:
    """Which of :data:`ISA_FLAGS` ``/proc/cpuinfo`` reports (all False where it cannot be read).

    Examples
    --------
    >>> from benches.gemm_limits import isa_flags
    >>> sorted(isa_flags())[:2]
    ['amx_bf16', 'amx_int8']
    """
    flags: set[str] = set()
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as f:
        for line in f:
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    return {name: name in flags for name in ISA_FLAGS}


def _rate(run: Callable[[], object], products: int = 1, repeats: int = 10) -> float:
    run()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - t0)
    return products * 2 * M * K * N / best / 1e9


def gemm_rates(threads: int | None = None) -> dict[str, float]:
    """GFLOP/s of the product: ``numpy-f32`` always; ``openvino-f32``, ``openvino-bf16`` (where
    the CPU plugin offers BF16) and ``openvino-int8`` (with nncf) where they are installed."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((M, K)).astype(np.float32)
    w = rng.standard_normal((K, N)).astype(np.float32)
    y = np.empty((M, N), np.float32)
    rates = {"numpy-f32": _rate(lambda: np.matmul(x, w, out=y))}
    try:
        import openvino as ov
        from openvino import opset13 as ops
    except ImportError:
        return rates

    w_forth = (w / np.float32(np.sqrt(K))).astype(np.float32)
    w_back = (rng.standard_normal((N, K)) / np.sqrt(N)).astype(np.float32)

    def model() -> ov.Model:
        p = ops.parameter([M, K], np.float32, name="x")
        h = p
        for i in range(CHAIN):
            h = ops.matmul(h, ops.constant(w_forth if i % 2 == 0 else w_back), False, False)
        return ov.Model([h], [p])

    core = ov.Core()
    capabilities = core.get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    base: dict = {"INFERENCE_NUM_THREADS": threads} if threads else {}
    variants = [("openvino-f32", model(), "f32")]
    if "BF16" in capabilities:
        variants.append(("openvino-bf16", model(), "bf16"))
    try:
        import nncf

        with contextlib.redirect_stdout(io.StringIO()):  # its progress bar
            quantized = nncf.quantize(model(), nncf.Dataset([x]), subset_size=1)
        variants.append(("openvino-int8", quantized, "f32"))
    except ImportError:
        pass
    for name, m, hint in variants:
        compiled = core.compile_model(m, "CPU", {**base, "INFERENCE_PRECISION_HINT": hint})
        request = compiled.create_infer_request()

        def infer(r: ov.InferRequest = request) -> object:
            return r.infer({0: x}, share_inputs=True, share_outputs=True)

        rates[name] = _rate(infer, CHAIN)
    return rates


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, help="OpenVINO threads (default: all cores)")
    args = parser.parse_args()
    print("ISA:", " ".join(k for k, v in isa_flags().items() if v))
    for name, rate in gemm_rates(args.threads).items():
        print(f"{name:14s} {rate:7.0f} GFLOP/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
