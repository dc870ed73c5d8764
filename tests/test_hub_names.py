"""Today's Hub ids of bert_score's table models (the Hub's 2024 organisation moves), model_info(),
and the warning of a model scored at an untuned layer."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

import rust_bertscore as rb
from conftest import TINY, fake_hub_cache
from rust_bertscore.catalog.hub_names import HUB_ALIASES
from rust_bertscore.catalog.listing import BEYOND_BERT_SCORE, model_type_of
from rust_bertscore.catalog.registry import (
    DEFAULT_LANG_MODEL,
    LANG2MODEL,
    MODEL2LAYERS,
    baseline_file,
    table_name,
    tuned_layer,
)
from rust_bertscore.models.runtime import default_layer
from rust_bertscore.stages.rescale import packaged_baseline, read_baseline

# Which organisation each legacy family went to (a second source beside HUB_ALIASES: the
# family from the name, the organisation from the Hub's announcement of the moves).
MOVED_TO = {
    "bert": "google-bert",
    "roberta": "FacebookAI",
    "xlm-roberta": "FacebookAI",
    "xlm": "FacebookAI",
    "distilbert": "distilbert",
    "albert": "albert",
    "t5": "google-t5",
    "xlnet": "xlnet",
}
CANDS, REFS = ["the cat sat on the mat", "it rained"], ["a cat sat on a mat", "rain fell all day"]


def test_every_alias_names_a_table_model_under_its_old_name() -> None:
    for hub_id, old in HUB_ALIASES.items():
        assert old in MODEL2LAYERS, hub_id
        assert hub_id not in MODEL2LAYERS, hub_id
        org, repo = hub_id.split("/")
        assert repo == old, hub_id  # the moves kept the repository's name
        expected = "openai-community" if old.endswith("openai-detector") else None
        if old == "distilroberta-base":
            expected = "distilbert"
        assert org == (expected or MOVED_TO[model_type_of(old)]), hub_id


def test_every_legacy_table_name_has_its_alias() -> None:
    legacy = [name for name in MODEL2LAYERS if "/" not in name]
    assert len(legacy) == 31
    assert sorted(legacy) == sorted(HUB_ALIASES.values())
    # lang= picks old names, each with its Hub id of today
    for name in [*LANG2MODEL.values(), DEFAULT_LANG_MODEL]:
        assert "/" in name or rb.model_info(name).aliases, name
    # gpt2 moved too (openai-community/gpt2), but bert_score's table never had it
    assert "gpt2" not in MODEL2LAYERS and "openai-community/gpt2" not in HUB_ALIASES


@pytest.mark.parametrize(
    ("hub_id", "layer"),
    [
        ("FacebookAI/roberta-large", 17),
        ("google-bert/bert-base-uncased", 9),
        ("distilbert/distilbert-base-uncased", 5),
        ("FacebookAI/xlm-roberta-large", 17),
        ("albert/albert-xxlarge-v2", 8),
        ("google-t5/t5-large", 23),
        ("openai-community/roberta-large-openai-detector", 15),
        ("xlnet/xlnet-large-cased", 7),
    ],
)
def test_hub_ids_take_the_tuned_layer(hub_id: str, layer: int) -> None:
    assert tuned_layer(hub_id) == layer == tuned_layer(table_name(hub_id))
    assert default_layer(hub_id, 99) == layer


def test_namespaced_and_unknown_names_are_taken_as_given(tmp_path: Path) -> None:
    assert table_name("microsoft/deberta-base") == "microsoft/deberta-base"
    # a local directory named like a table model is not bert_score's model (it looks names up)
    local = str(tmp_path / "roberta-large")
    assert table_name(local) == local and tuned_layer(local) is None
    # Hub ids match whatever their case, as the Hub resolves them (issue 48); paths do not.
    assert tuned_layer("facebookai/roberta-large") == 17
    assert tuned_layer(str(tmp_path / "ROBERTA-LARGE")) is None


def test_model_info_of_a_hub_id_is_its_table_entry() -> None:
    info = rb.model_info("FacebookAI/roberta-large")
    assert info == rb.model_info("roberta-large")
    assert (info.name, info.default_layer, info.family, info.model_type) == (
        "roberta-large",
        17,
        "roberta",
        "roberta",
    )
    assert info.aliases == ("FacebookAI/roberta-large",)
    assert info.languages == ("en",) and info.baselines == ("en",)
    assert info.in_bert_score and info.convertible
    assert info.to_dict()["aliases"] == ["FacebookAI/roberta-large"]
    json.dumps(info.to_dict())
    with pytest.raises(AttributeError):
        info.name = "x"  # type: ignore[misc]


def test_model_info_languages_and_baselines() -> None:
    mbert = rb.model_info("google-bert/bert-base-multilingual-cased")
    assert "de" in mbert.languages and "en" not in mbert.languages and "zh" not in mbert.languages
    assert set(mbert.baselines) == {
        "cs",
        "de",
        "en",
        "es",
        "et",
        "fi",
        "fr",
        "it",
        "lv",
        "pt",
        "zh",
    }
    assert rb.model_info("bert-base-chinese").languages == ("zh",)
    assert rb.model_info("allenai/scibert_scivocab_uncased").baselines == ("en-sci",)
    assert rb.model_info("t5-small").baselines == () and rb.model_info("t5-small").languages == ()
    xlmr = rb.model_info("FacebookAI/xlm-roberta-large")
    assert xlmr.name == "xlm-roberta-large" and "lv" in xlmr.baselines
    for info in rb.supported_models():  # each shipped file is found where rescaling looks
        for lang in info.baselines:
            assert packaged_baseline(lang, info.name).is_file()


def test_model_info_of_the_default_beyond_and_unknown_models(tmp_path: Path) -> None:
    default = rb.model_info(rb.DEFAULT_MODEL)
    assert (default.default_layer, default.baselines, default.in_bert_score) == (6, ("en",), False)
    modern = rb.model_info("answerdotai/ModernBERT-base")
    assert modern.default_layer == BEYOND_BERT_SCORE["answerdotai/ModernBERT-base"][1]
    assert modern.family == "modernbert" and "untuned" in modern.note
    for name in ("acme/unknown", str(tmp_path / "roberta-large"), str(TINY / "bert")):
        info = rb.model_info(name)
        assert info.name == name
        # A local checkpoint is read: its family, and whether it converts (issue 48).
        local = (None, "bert", True) if name == str(TINY / "bert") else (None, None, False)
        assert (info.default_layer, info.family, info.convertible) == local
        assert info.aliases == info.languages == info.baselines == ()
    for bad in ("", "  ", None, 3):
        with pytest.raises(rb.InputTypeError, match="name"):
            rb.model_info(bad)  # type: ignore[arg-type]


def test_baseline_of_a_local_path_stays_in_the_package() -> None:
    path = baseline_file("en", "/abs/roberta-large")
    assert path.name == "roberta-large.tsv" and path.parent.name == "abs"
    assert path.parent.parent == baseline_file("en", "x").parent
    assert packaged_baseline("en", "FacebookAI/roberta-large") == packaged_baseline(
        "en", "roberta-large"
    )


def deep_roberta(dst: Path, layers: int) -> Path:
    """The tiny RoBERTa checkpoint with ``layers`` layers (its 3 layers repeated): deep enough
    for roberta-large's tuned layer, 17."""
    from safetensors.numpy import load_file, save_file

    src = TINY / "roberta"
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("*.npz", "*.safetensors"))
    weights = load_file(str(src / "model.safetensors"))
    out = {k: v for k, v in weights.items() if ".layer." not in k}
    for i in range(layers):
        prefix = f"encoder.layer.{i % 3}."
        for key, value in weights.items():
            if key.startswith(prefix):
                out[f"encoder.layer.{i}." + key[len(prefix) :]] = value
    save_file(out, str(dst / "model.safetensors"))
    config = json.loads((dst / "config.json").read_text())
    config["num_hidden_layers"] = layers
    (dst / "config.json").write_text(json.dumps(config))
    return dst


@pytest.fixture(scope="module")
def hub_roberta_large(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An HF cache holding a 24-layer tiny RoBERTa as FacebookAI/roberta-large and as an id
    outside the tables; returns the checkpoint directory."""
    root = tmp_path_factory.mktemp("hub-names")
    checkpoint = deep_roberta(root / "deep", 24)
    for repo_id in ("FacebookAI/roberta-large", "acme/deep-roberta"):
        fake_hub_cache(root / "hub", repo_id, checkpoint)
    return root


@pytest.fixture
def hub(hub_roberta_large: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HF_HUB_CACHE", str(hub_roberta_large / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return hub_roberta_large / "deep"


def test_todays_hub_id_scores_at_the_tuned_layer_with_its_baseline(hub: Path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scorer = rb.BERTScorer("FacebookAI/roberta-large", lang="en", rescale_with_baseline=True)
    assert not [w for w in caught if "untuned" in str(w.message)]
    assert scorer.num_layers == 17
    # the hash names the model as typed, at the layer scored (bert_score would say L24)
    assert scorer.hash.startswith("FacebookAI/roberta-large_L17_no-idf")
    assert Path(scorer.baseline_path) == packaged_baseline("en", "roberta-large")
    expected = read_baseline(packaged_baseline("en", "roberta-large"))[17].astype(np.float32)
    np.testing.assert_array_equal(scorer.baseline_vals, expected)
    # the same numbers as the checkpoint at layer 17, rescaled with roberta-large's baseline
    raw = rb.score(CANDS, REFS, model_type=str(hub), num_layers=17)
    got = scorer.score(CANDS, REFS)
    for x, y, b in zip(raw, got, expected):
        np.testing.assert_allclose(y, (x - b) / (1 - b), rtol=1e-6, atol=1e-6)
    # score() finds the baseline too: no "Baseline not Found" warning
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rb.score(
            CANDS,
            REFS,
            model_type="FacebookAI/roberta-large",
            lang="en",
            rescale_with_baseline=True,
        )
    assert not [w for w in caught if "Baseline not Found" in str(w.message)]


def test_an_unknown_id_of_the_same_weights_takes_the_last_layer_and_warns(hub: Path) -> None:
    with pytest.warns(rb.RustBertScoreWarning, match=r"last layer, 24, untuned.*num_layers"):
        scorer = rb.BERTScorer("acme/deep-roberta")
    assert scorer.num_layers == 24
    other = rb.BERTScorer("acme/deep-roberta", num_layers=17, lang="en", rescale_with_baseline=True)
    with pytest.raises(rb.InputValueError, match="Baseline not Found for acme/deep-roberta"):
        other.baseline_vals  # noqa: B018 - read when first used


def test_a_model_without_a_tuned_layer_warns_on_every_load() -> None:
    for _ in range(2):  # the second load is memoised: it warns all the same
        with pytest.warns(rb.RustBertScoreWarning, match=r"tiny/bert: not in bert_score's") as w:
            scorer = rb.BERTScorer(str(TINY / "bert"))
        assert "using its last layer, 3, untuned. Pass num_layers" in str(w[0].message)
        assert w[0].filename == __file__  # the user's line
        assert scorer.num_layers == 3
    with pytest.warns(rb.RustBertScoreWarning, match="no tuned layer is known for modernbert"):
        rb.BERTScorer(str(TINY / "modernbert"))


@pytest.mark.parametrize("kwargs", [{"num_layers": 3}, {"num_layers": 1}, {"all_layers": True}])
def test_no_warning_when_the_layer_is_chosen(kwargs: dict) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rb.BERTScorer(str(TINY / "bert"), **kwargs)
        rb.BERTScorer()  # the default model has its layer
    assert not [w for w in caught if "untuned" in str(w.message)]


def test_an_exported_graph_keeps_its_layer_without_a_warning(tmp_path: Path) -> None:
    from rust_bertscore.models.export import export_model

    with pytest.warns(rb.RustBertScoreWarning, match="untuned"):  # the export picks the last
        export_model(str(TINY / "bert"), tmp_path / "g.onnx")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scorer = rb.BERTScorer(str(tmp_path / "g.onnx"))
    assert not [w for w in caught if "untuned" in str(w.message)] and scorer.num_layers == 3
