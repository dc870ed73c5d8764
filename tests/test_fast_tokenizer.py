"""``use_fast_tokenizer=True`` against bert_score 0.3.13's fast path on every tiny family.

``tests/data/fast_tokenizer_refs.json`` (made by ``tests/data/make_fast_refs.py`` with
transformers 4.57.6): bert_score's ``sent_encode`` ids with the tokenizer
``AutoTokenizer.from_pretrained(dir, use_fast=True)`` gives, and ``bert_score.score(...,
use_fast_tokenizer=True)`` on the pairs, layers and options of the slow-path cases. Where
transformers converts a SentencePiece model to a fast tokenizer (T5, mT5, mBART, mBART-50,
XLNet, DeBERTa-v3) the ids are not the slow tokenizer's; where it has no fast class (ByT5, XLM)
bert_score's fast path is its slow one. Where bert_score's fast tokenizer fails on a text (the
tiny MPNet's WordPiece has no ``[UNK]`` in its vocabulary), the reference records the error and
this package must raise a clear one.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import rust_bertscore as rb
from conftest import DATA, TINY, assert_scores_match, load_cases
from rust_bertscore.catalog.configs import load_config
from rust_bertscore.stages.tokenization import TextTokenizer

TOLERANCE = 1e-5
REFS = json.loads((DATA / "fast_tokenizer_refs.json").read_text(encoding="utf-8"))
TEXTS: list[str] = REFS["texts"]
FAMILIES: dict[str, dict] = REFS["families"]
PAIRS = {
    c["name"]: c
    for name in ("cases.json", "cases2.json", "cases3.json", "cases4.json")
    for c in load_cases(TINY / name)
}
CASES = [c for fam in FAMILIES.values() for c in fam["cases"]]

CONVERTED = ("t5", "mt5", "mbart", "mbart-50", "xlnet", "deberta-v3")
"""Families without tokenizer.json: transformers builds their fast tokenizer from the
SentencePiece model."""


def test_the_reference_covers_every_tiny_family() -> None:
    on_disk = {p.name for p in TINY.iterdir() if (p / "config.json").is_file()}
    assert set(FAMILIES) == on_disk
    assert REFS["meta"]["transformers"] == "4.57.6"
    assert {f: FAMILIES[f]["tokenizer_class"] for f in ("byt5", "xlm")} == {
        "byt5": "ByT5Tokenizer",
        "xlm": "XLMTokenizer",
    }


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_ids_are_bert_scores_fast_ids(family: str) -> None:
    ref = FAMILIES[family]
    tokenizer = TextTokenizer(TINY / family, load_config(TINY / family), fast=True)
    for index, want in zip(ref["texts"], ref["ids"]):
        text = TEXTS[index]
        if isinstance(want, dict):  # bert_score's fast tokenizer fails on this text
            with pytest.raises(rb.InputValueError, match="cannot encode text 0"):
                tokenizer.encode([text])
            continue
        assert tokenizer.encode([text]) == [want], text[:60]


@pytest.mark.parametrize("family", [f for f in CONVERTED if f != "deberta-v3"])
def test_converted_ids_are_not_the_slow_ones(family: str) -> None:
    """The converted tokenizer is not the slow one in disguise: some reference text gets other
    ids from bert_score's slow path (the tiny models' README says so), and ours follow.
    (DeBERTa-v3's converted tokenizer gives its slow ids on every reference text.)"""
    ref = FAMILIES[family]
    slow = TextTokenizer(TINY / family, load_config(TINY / family))
    texts = [TEXTS[i] for i in ref["texts"]]
    differ = [t for t, want in zip(texts, ref["ids"]) if slow.encode([t]) != [want]]
    assert differ, f"{family}: bert_score's fast ids equal its slow ids on every text"


@pytest.mark.parametrize("family", ["albert", "deberta-v2"])
def test_sentencepiece_conversion_matches_the_shipped_tokenizer_json(
    family: str, tmp_path: Path
) -> None:
    """ALBERT's and DeBERTa-v2's tiny checkpoints ship the tokenizer.json transformers
    converted: without it, the tokenizer built here from the SentencePiece model gives the
    same ids as bert_score's fast path."""
    copy = tmp_path / family
    shutil.copytree(TINY / family, copy, ignore=shutil.ignore_patterns("*.safetensors", "*.npz"))
    (copy / "tokenizer.json").unlink()
    tokenizer = TextTokenizer(copy, load_config(copy), fast=True)
    ref = FAMILIES[family]
    for index, want in zip(ref["texts"], ref["ids"]):
        assert tokenizer.encode([TEXTS[index]]) == [want], TEXTS[index][:60]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_scores_are_bert_scores_fast_path(case: dict) -> None:
    pairs = PAIRS[case["name"]]
    assert pairs["kwargs"] == case["kwargs"]
    model_dir = str(TINY / case["model_dir"])
    if "bert_score_error" in case:
        with pytest.raises(rb.RustBertScoreError):
            rb.score(pairs["cands"], pairs["refs"], model_type=model_dir, **case["kwargs"])
        return
    got = rb.score(
        pairs["cands"],
        pairs["refs"],
        model_type=model_dir,
        use_fast_tokenizer=True,
        **case["kwargs"],
    )
    assert_scores_match(got, case["expected"], TOLERANCE)


def test_blenderbot_small_fast_is_a_clear_error() -> None:
    """transformers 4.57's BlenderbotSmallTokenizerFast cannot load the reference set's
    BlenderbotSmall vocabulary, so bert_score's fast path fails there: so does ours, by name."""
    model_dir = DATA / "reference" / "more_families" / "blenderbot-small"
    with pytest.raises(rb.InputValueError, match=r"BlenderbotSmallTokenizer.*use_fast_tokenizer"):
        TextTokenizer(model_dir, load_config(model_dir), fast=True)
