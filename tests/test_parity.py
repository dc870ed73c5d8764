"""Parity with bert_score 0.3.13: every reference case within 1e-5 (P, R, F; all layers too).

The expected figures are bert_score's own outputs (see data/README.md), not this package's.
"""

from __future__ import annotations

import numpy as np
import pytest

import rust_bertscore as rb
from conftest import REFERENCE, TINY, load_cases

TOLERANCE = 1e-5
MINILM_CASES = load_cases(REFERENCE / "cases.json")
PAD_FLOOR_CASES = load_cases(REFERENCE / "pad_floor_cases.json")
TINY_CASES = load_cases(TINY / "cases.json")


def _kwargs(case: dict) -> dict:
    kw = dict(case["kwargs"])
    if "baseline_path" in kw:
        kw["baseline_path"] = str(REFERENCE / "baseline_minilm_l6.csv")
    return kw


def _assert_close(got, expected: dict) -> None:
    for name, values in zip("PRF", got):
        want = np.asarray(expected[name], dtype=np.float64)
        assert values.dtype == np.float32
        assert values.shape == want.shape, name
        diff = np.max(np.abs(values.astype(np.float64) - want)) if want.size else 0.0
        assert diff <= TOLERANCE, f"{name}: max |diff| {diff:.2e}"


@pytest.mark.parametrize("case", MINILM_CASES, ids=[c["name"] for c in MINILM_CASES])
def test_minilm_case(case: dict, minilm_dir) -> None:
    got = rb.score(case["cands"], case["refs"], model_type=str(minilm_dir), **_kwargs(case))
    _assert_close(got, case["expected"])


@pytest.mark.parametrize("case", PAD_FLOOR_CASES, ids=[c["name"] for c in PAD_FLOOR_CASES])
def test_pad_floor_case(case: dict, minilm_dir) -> None:
    """bert_score's batch padding floor: unrelated pairs at batch sizes 64 and 7."""
    got = rb.score(case["cands"], case["refs"], model_type=str(minilm_dir), **_kwargs(case))
    _assert_close(got, case["expected"])


def test_pad_floor_cases_differ_from_the_batch_independent_scores(minilm_dir) -> None:
    """The cases pin the floor: without it (batch_independent=True) they are off by more than
    the tolerance, so the test above can fail."""
    case = next(c for c in PAD_FLOOR_CASES if c["name"] == "mismatched_L6_b7")
    kw = _kwargs(case)
    got = rb.score(
        case["cands"], case["refs"], model_type=str(minilm_dir), batch_independent=True, **kw
    )
    worst = max(
        float(np.max(np.abs(g.astype(np.float64) - np.asarray(case["expected"][k]))))
        for g, k in zip(got, "PRF")
    )
    assert worst > 10 * TOLERANCE


@pytest.mark.parametrize("case", TINY_CASES, ids=[c["name"] for c in TINY_CASES])
def test_tiny_family_case(case: dict) -> None:
    got = rb.score(
        case["cands"], case["refs"], model_type=str(TINY / case["model_dir"]), **_kwargs(case)
    )
    _assert_close(got, case["expected"])


def test_default_model_is_minilm_layer6(minilm_dir) -> None:
    """No model named: all-MiniLM-L6-v2 at layer 6, the same numbers as naming its folder."""
    case = next(c for c in MINILM_CASES if c["name"] == "plain_L6")
    cands, refs = case["cands"][:12], case["refs"][:12]
    (P, R, F), h = rb.score(cands, refs, return_hash=True)
    assert h.startswith("sentence-transformers/all-MiniLM-L6-v2_L6_no-idf")
    _assert_close((P, R, F), {k: v[:12] for k, v in case["expected"].items()})
