"""``rust-bertscore compare``, driven as a user drives it (``python -m rust_bertscore compare`` in a
subprocess) with the tiny BERT test model: the text layout, JSON and TSV output against
``BERTScorer.compare`` in this process, and the exit codes and messages of bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_compare import BASE, GOOD, REFS

from conftest import TINY
from rust_bertscore import BERTScorer

BERT = str(TINY / "bert")


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rust_bertscore", "compare", *args],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        cwd=cwd,
        timeout=600,
    )


def ok(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    proc = cli(*args, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return proc


def bad(*args: str, cwd: Path | None = None) -> str:
    """Run, expect exit code 2 and one line on stderr; return that line."""
    proc = cli(*args, cwd=cwd)
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert proc.stdout == ""
    return lines[0]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("compare")
    for name, lines in (("refs.txt", REFS), ("base.txt", BASE), ("good.txt", GOOD)):
        (d / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    (d / "mixed.txt").write_text(
        "\n".join(g if i % 2 else b for i, (b, g) in enumerate(zip(BASE, GOOD))) + "\n",
        encoding="utf-8",
    )
    (d / "short.txt").write_text("\n".join(GOOD[:5]) + "\n", encoding="utf-8")
    (d / "bad-utf8.txt").write_bytes(b"ok\n" * 3 + b"\xff\xfe\n" + b"ok\n" * 4)
    return d


@pytest.fixture(scope="module")
def expected() -> BERTScorer:
    return BERTScorer(model_type=BERT)


SYSTEMS = ("-r", "refs.txt", "-c", "base.txt", "-c", "good.txt", "-c", "mixed.txt")


def test_text_table_layout(files: Path, expected: BERTScorer) -> None:
    out = ok(*SYSTEMS, "-m", BERT, cwd=files).stdout.splitlines()
    table = expected.compare(
        {"base.txt": BASE, "good.txt": GOOD, "mixed.txt": _mixed()}, REFS, seed=12345
    )
    assert out[0] == (
        "Paired bootstrap resampling test (1000 resamples, seed 12345): 8 segments, 95% intervals"
    )
    assert out[1] == expected.hash
    assert out[2] == ""
    assert out[3].split() == ["System", "P", "R", "F1"]
    assert set(out[4]) == {"-"}
    assert out[5].split()[:2] == ["Baseline:", "base.txt"]
    b = table["base.txt"].F
    assert out[5].endswith(f"{b.mean:.4f} [{b.ci_low:.4f}, {b.ci_high:.4f}]")
    assert out[6].startswith("good.txt ")
    g = table["good.txt"].F
    assert f"{g.delta:+.4f} (p = {g.p_value:.4f})" in out[7]
    assert out[7].startswith(" " * len("Baseline: base.txt"))
    assert out[8].startswith("mixed.txt ") and "p = " in out[9]
    assert set(out[10]) == {"-"}
    assert out[11].startswith(" - each system: mean [95% bootstrap interval]")
    assert "two-sided p-value" in out[12]
    assert "(*) better than the baseline" in out[13] and "(!) worse than the baseline" in out[14]
    assert out == table.format_text().splitlines()


def _mixed() -> list[str]:
    return [g if i % 2 else b for i, (b, g) in enumerate(zip(BASE, GOOD))]


def test_json_matches_python(files: Path, expected: BERTScorer) -> None:
    proc = ok(*SYSTEMS, "-m", BERT, "--format", "json", "--paired-ar", "-n", "500", cwd=files)
    doc = json.loads(proc.stdout)
    table = expected.compare(
        {"base.txt": BASE, "good.txt": GOOD, "mixed.txt": _mixed()},
        REFS,
        test="paired-ar",
        n_samples=500,
    )
    assert doc["hash"] == expected.hash and doc["model"] == expected.model_type
    assert doc["num_layers"] == expected.num_layers and doc["idf"] is False
    assert doc["test"] == "paired-ar" and doc["n_samples"] == 500 and doc["n_resamples"] == 1000
    assert doc["baseline"] == "base.txt" and doc["segments"] == 8
    want = table.to_dict()
    assert doc["systems"] == want["systems"]


def test_tsv_rows(files: Path, expected: BERTScorer) -> None:
    proc = ok(*SYSTEMS, "-m", BERT, "-l", "3", "--format", "tsv", "--seed", "7", "-q", cwd=files)
    rows = [line.split("\t") for line in proc.stdout.splitlines()]
    assert rows[0][:4] == ["system", "baseline", "P", "P_ci_low"] and len(rows) == 4
    assert [r[0] for r in rows[1:]] == ["base.txt", "good.txt", "mixed.txt"]
    table = expected.compare(
        {"base.txt": BASE, "good.txt": GOOD, "mixed.txt": _mixed()}, REFS, seed=7
    )
    assert proc.stdout == table.format_tsv()
    assert proc.stderr == ""


def test_same_seed_same_output(files: Path) -> None:
    first = ok(*SYSTEMS, "-m", BERT, "--seed", "3", "--format", "tsv", cwd=files).stdout
    again = ok(*SYSTEMS, "-m", BERT, "--seed", "3", "--format", "tsv", cwd=files).stdout
    other = ok(*SYSTEMS, "-m", BERT, "--seed", "4", "--format", "tsv", cwd=files).stdout
    assert first == again != other


def test_paired_ar_text_and_options(files: Path) -> None:
    proc = ok(
        "-r", "refs.txt", "-c", "base.txt", "-c", "good.txt", "-m", BERT, "--paired-ar",
        "-n", "2000", "--confidence", "0.9", "--idf", "-b", "4", cwd=files,
    )  # fmt: skip
    first = proc.stdout.splitlines()[0]
    assert first.startswith("Paired approximate randomization test (2000 trials, seed 12345;")
    assert "90% intervals" in first
    assert "_idf_" in proc.stdout.splitlines()[1]
    assert "two-sided p-value" in proc.stdout


def test_a_worse_system_is_marked_worse(files: Path) -> None:
    """Issue 60: a significantly worse system showed p = 1.0 under paired-bs, and under paired-ar
    the same star as a better one; now both tests say "worse", with its own mark."""
    # the references themselves (F = 1) against unrelated words: worse on every segment
    (files / "noise.txt").write_text("zq xv kj\n" * len(REFS), encoding="utf-8")
    for test in ("--paired-bs", "--paired-ar"):
        args = ("-r", "refs.txt", "-c", "refs.txt", "-c", "noise.txt", "-m", BERT, test)
        doc = json.loads(ok(*args, "-n", "2000", "--format", "json", cwd=files).stdout)
        f = doc["systems"][1]["F1"]
        assert f["delta"] < 0 and f["p_value"] < 0.05 and f["verdict"] == "worse", f
        text = ok(*args, "-n", "2000", cwd=files).stdout
        assert f"{f['delta']:+.4f} (p = {f['p_value']:.4f})!" in text
        rows = [r.split("\t") for r in ok(*args, "-n", "2000", "--format", "tsv", cwd=files)
                .stdout.splitlines()]  # fmt: skip
        assert rows[2][rows[0].index("F1_verdict")] == "worse"


def test_source_file_is_accepted(files: Path) -> None:
    proc = ok(*SYSTEMS, "-s", "good.txt", "-m", BERT, "--format", "tsv", cwd=files)
    assert proc.stdout == ok(*SYSTEMS, "-m", BERT, "--format", "tsv", cwd=files).stdout


def test_several_reference_files(files: Path, expected: BERTScorer) -> None:
    proc = ok(
        "-r", "refs.txt", "good.txt", "-c", "base.txt", "-c", "good.txt", "-m", BERT,
        "--format", "json", cwd=files,
    )  # fmt: skip
    doc = json.loads(proc.stdout)
    assert doc["systems"][1]["F1"]["mean"] == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize(
    "args, message",
    [
        (("-c", "base.txt", "-c", "short.txt"), "short.txt has 5 lines but the references "
         "(refs.txt) have 8"),
        (("-c", "base.txt"), "at least 2 systems (a baseline and one more): give -c at least "
         "twice, got 1"),
        (("-c", "base.txt", "-c", "base.txt"), "candidate file base.txt given twice"),
        (("-c", "base.txt", "-c", "missing.txt"), "missing.txt: no such file"),
        (("-c", "base.txt", "-c", "."), ".: is a directory"),
        (("-c", "base.txt", "-c", "bad-utf8.txt"), "bad-utf8.txt:4: not valid UTF-8"),
        (("-c", "base.txt", "-c", "good.txt", "--paired-bs", "--paired-ar"), "not allowed with"),
        (("-c", "base.txt", "-c", "good.txt", "-n", "0"), "expected a positive integer, got 0"),
        (("-c", "base.txt", "-c", "good.txt", "--confidence", "1"), "strictly between 0 and 1"),
        (("-c", "base.txt", "-c", "good.txt", "--seed", "-1"), "expected a seed in [0, 2**64)"),
        (("-c", "base.txt", "-c", "good.txt", "--format", "xml"), "invalid choice: 'xml'"),
        (("-c", "base.txt", "-c", "good.txt", "-s", "short.txt"), "--source short.txt has 5 "
         "lines but the references (refs.txt) have 8"),
        (("-c", "base.txt", "-c", "good.txt", "-s", "missing.txt"), "missing.txt: no such file"),
        (("-c", "base.txt", "-c", "good.txt", "--baseline_path", "nope.csv",
          "--rescale_with_baseline"), "baseline file nope.csv: no such file"),
    ],
)  # fmt: skip
def test_bad_input_exits_2(files: Path, args: tuple[str, ...], message: str) -> None:
    line = bad("-r", "refs.txt", *args, "-m", BERT, cwd=files)
    assert message in line


def test_bad_reference_files_exit_2(files: Path) -> None:
    line = bad("-r", "refs.txt", "short.txt", "-c", "base.txt", "-c", "good.txt", cwd=files)
    assert "short.txt has 5 lines but refs.txt has 8" in line
    line = bad("-r", "missing.txt", "-c", "base.txt", "-c", "good.txt", cwd=files)
    assert "missing.txt: no such file" in line
    line = bad("-c", "base.txt", "-c", "good.txt", cwd=files)
    assert "-r/--ref" in line and "required" in line


def test_too_few_segments_exit_2(tmp_path: Path) -> None:
    for name in ("r.txt", "a.txt", "b.txt"):
        (tmp_path / name).write_text("just one line\n", encoding="utf-8")
    line = bad("-r", "r.txt", "-c", "a.txt", "-c", "b.txt", "-m", BERT, cwd=tmp_path)
    assert "r.txt: 1 line(s), the tests need at least 2 segments" in line


def test_help_lists_compare() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "rust_bertscore", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and "compare" in proc.stdout
    proc = cli("--help")
    assert proc.returncode == 0
    for flag in (
        "--paired-bs", "--paired-ar", "--n-samples", "--format", "--idf", "--lang", "--source"
    ):  # fmt: skip
        assert flag in proc.stdout
