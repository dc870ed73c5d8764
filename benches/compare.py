#!/usr/bin/env python3
"""rust-bertscore against bert_score 0.3.13 in the same run, on the same pairs and checkpoint.

For each model, the runs alternate (bert_score, ours, bert_score, ours, ...; ``--rounds``), so
a shared machine's drifting speed hits both sides alike; each side's best run is reported.
bert_score runs in a separate interpreter (``--bert-score-python``, the bench venv with torch,
transformers<5 and bert-score==0.3.13: ``make bench-compare`` builds it), through
``benches/bert_score_run.py``; ours runs here. Printed per model: bert_score's, fp32's and
int8's pairs/s (``precision="int8"``: per-token; "int8-tensor": the former per-tensor graph,
for comparison), the speed-ups, max |F(fp32) - F(bert_score)| and mean |F(int8) - F(bert_score)|
(and int8 against fp32: mean |dF| and Pearson r).

Models:

``minilm``
    sentence-transformers/all-MiniLM-L6-v2 at layer 6 (the package's default) on the 3,003
    WMT pairs.
``roberta-large``
    roberta-large's shape (``lang="en"``: layer 17) with random weights, generated once by
    ``benches/shapes.py`` under ``--work-dir``, on the first ``--large-pairs`` WMT pairs
    (bert_score does only a few pairs/s at that size). With ``--memory``, also the peak RSS of
    converting it to ONNX and of quantising that to int8, each in a fresh process.
``deberta-xlarge``
    microsoft/deberta-xlarge-mnli's shape (DeBERTa v1, 48 layers, bert_score's layer 40), made
    the same way, on the first ``--xlarge-pairs`` WMT pairs.
``qwen3-embedding-0.6b``
    Qwen/Qwen3-Embedding-0.6B's shape (a Qwen3 decoder, 28 layers, the last one scored; not in
    the default ``--models``), made the same way, on the first ``--qwen3-pairs`` WMT pairs.

The WMT files are read from ``$RUST_BERTSCORE_WMT_DIR`` (default ``../shared/data/wmt``);
without them the benchmark says so and exits 0. Without ``--bert-score-python`` only our side
runs.

Usage: ``python -m benches.compare [--bert-score-python PATH]
[--models minilm,roberta-large,deberta-xlarge,qwen3-embedding-0.6b] [--rounds N]
[--large-pairs N] [--xlarge-pairs N] [--qwen3-pairs N]
[--memory] [--json PATH]`` (``make bench-compare``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from benches import repeated, shapes
from benches.common import (
    WMT_PAIRS,
    bert_score_once,
    bert_score_python,
    default_model_dir,
    encoder_flops,
    load_average,
    machine,
    peak_rss_mb,
    print_rows,
    scorer_on_graph,
    sgemm_rate,
    token_count,
    wmt_pairs,
    write_json,
)

if TYPE_CHECKING:
    from rust_bertscore import BERTScorer

SHAPES = {
    "roberta-large": (shapes.roberta_large_shape, shapes.ROBERTA_LARGE_LAYER, "large_pairs"),
    "deberta-xlarge": (shapes.deberta_xlarge_shape, shapes.DEBERTA_XLARGE_LAYER, "xlarge_pairs"),
    "qwen3-embedding-0.6b": (
        shapes.qwen3_embedding_shape,
        shapes.QWEN3_EMBEDDING_06B_LAYER,
        "qwen3_pairs",
    ),
}
"""Random-weight checkpoints of published shapes: (maker, bert_score's layer, pairs option)."""


def timed(fn: Callable[[], tuple]) -> tuple[float, np.ndarray]:
    """(seconds, F) of one call of a scorer's ``score``."""
    t0 = time.perf_counter()
    _, _, F = fn()
    return time.perf_counter() - t0, np.asarray(F, dtype=np.float64)


def compare_model(
    name: str,
    model_dir: Path,
    layer: int,
    hyps: list[str],
    refs: list[str],
    bs_python: str | None,
    rounds: int,
    tmp: Path,
) -> dict:
    """Alternate bert_score and our fp32 / int8 scorers on one model; best time of each."""
    import rust_bertscore as rb

    n = len(hyps)
    cands_file, refs_file = tmp / f"{name}_cands.txt", tmp / f"{name}_refs.txt"
    cands_file.write_text("\n".join(hyps) + "\n", encoding="utf-8")
    refs_file.write_text("\n".join(refs) + "\n", encoding="utf-8")

    t0 = time.perf_counter()
    fp32 = rb.BERTScorer(model_type=str(model_dir), num_layers=layer, cache_bytes=0)
    fp32.score(hyps[:16], refs[:16])
    fp32_load = time.perf_counter() - t0
    t0 = time.perf_counter()
    int8 = rb.BERTScorer(
        model_type=str(model_dir),
        num_layers=layer,
        cache_bytes=0,
        precision="int8",
        runtime="onnxruntime",
    )
    int8.score(hyps[:16], refs[:16])
    int8_load = time.perf_counter() - t0

    t0 = time.perf_counter()
    tensor = per_tensor_scorer(model_dir, layer, fp32, tmp)
    tensor.score(hyps[:16], refs[:16])
    tensor_load = time.perf_counter() - t0

    times: dict[str, list[float]] = {"bert_score": [], "fp32": [], "int8": [], "int8-tensor": []}
    F: dict[str, np.ndarray] = {}
    loads = [load_average().split()[0]]
    info: dict = {}
    rates: list[float] = []
    for _ in range(rounds):
        if bs_python:
            seconds, F["bert_score"], info = bert_score_once(
                bs_python, model_dir, layer, cands_file, refs_file, tmp
            )
            times["bert_score"].append(seconds)
        rates.append(sgemm_rate(0.5))
        seconds, F["fp32"] = timed(lambda: fp32.score(hyps, refs))
        times["fp32"].append(seconds)
        seconds, F["int8"] = timed(lambda: int8.score(hyps, refs))
        times["int8"].append(seconds)
        seconds, F["int8-tensor"] = timed(lambda: tensor.score(hyps, refs))
        times["int8-tensor"].append(seconds)
        loads.append(load_average().split()[0])
    flops, padded = encoder_flops(fp32, hyps + refs, fp32.batch_size)
    best = {k: min(v) for k, v in times.items() if v}
    result: dict = {
        "model": name,
        "pairs": n,
        "layer": layer,
        "rounds": rounds,
        "load_averages": loads,
        "times": times,
        "pairs_per_s": {k: n / v for k, v in best.items()},
        "fp32_load_s": fp32_load,
        "int8_load_s": int8_load,
        "int8_tensor_load_s": tensor_load,
        "int8_tensor_vs_fp32_mean_abs_dF": float(np.mean(np.abs(F["int8-tensor"] - F["fp32"]))),
        "int8_tensor_vs_fp32_max_abs_dF": float(np.max(np.abs(F["int8-tensor"] - F["fp32"]))),
        "int8_tensor_vs_fp32_pearson_r": float(np.corrcoef(F["int8-tensor"], F["fp32"])[0, 1]),
        "encoder_gflop": flops / 1e9,
        "encoder_gflop_padded": padded / 1e9,
        "sgemm_gflops": max(rates) / 1e9,
        "fraction_of_sgemm": flops / best["fp32"] / max(rates),
        "int8_vs_fp32_mean_abs_dF": float(np.mean(np.abs(F["int8"] - F["fp32"]))),
        "int8_vs_fp32_max_abs_dF": float(np.max(np.abs(F["int8"] - F["fp32"]))),
        "int8_vs_fp32_pearson_r": float(np.corrcoef(F["int8"], F["fp32"])[0, 1]),
        "tokens": token_count(fp32, hyps + refs),
    }
    if "bert_score" in F:
        result.update(
            bert_score_info=info,
            fp32_vs_bert_score_max_abs_dF=float(np.max(np.abs(F["fp32"] - F["bert_score"]))),
            int8_vs_bert_score_mean_abs_dF=float(np.mean(np.abs(F["int8"] - F["bert_score"]))),
            int8_tensor_vs_bert_score_mean_abs_dF=float(
                np.mean(np.abs(F["int8-tensor"] - F["bert_score"]))
            ),
        )
    return result


def per_tensor_scorer(model_dir: Path, layer: int, fp32: BERTScorer, tmp: Path) -> BERTScorer:
    """A scorer running ``quantize_int8(activations="per-tensor")`` of ``fp32``'s graph: the
    former ``precision="int8"`` (ONNX Runtime's dynamic quantisation, one activation scale per
    tensor), kept for comparison."""
    from rust_bertscore import BERTScorer, convert
    from rust_bertscore.models import graph_cache

    runtime = fp32.runtime
    source = graph_cache.converted_graph(runtime.files, runtime.config, layer)
    graph = convert.quantize_int8(
        source, tmp / f"{model_dir.name}-tensor.onnx", activations="per-tensor"
    )
    scorer = BERTScorer(model_type=str(model_dir), num_layers=layer, cache_bytes=0)
    return scorer_on_graph(scorer, graph)


CONVERT = """
import sys
from rust_bertscore import convert
convert.export_onnx(sys.argv[1], sys.argv[2], int(sys.argv[3]), fused=True)
"""

QUANTIZE = """
import sys
from rust_bertscore import convert
convert.quantize_int8(sys.argv[1], sys.argv[2], activations=sys.argv[3])
"""


def conversion_memory(model_dir: Path, layer: int, tmp: Path) -> dict:
    """Peak RSS and wall time of converting ``model_dir`` (fused fp32) and of quantising the
    result to int8, each in a fresh process."""
    env = dict(os.environ)
    graph, graph8 = tmp / "convert" / "model.onnx", tmp / "convert" / "model.int8.onnx"
    rss, wall = peak_rss_mb(
        [sys.executable, "-c", CONVERT, str(model_dir), str(graph), str(layer)], env
    )
    rss8, wall8 = peak_rss_mb(
        [sys.executable, "-c", QUANTIZE, str(graph), str(graph8), "per-token"], env
    )
    graph_t = tmp / "convert" / "model.tensor.onnx"
    rss_t, wall_t = peak_rss_mb(
        [sys.executable, "-c", QUANTIZE, str(graph), str(graph_t), "per-tensor"], env
    )

    def size(path: Path) -> int:
        data = path.with_name(path.name + ".data")
        return path.stat().st_size + (data.stat().st_size if data.is_file() else 0)

    out = {
        "convert_peak_rss_mb": rss,
        "convert_s": wall,
        "fp32_graph_mb": size(graph) / 2**20,
        "quantize_peak_rss_mb": rss8,
        "quantize_s": wall8,
        "int8_graph_mb": size(graph8) / 2**20,
        "quantize_tensor_peak_rss_mb": rss_t,
        "quantize_tensor_s": wall_t,
        "int8_tensor_graph_mb": size(graph_t) / 2**20,
    }
    for path in graph.parent.iterdir():
        path.unlink()
    return out


def token_counts(model_dir: Path, texts: list[str]) -> int:
    """Tokens the tokenizer of ``model_dir`` makes of ``texts``."""
    from rust_bertscore.stages.tokenization.tokenizer import TextTokenizer

    config = json.loads((model_dir / "config.json").read_text())
    return int(sum(len(t) for t in TextTokenizer(model_dir, config).encode(texts)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bert-score-python", help="interpreter with torch and bert-score")
    parser.add_argument("--models", default="minilm,roberta-large,deberta-xlarge,repeated")
    repeated.add_arguments(parser)
    parser.add_argument("--pairs", type=int, default=WMT_PAIRS, help="WMT pairs for MiniLM")
    parser.add_argument("--rounds", type=int, default=2, help="alternating runs of each side")
    parser.add_argument("--large-pairs", type=int, default=150, help="pairs for roberta-large")
    parser.add_argument("--xlarge-pairs", type=int, default=100, help="pairs for deberta-xlarge")
    parser.add_argument(
        "--qwen3-pairs", type=int, default=100, help="pairs for qwen3-embedding-0.6b"
    )
    parser.add_argument("--memory", action="store_true", help="peak RSS of conversion")
    parser.add_argument(
        "--work-dir",
        type=Path,
        default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
        / "rust-bertscore-bench",
        help="where generated checkpoints are kept",
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()

    pairs = wmt_pairs("compare")
    if pairs is None:
        return 0
    hyps, refs = pairs
    bs_python = bert_score_python(args.bert_score_python, "compare")

    minilm = default_model_dir()
    results: dict = {"machine": machine(), "date": time.strftime("%Y-%m-%d %H:%M")}
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    with tempfile.TemporaryDirectory(prefix="rbs-compare-") as tmp_name:
        tmp = Path(tmp_name)
        for name in models:
            if name == "repeated":  # several systems against the same references
                results[name] = repeated.run(args, hyps, refs, bs_python)
                continue
            if name == "minilm":
                n = args.pairs
                results[name] = compare_model(
                    name, minilm, 6, hyps[:n], refs[:n], bs_python, args.rounds, tmp
                )
            elif name in SHAPES:
                make_shape, layer, pairs_arg = SHAPES[name]
                model_dir = make_shape(args.work_dir, hyps + refs)
                n = getattr(args, pairs_arg)
                sub_h, sub_r = hyps[:n], refs[:n]
                mem = conversion_memory(model_dir, layer, tmp) if args.memory else {}
                results[name] = compare_model(
                    name, model_dir, layer, sub_h, sub_r, bs_python, args.rounds, tmp
                )
                results[name].update(mem)
                results[name]["wordpiece_tokens"] = token_counts(minilm, sub_h + sub_r)
            else:
                parser.error(f"unknown model {name!r}: expected minilm, {', '.join(SHAPES)}")
            print_model(results[name])
    write_json(args.json, results)
    info = results["machine"]
    print(
        f"\nmachine: {info.get('Model name', '?')}, {info.get('CPU(s)', '?')} CPUs; "
        f"onnxruntime {info['onnxruntime']}; {results['date']}"
    )
    return 0


def print_model(r: dict) -> None:
    rate = r["pairs_per_s"]
    bs = rate.get("bert_score")
    print(
        f"\n{r['model']}: {r['pairs']:,} WMT pairs, layer {r['layer']}, {r['rounds']} "
        f"alternating rounds, 1-min load {' -> '.join(r['load_averages'])}"
    )
    rows = []
    if bs:
        rows.append(
            (
                "bert_score 0.3.13 pairs/s",
                f"{bs:.1f}",
                f"torch {r['bert_score_info']['torch']}, "
                f"{r['bert_score_info']['torch_threads']} threads",
            )
        )
    for k in ("fp32", "int8", "int8-tensor"):
        note = f"{rate[k] / bs:.2f}x bert_score" if bs else ""
        rows.append((f"rust-bertscore {k} pairs/s", f"{rate[k]:.1f}", note))
    if bs:
        rows.append(
            ("fp32: max |dF| vs bert_score", f"{r['fp32_vs_bert_score_max_abs_dF']:.1e}", "")
        )
        rows.append(
            ("int8: mean |dF| vs bert_score", f"{r['int8_vs_bert_score_mean_abs_dF']:.4f}", "")
        )
        rows.append(
            (
                "int8-tensor: mean |dF| vs bert_score",
                f"{r['int8_tensor_vs_bert_score_mean_abs_dF']:.4f}",
                "",
            )
        )
    rows.append(
        (
            "int8: mean |dF| vs fp32",
            f"{r['int8_vs_fp32_mean_abs_dF']:.4f}",
            f"max {r['int8_vs_fp32_max_abs_dF']:.3f}, Pearson r {r['int8_vs_fp32_pearson_r']:.5f}",
        )
    )
    rows.append(
        (
            "int8-tensor: mean |dF| vs fp32",
            f"{r['int8_tensor_vs_fp32_mean_abs_dF']:.4f}",
            f"max {r['int8_tensor_vs_fp32_max_abs_dF']:.3f}, "
            f"Pearson r {r['int8_tensor_vs_fp32_pearson_r']:.5f}",
        )
    )
    rows.append(
        (
            "fp32 fraction of sgemm peak",
            f"{r['fraction_of_sgemm']:.2f}",
            f"{r['encoder_gflop'] / (r['pairs'] / rate['fp32']):.0f} of "
            f"{r['sgemm_gflops']:.0f} GFLOP/s",
        )
    )
    if "convert_peak_rss_mb" in r:
        rows.append(
            (
                "conversion: peak RSS",
                f"{r['convert_peak_rss_mb']:.0f} MB",
                f"{r['convert_s']:.0f} s, graph {r['fp32_graph_mb']:.0f} MB",
            )
        )
        rows.append(
            (
                "int8 quantisation: peak RSS",
                f"{r['quantize_peak_rss_mb']:.0f} MB",
                f"{r['quantize_s']:.0f} s, graph {r['int8_graph_mb']:.0f} MB",
            )
        )
        rows.append(
            (
                "int8-tensor quantisation: peak RSS",
                f"{r['quantize_tensor_peak_rss_mb']:.0f} MB",
                f"{r['quantize_tensor_s']:.0f} s, graph {r['int8_tensor_graph_mb']:.0f} MB",
            )
        )
    print_rows(rows)


if __name__ == "__main__":
    sys.exit(main())
