#!/usr/bin/env python3
"""Converting a PyTorch ``.bin`` checkpoint against its safetensors twin: peak memory and time.

Writes a random-weight checkpoint of roberta-large's shape (``benches.shapes.ROBERTA_LARGE``:
hidden 1,024, FFN 4,096, vocabulary 50,265; ``--layers`` of its 24 layers) twice into a
temporary folder, with the same float32 values: ``model.safetensors``, and ``pytorch_model.bin``
in torch's zip format (written without torch by ``benches.torch_save``, with the globals torch's
pickles name). Each is converted to ONNX (``export_onnx``, all ``--layers`` layers) in a fresh
interpreter, started through ``benches.common.peak_rss_mb`` (``wait4``'s ``ru_maxrss`` of the
child); the child reports its own RSS once the converter is imported and the conversion's time.
The two graphs must come out byte for byte the same (their SHA-256 is compared).

Usage: ``python -m benches.bin_checkpoints [--layers N] [--runs N] [--json PATH]``.
Full roberta-large (1.4 GB of float32) takes a few minutes and ~6 GB of temporary disk.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

from benches.common import ROOT, machine, peak_rss_mb, print_table, write_json
from benches.shapes import ROBERTA_LARGE, random_arrays, roberta_tensors, write_random_safetensors
from benches.torch_save import stream_zip


def make_twins(root: Path, layers: int, seed: int = 0) -> tuple[Path, Path]:
    """``root/safetensors`` and ``root/bin``: the same random weights in either format."""
    config = dict(ROBERTA_LARGE, num_hidden_layers=layers)
    specs = list(roberta_tensors(config))
    st_dir, bin_dir = root / "safetensors", root / "bin"
    for model_dir in (st_dir, bin_dir):
        model_dir.mkdir(parents=True)
        (model_dir / "config.json").write_text(json.dumps(config, indent=1))
    write_random_safetensors(st_dir / "model.safetensors", config, specs, seed)
    shapes = [(name, shape) for name, shape, _ in specs]
    stream_zip(bin_dir / "pytorch_model.bin", shapes, random_arrays(config, specs, seed))
    return st_dir, bin_dir


def child(model_dir: Path, out: Path, layers: int, report: Path) -> None:
    """Convert ``model_dir`` (run in the measured process) and write the figures to ``report``."""
    from rust_bertscore.convert import export_onnx

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    export_onnx(model_dir, out, layers)
    seconds = time.perf_counter() - t0
    report.write_text(json.dumps({"seconds": seconds, "rss_before_kb": before}))


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def convert(model_dir: Path, layers: int, work: Path) -> dict[str, float | str]:
    out, report = work / f"{model_dir.name}.onnx", work / f"{model_dir.name}.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), *sys.path]))
    args = [sys.executable, "-m", "benches.bin_checkpoints", "--child", str(model_dir), str(out)]
    peak, wall = peak_rss_mb([*args, str(layers), str(report)], env)
    figures = json.loads(report.read_text())
    weights = sum(p.stat().st_size for p in model_dir.iterdir() if p.name != "config.json")
    result = {
        "weights_mb": weights / 1e6,
        "peak_rss_mb": peak,
        "rss_before_mb": figures["rss_before_kb"] / 1024,
        "convert_s": figures["seconds"],
        "process_s": wall,
        "graph_sha256": sha256(out),
    }
    out.unlink()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=ROBERTA_LARGE["num_hidden_layers"])
    parser.add_argument("--runs", type=int, default=1, help="conversions of each (best kept)")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--child", nargs=4, metavar=("DIR", "OUT", "LAYERS", "REPORT"))
    args = parser.parse_args()
    if args.child:
        model_dir, out, layers, report = args.child
        child(Path(model_dir), Path(out), int(layers), Path(report))
        return
    with tempfile.TemporaryDirectory(prefix="rbs-bin-bench-") as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()
        twins = make_twins(root, args.layers)
        took = time.perf_counter() - t0
        print(f"roberta-large shape, {args.layers} layers: written in {took:.0f} s")
        results: dict[str, dict[str, float | str]] = {}
        for _ in range(args.runs):
            for model_dir in twins:
                got = convert(model_dir, args.layers, root)
                best = results.get(model_dir.name)
                if best is None or float(got["peak_rss_mb"]) < float(best["peak_rss_mb"]):
                    results[model_dir.name] = got
    same = results["safetensors"]["graph_sha256"] == results["bin"]["graph_sha256"]
    rows = [
        [
            name,
            f"{r['weights_mb']:.0f}",
            f"{r['peak_rss_mb']:.0f}",
            f"{r['rss_before_mb']:.0f}",
            f"{r['convert_s']:.1f}",
            f"{r['process_s']:.1f}",
        ]
        for name, r in results.items()
    ]
    header = ["weights", "file MB", "peak RSS MB", "RSS after imports MB", "convert s", "process s"]
    print_table(header, rows, right=(1, 2, 3, 4, 5))
    print(f"same graph from both: {same}")
    write_json(args.json, {"layers": args.layers, "results": results, "machine": machine()})
    if not same:
        sys.exit("the .bin and safetensors checkpoints gave different graphs")


if __name__ == "__main__":
    main()
