"""Rows for the distributed engines' tests: real text, mostly unrelated pairs, mixed reference
list lengths, and bert_score's own figures from the copied reference set."""

from __future__ import annotations

import functools
import random
from typing import TYPE_CHECKING

import numpy as np

from conftest import REFERENCE, TINY, load_cases

if TYPE_CHECKING:
    import pandas as pd


def texts() -> list[str]:
    """Every distinct text of the copied bert_score cases (empty and odd ones included)."""
    out: set[str] = set()
    for case in load_cases(REFERENCE / "cases.json"):
        out.update(case["cands"])
        for ref in case["refs"]:
            out.update([ref] if isinstance(ref, str) else ref)
    return sorted(out)


def shuffled_rows(n: int, seed: int = 0, multi: float = 0.3) -> tuple[list[str], list[list[str]]]:
    """``n`` candidates, each with 1 to 4 references drawn at random (so most pairs are
    unrelated and bert_score's padding floor shows); a share ``multi`` of rows has a list of
    several."""
    pool = texts()
    rng = random.Random(seed)
    cands = [rng.choice(pool) for _ in range(n)]
    refs = [
        [rng.choice(pool) for _ in range(rng.randint(2, 4))]
        if rng.random() < multi
        else [rng.choice(pool)]
        for _ in range(n)
    ]
    return cands, refs


def floor_case(name: str) -> dict:
    """A case of ``pad_floor_cases.json`` (bert_score 0.3.13's P/R/F on MiniLM)."""
    for case in load_cases(REFERENCE / "pad_floor_cases.json"):
        if case["name"] == name:
            return case
    raise KeyError(name)


def as_lists(refs: list) -> list[list[str]]:
    return [[r] if isinstance(r, str) else list(r) for r in refs]


@functools.lru_cache(maxsize=2)
def expected_scores(model: str, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``score()`` in one process, with idf, on :func:`shuffled_rows` (computed once per run)."""
    from rust_bertscore import score

    cands, refs = shuffled_rows(n, seed)
    P, R, F = score(cands, refs, model_type=model, idf=True)
    return P, R, F


def check_scores(out: pd.DataFrame, expected, atol: float) -> None:
    """An engine's output frame holds rows 0..n-1 once each (in any order) whose P, R and F
    columns are within ``atol`` of ``expected`` (P, R, F arrays in row order)."""
    out = out.sort_values("row")
    assert out["row"].tolist() == list(range(len(out)))
    for col, want in zip("PRF", expected):
        np.testing.assert_allclose(out[col].to_numpy(), want, atol=atol)


def long_text_rows(n: int = 40) -> tuple[list[str], list]:
    """Rows of the tiny BERT's WMT-like lines, every third one long (past its 128 tokens), a
    few with two references: for the long-text and token-option cases."""
    cands, refs = shuffled_rows(n, seed=7)
    cands = [c if i % 3 else " ".join([c] * 12) for i, c in enumerate(cands)]
    return cands, refs


LONG_TEXT_OPTIONS = {
    "model_type": str(TINY / "bert"),
    "num_layers": 2,
    "idf": True,
    "long_texts": "window",
    "window_stride": 40,
    "exclude_punctuation": True,
    "beta": 2.0,
}


# Bad rows for on_error="null": a missing candidate, a missing reference cell, a missing
# reference inside a list and an empty list (what typed engine columns can hold).
BAD_ROWS = {3: "row 3: column 'hyp' holds a missing", 10: "row 10: column 'ref' holds an empty"}
BAD_ROWS.update(
    {
        25: "row 25: column 'ref[1]' holds a missing",
        40: "row 40: column 'ref' holds a missing",
        77: "row 77: column 'hyp' holds a missing",
    }
)
BAD_ROW_OPTIONS = {"idf": True, "batch_size": 7}
"""IDF and batches of 7 pairs: leaving a bad row in either pass would change good rows' numbers."""


def bad_rows(n: int = 120, seed: int = 9) -> tuple[list, list, list[int]]:
    """``n`` rows (reference lists) with the :data:`BAD_ROWS` spoiled, and the good rows."""
    cands, refs = shuffled_rows(n, seed=seed)
    refs = as_lists(refs)
    cands[3] = cands[77] = None
    refs[10] = []
    refs[25] = [refs[25][0], None]
    refs[40] = None
    good = [i for i in range(n) if i not in BAD_ROWS]
    return cands, refs, good


def check_bad_rows(out: pd.DataFrame, cands: list, refs: list, good: list[int], model: str) -> None:
    """Rows 0..n-1 once each; good rows equal ``score()`` on the good rows alone (idf, batches
    of 7); bad rows have null scores and their message in ``error``."""
    from rust_bertscore import score

    out = out.sort_values("row").reset_index(drop=True)
    assert out["row"].tolist() == list(range(len(cands)))
    want = score(
        [cands[i] for i in good], [refs[i] for i in good], model_type=model, **BAD_ROW_OPTIONS
    )
    for col, expected in zip("PRF", want):
        np.testing.assert_allclose(out.loc[good, col].to_numpy(np.float64), expected, atol=1e-6)
    assert out.loc[good, "error"].isna().all()
    for row, message in BAD_ROWS.items():
        assert out.loc[row, ["P", "R", "F"]].isna().all(), row
        assert str(out.loc[row, "error"]).startswith(message), out.loc[row, "error"]
