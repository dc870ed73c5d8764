#!/usr/bin/env python3
"""Every CPU precision path against bert_score and against our fp32, in one run per host.

For each model the paths of ``benches/precision_paths.py`` (``--paths``) and bert_score 0.3.13
(``--bert-score-python``, the bench venv of ``make bench-venv``) score the same WMT pairs in
turns (``--rounds``; each side's best run kept, so a shared machine's drift hits all alike).
Printed per path: pairs/s, the speed-up over bert_score and over ONNX Runtime fp32, and mean,
max |dF| against our fp32 (and fp32's max |dF| against bert_score); then, per model, the
recommendation for this host (:func:`recommend`: bf16 and int8 where they measured faster than
fp32 within their accuracy budget, with the flags that decide them: ``amx_bf16``,
``avx512_bf16``; ``amx_int8``, ``avx512_vnni``, ``avx_vnni``). Then the GEMM ceilings of
``benches/gemm_limits.py`` and the processor's ISA flags.

Models: ``minilm`` (the default model, layer 6, ``--pairs`` WMT pairs), ``roberta-large``
(roberta-large's shape with random weights, layer 17, bert_score's English default,
``--large-pairs`` pairs) and ``deberta-xlarge`` (microsoft/deberta-xlarge-mnli's shape, layer 40,
``--xlarge-pairs`` pairs); the large shapes are made once by ``benches/shapes.py`` under
``--work-dir`` and run the shipped paths (:data:`LARGE_MODEL_PATHS`) unless ``--paths`` names
others. The GEMM ceilings are measured first, and each model's scorers are dropped once its
figures are printed, so the bench holds one model's graphs at a time. The pairs are taken
from the start of the WMT files and stop before the calibration texts (the last 300
references), so no path is measured on the text it was calibrated on.

Per model it then times the first score of a model new to the machine
(``benches/first_score.py``): from process start to one pair's F with a fresh cache (the
conversion included), with a warm one, and bert_score's process (torch's import and the
checkpoint's load included); ``--no-first-score`` skips it.

A path this install cannot run (OpenVINO not installed, bf16 without BF16) is listed with the
reason and skipped; without the WMT files the bench says so and exits 0.

Usage: ``python -m benches.cpu_precisions [--paths a,b]
[--models minilm,roberta-large,deberta-xlarge] [--pairs N] [--large-pairs N] [--xlarge-pairs N]
[--rounds N] [--threads N] [--bert-score-python PY] [--no-first-score] [--json PATH]``;
``make bench-cpu-precisions``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from benches import shapes
from benches.common import (
    bert_score_once,
    bert_score_python,
    default_model_dir,
    load_average,
    machine,
    print_table,
    wmt_pairs,
    write_json,
)
from benches.first_score import first_score, summary
from benches.gemm_limits import gemm_rates, isa_flags
from benches.precision_paths import CALIBRATION_LINES, PATHS, make_path
from benches.stage_shares import STAGES, ceiling_fraction, stage_times
from rust_bertscore.models.fast_path import DECIDING_FLAGS

WMT_LINES = 3004

LARGE_MODEL_PATHS = ("ort-fp32", "ort-int8", "ov-fp32", "ov-bf16", "ov-int8")
"""The paths measured on the large shapes unless ``--paths`` says otherwise: the shipped ones
(the bench-only static paths calibrate for minutes on these shapes, and every path's graph is
held while the paths are timed in turns)."""


def measure_model(
    name: str,
    paths: list[str],
    model_dir: Path,
    layer: int,
    hyps: list[str],
    refs: list[str],
    calibration: list[str],
    args: argparse.Namespace,
    bs_python: str | None,
    tmp: Path,
) -> dict:
    """Every path and bert_score on one model, in turns; best time of each."""
    scorers, skipped, loads_s = {}, {}, {}
    for path in paths:
        t0 = time.perf_counter()
        try:
            scorer = make_path(path, model_dir, layer, calibration, tmp, args.threads)
            scorer.score(hyps[:16], refs[:16])  # warm: the graph is built and loaded
        except (ImportError, TypeError, ValueError, RuntimeError) as e:
            skipped[path] = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
            print(f"{name}: {path} skipped ({skipped[path]})", flush=True)
            continue
        scorers[path] = scorer
        loads_s[path] = time.perf_counter() - t0
    cands_file, refs_file = tmp / f"{name}_cands.txt", tmp / f"{name}_refs.txt"
    cands_file.write_text("\n".join(hyps) + "\n", encoding="utf-8")
    refs_file.write_text("\n".join(refs) + "\n", encoding="utf-8")
    times: dict[str, list[float]] = {k: [] for k in ["bert_score", *scorers]}
    F: dict[str, np.ndarray] = {}
    loads = [load_average().split()[0]]
    for _ in range(args.rounds):
        if bs_python:
            seconds, F["bert_score"], _info = bert_score_once(
                bs_python, model_dir, layer, cands_file, refs_file, tmp
            )
            times["bert_score"].append(seconds)
        for path, scorer in scorers.items():
            t0 = time.perf_counter()
            _, _, f = scorer.score(hyps, refs)
            times[path].append(time.perf_counter() - t0)
            F[path] = np.asarray(f, dtype=np.float64)
        loads.append(load_average().split()[0])
    stages = {path: stage_times(scorer, hyps, refs) for path, scorer in scorers.items()}
    n = len(hyps)
    rate = {k: n / min(v) for k, v in times.items() if v}
    result: dict = {
        "model": name,
        "layer": layer,
        "pairs": n,
        "rounds": args.rounds,
        "load_averages": loads,
        "times": times,
        "pairs_per_s": rate,
        "load_s": loads_s,
        "skipped": skipped,
        "dF_vs_fp32": {},
        "stage_seconds": stages,
    }
    result["_scorers"] = scorers  # for the ceiling fractions (dropped before the JSON)
    base = F.get("ort-fp32")
    for path in scorers:
        if base is not None:
            d = np.abs(F[path] - base)
            result["dF_vs_fp32"][path] = {
                "mean": float(d.mean()),
                "max": float(d.max()),
                "pearson_r": float(np.corrcoef(F[path], base)[0, 1]),
            }
    if base is not None and "bert_score" in F:
        result["fp32_vs_bert_score_max_abs_dF"] = float(np.max(np.abs(base - F["bert_score"])))
    return result


def print_model(r: dict) -> None:
    rate = r["pairs_per_s"]
    bs, fp32 = rate.get("bert_score"), rate.get("ort-fp32")
    print(
        f"\n{r['model']}: {r['pairs']:,} WMT pairs, layer {r['layer']}, {r['rounds']} rounds in "
        f"turns, 1-min load {' -> '.join(r['load_averages'])}"
    )
    rows = []
    for path, value in rate.items():
        d = r["dF_vs_fp32"].get(path)
        rows.append(
            [
                path,
                f"{value:.1f}",
                f"{value / bs:.2f}x" if bs else "-",
                f"{value / fp32:.2f}x" if fp32 else "-",
                f"{d['mean']:.2e}" if d else "-",
                f"{d['max']:.2e}" if d else "-",
                PATHS.get(path, "bert_score 0.3.13 (torch, its own venv)"),
            ]
        )
    header = ("path", "pairs/s", "vs bert_score", "vs fp32", "mean |dF|", "max |dF|", "what")
    print_table(header, rows, right=(1, 2, 3, 4, 5))
    if "fp32_vs_bert_score_max_abs_dF" in r:
        print(f"fp32 vs bert_score: max |dF| {r['fp32_vs_bert_score_max_abs_dF']:.1e}")
    for path, why in r["skipped"].items():
        print(f"skipped {path}: {why}")


def print_shares(r: dict, gemm: dict[str, float], texts: list[str]) -> None:
    """Per path: each stage's share of a pass, and the encoder's GFLOP/s against its ceiling."""
    rows = []
    r["ceiling"] = {}
    for path, spent in r["stage_seconds"].items():
        total = spent["total"]
        limit = ceiling_fraction(path, r["_scorers"][path], texts, spent["encoder"], gemm)
        r["ceiling"][path] = limit
        rows.append(
            [
                path,
                *(f"{100 * spent[stage] / total:.1f}%" for stage in STAGES),
                f"{limit['gflops']:.0f}" if limit else "-",
                f"{limit['ceiling']:.0f}" if limit else "-",
                f"{limit['fraction']:.2f}" if limit else "-",
            ]
        )
    print(f"\n{r['model']}: where a pass goes, and the encoder against its GEMM ceiling")
    header = (*("path", *STAGES), "encoder GFLOP/s", "ceiling", "fraction")
    print_table(header, rows, right=tuple(range(1, len(header))))


ACCURACY = {"bf16": 1e-3, "int8": 0.003}
"""The mean |dF| against fp32 a precision may cost to be recommended (issue 41's targets)."""

PRECISION_PATHS = {"bf16": ("ov-bf16",), "int8": ("ov-int8", "ort-int8")}
"""The shipped paths of each precision (``runtime=``/``precision=``), in the bench's names."""


def _flags_text(precision: str, flags: dict[str, bool]) -> str:
    return ", ".join(f"{f} {'yes' if flags.get(f) else 'no'}" for f in DECIDING_FLAGS[precision])


def recommend(
    rates: dict[str, float], dF: dict[str, dict[str, float]], flags: dict[str, bool]
) -> list[str]:
    """What to use on the host these figures were measured on: one line per precision.

    Parameters
    ----------
    rates
        Pairs/s per path (``ort-fp32`` the reference), as :func:`measure_model` gives them.
    dF
        Per path, ``{"mean": ..., "max": ...}``: |dF| against ONNX Runtime fp32.
    flags
        The host's :data:`DECIDING_FLAGS` (and others), from ``lscpu``'s flags.

    A precision is recommended where its fastest shipped path measured faster than ONNX Runtime
    fp32 within :data:`ACCURACY`; the line names the ratio and the flags that decide it.

    Examples
    --------
    >>> rates = {"ort-fp32": 100.0, "ov-bf16": 180.0, "ov-int8": 250.0}
    >>> dF = {"ov-bf16": {"mean": 2e-4, "max": 1e-3}, "ov-int8": {"mean": 0.002, "max": 0.02}}
    >>> bf16 = recommend(rates, dF, {"avx512_bf16": True, "avx512_vnni": True})[1]
    >>> bf16.split(":")[:2], "1.80x" in bf16, bf16.endswith("(amx_bf16 no, avx512_bf16 yes)")
    (['bf16', ' recommended'], True, True)
    """
    fp32 = rates.get("ort-fp32")
    lines = [
        "fp32: the default (runtime=\"auto\" runs ONNX Runtime's fp32) for bert_score's numbers"
    ]
    if not fp32:
        return [*lines, "no ONNX Runtime fp32 figure: nothing to compare with"]
    for precision, paths in PRECISION_PATHS.items():
        where = _flags_text(precision, flags)
        measured = [p for p in paths if p in rates]
        if not measured:
            has = any(flags.get(f) for f in DECIDING_FLAGS[precision])
            why = "not measured" if has else "no instruction for it on this CPU"
            lines.append(f"{precision}: {why} ({where})")
            continue
        best = max(measured, key=lambda p: rates[p])
        ratio = rates[best] / fp32
        mean = dF.get(best, {}).get("mean", float("nan"))
        runtime = "openvino" if best.startswith("ov-") else "onnxruntime"
        call = f'runtime="{runtime}", precision="{precision}"'
        if ratio > 1 and mean <= ACCURACY[precision]:
            verdict = "recommended"
        elif ratio <= 1:
            verdict = "not recommended (slower than fp32 here)"
        else:
            verdict = f"not recommended (mean |dF| above {ACCURACY[precision]:g})"
        lines.append(
            f"{precision}: {verdict}: {call} ran {ratio:.2f}x ONNX Runtime fp32 at mean "
            f"|dF| {mean:.1e} ({where})"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--paths",
        help="comma-separated paths (default: every path for minilm, the shipped ones "
        f"({','.join(LARGE_MODEL_PATHS)}) for the large shapes)",
    )
    parser.add_argument("--models", default="minilm,roberta-large,deberta-xlarge")
    parser.add_argument("--pairs", type=int, default=WMT_LINES - CALIBRATION_LINES - 4)
    parser.add_argument("--large-pairs", type=int, default=200, help="pairs for roberta-large")
    parser.add_argument("--xlarge-pairs", type=int, default=60, help="pairs for deberta-xlarge")
    parser.add_argument("--no-first-score", action="store_true", help="skip the first-score runs")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, help="OpenVINO threads (default: all cores)")
    parser.add_argument("--bert-score-python", help="interpreter with torch and bert-score")
    parser.add_argument("--no-gemm", action="store_true", help="skip the GEMM ceilings")
    parser.add_argument(
        "--work-dir",
        type=Path,
        default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
        / "rust-bertscore-bench",
        help="where generated checkpoints are kept",
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    chosen = [p.strip() for p in args.paths.split(",") if p.strip()] if args.paths else None
    unknown = [p for p in chosen or [] if p not in PATHS]
    if unknown:
        parser.error(f"unknown paths {unknown}: expected some of {', '.join(PATHS)}")
    limit = WMT_LINES - CALIBRATION_LINES
    if max(args.pairs, args.large_pairs, args.xlarge_pairs) > limit:
        parser.error(f"at most {limit} pairs: the last {CALIBRATION_LINES} calibrate")

    pairs = wmt_pairs("cpu_precisions", WMT_LINES)
    if pairs is None:
        return 0
    hyps, refs = pairs
    calibration = refs[-CALIBRATION_LINES:]
    bs_python = bert_score_python(args.bert_score_python, "cpu_precisions")
    flags = isa_flags()
    results: dict = {
        "machine": machine(),
        "isa": flags,
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "models": {},
    }
    print("ISA:", " ".join(k for k, v in flags.items() if v) or "(unknown)")
    if not args.no_gemm:  # first: each model's scorers are dropped once its shares are printed
        results["gemm_gflops"] = gemm_rates(args.threads)
        print("\nGEMM ceilings (2048x1024 @ 1024x4096, best of 10):")
        for key, value in results["gemm_gflops"].items():
            print(f"  {key:14s} {value:7.0f} GFLOP/s")
    with tempfile.TemporaryDirectory(prefix="rbs-precisions-") as tmp_name:
        tmp = Path(tmp_name)
        for name in (m.strip() for m in args.models.split(",") if m.strip()):
            if name == "minilm":
                model_dir, layer, n = default_model_dir(), 6, args.pairs
            elif name == "roberta-large":
                model_dir = shapes.roberta_large_shape(args.work_dir, hyps + refs)
                layer, n = shapes.ROBERTA_LARGE_LAYER, args.large_pairs
            elif name == "deberta-xlarge":
                model_dir = shapes.deberta_xlarge_shape(args.work_dir, hyps + refs)
                layer, n = shapes.DEBERTA_XLARGE_LAYER, args.xlarge_pairs
            else:
                parser.error(
                    f"unknown model {name!r}: expected minilm, roberta-large or deberta-xlarge"
                )
            paths = chosen or (list(PATHS) if name == "minilm" else list(LARGE_MODEL_PATHS))
            if "ort-fp32" not in paths:
                paths.insert(0, "ort-fp32")  # every |dF| is against it
            r = measure_model(
                name, paths, model_dir, layer, hyps[:n], refs[:n], calibration, args, bs_python, tmp
            )
            results["models"][name] = r
            print_model(r)
            # One model's scorers at a time: all of roberta-large's paths beside MiniLM's took
            # 20 GB, and deberta-xlarge's graphs are twice roberta-large's.
            print_shares(r, results.get("gemm_gflops", {}), hyps[:n] + refs[:n])
            r.pop("_scorers")
            r["recommendation"] = recommend(r["pairs_per_s"], r["dF_vs_fp32"], flags)
            print(f"\nOn this host ({name}):")
            for line in r["recommendation"]:
                print(f"  {line}")
            if not args.no_first_score:
                r["first_score_s"] = first_score(model_dir, layer, bert_score_python=bs_python)
                print(f"First score, process start to one pair's F ({name}): ", end="")
                print(summary(r["first_score_s"]), flush=True)
    info = results["machine"]
    print(
        f"\nmachine: {info.get('Model name', '?')}, {info.get('CPU(s)', '?')} CPUs; "
        f"onnxruntime {info['onnxruntime']}; {results['date']}; load {load_average()}"
    )
    write_json(args.json, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
