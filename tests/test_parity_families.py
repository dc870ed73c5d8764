"""bert_score 0.3.13's scores on the ALBERT, MPNet, BART and mBART tiny checkpoints
(tests/data/reference/tiny/cases2.json) within 1e-5, P, R and F, all layers too.

A case runs when its checkpoint folder holds a tokenizer (the tokenizer files are added with the
tokenisation work, not with the converter); otherwise it is skipped and says why.
"""

from __future__ import annotations

import numpy as np
import pytest

import rust_bertscore as rb
from conftest import TINY, load_cases

TOLERANCE = 1e-5
FAMILIES = ("albert", "mpnet", "bart", "mbart", "mbart-50")
CASES = [c for c in load_cases(TINY / "cases2.json") if c["model_dir"] in FAMILIES]
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "sentencepiece.bpe.model")


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_family_case(case: dict) -> None:
    model_dir = TINY / case["model_dir"]
    if not any((model_dir / name).is_file() for name in TOKENIZER_FILES):
        pytest.skip(f"no tokenizer files in {model_dir}")
    got = rb.score(case["cands"], case["refs"], model_type=str(model_dir), **case["kwargs"])
    for name, values in zip("PRF", got):
        want = np.asarray(case["expected"][name], dtype=np.float64)
        assert values.shape == want.shape, name
        diff = float(np.max(np.abs(values.astype(np.float64) - want)))
        assert diff <= TOLERANCE, f"{name}: max |diff| {diff:.2e}"
