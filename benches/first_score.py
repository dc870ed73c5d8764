#!/usr/bin/env python3
"""From process start to the first score with a model new to the machine, against bert_score.

A user who switches to a new model pays once for the conversion to ONNX (and, for OpenVINO's
int8, the quantisation); bert_score pays torch's import and the checkpoint's load every time.
Each side runs in a fresh interpreter that scores one pair and exits, timed from outside
(interpreter start, imports, model load, conversion, the score):

* ``fresh cache``: ``rust_bertscore.score`` with ``RUST_BERTSCORE_CACHE`` pointing at an empty
  directory, so the checkpoint is converted (what a new model costs once);
* ``warm cache``: the same call again, the converted graph found in that cache;
* ``bert_score``: ``bert_score.score`` under the bench venv's interpreter (torch and
  transformers imported, the checkpoint loaded).

The sides run in turns (``rounds`` of each, best kept), after one untimed read of the
checkpoint so that no side pays the page cache for the others.

Run alone: ``python -m benches.first_score MODEL_DIR LAYER [--precision P]
[--bert-score-python PY] [--rounds N]``; ``benches/cpu_precisions.py`` runs it per model.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CANDIDATE = "The cat sat on the mat near the door."
REFERENCE = "A cat was sitting on the mat by the door."

OURS = """
import sys
import rust_bertscore
model, layer, precision = sys.argv[1], int(sys.argv[2]), sys.argv[3]
_, _, F = rust_bertscore.score(
    [sys.argv[4]], [sys.argv[5]], model_type=model, num_layers=layer, precision=precision
)
print(float(F[0]))
"""

THEIRS = """
import sys
import bert_score
_, _, F = bert_score.score(
    [sys.argv[4]], [sys.argv[5]], model_type=sys.argv[1], num_layers=int(sys.argv[2])
)
print(float(F[0]))
"""


def timed_run(python: str, script: str, args: list[str], env: dict[str, str]) -> float:
    """Wall seconds of ``python -c script args`` from spawn to exit; raises on failure."""
    t0 = time.perf_counter()
    proc = subprocess.run([python, "-c", script, *args], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode:
        raise RuntimeError(f"first-score run failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return seconds


def read_once(model_dir: Path) -> None:
    """Read every file of the checkpoint once, so the timed runs find it in the page cache."""
    for path in sorted(model_dir.iterdir()):
        if path.is_file():
            with path.open("rb") as f:
                while f.read(1 << 24):
                    pass


def first_score(
    model_dir: Path,
    layer: int,
    *,
    precision: str = "fp32",
    bert_score_python: str | None = None,
    rounds: int = 2,
) -> dict[str, float]:
    """Best seconds from process start to the first score: ``fresh cache``, ``warm cache`` and
    (with ``bert_score_python``) ``bert_score``; see the module docstring."""
    read_once(model_dir)
    args = [str(model_dir), str(layer), precision, CANDIDATE, REFERENCE]
    best: dict[str, float] = {}

    def keep(name: str, seconds: float) -> None:
        best[name] = min(seconds, best.get(name, float("inf")))

    for _ in range(rounds):
        with tempfile.TemporaryDirectory(prefix="rbs-first-score-") as cache:
            env = {**os.environ, "RUST_BERTSCORE_CACHE": cache}
            keep("fresh cache", timed_run(sys.executable, OURS, args, env))
            keep("warm cache", timed_run(sys.executable, OURS, args, env))
        if bert_score_python:
            keep("bert_score", timed_run(bert_score_python, THEIRS, args, dict(os.environ)))
    return best


def summary(best: dict[str, float]) -> str:
    """One line: each side's seconds, and the fresh cache's ratio to bert_score's."""
    parts = [f"{name} {seconds:.1f} s" for name, seconds in best.items()]
    if "bert_score" in best:
        parts.append(f"fresh cache / bert_score {best['fresh cache'] / best['bert_score']:.2f}")
    return "; ".join(parts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_dir", type=Path)
    parser.add_argument("layer", type=int)
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--bert-score-python", help="interpreter with torch and bert-score")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    best = first_score(
        args.model_dir,
        args.layer,
        precision=args.precision,
        bert_score_python=args.bert_score_python,
        rounds=args.rounds,
    )
    print(summary(best))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
