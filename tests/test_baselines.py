"""Baseline files: bert_score's format, the packaged default-model baseline, errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import rust_bertscore as rb
from conftest import REFERENCE, TINY
from rust_bertscore.baselines import (
    baseline_values,
    packaged_baseline,
    read_baseline,
    rescale,
    write_baseline,
)


def test_reads_bert_scores_format() -> None:
    table = read_baseline(REFERENCE / "baseline_minilm_l6.csv")
    assert table.shape == (7, 3)
    assert table[6, 2] == pytest.approx(0.15879596769809723)
    assert baseline_values(REFERENCE / "baseline_minilm_l6.csv", 6, False).dtype == np.float32
    assert baseline_values(REFERENCE / "baseline_minilm_l6.csv", 6, True).shape == (7, 3)


def test_packaged_default_model_baseline_is_in_the_wheel() -> None:
    path = packaged_baseline("en", rb.DEFAULT_MODEL)
    assert path.is_file(), path
    table = read_baseline(path)
    assert table.shape == (7, 3)
    assert ((table > 0) & (table < 1)).all()


def test_packaged_baseline_used_with_lang(minilm_dir) -> None:
    cands, refs = ["The cat sat on the mat."], ["A cat was sitting on the mat."]
    raw = rb.score(cands, refs, model_type=rb.DEFAULT_MODEL)
    (P, R, F), h = rb.score(
        cands,
        refs,
        model_type=rb.DEFAULT_MODEL,
        lang="en",
        rescale_with_baseline=True,
        return_hash=True,
    )
    b = read_baseline(packaged_baseline("en", rb.DEFAULT_MODEL))[6]
    for x, y, bb in zip(raw, (P, R, F), b):
        np.testing.assert_allclose(y, (x - bb) / (1 - bb), rtol=1e-6)
    assert h.endswith("-rescaled") and not h.endswith("-custom-rescaled")


def test_write_then_read_round_trip(tmp_path: Path) -> None:
    table = np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])
    write_baseline(tmp_path / "b.tsv", table)
    assert (tmp_path / "b.tsv").read_text().splitlines()[0] == "LAYER,P,R,F"
    np.testing.assert_array_equal(read_baseline(tmp_path / "b.tsv"), table)


def test_rescale_formula() -> None:
    x = np.array([0.5, 1.0, 0.2], dtype=np.float32)
    np.testing.assert_allclose(rescale(x, 0.2), (x - 0.2) / 0.8, rtol=1e-6)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("", "empty baseline file"),
        ("A,B,C,D\n0,1,2,3\n", "header"),
        ("LAYER,P,R,F\n0,0.1,0.2\n", r"b\.tsv:2: expected 4 fields"),
        ("LAYER,P,R,F\n0,0.1,x,0.3\n", r"b\.tsv:2: P, R, F must be numbers"),
        ("LAYER,P,R,F\n0,0.1,1.0,0.3\n", r"b\.tsv:2: .*below 1"),
        ("LAYER,P,R,F\n", "no layer rows"),
    ],
)
def test_malformed_files_name_file_and_line(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / "b.tsv"
    path.write_text(text)
    with pytest.raises(ValueError, match=match):
        read_baseline(path)


def test_layer_past_the_file(tmp_path: Path) -> None:
    path = tmp_path / "b.tsv"
    path.write_text("LAYER,P,R,F\n0,0.1,0.2,0.3\n")
    with pytest.raises(ValueError, match=r"layers 0\.\.0"):
        rb.score(
            ["a"],
            ["b"],
            model_type=str(TINY / "bert"),
            num_layers=2,
            rescale_with_baseline=True,
            baseline_path=str(path),
        )
