"""``make demo`` runs ``python -m rust_bertscore.cli.demo``: examples/ with the default model."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_demo_scores_the_example_files(minilm_dir) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "rust_bertscore.cli.demo"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    lines = (ROOT / "examples" / "hyps.txt").read_text().splitlines()
    assert f"Scoring {len(lines)} candidates from examples/" in out
    summary = [line for line in out.splitlines() if " F1: " in line]
    assert summary and summary[0].startswith("sentence-transformers/all-MiniLM-L6-v2_L6_no-idf")
