"""supported_models() and `rust-bertscore models`."""

from __future__ import annotations

import json

import pytest

import rust_bertscore as rb
from conftest import DATA
from rust_bertscore.catalog import configs
from rust_bertscore.catalog import listing as model_listing
from rust_bertscore.catalog.listing import model_type_of
from rust_bertscore.catalog.registry import MODEL2LAYERS, tuned_layer
from rust_bertscore.cli import main

BERT_SCORE = json.loads((DATA / "bert_score_model2layers.json").read_text())["model2layers"]


def test_lists_bert_scores_140_models_in_order_with_their_layers() -> None:
    models = rb.supported_models()
    assert len(BERT_SCORE) == 140
    assert [m.name for m in models] == list(BERT_SCORE)
    assert {m.name: m.default_layer for m in models} == BERT_SCORE


def test_registry_keeps_every_bert_score_layer() -> None:
    for name, layer in BERT_SCORE.items():
        assert MODEL2LAYERS[name] == layer
        assert tuned_layer(name) == layer


@pytest.mark.parametrize(
    ("name", "model_type"),
    [
        ("bert-base-uncased", "bert"),
        ("roberta-large", "roberta"),
        ("distilbert-base-uncased-distilled-squad", "distilbert"),
        ("xlm-roberta-large", "xlm-roberta"),
        ("google/electra-large-discriminator", "electra"),
        ("microsoft/deberta-large-mnli", "deberta"),
        ("microsoft/deberta-v2-xxlarge", "deberta-v2"),
        ("microsoft/deberta-v3-base", "deberta-v2"),
        ("microsoft/mdeberta-v3-base", "deberta-v2"),
        ("khalidalt/DeBERTa-v3-large-mnli", "deberta-v2"),
        ("albert-xxlarge-v2", "albert"),
        ("facebook/bart-large-cnn", "bart"),
        ("facebook/mbart-large-50-many-to-many-mmt", "mbart"),
        ("sshleifer/tiny-mbart", "mbart"),
        ("t5-large", "t5"),
        ("Vamsi/T5_Paraphrase_Paws", "t5"),
        ("google/mt5-xl", "mt5"),
        ("google/byt5-base", "t5"),
        ("microsoft/mpnet-base", "mpnet"),
        ("allenai/led-base-16384", "led"),
        ("YituTech/conv-bert-medium-small", "convbert"),
        ("xlnet-large-cased", "xlnet"),
        ("xlm-mlm-100-1280", "xlm"),
        ("xlm-mlm-en-2048", "xlm"),
        ("google/bigbird-roberta-base", "big_bird"),
        ("microsoft/xprophetnet-large-wiki100-cased", "xlm-prophetnet"),
        ("facebook/blenderbot_small-90M", "blenderbot-small"),
        ("vinai/bertweet-base", "roberta"),
        ("amazon/bort", "bert"),
    ],
)
def test_family_follows_the_hub_config(name: str, model_type: str) -> None:
    assert model_type_of(name) == model_type


def test_every_model_has_a_family() -> None:
    for m in rb.supported_models():
        assert m.model_type


def test_convertible_follows_the_converter(monkeypatch: pytest.MonkeyPatch) -> None:
    models = {m.name: m for m in rb.supported_models()}
    assert models["bert-base-uncased"].convertible
    assert models["xlnet-base-cased"].convertible and models["xlnet-base-cased"].note == ""
    assert models["vinai/bertweet-base"].convertible  # BertweetTokenizer is implemented
    # a tokenizer this version does not reproduce keeps a model out, whatever its family
    monkeypatch.setitem(model_listing._NOT_REPRODUCED, "vinai/bertweet-base", "no tokenizer")
    models = {m.name: m for m in rb.supported_models()}
    assert not models["vinai/bertweet-base"].convertible
    assert models["vinai/bertweet-base"].note == "no tokenizer"
    # a model_type the converter does not know is not convertible, and the note says why
    monkeypatch.delitem(configs.SUPPORTED_MODEL_TYPES, "xlnet")
    models = {m.name: m for m in rb.supported_models()}
    assert not models["xlnet-base-cased"].convertible
    assert "xlnet" in models["xlnet-base-cased"].note


def test_model_info_is_frozen() -> None:
    m = rb.supported_models()[0]
    with pytest.raises(AttributeError):
        m.name = "x"  # type: ignore[misc]


def test_cli_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models"]) == 0
    out = capsys.readouterr().out.splitlines()
    n = sum(m.convertible for m in rb.supported_models())
    assert out[-2] == f"{n} of 140 convertible"
    # ModernBERT is named as convertible beyond the table, which --beyond-table lists.
    assert out[-1].startswith("also convertible beyond the table: answerdotai/ModernBERT-base")
    assert len(out) == 1 + 1 + 140 + 2  # header, the default model, the table, two lines
    assert out[1].split()[:4] == ["sentence-transformers/all-MiniLM-L6-v2", "bert", "6", "yes"]
    assert out[2].split()[:3] == ["bert-base-uncased", "bert", "9"]


def test_cli_json_and_tsv(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["total"] == 140 and len(data["models"]) == 1 + 140  # the default model first
    assert data["models"][0]["name"] == data["default"] == rb.DEFAULT_MODEL
    table = [m for m in data["models"] if m["in_bert_score"]]
    assert data["convertible"] == sum(m["convertible"] for m in table)
    assert data["convertible"] == 140  # docs/models.md and the README say all 140 convert
    assert main(["models", "--format", "tsv", "--convertible"]) == 0
    captured = capsys.readouterr()
    rows = captured.out.splitlines()
    assert rows[0].split("\t")[:4] == ["name", "model_type", "default_layer", "convertible"]
    assert len(rows) - 1 == data["convertible"] + 1  # and the default model
    assert all(r.split("\t")[3] == "true" for r in rows[1:])
    assert "of 140 convertible" in captured.err


def test_cli_bad_format_is_usage_error() -> None:
    with pytest.raises(SystemExit) as e:
        main(["models", "--format", "xml"])
    assert e.value.code == 2
