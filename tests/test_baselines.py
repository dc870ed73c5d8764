"""Baseline files: bert_score's format, the packaged default-model baseline, errors."""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import rust_bertscore as rb
from conftest import DATA, REFERENCE, TINY, fake_hub_cache
from rust_bertscore.catalog.registry import model_for_lang
from rust_bertscore.stages.rescale import (
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


# -- bert_score's published baselines --------------------------------------------------------------

PUBLISHED = json.loads((DATA / "bert_score_baselines.json").read_text(encoding="utf-8"))["files"]


def test_the_72_published_baselines_ship_unchanged() -> None:
    """Every rescale file of the bert-score 0.3.13 wheel, byte for byte (sha256 in data/)."""
    assert len(PUBLISHED) == 72
    for rel, digest in PUBLISHED.items():
        lang, model = rel.split("/", 1)
        path = packaged_baseline(lang, model.removesuffix(".tsv"))
        assert path.is_file(), rel
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, rel
        table = read_baseline(path)
        assert table.shape[1] == 3 and len(table) >= 7, rel


def test_model_ids_with_a_slash_and_en_sci_are_found() -> None:
    for lang, model in [
        ("en-sci", "allenai/scibert_scivocab_uncased"),
        ("en", "microsoft/deberta-xlarge-mnli"),
        ("zh", "bert-base-chinese"),
    ]:
        assert packaged_baseline(lang, model).is_file(), (lang, model)
    # bert_score's lang2model picks these, and their baselines are shipped.
    for lang in ("en", "zh", "en-sci"):
        assert packaged_baseline(lang, model_for_lang(lang)).is_file(), lang


@pytest.fixture
def roberta_large_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tiny RoBERTa, cached offline under the Hub id "roberta-large" (the model lang="en"
    picks), so that lookups by lang and model name run end to end."""
    fake_hub_cache(tmp_path, "roberta-large", TINY / "roberta")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


# Row 2 (layer 2) of bert_score's rescale_baseline/en/roberta-large.tsv, as published.
ROBERTA_LARGE_L2 = (0.70031923, 0.7003052, 0.69969934)


def test_lang_en_rescales_with_roberta_large_row(roberta_large_hub) -> None:
    cands, refs = ["a cup of coffee", "the train was late"], ["coffee in a cup", "it rained"]
    raw = rb.score(cands, refs, model_type="roberta-large", num_layers=2)
    for kwargs in ({"lang": "en"}, {"lang": "EN"}, {"lang": "en", "model_type": "roberta-large"}):
        with warnings.catch_warnings():
            warnings.simplefilter("error", rb.RustBertScoreWarning)  # no "Baseline not Found"
            got = rb.score(cands, refs, num_layers=2, rescale_with_baseline=True, **kwargs)
        for x, y, b in zip(raw, got, ROBERTA_LARGE_L2):
            np.testing.assert_allclose(y, (x - b) / (1 - b), rtol=1e-5, atol=1e-6)


def test_lang_case_is_kept_when_model_type_is_given(roberta_large_hub) -> None:
    """bert_score lower-cases lang only where lang picks the model: with model_type given,
    lang="EN" looks in rescale_baseline/EN/, finds nothing, warns and returns raw scores."""
    cands, refs = ["a cup of coffee"], ["coffee in a cup"]
    raw = rb.score(cands, refs, model_type="roberta-large", num_layers=2)
    with pytest.warns(rb.RustBertScoreWarning, match="Baseline not Found for roberta-large on EN"):
        got = rb.score(
            cands,
            refs,
            model_type="roberta-large",
            num_layers=2,
            lang="EN",
            rescale_with_baseline=True,
        )
    for x, y in zip(raw, got):
        np.testing.assert_array_equal(x, y)


def test_scorer_keeps_lang_as_given_as_bert_score_does(roberta_large_hub) -> None:
    """bert_score's BERTScorer stores lang before lower-casing it, and looks up its baseline
    with the stored one."""
    scorer = rb.BERTScorer(lang="en", num_layers=2, rescale_with_baseline=True)
    np.testing.assert_allclose(scorer.baseline_vals, ROBERTA_LARGE_L2, rtol=1e-6)
    upper = rb.BERTScorer(lang="EN", num_layers=2, rescale_with_baseline=True)
    assert upper.model_type == "roberta-large"
    with pytest.raises(ValueError, match="Baseline not Found"):
        upper.score(["a"], ["b"])
