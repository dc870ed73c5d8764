#!/usr/bin/env python3
"""End-to-end benchmark of rust-bertscore on the 3,003 WMT pairs, every figure from one run.

Measures, with all-MiniLM-L6-v2 at layer 6 (the default model):

* fp32 pairs/s, and the encoder's FLOP rate as a fraction of NumPy's sgemm rate measured in
  this process;
* ``precision="int8"``: pairs/s, speed-up over fp32, mean |F(int8) - F(fp32)| and Pearson r;
* reuse: a scorer's second call (a new system against the same references) over its first;
* peak RSS of ``python -m rust_bertscore -c FILE -r FILE -q`` streaming 20,000 pairs (and 2,000,
  to show it does not grow with input size);
* startup: import plus ``BERTScorer()`` on an already-converted model, in a fresh process;
* bert_score's pairs/s on the same data, when ``bert_score`` and ``torch`` are importable.

FLOPs: every unique text the scorer encodes counts ``L * (2 n (4 h^2 + 2 h f) + 4 n^2 h)`` for
its ``n`` real tokens (``L`` layers, hidden ``h``, FFN ``f``): the projections and FFN as
multiply-adds, plus ``Q K^T`` and ``P V``. Padding is not counted (the padded figure is printed
for reference). Timings are the best of ``--repeats`` runs, and so is the sgemm rate (the best
of short bursts between the runs), so noise from a shared machine moves both the same way.

The WMT files are looked for in ``$RUST_BERTSCORE_WMT_DIR`` (default ``../shared/data/wmt``
beside the repository); without them the benchmark prints why and exits 0.

Usage: ``python -m benches.end_to_end [--repeats N] [--stream-pairs N] [--json PATH]``
(``make bench-e2e``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

import numpy as np

from benches.common import (
    WMT_PAIRS,
    best_time,
    default_model_dir,
    encoder_flops,
    machine,
    peak_rss_mb,
    print_rows,
    sgemm_rate,
    wmt_pairs,
    write_json,
)


def stream_files(tmp: Path, hyps: list[str], refs: list[str], n: int) -> tuple[Path, Path]:
    """``n`` candidate/reference lines drawn from the WMT pairs, the same mix at any ``n``: a
    WMT pair, a candidate with another pair's reference, or two pairs joined (longer texts)."""
    rng = np.random.default_rng(0)
    cands, references = [], []
    for _ in range(n):
        i, j = (int(k) for k in rng.integers(0, len(hyps), size=2))
        kind = rng.integers(0, 3)
        if kind == 0:
            cands.append(hyps[i])
            references.append(refs[i])
        elif kind == 1:
            cands.append(hyps[i])
            references.append(refs[j])
        else:
            cands.append(f"{hyps[i]} {hyps[j]}")
            references.append(f"{refs[i]} {refs[j]}")
    c, r = tmp / f"cands_{n}.txt", tmp / f"refs_{n}.txt"
    c.write_text("\n".join(cands) + "\n", encoding="utf-8")
    r.write_text("\n".join(references) + "\n", encoding="utf-8")
    return c, r


STARTUP = """
import time
t0 = time.perf_counter()
import rust_bertscore as rb
t1 = time.perf_counter()
rb.BERTScorer()
t2 = time.perf_counter()
print(t1 - t0, t2 - t0)
"""


def startup_seconds(env: dict[str, str], runs: int = 3) -> tuple[float, float, float]:
    """Best (import, import + BERTScorer(), whole process) seconds over ``runs`` fresh
    processes."""
    best = (float("inf"),) * 3
    for _ in range(runs):
        t0 = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-c", STARTUP], env=env, capture_output=True, text=True, check=True
        )
        wall = time.perf_counter() - t0
        imp, total = (float(x) for x in out.stdout.split())
        best = (min(best[0], imp), min(best[1], total), min(best[2], wall))
    return best


def bert_score_rate(cands: list[str], refs: list[str], model_dir: str) -> float | None:
    """bert_score's pairs/s on the same pairs and model, or None when it is not installed."""
    try:
        import bert_score
        import torch  # noqa: F401
    except ImportError:
        return None
    bert_score.score(cands[:64], refs[:64], model_type=model_dir, num_layers=6)
    t0 = time.perf_counter()
    bert_score.score(cands, refs, model_type=model_dir, num_layers=6, batch_size=64)
    return len(cands) / (time.perf_counter() - t0)


def measure_scoring(
    rb: ModuleType, hyps: list[str], refs: list[str], repeats: int
) -> dict[str, float]:
    """fp32 and int8 speed, int8's deviation, and the reuse ratio, in this process."""
    rates: list[float] = []
    fp32 = rb.BERTScorer(cache_bytes=0)
    fp32.score(hyps[:64], refs[:64])  # load, convert if needed, warm up
    out32: list = []
    t32 = best_time(
        lambda: out32.append(fp32.score(hyps, refs)), repeats, warmup=False, rates=rates
    )
    F32 = np.asarray(out32[-1][2], dtype=np.float64)
    flops, padded = encoder_flops(fp32, hyps + refs, fp32.batch_size)

    int8 = rb.BERTScorer(cache_bytes=0, precision="int8", runtime="onnxruntime")
    int8.score(hyps[:64], refs[:64])
    out8: list = []
    t8 = best_time(lambda: out8.append(int8.score(hyps, refs)), repeats, warmup=False, rates=rates)
    F8 = np.asarray(out8[-1][2], dtype=np.float64)

    # Reuse: a second system (each hypothesis with its words reversed: new texts, same
    # lengths) against the same references.
    system_b = [" ".join(h.split()[::-1]) for h in hyps]
    first, second, cache_mb = float("inf"), float("inf"), 0.0
    for _ in range(max(1, repeats - 1)):
        scorer = rb.BERTScorer()
        rates.append(sgemm_rate(0.5))
        t0 = time.perf_counter()
        scorer.score(hyps, refs)
        first = min(first, time.perf_counter() - t0)
        t0 = time.perf_counter()
        scorer.score(system_b, refs)
        second = min(second, time.perf_counter() - t0)
        cache_mb = scorer.cache.nbytes / 2**20

    peak, n = max(rates), len(hyps)
    return {
        "pairs": n,
        "fp32_pairs_per_s": n / t32,
        "encoder_gflop": flops / 1e9,
        "encoder_gflop_padded": padded / 1e9,
        "encoder_gflops": flops / t32 / 1e9,
        "sgemm_gflops": peak / 1e9,
        "fraction_of_sgemm": flops / t32 / peak,
        "int8_pairs_per_s": n / t8,
        "int8_speedup": t32 / t8,
        "int8_mean_abs_dF": float(np.mean(np.abs(F8 - F32))),
        "int8_max_abs_dF": float(np.max(np.abs(F8 - F32))),
        "int8_pearson_r": float(np.corrcoef(F8, F32)[0, 1]),
        "reuse_first_s": first,
        "reuse_second_s": second,
        "reuse_ratio": second / first,
        "reuse_cache_mb": cache_mb,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of each (best kept)")
    parser.add_argument("--stream-pairs", type=int, default=20_000, help="pairs for peak RSS")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()

    pairs = wmt_pairs("end_to_end", WMT_PAIRS)
    if pairs is None:
        return 0
    hyps, refs = pairs

    import rust_bertscore as rb

    env = dict(os.environ)
    results: dict[str, object] = {}

    results.update(measure_scoring(rb, hyps, refs, args.repeats))

    # startup, memory -------------------------------------------------------------------------
    imp, startup, wall = startup_seconds(env)
    results.update(startup_import_s=imp, startup_s=startup, startup_process_s=wall)
    with tempfile.TemporaryDirectory(prefix="rbs-bench-") as tmp:
        rss = {}
        for n in sorted({2_000, args.stream_pairs}):
            c, r = stream_files(Path(tmp), hyps, refs, n)
            cmd = [sys.executable, "-m", "rust_bertscore", "-c", str(c), "-r", str(r), "-q"]
            rss[n] = peak_rss_mb(cmd, env)
    small, large = min(rss), max(rss)
    results.update(
        stream_pairs=large,
        stream_peak_rss_mb=rss[large][0],
        stream_pairs_per_s=large / rss[large][1],
        stream_small_pairs=small,
        stream_small_peak_rss_mb=rss[small][0],
    )

    # bert_score ------------------------------------------------------------------------------
    rate = bert_score_rate(hyps, refs, str(default_model_dir()))
    results["bert_score_pairs_per_s"] = rate

    info = machine()
    results["machine"] = info
    print_summary(results, info)
    write_json(args.json, results)
    return 0


def print_summary(r: dict, info: dict[str, str]) -> None:
    cores = info.get("Core(s) per socket", "?")
    print(
        f"\nrust-bertscore end to end: {r['pairs']:,} WMT pairs, all-MiniLM-L6-v2 layer 6\n"
        f"machine: {info.get('Model name', '?')}, {info.get('CPU(s)', '?')} CPUs "
        f"({cores} cores/socket x {info.get('Socket(s)', '?')}), onnxruntime "
        f"{info['onnxruntime']}, numpy {info['numpy']}, Python {info['python']}\n"
    )
    bs = r["bert_score_pairs_per_s"]
    rows = [
        ("fp32 pairs/s", f"{r['fp32_pairs_per_s']:.1f}", ""),
        (
            "fp32 fraction of sgemm peak",
            f"{r['fraction_of_sgemm']:.2f}",
            f"{r['encoder_gflops']:.0f} of {r['sgemm_gflops']:.0f} GFLOP/s; "
            f"{r['encoder_gflop']:.0f} GFLOP real tokens ({r['encoder_gflop_padded']:.0f} padded)",
        ),
        ("int8 pairs/s", f"{r['int8_pairs_per_s']:.1f}", f"{r['int8_speedup']:.2f}x fp32"),
        (
            "int8 mean |dF| vs fp32",
            f"{r['int8_mean_abs_dF']:.4f}",
            f"max {r['int8_max_abs_dF']:.3f}, Pearson r {r['int8_pearson_r']:.5f}",
        ),
        (
            "reuse: 2nd system / 1st",
            f"{r['reuse_ratio']:.2f}",
            f"{r['reuse_second_s']:.1f} s / {r['reuse_first_s']:.1f} s, cache "
            f"{r['reuse_cache_mb']:.0f} MB",
        ),
        (
            f"peak RSS, CLI {r['stream_pairs']:,} pairs",
            f"{r['stream_peak_rss_mb']:.0f} MB",
            f"{r['stream_small_peak_rss_mb']:.0f} MB for {r['stream_small_pairs']:,}; "
            f"{r['stream_pairs_per_s']:.0f} pairs/s incl. startup",
        ),
        (
            "startup: import + BERTScorer()",
            f"{r['startup_s']:.2f} s",
            f"import {r['startup_import_s']:.2f} s; whole process {r['startup_process_s']:.2f} s",
        ),
        (
            "bert_score 0.3.13 pairs/s",
            f"{bs:.1f}" if bs else "n/a",
            "same run" if bs else "bert_score/torch not installed",
        ),
    ]
    print_rows(rows)


if __name__ == "__main__":
    sys.exit(main())
