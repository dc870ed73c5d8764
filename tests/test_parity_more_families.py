"""bert_score 0.3.13's scores and slow-tokenizer ids on the tiny BERT relative_key /
relative_key_query, Longformer, Pegasus, BigBird, Blenderbot and BlenderbotSmall checkpoints
(tests/data/reference/more_families/, made by make_more_families.py): P, R and F within 1e-5
(all layers too), token ids exact; BigBird's full-attention limit.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import rust_bertscore as rb
from conftest import MORE, MORE_FAMILIES, assert_scores_match, load_cases
from rust_bertscore.convert import load_config
from rust_bertscore.stages.tokenization import TextTokenizer

TOLERANCE = 1e-5
CASES = load_cases(MORE / "cases.json")


def test_every_family_has_cases() -> None:
    assert {c["model_dir"] for c in CASES} == set(MORE_FAMILIES)
    assert len(CASES) == 3 * len(MORE_FAMILIES) + 1  # SqueezeBERT: one more all_layers case


SCORED = [c for c in CASES if "bert_score_error" not in c]
FAILED = [c for c in CASES if "bert_score_error" in c]


@pytest.mark.parametrize("case", SCORED, ids=[c["name"] for c in SCORED])
def test_case(case: dict) -> None:
    model_dir = MORE / case["model_dir"]
    got = rb.score(case["cands"], case["refs"], model_type=str(model_dir), **case["kwargs"])
    assert_scores_match(got, case["expected"], TOLERANCE)


def test_bert_score_cannot_truncate_squeezebert() -> None:
    """bert_score 0.3.13 truncates a model with an ``encoder`` through ``encoder.layer``, which
    SqueezeBERT's encoder (``encoder.layers``) lacks: it fails unless ``all_layers``."""
    assert [c["model_dir"] for c in FAILED] == ["squeezebert", "squeezebert"]
    assert all("has no attribute 'layer'" in c["bert_score_error"] for c in FAILED)


@pytest.mark.parametrize("case", FAILED, ids=[c["name"] for c in FAILED])
def test_squeezebert_layer_is_bert_scores_all_layers_row(case: dict) -> None:
    """Where bert_score fails, the score at ``num_layers = L`` equals row L of bert_score's
    ``all_layers`` scores (same idf setting and batch size: the padding floor depends on it)."""
    kwargs = case["kwargs"]
    full = next(
        c
        for c in SCORED
        if c["model_dir"] == "squeezebert"
        and c["kwargs"].get("idf", False) == kwargs["idf"]
        and c["kwargs"].get("all_layers")
    )
    layer = kwargs["num_layers"]
    got = rb.score(
        case["cands"],
        case["refs"],
        model_type=str(MORE / "squeezebert"),
        num_layers=layer,
        idf=kwargs["idf"],
        batch_size=full["kwargs"]["batch_size"],
    )
    assert_scores_match(got, {k: v[layer] for k, v in full["expected"].items()}, TOLERANCE)


def _tokenizer(family: str) -> TextTokenizer:
    model_dir = MORE / family
    return TextTokenizer(model_dir, load_config(model_dir))


@pytest.mark.parametrize("family", MORE_FAMILIES)
def test_slow_tokenizer_ids(family: str) -> None:
    data = json.loads((MORE / family / "ids.json").read_text(encoding="utf-8"))
    tok = _tokenizer(family)
    assert tok.tokenizer_class.name == data["tokenizer_class"]
    assert tok.encode(data["texts"]) == data["ids"]


@pytest.mark.parametrize("family", MORE_FAMILIES)
def test_hidden_state_ids_are_the_tokenizers(family: str) -> None:
    """The ids the reference hidden states were computed on are what the tokenizer gives."""
    data = json.loads((MORE / family / "ids.json").read_text(encoding="utf-8"))
    by_text = dict(zip(data["texts"], data["ids"]))
    with np.load(MORE / family / "hidden_states.npz") as states:
        first = states["ids_0"].tolist()
    assert first in by_text.values()


def test_pegasus_frame_and_specials() -> None:
    """``X </s>`` always (no T5-style de-duplication), no CLS/SEP, pieces 103 above their
    SentencePiece ids, the pre-training tokens at 0..104."""
    tok = _tokenizer("pegasus")
    assert tok.special_ids == frozenset()
    assert tok.empty_ids == [1]
    assert tok.encode(["a </s>"])[0][-2:] == [1, 1]
    assert tok.token_to_id("<pad>") == 0
    assert tok.token_to_id("<mask_1>") == 2
    assert tok.token_to_id("<mask_2>") == 3
    assert tok.token_to_id("<unk_2>") == 4
    assert tok.token_to_id("<unk_102>") == 104
    assert tok.token_to_id("<unk>") == 2 + 103  # the SentencePiece model's unk id is 2
    assert tok.base_vocab_size == int(load_config(MORE / "pegasus")["vocab_size"])


def test_blenderbot_frames() -> None:
    """Blenderbot: ``X </s>`` (no ``<s>``), CLS ``<s>`` and SEP ``</s>`` weigh 0; BlenderbotSmall:
    no special tokens at all, so an empty text has no token."""
    tok = _tokenizer("blenderbot")
    assert tok.empty_ids == [tok.token_to_id("</s>")]
    assert tok.special_ids == frozenset({tok.token_to_id("<s>"), tok.token_to_id("</s>")})
    small = _tokenizer("blenderbot-small")
    assert small.empty_ids == [] and small.special_ids == frozenset()
    assert small.encode(["Hello, World"]) == small.encode(["hello , world"])


def test_bertweet_class_from_config_json(tmp_path: Path) -> None:
    """vinai/bertweet-base names its tokenizer in config.json only (model_type roberta): the
    class comes from there, so no prefix space and no WordPiece reading of vocab.txt."""
    import shutil

    model_dir = shutil.copytree(MORE / "bertweet", tmp_path / "model")
    tok_config = json.loads((model_dir / "tokenizer_config.json").read_text())
    del tok_config["tokenizer_class"]
    (model_dir / "tokenizer_config.json").write_text(json.dumps(tok_config))
    config = load_config(model_dir)
    assert config["model_type"] == "roberta" and config["tokenizer_class"] == "BertweetTokenizer"
    tok = TextTokenizer(model_dir, config)
    assert tok.tokenizer_class.name == "BertweetTokenizer" and not tok.prefix_space
    data = json.loads((MORE / "bertweet" / "ids.json").read_text(encoding="utf-8"))
    assert tok.encode(data["texts"]) == data["ids"]


def test_bertweet_specials_and_normalization(tmp_path: Path) -> None:
    import shutil

    tok = _tokenizer("bertweet")
    assert [tok.token_to_id(t) for t in ("<s>", "<pad>", "</s>", "<unk>")] == [0, 1, 2, 3]
    assert tok.token_to_id("<mask>") == tok.base_vocab_size  # appended after the dictionary
    model_dir = shutil.copytree(MORE / "bertweet", tmp_path / "model")
    tok_config = json.loads((model_dir / "tokenizer_config.json").read_text())
    tok_config["normalization"] = True
    (model_dir / "tokenizer_config.json").write_text(json.dumps(tok_config))
    with pytest.raises(ValueError, match="normalization=true"):
        TextTokenizer(model_dir, load_config(model_dir))


def test_xlm_prophetnet_ids() -> None:
    """Fixed ids 0..14 ([PAD] [CLS] [SEP] [UNK] [MASK] [unused0-9]), pieces 12 above their
    SentencePiece ids, ``X [SEP]``."""
    tok = _tokenizer("xlm-prophetnet")
    assert [tok.token_to_id(t) for t in ("[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]")] == [
        0,
        1,
        2,
        3,
        4,
    ]
    assert tok.token_to_id("[unused9]") == 14
    assert tok.empty_ids == [2] and tok.special_ids == frozenset({1, 2})


def test_bigbird_frame() -> None:
    tok = _tokenizer("bigbird")
    assert tok.token_to_id("[CLS]") == tok.cls_id and tok.token_to_id("[SEP]") == tok.sep_id
    assert tok.empty_ids == [tok.cls_id, tok.sep_id]


# ---- BigBird: full attention only ----

LIMIT = (5 + 2 * 2) * 16  # the tiny model: num_random_blocks 2, block_size 16


def _text_of(tok: TextTokenizer, n_tokens: int) -> str:
    """A text of exactly ``n_tokens`` tokens (special tokens included): a one-piece word
    repeated (checked on a shorter text, since past the limit the tokenizer refuses)."""
    word = next(w for w in ("the", "a", "of", "x") if len(tok.encode([w])[0]) == 3)
    assert len(tok.encode([" ".join([word] * 50)])[0]) == 52
    return " ".join([word] * (n_tokens - 2))


def test_bigbird_limit_is_read_from_config() -> None:
    assert _tokenizer("bigbird").full_attention_limit == LIMIT
    assert _tokenizer("bert-relative-key").full_attention_limit is None


def test_bigbird_text_at_the_limit_is_scored() -> None:
    tok = _tokenizer("bigbird")
    text = _text_of(tok, LIMIT)
    assert len(tok.encode([text])[0]) == LIMIT  # accepted
    P, _, _ = rb.score([text], [text], model_type=str(MORE / "bigbird"), num_layers=2)
    assert abs(float(P[0]) - 1.0) < 1e-5


def test_bigbird_text_past_the_limit_is_refused() -> None:
    tok = _tokenizer("bigbird")
    text = _text_of(tok, LIMIT + 1)
    with pytest.raises(
        ValueError, match=rf"text 1 \('(\w+ )+.*{LIMIT + 1} tokens.*at most {LIMIT}"
    ):
        tok.encode(["short", text])
    with pytest.raises(ValueError, match="block-sparse"):
        rb.score(["short", text], ["a", "b"], model_type=str(MORE / "bigbird"), num_layers=2)


def test_bigbird_original_full_has_no_limit(tmp_path: Path) -> None:
    import shutil

    model_dir = shutil.copytree(MORE / "bigbird", tmp_path / "model")
    config = load_config(model_dir)
    config["attention_type"] = "original_full"
    (model_dir / "config.json").write_text(json.dumps(config))
    tok = TextTokenizer(model_dir, config)
    assert tok.full_attention_limit is None
    assert len(tok.encode([_text_of(tok, LIMIT + 5)])[0]) >= LIMIT + 5


def test_listing_marks_the_new_families_convertible() -> None:
    models = {m.name: m for m in rb.supported_models()}
    for name in (
        "zhiheng-huang/bert-base-uncased-embedding-relative-key",
        "zhiheng-huang/bert-base-uncased-embedding-relative-key-query",
        "zhiheng-huang/bert-large-uncased-whole-word-masking-embedding-relative-key-query",
        "allenai/longformer-base-4096",
        "allenai/longformer-large-4096-finetuned-triviaqa",
        "google/pegasus-large",
        "tuner007/pegasus_paraphrase",
        "google/bigbird-roberta-base",
        "google/bigbird-base-trivia-itc",
        "facebook/blenderbot-400M-distill",
        "facebook/blenderbot_small-90M",
        "vinai/bertweet-base",
        "squeezebert/squeezebert-uncased",
        "squeezebert/squeezebert-mnli",
        "squeezebert/squeezebert-mnli-headless",
        "allenai/led-base-16384",
        "microsoft/prophetnet-large-uncased",
        "microsoft/prophetnet-large-uncased-cnndm",
        "microsoft/xprophetnet-large-wiki100-cased",
    ):
        assert models[name].convertible, name
    assert sum(m.convertible for m in models.values()) >= 133
