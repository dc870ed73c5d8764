#!/usr/bin/env python3
"""int8 variants of one model, each against fp32 on the WMT pairs: accuracy and speed.

Every variant is an int8 graph made from the same fused fp32 graph; each is scored on the
WMT pairs with the package's scorer (its encoder swapped for the variant's), and compared
pair by pair with the fp32 scorer's F: mean and max |dF| and Pearson r. Speed: pairs/s, the
variants timed in turns (``--rounds``), best kept, so a shared machine's drift hits all alike.

Variants are named on the command line (``--variants``), see :data:`VARIANTS`.
Calibration (for smoothing and static quantisation) uses texts that are not the benchmark
pairs: the repository's example texts (``examples/hyps.txt`` and ``refs.txt``, 16 sentences)
unless ``--calibrate-on-wmt`` (the last 500 WMT references, for comparison).

SmoothQuant lives in :mod:`benches.smooth` (bench-only code: it is not part of the wheel).

Usage: ``python -m benches.int8_levers [--pairs N] [--rounds N] [--variants a,b,...]
[--model DIR --layer L] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from benches import smooth
from benches.common import (
    ROOT,
    default_model_dir,
    print_table,
    read_lines,
    scorer_on_graph,
    wmt_dir,
    wmt_pairs,
    write_json,
)

if TYPE_CHECKING:
    from rust_bertscore import BERTScorer
    from rust_bertscore.stages.tokenization.tokenizer import TextTokenizer

EXAMPLES = ROOT / "examples"

Batch = tuple[np.ndarray, np.ndarray]
"""(input_ids, attention_mask) of one calibration batch."""

VARIANTS = {
    "dynamic-all": "per channel, every projection int8",
    "dynamic-policy": "per channel, layers 0-1 FFN output fp32 (policy v1)",
    "smooth-0.5": "SmoothQuant alpha 0.5 on every projection, all int8",
    "smooth-0.5-policy": "SmoothQuant alpha 0.5 + layers 0-1 FFN output fp32",
    "smooth-0.6": "SmoothQuant alpha 0.6, all int8",
    "smooth-0.7": "SmoothQuant alpha 0.7, all int8",
    "smooth-0.8": "SmoothQuant alpha 0.8, all int8",
    "smooth-ffnout-0.5": "SmoothQuant alpha 0.5 on FFN outputs only, all int8",
    "per-token": "MatMuls int8 with one activation scale per token; QKV as QAttention",
    "per-token-policy": "per-token, layers 0-1 FFN output fp32",
    "per-token-attn-fp32": "per-token MatMuls, QKV projection fp32",
    "weights-only": "diagnostic: weights rounded to int8, computed in fp32",
    "static-qdq": "static (calibrated, MinMax) QDQ quantisation, per channel",
}


def make_variant(
    name: str, fp32: Path, out: Path, calib: list[Batch], alpha_calib: dict[str, dict]
) -> Path:
    """The int8 graph of variant ``name`` (see :data:`VARIANTS`) made from ``fp32`` at ``out``."""
    import onnx

    from rust_bertscore import convert

    if name == "dynamic-all":
        return convert.quantize_int8(fp32, out, nodes_to_exclude=[])
    if name == "dynamic-policy":
        return convert.quantize_int8(fp32, out)
    if name.startswith("smooth"):
        parts = name.split("-")
        alpha = float(next(p for p in parts if p[0].isdigit()))
        model = onnx.load(str(fp32))
        exclude = convert.int8_fp32_nodes(model) if name.endswith("policy") else []
        nodes = smooth.smoothable_nodes(model, exclude)
        if "ffnout" in name:
            nodes = [n for n in nodes if "output.dense" in n.name]
        key = "maxima"
        if key not in alpha_calib:
            tensors = sorted({n.input[0] for n in smooth.smoothable_nodes(model)})
            alpha_calib[key] = smooth.activation_maxima(model, tensors, calib)
        smooth.smooth(model, alpha_calib[key], nodes, alpha)
        smoothed = out.with_name(out.stem + ".smoothed.onnx")
        onnx.save(model, str(smoothed))
        return convert.quantize_int8(smoothed, out, nodes_to_exclude=exclude)
    if name.startswith("per-token"):
        exclude = convert.int8_fp32_nodes(onnx.load(str(fp32))) if name.endswith("policy") else []
        if "attn-fp32" in name:
            return convert.quantize_int8(
                fp32, out, activations="per-token", nodes_to_exclude=exclude
            )
        staged = out.with_name(out.stem + ".pt.onnx")
        convert.quantize_int8(fp32, staged, activations="per-token", nodes_to_exclude=exclude)
        return convert.quantize_int8(staged, out, nodes_to_exclude=[], op_types=("Attention",))
    if name.startswith("weights-only"):
        # Diagnostic: weights rounded to int8 per output channel, computed in fp32.
        from onnx import numpy_helper

        model = onnx.load(str(fp32))
        exclude = convert.int8_fp32_nodes(model) if name.endswith("policy") else []
        weights = {t.name: t for t in model.graph.initializer}
        for node in smooth.smoothable_nodes(model, exclude):
            t = weights[node.input[1]]
            w = numpy_helper.to_array(t)
            scale = np.maximum(np.abs(w).max(axis=0), 1e-12) / 127.0
            t.CopyFrom(
                numpy_helper.from_array((np.round(w / scale) * scale).astype(np.float32), t.name)
            )
        onnx.save(model, str(out))
        return out
    if name == "static-qdq":
        from onnxruntime.quantization import (
            CalibrationDataReader,
            QuantFormat,
            QuantType,
            quantize_static,
        )

        class Reader(CalibrationDataReader):
            def __init__(self) -> None:
                self.it = iter(calib)

            def get_next(self) -> dict[str, np.ndarray] | None:
                batch = next(self.it, None)
                if batch is None:
                    return None
                return {"input_ids": batch[0], "attention_mask": batch[1]}

        quantize_static(
            str(fp32),
            str(out),
            Reader(),
            quant_format=QuantFormat.QDQ,
            op_types_to_quantize=["MatMul"],
            per_channel=True,
            activation_type=QuantType.QUInt8,
            weight_type=QuantType.QInt8,
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
        return out
    raise SystemExit(f"unknown variant {name!r}; known: {', '.join(VARIANTS)}")


def calibration_batches(
    tokenizer: TextTokenizer, texts: list[str], pad_id: int, rows: int = 32
) -> list[Batch]:
    """``texts`` as padded (input_ids, attention_mask) batches of ``rows`` rows."""
    ids = tokenizer.encode(texts)
    batches = []
    for lo in range(0, len(ids), rows):
        chunk = ids[lo : lo + rows]
        width = max(len(t) for t in chunk)
        input_ids = np.full((len(chunk), width), pad_id, np.int64)
        mask = np.zeros((len(chunk), width), np.int64)
        for i, t in enumerate(chunk):
            input_ids[i, : len(t)] = t
            mask[i, : len(t)] = 1
        batches.append((input_ids, mask))
    return batches


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=3003)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--variants", default="dynamic-policy,smooth-0.5")
    parser.add_argument("--model", help="checkpoint directory (default: all-MiniLM-L6-v2)")
    parser.add_argument("--layer", type=int, default=6)
    parser.add_argument("--calibrate-on-wmt", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    pairs = wmt_pairs("int8_levers", args.pairs)
    if pairs is None:
        return 0
    hyps, refs = pairs

    import rust_bertscore as rb
    from rust_bertscore import convert

    model_dir = Path(args.model) if args.model else default_model_dir()
    base = rb.BERTScorer(model_type=str(model_dir), num_layers=args.layer, cache_bytes=0)
    runtime = base.runtime
    pad = runtime.encoder.pad_id
    if args.calibrate_on_wmt:
        all_refs = read_lines(wmt_dir() / "refs_long.txt", 3003)
        texts = all_refs[-500:]
    else:
        texts = [line for f in ("hyps.txt", "refs.txt") for line in read_lines(EXAMPLES / f, 100)]
    calib = calibration_batches(runtime.tokenizer, texts, pad)

    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="rbs-int8-") as tmp_name:
        tmp = Path(tmp_name)
        fp32_graph = convert.export_onnx(model_dir, tmp / "fp32.onnx", args.layer, fused=True)
        scorers: dict[str, BERTScorer] = {"fp32": base}
        memo: dict[str, dict] = {}
        for name in [v.strip() for v in args.variants.split(",") if v.strip()]:
            t0 = time.perf_counter()
            graph = make_variant(name, fp32_graph, tmp / f"{name}.onnx", calib, memo)
            made = time.perf_counter() - t0
            scorer = rb.BERTScorer(model_type=str(model_dir), num_layers=args.layer, cache_bytes=0)
            scorer_on_graph(scorer, graph)
            scorer.score(hyps[:16], refs[:16])
            scorers[name] = scorer
            results[name] = {"made_s": made, "mb": graph.stat().st_size / 2**20, "times": []}
        results["fp32"] = {"times": []}
        F: dict = {}
        for _ in range(args.rounds):
            for name, scorer in scorers.items():
                t0 = time.perf_counter()
                F[name] = np.asarray(scorer.score(hyps, refs)[2], np.float64)
                results[name]["times"].append(time.perf_counter() - t0)
    for name, r in results.items():
        d = np.abs(F[name] - F["fp32"])
        r.update(
            pairs_per_s=len(hyps) / min(r["times"]),
            mean_abs_dF=float(d.mean()),
            max_abs_dF=float(d.max()),
            pearson_r=float(np.corrcoef(F[name], F["fp32"])[0, 1]),
        )
    rows = [
        (
            name,
            f"{r['mean_abs_dF']:.4f}",
            f"{r['max_abs_dF']:.3f}",
            f"{r['pearson_r']:.5f}",
            f"{r['pairs_per_s']:.1f}",
            f"{r.get('mb', 0):.0f}",
        )
        for name, r in results.items()
    ]
    header = ("variant", "mean abs dF", "max", "Pearson r", "pairs/s", "MB")
    print_table(header, rows, right=(1, 2, 3, 4, 5))
    write_json(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
