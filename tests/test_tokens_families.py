"""Token ids of the further families (DeBERTa v1/v2/v3, ALBERT, BART, mBART, mBART-50, T5, mT5,
ByT5, MPNet) against bert_score's ids and transformers' slow tokenizers."""

from __future__ import annotations

import json
import shutil
from functools import lru_cache
from pathlib import Path

import pytest

from conftest import TINY
from rust_bertscore.stages.tokenization.tokenizer import TextTokenizer, has_tokenizer_files

NEW_FAMILIES = [
    "deberta",
    "deberta-v2",
    "deberta-v3",
    "albert",
    "bart",
    "mbart",
    "t5",
    "mt5",
    "byt5",
    "mpnet",
]
SLOW = TINY / "slow_tokenizer_ids.json"


def _tokenizer(model_dir: Path) -> TextTokenizer:
    config = json.loads((model_dir / "config.json").read_text())
    return TextTokenizer(model_dir, config)


@lru_cache(maxsize=1)
def _slow() -> dict:
    return json.loads(SLOW.read_text())


@pytest.mark.parametrize("family", NEW_FAMILIES)
def test_ids_equal_bert_score(family: str) -> None:
    """bert_score's ``sent_encode`` ids (hidden_states.npz) for the family's four texts."""
    data = json.loads((TINY / family / "ids.json").read_text())
    assert _tokenizer(TINY / family).encode(data["texts"]) == data["ids"]


@pytest.mark.parametrize("family", [*NEW_FAMILIES, "mbart-50", "bert", "roberta"])
def test_ids_equal_slow_tokenizer_on_every_text(family: str) -> None:
    """Every text of cases2.json plus edge cases (special tokens in the text, accents, digits
    with commas, CJK, emoji, texts past the maximum length), as transformers' slow tokenizer."""
    slow = _slow()
    tok = _tokenizer(TINY / family)
    expected = slow["families"][family]
    got = tok.encode(slow["texts"])
    bad = [t for t, g, e in zip(slow["texts"], got, expected["ids"]) if g != e]
    assert not bad, f"{len(bad)} texts differ, first {bad[0]!r:.80}"
    assert (tok.cls_id, tok.sep_id) == (expected["cls"], expected["sep"])


def test_slow_reference_agrees_with_bert_score() -> None:
    """The slow-tokenizer file and bert_score's own ids agree where both exist."""
    slow = _slow()
    for family in NEW_FAMILIES:
        data = json.loads((TINY / family / "ids.json").read_text())
        for text, ids in zip(data["texts"], data["ids"]):
            assert slow["families"][family]["ids"][slow["texts"].index(text)] == ids


@pytest.mark.parametrize(
    ("family", "model_file"), [("albert", "spiece.model"), ("deberta-v2", "spm.model")]
)
def test_sentencepiece_and_tokenizer_json_agree(
    family: str, model_file: str, tmp_path: Path
) -> None:
    """Where a checkpoint has both, the SentencePiece path (preferred) and tokenizer.json give
    the same ids on plain text."""
    texts = [t for t in _slow()["texts"] if "[" not in t and "<" not in t]
    both = _tokenizer(TINY / family)
    assert type(both._source).__name__ == "SentencePieceIds"
    only_json = tmp_path / family
    shutil.copytree(TINY / family, only_json)
    (only_json / model_file).unlink()
    fast = _tokenizer(only_json)
    assert fast._tokenizer is not None
    assert fast.encode(texts) == both.encode(texts)


@pytest.mark.parametrize("family", ["bart", "deberta", "mpnet"])
def test_vocabulary_files_without_tokenizer_json(family: str, tmp_path: Path) -> None:
    """vocab.json + merges.txt (BART, DeBERTa v1, as microsoft/deberta-base on the Hub) or
    vocab.txt (MPNet) alone give the slow tokenizer's ids, added tokens included."""
    slow = _slow()
    bare = tmp_path / family
    shutil.copytree(TINY / family, bare)
    (bare / "tokenizer.json").unlink()
    assert _tokenizer(bare).encode(slow["texts"]) == slow["families"][family]["ids"]


@pytest.mark.parametrize(
    ("family", "empty"),
    [
        ("t5", [1]),
        ("mt5", [1]),
        ("byt5", [1]),
        ("mbart", [2, 1004]),
        ("mbart-50", [1004, 2]),
        ("albert", [2, 3]),
        ("deberta-v3", [1, 2]),
        ("bart", [0, 2]),
    ],
)
def test_empty_text_is_the_special_tokens_only(family: str, empty: list[int]) -> None:
    tok = _tokenizer(TINY / family)
    assert tok.encode(["", "  \n\t "]) == [empty, empty]
    assert tok.empty_ids == empty


@pytest.mark.parametrize(
    ("family", "special"),
    [
        ("t5", set()),
        ("byt5", set()),
        ("mbart", {0, 2}),
        ("mbart-50", {0, 2}),
        ("deberta", {1, 2}),
        ("albert", {2, 3}),
        ("mpnet", {0, 2}),
    ],
)
def test_only_cls_and_sep_weigh_zero(family: str, special: set[int]) -> None:
    """bert_score zeroes idf_dict[cls_token_id] and [sep_token_id] only: T5 has neither, and
    mBART's language code (1004 = en_XX) is not among them."""
    tok = _tokenizer(TINY / family)
    assert tok.special_ids == special
    assert 1004 not in tok.special_ids


@pytest.mark.parametrize("family", ["t5", "byt5", "mbart", "mbart-50", "albert", "deberta-v3"])
def test_truncation_keeps_the_special_tokens(family: str) -> None:
    tok = _tokenizer(TINY / family)
    assert tok.max_length == 128
    ids = tok.encode(["word " * 1000])[0]
    assert len(ids) == 128
    empty = tok.empty_ids
    if family in ("mbart", "t5", "byt5"):
        assert ids[-len(empty) :] == empty
    elif family == "mbart-50":
        assert (ids[0], ids[-1]) == (empty[0], empty[1])
    else:
        assert (ids[0], ids[-1]) == (tok.cls_id, tok.sep_id)


def test_t5_does_not_double_a_closing_eos() -> None:
    """T5's _add_eos_if_not_present: a text ending in </s> gets no second one."""
    tok = _tokenizer(TINY / "t5")
    with_eos, plain = tok.encode(["Hello </s>", "Hello"])
    assert with_eos == plain


def test_byt5_is_bytes_plus_three() -> None:
    tok = _tokenizer(TINY / "byt5")
    assert tok.encode(["hé"]) == [[ord("h") + 3, 0xC3 + 3, 0xA9 + 3, 1]]
    assert tok.vocab_size == 259


def test_t5_without_limit_is_not_truncated(tmp_path: Path) -> None:
    """A T5 tokenizer declaring no model_max_length is not truncated (relative positions)."""
    d = tmp_path / "t5"
    shutil.copytree(TINY / "t5", d)
    cfg = json.loads((d / "tokenizer_config.json").read_text())
    cfg.pop("model_max_length")
    (d / "tokenizer_config.json").write_text(json.dumps(cfg))
    tok = _tokenizer(d)
    assert tok.max_length is None
    ids = tok.encode(["word " * 1000])[0]
    assert len(ids) > 1000 and ids[-1] == 1


def test_bart_and_deberta_get_no_prefix_space() -> None:
    for family in ("bart", "deberta", "mpnet"):
        assert not _tokenizer(TINY / family).prefix_space
    assert _tokenizer(TINY / "roberta").prefix_space


def test_mbart_bad_src_lang_is_a_clear_error(tmp_path: Path) -> None:
    d = tmp_path / "mbart"
    shutil.copytree(TINY / "mbart", d)
    cfg = json.loads((d / "tokenizer_config.json").read_text())
    cfg["src_lang"] = "xx_YY"
    (d / "tokenizer_config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="xx_YY"):
        _tokenizer(d)


def test_sentencepiece_model_missing_is_a_clear_error(tmp_path: Path) -> None:
    d = tmp_path / "t5"
    shutil.copytree(TINY / "t5", d)
    (d / "spiece.model").unlink()
    with pytest.raises(FileNotFoundError, match=r"spiece\.model"):
        _tokenizer(d)


def test_has_tokenizer_files() -> None:
    for family in [*NEW_FAMILIES, "mbart-50", "bert"]:
        assert has_tokenizer_files(TINY / family), family


def test_has_tokenizer_files_false_for_config_only(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"model_type": "t5"}')
    assert not has_tokenizer_files(tmp_path)


def test_two_token_side_zeroes_p_and_r_but_not_f(monkeypatch: pytest.MonkeyPatch) -> None:
    """bert_score masks P and R of a pair whose candidate or reference has exactly 2 tokens
    (its "empty" test) after computing F, so F stays 2PR/(P+R) of the unmasked scores. With
    T5/mBART tokenizers such a side has weight (``x </s>``, ``</s> en_XX``); here the tiny BERT
    with no zero-weight tokens stands in for them."""
    import numpy as np

    import rust_bertscore as rb
    from rust_bertscore.stages.tokenization.tokenizer import TextTokenizer as Tok

    monkeypatch.setattr(Tok, "special_ids", property(lambda self: frozenset()))
    model = str(TINY / "bert")
    cands, refs = ["", "the cat sat"], ["the cat sat on the mat", "a dog"]
    p, r, f = rb.score(cands, refs, model_type=model, num_layers=2)
    assert p[0] == 0 and r[0] == 0 and f[0] > 0
    assert p[1] > 0 and r[1] > 0
    monkeypatch.setattr(Tok, "empty_ids", property(lambda self: [self.cls_id, 0, self.sep_id]))
    p3, r3, f3 = rb.score(cands[:1], refs[:1], model_type=model, num_layers=2)
    assert p3[0] > 0 and r3[0] > 0  # three tokens: not "empty"
    assert np.isfinite(f3[0])
