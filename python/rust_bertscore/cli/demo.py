"""``make demo``: score example system outputs against references with the default model.

Usage: ``python -m rust_bertscore.demo [CANDS_FILE REFS_FILE]`` (default: the repository's
``examples/hyps.txt`` and ``examples/refs.txt``, else a few built-in pairs).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ..catalog.registry import DEFAULT_MODEL
from ..scoring.api import score

BUILT_IN = [
    (
        "All afternoon the cat sat quietly on the warm window sill.",
        "The cat sat quietly on the warm windowsill all afternoon.",
    ),
    (
        "Scientists say the medicine made symptoms worse for every patient.",
        "Researchers found that the drug reduced symptoms in most patients.",
    ),
    ("The weather was sunny and warm all week.", "He apologised for arriving late to the meeting."),
]


def _read_lines(path: Path) -> list[str]:
    return path.read_text(
        encoding="utf-8"
    ).splitlines()  # boundary-exempt: the package's own example files


def _examples(argv: list[str]) -> tuple[list[str], list[str], str]:
    if len(argv) == 2:
        return _read_lines(Path(argv[0])), _read_lines(Path(argv[1])), f"{argv[0]} vs {argv[1]}"
    repo = Path.cwd() / "examples"
    if (repo / "hyps.txt").is_file() and (repo / "refs.txt").is_file():
        return _read_lines(repo / "hyps.txt"), _read_lines(repo / "refs.txt"), "examples/"
    cands, refs = zip(*BUILT_IN)
    return list(cands), list(refs), "built-in examples"


def main(argv: list[str] | None = None) -> int:
    cands, refs, where = _examples(sys.argv[1:] if argv is None else argv)
    start = time.perf_counter()
    (P, R, F), settings = score(cands, refs, return_hash=True)
    elapsed = time.perf_counter() - start
    # The same scores rescaled with the default model's shipped English baseline.
    *_, F_rescaled = score(
        cands, refs, model_type=DEFAULT_MODEL, lang="en", rescale_with_baseline=True
    )
    print(f"Scoring {len(cands)} candidates from {where} with the default model")
    print(f"{'P':>8} {'R':>8} {'F1':>8} {'F1 resc.':>8}  candidate / reference")
    for p, r, f, fr, c, ref in zip(P, R, F, F_rescaled, cands, refs):
        print(f"{p:8.4f} {r:8.4f} {f:8.4f} {fr:8.4f}  {c}")
        print(f"{'':35}  {ref}")
    print(f"{settings} P: {P.mean():.6f} R: {R.mean():.6f} F1: {F.mean():.6f}")
    print(f"({elapsed:.2f} s including model load)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
