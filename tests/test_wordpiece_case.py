"""tokenizer_config.json's case settings decide a BERT-style tokenizer's normaliser, over
tokenizer.json's, as in transformers 4.57 (slow and fast alike): ids from
tests/data/wordpiece_case_ids.json (tests/data/README.md)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import TINY
from rust_bertscore.convert import load_config
from rust_bertscore.stages.tokenization.tokenizer import TextTokenizer

DATA = json.loads((Path(__file__).parent / "data" / "wordpiece_case_ids.json").read_text())


@pytest.mark.parametrize("case", sorted(DATA["cases"]))
@pytest.mark.parametrize("fast", [False, True], ids=["slow", "fast"])
def test_case_settings_come_from_tokenizer_config(case: str, fast: bool, tmp_path: Path) -> None:
    model = tmp_path / case
    shutil.copytree(TINY / "bert", model)
    config_path = model / "tokenizer_config.json"
    tok_config = json.loads(config_path.read_text())
    tok_config.update(DATA["cases"][case]["change"])
    config_path.write_text(json.dumps(tok_config))
    tokenizer = TextTokenizer(model, load_config(model), fast=fast)
    want = DATA["cases"][case]["fast" if fast else "slow"]
    assert tokenizer.encode(DATA["texts"]) == want


def test_unchanged_config_keeps_lowercasing() -> None:
    tokenizer = TextTokenizer(TINY / "bert", load_config(TINY / "bert"))
    lower = tokenizer.encode(["the cat sat on the mat."])
    assert tokenizer.encode(["The Cat sat on the MAT."]) == lower


def test_a_bad_strip_accents_is_named(tmp_path: Path) -> None:
    model = tmp_path / "bad"
    shutil.copytree(TINY / "bert", model)
    tok_config = json.loads((model / "tokenizer_config.json").read_text())
    tok_config["strip_accents"] = "yes"
    (model / "tokenizer_config.json").write_text(json.dumps(tok_config))
    with pytest.raises(ValueError, match="strip_accents must be true, false or null"):
        TextTokenizer(model, load_config(model))
