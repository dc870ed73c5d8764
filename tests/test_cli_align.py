"""``rust-bertscore align``, driven as a user drives it (``python -m rust_bertscore`` in a
subprocess): the table and JSON carry the same numbers as the Python API and ``score``."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import rust_bertscore as rb
from conftest import REFERENCE, TINY

BERT = str(TINY / "bert")
ROBERTA = str(TINY / "roberta")
BASELINE = str(REFERENCE / "baseline_minilm_l6.csv")
CAND, REF = "She took the road north.", "she would take the northern road"


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rust_bertscore", "align", *args],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=600,
    )


def ok(*args: str) -> subprocess.CompletedProcess:
    proc = cli(*args)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return proc


def test_text_table_of_one_pair() -> None:
    proc = ok("-c", CAND, "-r", REF, "-m", BERT, "-l", "2")
    a = rb.BERTScorer(model_type=BERT, num_layers=2).align(CAND, REF)
    lines = proc.stdout.splitlines()
    assert lines[0] == f"pair: P: {a.P:.6f} R: {a.R:.6f} F1: {a.F:.6f}"
    assert lines[1] == f"candidate: {CAND}" and lines[2] == f"reference: {REF}"
    assert lines[-1] == a.hash
    assert "padding floor" not in proc.stdout  # a pair alone is never floored
    # One row per token of each side: position, token, weight, match, cosine.
    start = lines.index("candidate tokens -> reference (P)") + 2
    rows = lines[start : start + len(a.candidate.tokens)]
    for t, row in zip(a.candidate.tokens, rows):
        cells = row.split()
        assert cells[0] == str(t.position) and cells[1] == t.token
        assert float(cells[2]) == pytest.approx(t.weight, abs=5e-4)
        assert cells[3] == str(t.match)
        assert float(cells[-1]) == pytest.approx(t.cosine, abs=5e-5)
    assert "reference tokens -> candidate (R)" in lines


def test_json_has_the_records() -> None:
    proc = ok("-c", CAND, "-r", REF, "-m", ROBERTA, "-l", "2", "--format", "json", "-q")
    doc = json.loads(proc.stdout)
    scorer = rb.BERTScorer(model_type=ROBERTA, num_layers=2)
    want = scorer.align(CAND, REF).to_dict()
    assert doc["hash"] == scorer.hash and doc["num_layers"] == 2 and doc["idf"] is False
    assert len(doc["pairs"]) == 1
    got = doc["pairs"][0]
    for side in ("candidate", "reference"):
        for g, w in zip(got[side]["tokens"], want[side]["tokens"]):
            assert [g[k] for k in ("position", "token", "piece", "id", "match")] == [
                w[k] for k in ("position", "token", "piece", "id", "match")
            ]
            assert [g[k] for k in ("weight", "cosine", "scored")] == pytest.approx(
                [w[k] for k in ("weight", "cosine", "scored")], abs=1e-6
            )
    assert [got[k] for k in ("P", "R", "F1")] == pytest.approx([want[k] for k in ("P", "R", "F1")])
    assert not any("Ġ" in t["token"] for t in got["candidate"]["tokens"])


def test_several_pairs_idf_and_batch_floor() -> None:
    cands = ["a", "the coffee was cold", "x"]
    refs = ["a new customer came in and sat down", "the coffee", "y z"]
    args = [a for c, r in zip(cands, refs) for a in ("-c", c, "-r", r)]
    proc = ok(*args, "-m", BERT, "-l", "2", "--idf", "-b", "2", "--format", "json")
    doc = json.loads(proc.stdout)
    P, R, F = rb.score(cands, refs, model_type=BERT, num_layers=2, idf=True, batch_size=2)
    for key, want in (("P", P), ("R", R), ("F1", F)):
        np.testing.assert_allclose([p[key] for p in doc["pairs"]], want, atol=1e-6)
    assert doc["idf"] is True and [p["index"] for p in doc["pairs"]] == [0, 1, 2]
    # Batch (pair 0, pair 1): pair 1's reference is shorter than pair 0's, so pair 1's
    # candidate is floored; pair 0's candidate is shorter than pair 1's, so pair 0's reference
    # is. Pair 2 is alone in its batch.
    flags = [(p["candidate"]["floored"], p["reference"]["floored"]) for p in doc["pairs"]]
    assert flags == [(False, True), (True, False), (False, False)]
    text = ok(*args, "-m", BERT, "-l", "2", "-b", "2").stdout
    assert text.count("padding floor applied") == 2 and "scored" in text
    assert text.splitlines()[0].startswith("pair 0: P: ")


def test_rescaled() -> None:
    proc = ok(
        "-c", CAND, "-r", REF, "-m", BERT, "--rescale_with_baseline", "--baseline_path", BASELINE
    )
    (P, R, F), h = rb.score(
        [CAND],
        [REF],
        model_type=BERT,
        rescale_with_baseline=True,
        baseline_path=BASELINE,
        return_hash=True,
    )
    assert proc.stdout.splitlines()[0] == (
        f"pair: P: {P[0]:.6f} R: {R[0]:.6f} F1: {F[0]:.6f} (rescaled)"
    )
    assert proc.stdout.splitlines()[-1] == h


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-c", "a", "-r", "b", "-c", "c"], "give one -r per -c: got 2 candidate"),
        (["-c", "a", "-r", "b", "--idf"], "--idf needs at least 2 pairs"),
        (["-c", "a"], "the following arguments are required: -r/--ref"),
        (["-c", "a", "-r", "b", "--baseline_path", "/nonexistent.csv"], "no such file"),
        (["-c", "a", "-r", "b", "-m", "/nonexistent/model"], "nonexistent"),
        (["-c", "a", "-r", "b", "-b", "0"], "expected a positive integer"),
    ],
)
def test_errors_are_one_line_exit_2(args: list[str], message: str) -> None:
    if "-m" not in args:
        args = [*args, "-m", BERT]
    proc = cli(*args)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_listed_in_help() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "rust_bertscore", "--help"], capture_output=True, text=True
    )
    assert "align" in proc.stdout
