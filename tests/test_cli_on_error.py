"""``rust-bertscore score --on-error null``: bad lines get empty scores and a message naming
their line; the other lines get the numbers of one ``score()`` call on them alone (IDF and the
padding floor over the good lines)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import rust_bertscore as rb
from conftest import TINY
from distributed_data import shuffled_rows

BERT = str(TINY / "bert")

pytestmark = pytest.mark.filterwarnings("ignore::rust_bertscore.errors.RustBertScoreWarning")


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rust_bertscore", *args],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=600,
    )


def _jsonl(tmp_path: Path) -> tuple[Path, list[int], list[str], list]:
    """40 records (reference lists of 1-4) among which six bad lines and a blank one."""
    cands, refs = shuffled_rows(40, seed=12)
    lines = [json.dumps({"cand": c, "ref": r if len(r) > 1 else r[0]}) for c, r in zip(cands, refs)]
    bad = {
        4: '{"cand": "a cat", "ref": ',  # not JSON
        9: json.dumps({"cand": "a cat"}),  # no ref field
        15: json.dumps({"cand": None, "ref": "a dog"}),
        22: json.dumps({"cand": "a cat", "ref": ["a dog", 3]}),
        30: '{"cand": "x\\ud800y", "ref": "a dog"}',  # a lone surrogate: cannot be encoded
        31: json.dumps({"cand": "a cat", "ref": []}),
    }
    for i, line in bad.items():
        lines[i] = line
    lines.insert(20, "")  # blank lines are skipped, not bad: line numbers shift by one after it
    path = tmp_path / "pairs.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    good = [i for i in range(40) if i not in bad]
    line_of = {i: i + 1 + (i >= 20) for i in bad}
    messages = [f"{path}:{line_of[i]}: " for i in sorted(bad)]
    return path, good, messages, [cands, refs]


@pytest.mark.parametrize("fmt", ["json", "tsv"])
def test_jsonl_bad_lines_kept_empty(tmp_path, fmt):
    path, good, messages, (cands, refs) = _jsonl(tmp_path)
    args = ["--jsonl", str(path), "-m", BERT, "-l", "2", "--idf", "-b", "7", "--format", fmt]
    proc = cli(*args, "--on-error", "null")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    for message in messages:
        assert message in proc.stderr
    assert "6 of 40 lines left unscored" in proc.stderr
    P, R, F = rb.score(
        [cands[i] for i in good],
        [refs[i] for i in good],
        model_type=BERT,
        num_layers=2,
        idf=True,
        batch_size=7,
    )
    if fmt == "json":
        doc = json.loads(proc.stdout)
        pairs = doc["pairs"]
        assert [p["index"] for p in pairs] == list(range(40))
        got = np.array([[pairs[i][k] for k in ("P", "R", "F1")] for i in good])
        empty = [p for i, p in enumerate(pairs) if i not in good]
        assert all(p["F1"] is None and p["P"] is None for p in empty)
        assert [p["error"].split(": ")[0] for p in empty] == [m[:-2] for m in messages]
        assert doc["summary"]["count"] == len(good)
        assert abs(doc["summary"]["F1"] - float(np.mean(F, dtype=np.float64))) < 1e-6
        atol = 1e-6
    else:
        rows = proc.stdout.splitlines()[1:]
        assert len(rows) == 40
        assert all(rows[i] == "\t\t" for i in range(40) if i not in good)
        got = np.array([[float(x) for x in rows[i].split("\t")] for i in good])
        atol = 1e-6  # printed with 6 decimals
    np.testing.assert_allclose(got, np.stack([P, R, F], axis=1), atol=atol)
    plain = cli(*args)  # the default stops at the first bad line, naming it
    assert plain.returncode != 0 and messages[0] in plain.stderr


def test_line_files_with_a_line_that_is_not_utf8(tmp_path):
    cands, refs = shuffled_rows(25, seed=13, multi=0.0)
    hyps, refs_path = tmp_path / "hyps.txt", tmp_path / "refs.txt"
    hyps.write_text("\n".join(cands) + "\n", encoding="utf-8")
    ref_lines = [r[0].encode("utf-8") for r in refs]
    ref_lines[6] = b"caf\xe9 au lait"  # Latin-1, not UTF-8
    refs_path.write_bytes(b"\n".join(ref_lines) + b"\n")
    args = ["-c", str(hyps), "-r", str(refs_path), "-m", BERT, "-l", "2", "-b", "4", "-s"]
    proc = cli(*args, "--on-error", "null")
    assert proc.returncode == 0, proc.stderr
    assert f"{refs_path}:7: " in proc.stderr and "cannot be encoded" in proc.stderr
    rows = proc.stdout.splitlines()[:-1]
    assert rows[6] == "\t\t"
    good = [i for i in range(25) if i != 6]
    want = rb.score(
        [cands[i] for i in good],
        [refs[i][0] for i in good],
        model_type=BERT,
        num_layers=2,
        batch_size=4,
    )
    got = np.array([[float(x) for x in rows[i].split("\t")] for i in good])
    np.testing.assert_allclose(got, np.stack(want, axis=1), atol=1e-6)
    plain = cli(*args)
    assert plain.returncode != 0 and f"{refs_path}:7: not valid UTF-8" in plain.stderr
