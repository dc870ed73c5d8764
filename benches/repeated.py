#!/usr/bin/env python3
"""Repeated evaluation: several systems scored against the same references.

``bert_score`` 0.3.13 loops over the systems with one ``BERTScorer`` in the bench venv (it
encodes the references again for every system); ours loops with ``BERTScorer(store=DIR,
cache_bytes=0)``, so from the second system on only the candidates are encoded. Reported per
added system (the mean of systems 2..N) at fp32, with max |dF| against bert_score per system.

The systems are the WMT hypotheses and variants of them (last word dropped, adjacent
words swapped, punctuation removed, ...: edits that change the tokens), against the WMT references.

Also measured, as issue 22 states it: a *second process* scoring new candidates against the
same references with the store, against the first process that filled it (whole process wall
time, model load included, and scoring time alone), with the numbers compared to scoring
without a store.

Run by ``python -m benches.compare`` (``--models ...,repeated``; ``make bench-compare``), or alone:
``python -m benches.repeated [--bert-score-python PATH] [--pairs N] [--systems N]
[--rounds N] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benches.common import default_model_dir, print_rows, read_lines, wmt_dir

BERT_SCORE_LOOP = r"""
import json, sys, time
import numpy as np
import bert_score, torch
model_dir, layer, refs_file, out_prefix, *systems = sys.argv[1:]
refs = open(refs_file, encoding="utf-8").read().split("\n")[:-1]
scorer = bert_score.BERTScorer(model_type=model_dir, num_layers=int(layer), batch_size=64,
                               device="cpu")
scorer.score(refs[:16], refs[:16])
seconds = []
for k, path in enumerate(systems):
    cands = open(path, encoding="utf-8").read().split("\n")[:-1]
    t0 = time.perf_counter()
    _, _, F = scorer.score(cands, refs, batch_size=64)
    seconds.append(time.perf_counter() - t0)
    np.save(f"{out_prefix}{k}.npy", F.numpy().astype(np.float64))
print(json.dumps({"seconds": seconds, "torch_threads": torch.get_num_threads(),
                  "torch": torch.__version__}))
"""

OURS_ONE_PROCESS = r"""
import json, sys, time
t_start = time.perf_counter()
import numpy as np
import rust_bertscore as rb
model_dir, layer, cands_file, refs_file, store, out_npy = sys.argv[1:]
cands = open(cands_file, encoding="utf-8").read().split("\n")[:-1]
refs = open(refs_file, encoding="utf-8").read().split("\n")[:-1]
scorer = rb.BERTScorer(model_type=model_dir, num_layers=int(layer), cache_bytes=0,
                       store=store or None)
t0 = time.perf_counter()
_, _, F = scorer.score(cands, refs)
scoring = time.perf_counter() - t0
np.save(out_npy, F.astype(np.float64))
print(json.dumps({"scoring": scoring, "encoded": scorer.pipeline.vector_source.encoded,
                  "in_process": time.perf_counter() - t_start}))
"""


def variants(hyps: list[str], count: int, seed: int = 0) -> list[list[str]]:
    """``count`` systems: the hypotheses, then variants of them (each a different edit)."""
    rng = random.Random(seed)

    def swap(text: str) -> str:
        words = text.split()
        if len(words) > 2:
            i = rng.randrange(len(words) - 1)
            words[i], words[i + 1] = words[i + 1], words[i]
        return " ".join(words)

    def middle(text: str) -> str:
        words = text.split()
        return " ".join([*words[: len(words) // 2], "really", *words[len(words) // 2 :]])

    # Edits that change the tokens (the default model is uncased: no case changes).
    edits = [
        lambda t: t,
        lambda t: " ".join(t.split()[:-1]) or t,
        swap,
        lambda t: re.sub(r"[^\w\s]", "", t),
        lambda t: t.replace(" the ", " a "),
        lambda t: " ".join(t.split()[1:]) or t,
        lambda t: t + " indeed",
        middle,
    ]
    out = []
    for k in range(count):
        edit = edits[k % len(edits)]
        system = [edit(t) for t in hyps]
        if k >= len(edits):  # beyond the list: the edit plus a swap
            system = [swap(t) for t in system]
        out.append(system)
    return out


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def run_json(cmd: list[str]) -> tuple[dict, float]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode:
        raise RuntimeError(f"{cmd[0]} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1]), wall


def ours_loop(rb, model_dir: Path, layer: int, systems: list[list[str]], refs: list[str], store):
    """Seconds per system and F of each, one scorer with the store and no in-memory cache."""
    scorer = rb.BERTScorer(model_type=str(model_dir), num_layers=layer, cache_bytes=0, store=store)
    scorer.score(["warm up"], ["warm up"])
    seconds, F = [], []
    for system in systems:
        t0 = time.perf_counter()
        _, _, f = scorer.score(system, refs)
        seconds.append(time.perf_counter() - t0)
        F.append(np.asarray(f, dtype=np.float64))
    return seconds, F


def second_process(model_dir: Path, layer: int, files: list[Path], refs: Path, tmp: Path) -> dict:
    """Process 1 fills an empty store scoring system 0; process 2 scores system 1 with it."""
    store = tmp / f"store-{time.time_ns()}"
    runs = {}
    for name, cands in (("first", files[0]), ("second", files[1])):
        out = tmp / f"proc-{name}.npy"
        info, wall = run_json(
            [
                sys.executable,
                "-c",
                OURS_ONE_PROCESS,
                str(model_dir),
                str(layer),
                str(cands),
                str(refs),
                str(store),
                str(out),
            ]
        )
        runs[name] = {**info, "wall": wall, "F": np.load(out)}
    out = tmp / "proc-plain.npy"
    run_json(
        [
            sys.executable,
            "-c",
            OURS_ONE_PROCESS,
            str(model_dir),
            str(layer),
            str(files[1]),
            str(refs),
            "",
            str(out),
        ]
    )
    return {
        "first_wall_s": runs["first"]["wall"],
        "second_wall_s": runs["second"]["wall"],
        "wall_ratio": runs["second"]["wall"] / runs["first"]["wall"],
        "first_scoring_s": runs["first"]["scoring"],
        "second_scoring_s": runs["second"]["scoring"],
        "scoring_ratio": runs["second"]["scoring"] / runs["first"]["scoring"],
        "first_encoded": runs["first"]["encoded"],
        "second_encoded": runs["second"]["encoded"],
        "second_vs_plain_max_abs_dF": float(np.max(np.abs(runs["second"]["F"] - np.load(out)))),
    }


def measure(
    model_dir: Path,
    layer: int,
    hyps: list[str],
    refs: list[str],
    n_systems: int,
    rounds: int,
    bs_python: str | None,
) -> dict:
    import rust_bertscore as rb

    systems = variants(hyps, n_systems)
    result: dict = {"pairs": len(refs), "systems": n_systems, "rounds": []}
    with tempfile.TemporaryDirectory(prefix="rbs-repeated-") as tmp_name:
        tmp = Path(tmp_name)
        refs_file = write(tmp / "refs.txt", refs)
        files = [write(tmp / f"sys{k}.txt", s) for k, s in enumerate(systems)]
        for r in range(rounds):  # alternate: bert_score, ours, second-process pair
            entry: dict = {}
            entry["load_1min"] = os.getloadavg()[0]
            if bs_python:
                info, _ = run_json(
                    [
                        bs_python,
                        "-c",
                        BERT_SCORE_LOOP,
                        str(model_dir),
                        str(layer),
                        str(refs_file),
                        str(tmp / "bsF"),
                        *map(str, files),
                    ]
                )
                entry["bert_score_s"] = info["seconds"]
                entry["torch_threads"] = info["torch_threads"]
                bs_F = [np.load(tmp / f"bsF{k}.npy") for k in range(n_systems)]
            store = tmp / f"loop-store-{r}"
            seconds, F = ours_loop(rb, model_dir, layer, systems, refs, str(store))
            entry["ours_store_s"] = seconds
            plain_s, plain_F = ours_loop(rb, model_dir, layer, systems[:2], refs, None)
            entry["ours_plain_s"] = plain_s
            entry["store_vs_plain_max_abs_dF"] = max(
                float(np.max(np.abs(a - b))) for a, b in zip(F, plain_F)
            )
            if bs_python:
                entry["max_abs_dF_vs_bert_score"] = [
                    float(np.max(np.abs(a - b))) for a, b in zip(F, bs_F)
                ]
            entry["second_process"] = second_process(model_dir, layer, files, refs_file, tmp)
            result["rounds"].append(entry)
    return result


def summarize(result: dict) -> list[tuple[str, str, str]]:
    """Table rows from the last round (one run's ratios)."""
    r = result["rounds"][-1]
    ours = r["ours_store_s"]
    added = float(np.mean(ours[1:])) if len(ours) > 1 else float("nan")
    n = result["pairs"]
    rows = [
        ("ours, first system (store empty)", f"{ours[0]:.2f} s", f"{n / ours[0]:.0f} pairs/s"),
        ("ours, per added system (store)", f"{added:.2f} s", f"{n / added:.0f} pairs/s"),
        ("ours without store, per system", f"{np.mean(r['ours_plain_s']):.2f} s", ""),
    ]
    if "bert_score_s" in r:
        bs = r["bert_score_s"]
        bs_added = float(np.mean(bs[1:])) if len(bs) > 1 else bs[0]
        rows.insert(
            0,
            (
                "bert_score 0.3.13, per system",
                f"{bs_added:.2f} s",
                f"{n / bs_added:.0f} pairs/s, {r['torch_threads']} torch threads",
            ),
        )
        rows.append(("speed-up per added system", f"{bs_added / added:.2f}x", "goal 3x"))
        rows.append(
            (
                "fp32 max |dF| vs bert_score",
                f"{max(r['max_abs_dF_vs_bert_score']):.1e}",
                "over every system",
            )
        )
    rows.append(("store vs no store: max |dF|", f"{r['store_vs_plain_max_abs_dF']:.1e}", ""))
    sp = r["second_process"]
    rows.append(
        (
            "2nd process / 1st: wall",
            f"{sp['wall_ratio']:.2f}",
            f"{sp['second_wall_s']:.2f} / {sp['first_wall_s']:.2f} s (goal <= 0.65)",
        )
    )
    rows.append(
        (
            "2nd process / 1st: scoring",
            f"{sp['scoring_ratio']:.2f}",
            f"{sp['second_scoring_s']:.2f} / {sp['first_scoring_s']:.2f} s; encoded "
            f"{sp['second_encoded']} vs {sp['first_encoded']} texts",
        )
    )
    rows.append(
        ("2nd process vs no store: max |dF|", f"{sp['second_vs_plain_max_abs_dF']:.1e}", "")
    )
    return rows


def run(args: argparse.Namespace, hyps: list[str], refs: list[str], bs_python: str | None) -> dict:
    minilm = default_model_dir()
    n = args.repeated_pairs
    result = measure(minilm, 6, hyps[:n], refs[:n], args.systems, args.repeated_rounds, bs_python)
    print(
        f"\nrepeated evaluation (MiniLM L6, {n} WMT pairs, {args.systems} systems, "
        f"{args.repeated_rounds} alternating rounds; last round shown)"
    )
    print_rows(summarize(result))
    return result


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repeated-pairs", type=int, default=1000, help="pairs per system")
    parser.add_argument("--systems", type=int, default=4, help="systems (WMT hyps + variants)")
    parser.add_argument("--repeated-rounds", type=int, default=2, help="alternating rounds")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bert-score-python", help="interpreter with torch and bert-score")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    add_arguments(parser)
    args = parser.parse_args()
    data = wmt_dir()
    hyp_file, ref_file = data / "hyps_long.txt", data / "refs_long.txt"
    if not (hyp_file.is_file() and ref_file.is_file()):
        print(f"repeated: skipped, no WMT files in {data}")
        return 0
    hyps = read_lines(hyp_file, 3003)
    refs = read_lines(ref_file, 3003)
    result = run(args, hyps, refs, args.bert_score_python)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
