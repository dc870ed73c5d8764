"""Tokenisation follows bert_score's ``sent_encode`` rules."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from conftest import REFERENCE, TINY
from rust_bertscore.stages.tokenization.tokenizer import TextTokenizer


def _tokenizer(model_dir: Path) -> TextTokenizer:
    config = json.loads((model_dir / "config.json").read_text())
    return TextTokenizer(model_dir, config)


def _reference_ids(npz: Path) -> list[list[int]]:
    z = np.load(npz)
    return [z[f"ids_{i}"].tolist() for i in range(sum(k.startswith("ids_") for k in z))]


@pytest.mark.parametrize("family", ["bert", "electra", "distilbert", "roberta"])
def test_reference_ids_round_trip(family: str) -> None:
    """Decoding bert_score's ids and encoding again gives bert_score's ids back."""
    tok = _tokenizer(TINY / family)
    for ids in _reference_ids(TINY / family / "hidden_states.npz"):
        text = tok._tokenizer.decode(ids, skip_special_tokens=True)
        assert tok.encode([text])[0] == ids


def test_minilm_reference_ids(minilm_dir: Path) -> None:
    tok = _tokenizer(minilm_dir)
    unk = tok._tokenizer.token_to_id("[UNK]")
    checked = 0
    for ids in _reference_ids(REFERENCE / "hidden_states.npz"):
        if unk in ids:  # decoding [UNK] loses the text
            continue
        text = tok._tokenizer.decode(ids, skip_special_tokens=True)
        assert tok.encode([text])[0] == ids
        checked += 1
    assert checked >= 3


def test_empty_and_whitespace_are_special_tokens_only(minilm_dir: Path) -> None:
    tok = _tokenizer(minilm_dir)
    cls, sep = tok.cls_id, tok.sep_id
    assert tok.encode(["", "   ", "\n\t "]) == [[cls, sep]] * 3
    assert tok.special_ids == {cls, sep}


def test_text_is_stripped(minilm_dir: Path) -> None:
    tok = _tokenizer(minilm_dir)
    assert tok.encode(["  Hello world \n"]) == tok.encode(["Hello world"])


def test_accents_cjk_emoji(minilm_dir: Path) -> None:
    tok = _tokenizer(minilm_dir)
    accents, cjk, emoji = tok.encode(["Café naïve résumé", "我爱北京天安门", "good 👍"])
    # uncased WordPiece strips accents: the same ids as the plain text
    assert accents == tok.encode(["cafe naive resume"])[0]
    # CJK characters are split one per token (plus [CLS]/[SEP])
    assert len(cjk) == 7 + 2
    assert emoji[-2] == tok._tokenizer.token_to_id("[UNK]")


def test_roberta_gets_a_prefix_space() -> None:
    tok = _tokenizer(TINY / "roberta")
    assert tok.prefix_space
    ids = tok.encode(["the"])[0]
    assert ids[1] == tok._tokenizer.token_to_id("Ġthe")
    bert = _tokenizer(TINY / "bert")
    assert not bert.prefix_space


@pytest.mark.parametrize("family", ["bert", "roberta"])
def test_truncated_at_model_max_length_keeping_the_closing_token(family: str) -> None:
    tok = _tokenizer(TINY / family)
    assert tok.max_length == 128
    ids = tok.encode(["word " * 1000])[0]
    assert len(ids) == 128
    assert ids[0] == tok.cls_id and ids[-1] == tok.sep_id


def test_vocab_files_without_tokenizer_json(tmp_path: Path) -> None:
    """A checkpoint with vocab.txt (or vocab.json + merges.txt) only tokenises the same."""
    for family in ("bert", "roberta"):
        src = TINY / family
        dst = tmp_path / family
        shutil.copytree(src, dst)
        (dst / "tokenizer.json").unlink()
        full, bare = _tokenizer(src), _tokenizer(dst)
        texts = ["Even after she moved to Greenpoint, she would take the road.", ""]
        assert bare.encode(texts) == full.encode(texts)


def test_missing_tokenizer_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"model_type": "bert"}')
    with pytest.raises(FileNotFoundError, match="no tokenizer"):
        _tokenizer(tmp_path)
