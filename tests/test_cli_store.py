"""``rust-bertscore score --store``, ``store show/prune`` and ``mbr``, run as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

import rust_bertscore as rb
from conftest import TINY_BERT, wmt_pairs
from rust_bertscore.cli.store import byte_size

CANDS, REFS = wmt_pairs()


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rust_bertscore", *args],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=600,
    )


def ok(*args: str) -> subprocess.CompletedProcess:
    proc = cli(*args)
    assert proc.returncode == 0, proc.stderr
    return proc


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_score_with_a_store_then_show_and_prune(tmp_path: Path) -> None:
    cands = write_lines(tmp_path / "c.txt", CANDS[:30])
    refs = write_lines(tmp_path / "r.txt", REFS[:30])
    store = tmp_path / "store"
    base = ["-c", str(cands), "-r", str(refs), "-m", TINY_BERT, "-s", "-q"]
    plain = ok(*base).stdout
    first = ok(*base, "--store", str(store)).stdout
    second = ok(*base, "--store", str(store)).stdout
    assert plain == first == second
    shown = json.loads(ok("store", "show", str(store), "--format", "json").stdout)
    assert shown["entries"] == len(set(CANDS[:30] + REFS[:30])) and shown["damaged"] == 0
    text = ok("store", "show", str(store)).stdout
    assert f"entries      {shown['entries']}" in text
    half = shown["entry_bytes"] // 2
    pruned = json.loads(
        ok("store", "prune", str(store), "--max-bytes", str(half), "--format", "json").stdout
    )
    assert 0 < pruned["entries"] < shown["entries"] and pruned["file_bytes"] <= half
    # Pruned entries are encoded again: same output.
    assert ok(*base, "--store", str(store)).stdout == plain


def test_store_errors(tmp_path: Path) -> None:
    proc = cli("store", "show", str(tmp_path))
    assert proc.returncode == 2 and "not an embedding store" in proc.stderr
    proc = cli("store", "prune", str(tmp_path), "--max-bytes", "lots")
    assert proc.returncode == 2 and "expected a size in bytes" in proc.stderr
    assert byte_size("2G") == 2 * 1024**3 and byte_size("512M") == 512 * 1024**2
    assert byte_size("1.5KiB") == 1536 and byte_size("100") == 100


def test_mbr_command_matches_the_api(tmp_path: Path) -> None:
    sources = [CANDS[:5], REFS[3:9], ["alone"]]
    lines = [json.dumps(sources[0]), "", json.dumps({"samples": sources[1]})]
    lines.append(json.dumps({"samples": sources[2]}))
    path = write_lines(tmp_path / "in.jsonl", lines)
    out = ok("mbr", str(path), "-m", TINY_BERT, "-q", "--store", str(tmp_path / "s")).stdout
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["line"] for r in rows] == [1, 3, 4]
    scorer = rb.BERTScorer(model_type=TINY_BERT)
    for row, samples in zip(rows, sources):
        want = scorer.mbr(samples)
        assert row["index"] == want.index and row["sample"] == samples[want.index]
        got = np.array([np.nan if u is None else u for u in row["utilities"]])
        np.testing.assert_allclose(got, want.utilities, atol=1e-6)
    assert rows[2]["utilities"] == [None]


def test_mbr_command_errors_name_the_line(tmp_path: Path) -> None:
    bad = write_lines(tmp_path / "bad.jsonl", ['["a", "b"]', '["a", 3]'])
    proc = cli("mbr", str(bad), "-m", TINY_BERT, "-q")
    assert proc.returncode == 2 and f"{bad}:2: sample 1 is int, not a string" in proc.stderr
    empty = write_lines(tmp_path / "empty.jsonl", ["[]"])
    proc = cli("mbr", str(empty), "-m", TINY_BERT, "-q")
    assert proc.returncode == 2 and "expected a non-empty list" in proc.stderr
    field = write_lines(tmp_path / "field.jsonl", ['{"hyps": ["a"]}'])
    proc = cli("mbr", str(field), "-m", TINY_BERT, "-q")
    assert proc.returncode == 2 and "no field 'samples'" in proc.stderr
    assert ok("mbr", str(field), "--field", "hyps", "-m", TINY_BERT, "-q").stdout.startswith("{")
    proc = cli("mbr", str(tmp_path / "missing.jsonl"), "-m", TINY_BERT)
    assert proc.returncode == 2 and "no such file" in proc.stderr
