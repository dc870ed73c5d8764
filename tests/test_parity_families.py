"""bert_score 0.3.13's scores on the tiny checkpoints of the further families (DeBERTa v1/v2/v3,
ALBERT, BART, mBART, mBART-50, T5, mT5, ByT5, MPNet: tests/data/reference/tiny/cases2.json)
within 1e-5, P, R and F, all layers too.

Where bert_score returns NaN (with idf, a side whose every token weighs 0 and that is not
"empty": a T5 text that encodes to ``</s>`` alone), the same place must be NaN here.
"""

from __future__ import annotations

import numpy as np
import pytest

import rust_bertscore as rb
from conftest import TINY, assert_scores_match, load_cases
from rust_bertscore.convert import SUPPORTED_MODEL_TYPES, load_config

TOLERANCE = 1e-5
CASES = load_cases(TINY / "cases2.json")


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_family_case(case: dict) -> None:
    model_dir = TINY / case["model_dir"]
    model_type = load_config(model_dir).get("model_type")
    if model_type not in SUPPORTED_MODEL_TYPES:
        pytest.skip(f"the converter does not handle {model_type!r} yet")
    got = rb.score(case["cands"], case["refs"], model_type=str(model_dir), **case["kwargs"])
    assert_scores_match(got, case["expected"], TOLERANCE)


def test_weightless_side_is_nan_and_the_other_side_is_scored() -> None:
    """The T5 idf case holds a pair whose candidate is ``""`` (``</s>`` alone, weight 0 with
    idf since every reference ends with it): bert_score gives P NaN, R scored, F 0."""
    case = next(c for c in CASES if c["name"] == "t5_num_layers3_idfTrue_batch_size8")
    want_p = np.asarray(case["expected"]["P"], dtype=np.float64)
    assert np.isnan(want_p).sum() == 1
    k = int(np.flatnonzero(np.isnan(want_p))[0])
    P, R, F = rb.score(case["cands"], case["refs"], model_type=str(TINY / "t5"), **case["kwargs"])
    assert np.isnan(P[k]) and np.isfinite(R[k]) and R[k] != 0 and F[k] == 0
