#!/usr/bin/env python3
"""Online scoring: one-pair latency of a reused scorer, and a loopback load test of the server.

1. **One pair** through a reused ``BERTScorer`` (all-MiniLM-L6-v2, a new WMT pair every call, so
   nothing comes from the cache), against ``bert_score.BERTScorer`` doing the same in the bench
   venv (``--bert-score-python``, ``make bench-venv``), in the same run: median milliseconds
   per call. Ours is timed before and after bert_score and the two samples pooled, so a change
   of load during the run weighs on both. Also the same pair scored again (from the cache, as an
   RL reward's reference is, once per completion of its group).
2. **The server** (``rust-bertscore serve``, a subprocess on a free loopback port) under
   ``--clients`` concurrent clients (keep-alive connections), each request ``--pairs`` new WMT
   pairs, ``--requests`` requests in all: requests/s and p50/p99 latency, with batching on
   (``--max-batch 32``) and off (``--max-batch 1``), and one in-process ``BERTScorer`` scoring
   the same requests one after another. The servers' numbers are checked against the
   in-process scorer's (they must be equal).

Run: ``python -m benches.serve [--bert-score-python .venv-bench/bin/python] [--requests N]
[--clients N] [--pairs N] [--single N] [--device cuda] [--precision fp16] [--model DIR]
[--json PATH]``
(``make bench-serve``). Needs the WMT files (skips without) and the extra ``[serve]``. On a GPU
host, ``--device cuda`` runs ours, the servers and bert_score (torch with CUDA in the bench venv)
on the GPU."""

from __future__ import annotations

import argparse
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from benches.common import (
    default_model_dir,
    encoder_flops,
    load_average,
    print_rows,
    sgemm_rate,
    wmt_pairs,
)

BERT_SCORE_LOOP = r"""
import json, sys, time
import bert_score, numpy as np
model, layers, path, threads = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
device = sys.argv[5]
if threads:
    import torch
    torch.set_num_threads(threads)
pairs = json.load(open(path, encoding="utf-8"))
scorer = bert_score.BERTScorer(model_type=model, num_layers=layers, device=device)
for c, r in pairs[:10]:
    scorer.score([c], [r])
times = []
for c, r in pairs[10:]:
    t0 = time.perf_counter()
    scorer.score([c], [r])
    times.append(time.perf_counter() - t0)
print(json.dumps({"times": times}))
"""


def scorer_options(args: argparse.Namespace) -> dict[str, Any]:
    """``BERTScorer`` keywords of ``--model``, ``--device`` and ``--precision``."""
    model = {"model_type": str(args.model), "num_layers": 6} if args.model else {}
    return {**model, "device": args.device, "precision": args.precision}


def server_flags(args: argparse.Namespace) -> list[str]:
    """``rust-bertscore serve`` flags of ``--model``, ``--device`` and ``--precision``."""
    model = ["-m", str(args.model), "-l", "6"] if args.model else []
    device = ["--device", args.device] if args.device else []
    return [*model, *device, "--precision", args.precision]


def one_pair_times(cands: list[str], refs: list[str], **options: Any) -> list[float]:
    """Seconds of each ``score([c], [r])`` call of a reused scorer (after 10 warm-up calls)."""
    from rust_bertscore import BERTScorer

    scorer = BERTScorer(**options)
    for c, r in zip(cands[:10], refs[:10]):
        scorer.score([c], [r])
    times = []
    for c, r in zip(cands[10:], refs[10:]):
        t0 = time.perf_counter()
        scorer.score([c], [r])
        times.append(time.perf_counter() - t0)
    return times


def cached_pair_time(cand: str, ref: str, calls: int = 200, **options: Any) -> float:
    """Median seconds of scoring the same pair again with a reused scorer (cache hits)."""
    from rust_bertscore import BERTScorer

    scorer = BERTScorer(**options)
    scorer.score([cand], [ref])
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        scorer.score([cand], [ref])
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def bert_score_one_pair(
    python: str,
    cands: list[str],
    refs: list[str],
    threads: int,
    device: str = "cpu",
    model: Path | None = None,
) -> list[float] | None:
    """bert_score's seconds per one-pair call, in the bench venv (``threads`` torch threads, 0:
    torch's default; ``device``: torch's; ``model`` at layer 6, default all-MiniLM-L6-v2); None
    when it cannot run."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "pairs.json"
        path.write_text(json.dumps(list(zip(cands, refs))), encoding="utf-8")
        model = model or default_model_dir()
        cmd = [python, "-c", BERT_SCORE_LOOP, str(model), "6", str(path), str(threads), device]
        env = {**os.environ, **({"OMP_NUM_THREADS": str(threads)} if threads else {})}
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, env=env)
    if out.returncode != 0:
        print(f"bert_score run failed: {out.stderr.strip()[-400:]}")
        return None
    return list(json.loads(out.stdout.strip().splitlines()[-1])["times"])


class ArithmeticFloor:
    """The encoder's arithmetic over real tokens (``encoder_flops``) at NumPy's float32 GEMM
    peak, measured once: no float32 CPU encoder does a request in less.

    Attributes
    ----------
    peak : float
        The sgemm FLOP/s measured when the floor was made.
    """

    def __init__(self) -> None:
        from rust_bertscore import BERTScorer

        self.scorer = BERTScorer()
        self.peak = sgemm_rate(2.0)

    def seconds(self, requests: list[tuple[list[str], list[str]]]) -> float:
        """Seconds per request (the mean over ``requests``, each ``(cands, refs)``)."""
        flops = [encoder_flops(self.scorer, [*c, *r], 64)[0] for c, r in requests]
        return float(np.mean(flops)) / self.peak


def split_requests(
    cands: list[str], refs: list[str], pairs: int, count: int
) -> list[tuple[list[str], list[str]]]:
    """The load test's ``count`` requests of ``pairs`` consecutive pairs each."""
    return [
        (cands[i * pairs : (i + 1) * pairs], refs[i * pairs : (i + 1) * pairs])
        for i in range(count)
    ]


# -- the server ---------------------------------------------------------------------------------


def start_server(max_batch: int, flags: list[str]) -> tuple[subprocess.Popen, int]:
    cmd = [sys.executable, "-m", "rust_bertscore", "serve", "--port", "0", "-q", *flags]
    proc = subprocess.Popen(
        [*cmd, "--max-batch", str(max_batch)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stderr is not None
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        if "listening on http://" in line:
            # Keep reading stderr so the server never blocks on a full pipe.
            threading.Thread(target=proc.stderr.read, daemon=True).start()
            return proc, int(line.rsplit(":", 1)[1])
    proc.kill()
    raise RuntimeError("the server did not start")


def stop_server(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def post(conn: http.client.HTTPConnection, payload: dict[str, Any]) -> dict[str, Any]:
    body = json.dumps(payload).encode()
    conn.request("POST", "/score", body, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    data = resp.read()
    if resp.status != 200:
        raise RuntimeError(f"status {resp.status}: {data[:200]!r}")
    return dict(json.loads(data))


def load_test(
    port: int, requests: list[dict[str, Any]], clients: int
) -> tuple[float, list[float], list[dict[str, Any]]]:
    """Seconds for all requests, each request's latency, and the answers (in request order)."""
    latencies: list[float] = [0.0] * len(requests)
    answers: list[dict[str, Any]] = [{}] * len(requests)
    next_index = iter(range(len(requests)))
    lock = threading.Lock()
    errors: list[BaseException] = []

    def client() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        try:
            while True:
                with lock:
                    k = next(next_index, None)
                if k is None:
                    return
                t0 = time.perf_counter()
                answers[k] = post(conn, requests[k])
                latencies[k] = time.perf_counter() - t0
        except BaseException as e:
            errors.append(e)
        finally:
            conn.close()

    threads = [threading.Thread(target=client) for _ in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    if errors:
        raise errors[0]
    return wall, latencies, answers


def serve_rows(args: argparse.Namespace, cands: list[str], refs: list[str]) -> dict[str, Any]:
    from rust_bertscore import BERTScorer

    k = args.pairs
    requests = [{"cands": c, "refs": r} for c, r in split_requests(cands, refs, k, args.requests)]
    warm = [{"cands": cands[-k:], "refs": refs[-k:]}]
    results: dict[str, Any] = {}
    # In-process: one reused scorer, the same requests one after another.
    scorer = BERTScorer(**scorer_options(args))
    scorer.score(warm[0]["cands"], warm[0]["refs"])
    latencies, expected = [], []
    t0 = time.perf_counter()
    for r in requests:
        t1 = time.perf_counter()
        expected.append(scorer.score(r["cands"], r["refs"])[2])
        latencies.append(time.perf_counter() - t1)
    results["in-process BERTScorer, request by request"] = (time.perf_counter() - t0, latencies)
    for label, max_batch in (("server, batching off", 1), ("server, batching on", 32)):
        proc, port = start_server(max_batch, server_flags(args))
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
            post(conn, warm[0])
            conn.close()
            wall, lat, answers = load_test(port, requests, args.clients)
        finally:
            stop_server(proc)
        worst = max(
            float(np.max(np.abs(np.float32(a["F"]) - e))) for a, e in zip(answers, expected)
        )
        results[label] = (wall, lat)
        print(f"{label}: max |F - in-process F| = {worst:g}")
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bert-score-python", default=None, help="the bench venv's python")
    parser.add_argument("--requests", type=int, default=320, help="requests per load test")
    parser.add_argument("--clients", type=int, default=16, help="concurrent clients")
    parser.add_argument("--pairs", type=int, default=4, help="pairs per request")
    parser.add_argument("--single", type=int, default=200, help="one-pair calls timed")
    parser.add_argument("--json", default=None, help="write the figures here")
    parser.add_argument("--no-load", action="store_true", help="one-pair figures only")
    parser.add_argument(
        "--threads",
        type=int,
        default=0,
        help="threads for the one-pair figures, ours and torch's (0: each library's default)",
    )
    parser.add_argument(
        "--device", default=None, help="cpu or cuda, ours and bert_score's (default: ours picks)"
    )
    parser.add_argument(
        "--precision", default="fp32", choices=("fp32", "tf32", "fp16", "int8"), help="ours"
    )
    parser.add_argument(
        "--model",
        type=Path,
        default=None,
        help="a checkpoint folder scored at layer 6 by all (default: all-MiniLM-L6-v2)",
    )
    args = parser.parse_args()
    loaded = wmt_pairs("serve", args.requests * args.pairs + args.pairs + args.single + 10)
    if loaded is None:
        return 0
    cands, refs = loaded
    out: dict[str, Any] = {
        "load_average_start": load_average(),
        "device": args.device or "default",
        "precision": args.precision,
    }

    # 1. One pair at a time (pairs from the end of the file: not those of the load test).
    sc, sr = cands[-(args.single + 10) :], refs[-(args.single + 10) :]
    if args.threads:
        import rust_bertscore

        rust_bertscore.set_num_threads(args.threads)
    options = scorer_options(args)
    ours = one_pair_times(sc, sr, **options)
    theirs = None
    if args.bert_score_python:
        torch_device = "cuda" if (args.device or "cpu").startswith("cuda") else "cpu"
        theirs = bert_score_one_pair(
            args.bert_score_python, sc, sr, args.threads, torch_device, args.model
        )
    ours += one_pair_times(sc, sr, **options)
    threads = f"{args.threads} thread(s)" if args.threads else "default threads"
    out["one_pair_threads"] = args.threads
    rows = [("one pair, reused BERTScorer (median)", f"{1000 * np.median(ours):.2f} ms", threads)]
    out["one_pair_ms"] = 1000 * float(np.median(ours))
    if theirs:
        ratio = np.median(theirs) / np.median(ours)
        rows.append(("bert_score 0.3.13, same pairs", f"{1000 * np.median(theirs):.2f} ms", ""))
        rows.append(("bert_score / ours", f"{ratio:.2f}x", "target >= 3x"))
        out["bert_score_one_pair_ms"] = 1000 * float(np.median(theirs))
    # The arithmetic floor means something for float32 on the CPU only.
    on_cpu_fp32 = (args.device or "cpu") == "cpu" and args.precision == "fp32"
    floor = ArithmeticFloor() if on_cpu_fp32 else None
    if floor is not None:
        seconds = floor.seconds([([c], [r]) for c, r in zip(sc[10:], sr[10:])])
        rows.append(
            (
                "one pair's arithmetic at NumPy's sgemm peak",
                f"{1000 * seconds:.2f} ms",
                f"{floor.peak / 1e9:.0f} GFLOP/s; no fp32 encoder here is faster",
            )
        )
        out["one_pair_floor_ms"] = 1000 * seconds
        out["sgemm_gflops"] = floor.peak / 1e9
        if theirs:
            best = np.median(theirs) / seconds
            rows.append(("bert_score / that floor", f"{best:.2f}x", "the most any fp32 run shows"))
    cached = cached_pair_time(sc[0], sr[0], **options)
    rows.append(("the same pair again (cache)", f"{1000 * cached:.3f} ms", ""))
    out["cached_pair_ms"] = 1000 * cached
    print_rows(rows)

    if args.no_load:
        return 0
    # 2. The load test.
    results = serve_rows(args, cands, refs)
    table = []
    base = None
    for label, (wall, lat) in results.items():
        rate = len(lat) / wall
        if label == "server, batching off":
            base = rate
        p50, p99 = (1000 * float(np.percentile(lat, q)) for q in (50, 99))
        table.append((label, f"{rate:.1f} req/s", f"p50 {p50:.0f} ms, p99 {p99:.0f} ms"))
        out[label] = {"requests_per_s": rate, "p50_ms": p50, "p99_ms": p99}
    if base:
        on = out["server, batching on"]["requests_per_s"]
        table.append(("batching on / off", f"{on / base:.2f}x", "target >= 3x"))
        if floor is not None:
            most = 1 / floor.seconds(split_requests(cands, refs, args.pairs, args.requests))
            table.append(
                (
                    "requests/s at NumPy's sgemm peak",
                    f"{most:.1f} req/s",
                    f"{most / base:.2f}x the unbatched server: batching's ceiling here",
                )
            )
            out["floor_requests_per_s"] = most
    print(
        f"\n{args.requests} requests of {args.pairs} WMT pairs, {args.clients} concurrent "
        "clients, loopback"
    )
    print_rows(table)
    out["load_average_end"] = load_average()
    print(f"load average: {out['load_average_start']} -> {out['load_average_end']}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
