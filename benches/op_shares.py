#!/usr/bin/env python3
"""Where the encoder's time goes, by operator, on each shipped CPU path, and what that bounds.

``make bench-cpu-precisions`` says how near each path's *encoder* runs to its GEMM ceiling as a
whole. This bench looks inside: it scores the WMT pairs once per path, records the padded
batches the encoder sends to its runtime, and replays them on a profiled copy of the same
graph (ONNX Runtime's ``enable_profiling``, OpenVINO's ``PERF_COUNT``). Printed per path:

- each operator kind's seconds per pass and share (OpenVINO also names the kernel it picked,
  such as ``brgemm_avx512_amx_bf16``);
- the GEMM operators' own GFLOP/s (the projections and FFN, on padded tokens) against the
  ceiling of their instruction (``benches/gemm_limits.py``);
- **the bound**: the pass's time were the GEMMs to run at that ceiling and every other operator
  to take no time, and that bound's speed-up over the measured pass. A target past it cannot be
  met by tuning the runtime's settings; only fewer non-GEMM operators (fusion) can.

ONNX Runtime's fused ``Attention`` operator holds the Q, K and V projections with the attention
itself, so on that path the GEMM share counts ``MatMul`` (output projection and FFN) only and
the table says so.

Paths: ``ort-fp32``, ``ort-int8``, ``ov-fp32``, ``ov-bf16`` (where the CPU has BF16) and
``ov-int8``, the ones ``BERTScorer(runtime=..., precision=...)`` ships; OpenVINO paths need
``openvino`` (and ``nncf`` for int8). Without the WMT files the bench says so and exits 0.

Usage: ``python -m benches.op_shares [--pairs N] [--paths a,b] [--threads N] [--json PATH]``;
``make bench-op-shares``.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benches.common import (
    load_average,
    machine,
    print_table,
    projection_flops,
    wmt_pairs,
    write_json,
)
from benches.gemm_limits import gemm_rates, isa_flags
from benches.stage_shares import CEILINGS

PATHS = {
    "ort-fp32": ("onnxruntime", "fp32"),
    "ort-int8": ("onnxruntime", "int8"),
    "ov-fp32": ("openvino", "fp32"),
    "ov-bf16": ("openvino", "bf16"),
    "ov-int8": ("openvino", "int8"),
}
"""Shipped paths: name -> (runtime, precision)."""

GEMM_OPS = {
    "MatMul",
    "Gemm",
    "MatMulInteger",
    "MatMulIntegerToFloat",
    "DynamicQuantizeMatMul",
    "FullyConnected",
    "FullyConnectedCompressed",
}
"""Operator kinds that are projections or FFN matrices (ONNX Runtime's and OpenVINO's names)."""


def record_feeds(scorer: Any, hyps: list[str], refs: list[str]) -> tuple[list[dict], float]:
    """The batches ``scorer``'s encoder runs on one ``score(hyps, refs)`` (copied), and that
    pass's wall seconds."""
    session = scorer.runtime.encoder.session
    original = session.run
    feeds: list[dict] = []

    def recording(names: Any, batch: dict, *args: Any, **kwargs: Any) -> Any:
        feeds.append({k: np.array(v, copy=True) for k, v in batch.items()})
        return original(names, batch, *args, **kwargs)

    session.run = recording
    try:
        t0 = time.perf_counter()
        scorer.score(hyps, refs)
        wall = time.perf_counter() - t0
    finally:
        del session.run
    return feeds, wall


def ort_profile(graph: Path, feeds: list[dict], threads: int | None) -> dict[str, float]:
    """Seconds per operator kind of one replay of ``feeds`` on ONNX Runtime (after one
    unprofiled warm replay, so shapes seen once are not charged)."""
    import onnxruntime as ort

    from rust_bertscore.stages.encoder import DISABLED_OPTIMIZERS, session_options

    with tempfile.TemporaryDirectory() as tmp:
        options = session_options(threads)
        options.enable_profiling = True
        options.profile_file_prefix = str(Path(tmp) / "ort")
        session = ort.InferenceSession(
            str(graph),
            options,
            providers=["CPUExecutionProvider"],
            disabled_optimizers=list(DISABLED_OPTIMIZERS),
        )
        for _ in range(2):
            for feed in feeds:
                session.run(None, feed)
        events = json.loads(Path(session.end_profiling()).read_text())
    spent: collections.Counter[str] = collections.Counter()
    for event in events:
        if event.get("cat") == "Node" and event.get("name", "").endswith("_kernel_time"):
            spent[event["args"]["op_name"]] += event["dur"] / 1e6
    return {op: seconds / 2 for op, seconds in spent.items()}  # two profiled replays


def ov_profile(
    graph: Path, precision: str, feeds: list[dict], threads: int | None
) -> dict[str, float]:
    """Seconds per ``operator kind / kernel`` of one replay of ``feeds`` on OpenVINO, compiled as
    the shipped path compiles it, after one unprofiled warm replay."""
    import openvino as ov

    from rust_bertscore.stages import openvino_encoder

    config: dict[str, Any] = {
        "INFERENCE_PRECISION_HINT": openvino_encoder.INFERENCE_PRECISIONS[precision],
        "PERF_COUNT": True,
    }
    if precision == "int8":
        config["DYNAMIC_QUANTIZATION_GROUP_SIZE"] = openvino_encoder.DYNAMIC_QUANTIZATION_GROUP
    if threads:
        config["INFERENCE_NUM_THREADS"] = threads
    core = ov.Core()
    request = core.compile_model(core.read_model(str(graph)), "CPU", config).create_infer_request()
    for feed in feeds:
        request.infer(feed)
    spent: collections.Counter[str] = collections.Counter()
    for feed in feeds:
        request.infer(feed)
        for node in request.profiling_info:
            if node.status == node.Status.EXECUTED:
                spent[f"{node.node_type} / {node.exec_type}"] += node.real_time.total_seconds()
    return dict(spent)


def gemm_flops(scorer: Any, feeds: list[dict]) -> float:
    """FLOPs of the projections and FFN over every padded token of ``feeds``."""
    tokens = sum(feed["input_ids"].size for feed in feeds)
    return float(scorer.num_layers * sum(projection_flops(scorer.runtime.config)) * tokens)


def measure_path(
    name: str, hyps: list[str], refs: list[str], threads: int | None, gemm: dict[str, float]
) -> dict[str, Any] | str:
    """One path's operator table and bound, or why it was skipped."""
    from rust_bertscore import BERTScorer

    runtime, precision = PATHS[name]
    try:
        scorer = BERTScorer(runtime=runtime, precision=precision, cache_bytes=0)
    except Exception as e:  # a runtime or capability this host lacks
        return f"skipped: {e}"
    scorer.score(hyps[:64], refs[:64])  # warm-up: load and compile
    feeds, wall = record_feeds(scorer, hyps, refs)
    graph = scorer.runtime.encoder.graph
    if graph is None:
        return "skipped: the encoder's graph is held in memory, not in a file"
    if runtime == "onnxruntime":
        ops = ort_profile(Path(graph), feeds, threads)
    else:
        ops = ov_profile(Path(graph), precision, feeds, threads)
    encoder_s = sum(ops.values())
    gemm_s = sum(s for op, s in ops.items() if op.split(" / ")[0] in GEMM_OPS)
    all_flops = gemm_flops(scorer, feeds)
    # ONNX Runtime's fused Attention operator holds the Q, K and V projections.
    fused_qkv = runtime == "onnxruntime" and "Attention" in ops
    qkv, rest = projection_flops(scorer.runtime.config)
    flops = all_flops * rest / (qkv + rest) if fused_qkv else all_flops
    ceiling = gemm.get(CEILINGS[name])
    result: dict[str, Any] = {
        "pass_s": wall,
        "encoder_s": encoder_s,
        "ops": dict(sorted(ops.items(), key=lambda kv: -kv[1])),
        "gemm_s": gemm_s,
        "gemm_gflops": flops / gemm_s / 1e9 if gemm_s else None,
        "qkv_in_attention": fused_qkv,
        "ceiling_gflops": ceiling,
    }
    if ceiling:
        bound = all_flops / (ceiling * 1e9) + max(0.0, wall - encoder_s)
        result["bound_s"] = bound
        result["bound_speedup"] = wall / bound
    return result


def print_path(name: str, r: dict[str, Any]) -> None:
    """One path's operators, its GEMMs against their ceiling, and its bound."""
    encoder_s = r["encoder_s"]
    rows = [(op, f"{s:.3f}", f"{s / encoder_s:.1%}") for op, s in r["ops"].items() if s >= 0.001]
    print(f"\n{name}: a pass {r['pass_s']:.2f} s, {encoder_s:.2f} s of it in operators")
    print_table(("operator", "s/pass", "share"), rows, right=(1, 2))
    note = (
        " (output projection and FFN: Q, K, V are inside Attention)"
        if r["qkv_in_attention"]
        else ""
    )
    rate, ceiling = r["gemm_gflops"], r["ceiling_gflops"]
    if rate:
        against = f", {rate / ceiling:.2f} of its ceiling ({ceiling:.0f})" if ceiling else ""
        share = r["gemm_s"] / encoder_s
        print(f"GEMMs{note}: {share:.0%} of the encoder, {rate:.0f} GFLOP/s{against}")
    if "bound_s" in r:
        print(
            f"bound: {r['bound_s']:.2f} s a pass with every GEMM at the ceiling and no other "
            f"operator, {r['bound_speedup']:.2f}x this pass"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=2700, help="WMT pairs (default 2700)")
    parser.add_argument("--paths", default=",".join(PATHS), help="comma-separated paths")
    parser.add_argument("--threads", type=int, default=None, help="encoder threads")
    parser.add_argument("--no-gemm", action="store_true", help="skip the GEMM ceilings")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = parser.parse_args(argv)
    names = [p for p in args.paths.split(",") if p]
    unknown = [p for p in names if p not in PATHS]
    if unknown:
        parser.error(f"unknown paths {unknown}; known: {', '.join(PATHS)}")
    pairs = wmt_pairs("op_shares", args.pairs)
    if pairs is None:
        return 0
    hyps, refs = pairs
    print(f"host: {machine()}; load {load_average()}")
    print("ISA: " + ", ".join(k for k, v in isa_flags().items() if v))
    gemm: dict[str, float] = {} if args.no_gemm else gemm_rates(args.threads)
    for key, value in gemm.items():
        print(f"  ceiling {key:14s} {value:7.0f} GFLOP/s")
    results: dict[str, Any] = {"machine": machine(), "pairs": len(hyps), "gemm_gflops": gemm}
    for name in names:
        r = measure_path(name, hyps, refs, args.threads, gemm)
        results[name] = r
        if isinstance(r, str):
            print(f"\n{name}: {r}")
        else:
            print_path(name, r)
    results["load_after"] = load_average()
    write_json(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
