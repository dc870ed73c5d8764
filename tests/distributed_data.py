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
