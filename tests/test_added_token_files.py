"""Hostile added-token and length settings in a checkpoint's tokenizer files (issue 59's attack
round): each is refused naming what is wrong, or loads as transformers 4.57 loads it; none
crashes inside ONNX Runtime, costs memory or time beyond what the files hold, or is read
silently as something else."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import TINY
from rust_bertscore import BERTScorer, EncoderMemoryError
from rust_bertscore.errors import InputValueError, out_of_memory
from rust_bertscore.stages.tokenization.tokenizer import TextTokenizer


def checkpoint(tmp_path: Path, family: str = "bert", **tok_edits: object) -> Path:
    """A copy of the tiny ``family`` (BERT's without tokenizer.json: vocab.txt decides) with
    ``tokenizer_config.json`` keys set."""
    folder = tmp_path / family
    skip = ("*.npz", "tokenizer.json") if family == "bert" else ("*.npz",)
    shutil.copytree(TINY / family, folder, ignore=shutil.ignore_patterns(*skip))
    path = folder / "tokenizer_config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **tok_edits}))
    return folder


def tokenizer(folder: Path, fast: bool = False) -> TextTokenizer:
    return TextTokenizer(folder, json.loads((folder / "config.json").read_text()), fast=fast)


def decoder_with(family: str, token_id: str | None, **entry: object) -> dict:
    """The tiny ``family``'s ``added_tokens_decoder``, with ``<new>`` at ``token_id``."""
    config = json.loads((TINY / family / "tokenizer_config.json").read_text())
    decoder = dict(config["added_tokens_decoder"])
    if token_id is None:
        return decoder
    decoder[token_id] = {
        "content": "<new>",
        "lstrip": False,
        "rstrip": False,
        "normalized": False,
        "single_word": False,
        "special": False,
        **entry,
    }
    return decoder


@pytest.mark.parametrize("flag", ["lstrip", "rstrip", "special", "normalized"])
def test_a_flag_that_is_not_a_boolean_is_refused(flag: str, tmp_path: Path) -> None:
    """``"lstrip": "false"`` was read as True (``bool("false")``); transformers refuses it."""
    folder = checkpoint(
        tmp_path, added_tokens_decoder=decoder_with("bert", "1500", **{flag: "false"})
    )
    with pytest.raises(InputValueError, match=f"'<new>': {flag} must be true or false"):
        tokenizer(folder)


def test_a_framing_token_past_the_table_is_refused_at_load(tmp_path: Path) -> None:
    """A ``cls_token`` the vocabulary lacks is appended past the table (id 1500): every text
    would fail inside ONNX Runtime's Gather, naming neither file nor token."""
    folder = checkpoint(tmp_path, cls_token="<CLS2>")
    folder.joinpath("special_tokens_map.json").unlink()
    with pytest.raises(InputValueError, match=r"frames every text with '<CLS2>' \(id 1500\)"):
        BERTScorer(model_type=str(folder), num_layers=2)


@pytest.mark.parametrize("value", [True, -1, 1.5, "512", float("nan")])
def test_a_max_length_transformers_refuses_is_refused(value: object, tmp_path: Path) -> None:
    """``true`` cut every text to its special tokens (all scores 0); -1, 1.5, "512" and NaN
    ran, untruncated or cut to one token, where transformers fails."""
    folder = checkpoint(tmp_path, "modernbert", model_max_length=value)
    with pytest.raises(InputValueError, match="model_max_length must be a whole number"):
        tokenizer(folder)


def test_an_empty_added_token_loads(tmp_path: Path) -> None:
    """An added token with empty content was counted against the vocabulary (a false
    "does not belong to this model"); transformers loads it and never splits at it."""
    folder = checkpoint(tmp_path, added_tokens_decoder=decoder_with("bert", "1505", content=""))
    ids = tokenizer(folder).encode(["the cat sat"])
    assert ids == tokenizer(checkpoint(tmp_path / "plain")).encode(["the cat sat"])


def test_thousands_of_added_tokens_load_in_one_pass(tmp_path: Path) -> None:
    """15,000 added tokens past the vocabulary were added one call each (72 s; transformers
    1.8 s): one call now. Loaded here on both paths, with the ids transformers gives."""
    decoder = decoder_with("bert", None)
    for k in range(15_000):
        decoder[str(1500 + k)] = {"content": f"<t{k}>", "special": False, "normalized": False}
    folder = checkpoint(tmp_path, added_tokens_decoder=decoder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "vocab_size": 16_500}))
    assert tokenizer(folder).encode(["a <t14999> b"])[0][2] == 16_499
    assert tokenizer(folder, fast=True).encode(["a <t14999> b"])[0][2] == 16_499


def test_a_token_of_a_megabyte_is_named_in_a_short_message(tmp_path: Path) -> None:
    big = "<" + "x" * 1_000_000 + ">"
    decoder = decoder_with("bert", "5", content=big)  # id 5 belongs to another token
    folder = checkpoint(tmp_path, added_tokens_decoder=decoder)
    with pytest.raises(InputValueError, match="do not agree") as caught:
        tokenizer(folder)
    assert len(str(caught.value)) < 400


def test_out_of_memory_is_a_package_error_naming_the_text() -> None:
    """ONNX Runtime's failed allocation on one long text was a bare MemoryError advising a
    smaller batch_size for a batch of one."""
    one, many = out_of_memory(1, 20_005), out_of_memory(64, 512)
    assert isinstance(one, EncoderMemoryError) and isinstance(one, MemoryError)
    assert "one text of 20005 tokens" in str(one) and "long_texts='window'" in str(one)
    assert "batch of 64 texts" in str(many) and "batch_size" in str(many)
