"""The model identity (models/identity.py) and the signature that shows it: every config.json
and tokenizer field that changes the scores of a tiny checkpoint changes the signature, and what
the signature leaves out (threads, the encoder's batch size, the caches, the store, fields no
converter reads) changes neither (issue 48).

Each mutation below copies one tiny checkpoint, changes one field, and scores the same pairs:
the mutation must change the scores (else it tests nothing) and the signature.
``test_a_field_left_out_of_the_digest_is_caught`` plants the bug the property guards against
(a field dropped from ``GRAPH_CONFIG_FIELDS``) and checks that the property check reports it.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rust_bertscore as rb
from conftest import MORE, REFERENCE, TINY
from rust_bertscore.catalog.configs import load_config
from rust_bertscore.convert import registry
from rust_bertscore.models import identity
from rust_bertscore.models.export import export_model
from rust_bertscore.scoring.signature import parse_signature
from rust_bertscore.stages.tokenization.tokenizer import TextTokenizer

LONG = " ".join(["the committee discussed the report on regional growth"] * 30)
CANDS = [
    "The Cat sat on the MAT.",
    "A café in Zürich serves crème brûlée.",
    "Prices rose by 3,5 percent in Berlin",
    LONG,
]
REFS = [
    "the cat was sitting on the mat",
    "Cafés in Zurich serve desserts.",
    "Prices went up 3.5% in Berlin.",
    LONG + " again",
]


def run(model_dir: Path, **kwargs: Any) -> tuple[np.ndarray, str]:
    """F of the pairs, and the signature, of a fresh scorer at layer 2."""
    scorer = rb.BERTScorer(model_type=str(model_dir), num_layers=2, **kwargs)
    _, _, f = scorer.score(CANDS, REFS)
    signature = scorer.signature
    scorer.close()
    return np.asarray(f, dtype=np.float64), signature


def edit_json(name: str, key: str, value: Any) -> Callable[[Path], None]:
    def apply(model_dir: Path) -> None:
        path = model_dir / name
        data = json.loads(path.read_text(encoding="utf-8"))
        data[key] = value
        path.write_text(json.dumps(data, indent=1), encoding="utf-8")

    return apply


def config(key: str, value: Any) -> Callable[[Path], None]:
    return edit_json("config.json", key, value)


def tok_config(key: str, value: Any) -> Callable[[Path], None]:
    return edit_json("tokenizer_config.json", key, value)


def swap_ids(name: str, a: str, b: str) -> Callable[[Path], None]:
    def apply(model_dir: Path) -> None:
        path = model_dir / name
        vocab = json.loads(path.read_text(encoding="utf-8"))
        vocab[a], vocab[b] = vocab[b], vocab[a]
        path.write_text(json.dumps(vocab), encoding="utf-8")

    return apply


def tokenizer_json(change: Callable[[dict], None]) -> Callable[[Path], None]:
    def apply(model_dir: Path) -> None:
        path = model_dir / "tokenizer.json"
        data = json.loads(path.read_text(encoding="utf-8"))
        change(data)
        path.write_text(json.dumps(data), encoding="utf-8")

    return apply


def lowercase_normaliser(data: dict) -> None:
    data["normalizer"] = {"type": "Lowercase"}


def edit_lines(name: str, change: Callable[[list[str]], None]) -> Callable[[Path], None]:
    """Edit the lines of a text file of the checkpoint (vocab.txt, merges.txt)."""

    def apply(model_dir: Path) -> None:
        path = model_dir / name
        lines = path.read_text(encoding="utf-8").split("\n")
        change(lines)
        path.write_text("\n".join(lines), encoding="utf-8")

    return apply


def rename_the_line(lines: list[str]) -> None:
    lines[lines.index("the")] = "thx"


def drop_the_h_e_merge(lines: list[str]) -> None:
    lines.remove("h e")


# (family, what changes, how): every field here changes the tiny model's scores.
SCORING_MUTATIONS: list[tuple[str, str, Callable[[Path], None]]] = [
    # activations
    ("bert", "hidden_act", config("hidden_act", "relu")),
    ("electra", "hidden_act", config("hidden_act", "relu")),
    ("albert", "hidden_act", config("hidden_act", "relu")),
    ("convbert", "hidden_act", config("hidden_act", "relu")),
    ("deberta-v2", "hidden_act", config("hidden_act", "relu")),
    ("distilbert", "activation", config("activation", "relu")),
    ("bart", "activation_function", config("activation_function", "relu")),
    ("xlnet", "ff_activation", config("ff_activation", "relu")),
    ("xlm", "gelu_activation", config("gelu_activation", False)),
    ("gemma3", "hidden_activation", config("hidden_activation", "gelu")),
    ("modernbert", "hidden_activation", config("hidden_activation", "relu")),
    # norms and their epsilons
    ("bert", "layer_norm_eps", config("layer_norm_eps", 0.5)),
    ("roberta", "layer_norm_eps", config("layer_norm_eps", 0.5)),
    ("t5", "layer_norm_epsilon", config("layer_norm_epsilon", 0.5)),
    ("byt5", "layer_norm_epsilon", config("layer_norm_epsilon", 0.5)),
    ("gemma3", "rms_norm_eps", config("rms_norm_eps", 0.5)),
    ("qwen3", "rms_norm_eps", config("rms_norm_eps", 0.5)),
    ("modernbert", "norm_eps", config("norm_eps", 0.5)),
    # positions
    ("t5", "relative_attention_max_distance", config("relative_attention_max_distance", 20)),
    ("mt5", "relative_attention_max_distance", config("relative_attention_max_distance", 20)),
    ("mpnet", "layer_norm_eps", config("layer_norm_eps", 0.5)),
    ("deberta-v2", "max_relative_positions", config("max_relative_positions", 32)),
    ("xlnet", "clamp_len", config("clamp_len", 2)),
    ("gemma3", "rope_theta", config("rope_theta", 10.0)),
    ("qwen3", "rope_theta", config("rope_theta", 10.0)),
    ("modernbert", "global_rope_theta", config("global_rope_theta", 10.0)),
    # attention variant, embeddings
    ("gemma3", "query_pre_attn_scalar", config("query_pre_attn_scalar", 4)),
    ("gemma3", "sliding_window", config("sliding_window", 2)),
    ("modernbert", "local_attention", config("local_attention", 4)),
    ("bart", "scale_embedding", config("scale_embedding", True)),
    ("mbart", "scale_embedding", config("scale_embedding", False)),
    # the tokenizer: lowercasing, accents, truncation, special tokens, vocabulary, merges,
    # the normaliser
    # (tokenizer_config.json's do_lower_case decides a BERT normaliser over tokenizer.json's,
    # as in transformers: test_wordpiece_case.py)
    ("bert", "do_lower_case", tok_config("do_lower_case", False)),
    ("deberta-v2", "do_lower_case", tok_config("do_lower_case", True)),
    ("xlm", "do_lowercase_and_remove_accent", tok_config("do_lowercase_and_remove_accent", False)),
    ("albert", "keep_accents", tok_config("keep_accents", True)),
    ("bert", "model_max_length", tok_config("model_max_length", 16)),
    ("roberta", "model_max_length", tok_config("model_max_length", 16)),
    ("bert", "sep_token", tok_config("sep_token", "[MASK]")),
    # the slow tokenizer reads vocab.txt / vocab.json + merges.txt, as transformers' does
    ("bert", "vocab.txt", edit_lines("vocab.txt", rename_the_line)),
    ("roberta", "merges.txt", edit_lines("merges.txt", drop_the_h_e_merge)),
    ("modernbert", "tokenizer.json normalizer", tokenizer_json(lowercase_normaliser)),
    ("xlm", "vocab.json", swap_ids("vocab.json", "the</w>", "of</w>")),
]  # fmt: skip

# What the signature leaves out: none of these may change the scores or the signature.
NEUTRAL_MUTATIONS: list[tuple[str, str, Callable[[Path], None]]] = [
    ("bert", "architectures", config("architectures", ["BertForMaskedLM"])),
    ("bert", "transformers_version", config("transformers_version", "9.9.9")),
    ("roberta", "id2label", config("id2label", {"0": "A", "1": "B"})),
    ("bert", "name_or_path", tok_config("name_or_path", "/somewhere/else")),
    # transformers 4.57 does not read special_tokens_map.json beside added_tokens_decoder
    ("bert", "special_tokens_map", edit_json("special_tokens_map.json", "sep_token", "[MASK]")),
]


def mutated(tmp_path: Path, family: str, mutate: Callable[[Path], None]) -> Path:
    model_dir = tmp_path / f"{family}-mutated"
    shutil.copytree(TINY / family, model_dir, ignore=shutil.ignore_patterns("*.npz", "ids.json"))
    mutate(model_dir)
    return model_dir


def signature_misses(tmp_path: Path, family: str, mutate: Callable[[Path], None]) -> str | None:
    """None when the mutation changes both the scores and the signature; else what is wrong."""
    base = mutated(tmp_path / "base", family, lambda _: None)
    f0, sig0 = run(base)
    f1, sig1 = run(mutated(tmp_path / "changed", family, mutate))
    if np.array_equal(f0, f1):
        return "the scores did not change: the mutation tests nothing"
    if sig0.split("|", 1)[1] == sig1.split("|", 1)[1]:  # past model: (the paths differ)
        return f"the scores moved by {np.abs(f0 - f1).max():.2g}, the signature did not"
    return None


@pytest.mark.parametrize(
    ("family", "field", "mutate"),
    [pytest.param(*m, id=f"{m[0]}-{m[1]}") for m in SCORING_MUTATIONS],
)
def test_a_field_that_changes_scores_changes_the_signature(
    tmp_path: Path, family: str, field: str, mutate: Callable[[Path], None]
) -> None:
    assert signature_misses(tmp_path, family, mutate) is None


@pytest.mark.parametrize(
    ("family", "field", "mutate"),
    [pytest.param(*m, id=f"{m[0]}-{m[1]}") for m in NEUTRAL_MUTATIONS],
)
def test_a_field_no_score_reads_leaves_the_signature(
    tmp_path: Path, family: str, field: str, mutate: Callable[[Path], None]
) -> None:
    base = mutated(tmp_path / "base", family, lambda _: None)
    f0, sig0 = run(base)
    f1, sig1 = run(mutated(tmp_path / "changed", family, mutate))
    np.testing.assert_array_equal(f0, f1)
    assert sig0.split("|", 1)[1] == sig1.split("|", 1)[1]


def test_what_the_signature_leaves_out_changes_no_score(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = mutated(tmp_path, "bert", lambda _: None)
    f0, sig0 = run(model)
    variants = {
        "encoder batch size": {"batch_size": 1},
        "nthreads": {"nthreads": 1},
        "no embedding cache": {"cache_bytes": 0},
        "a store": {"store": str(tmp_path / "store")},
    }
    for name, kwargs in variants.items():
        f1, sig1 = run(model, **kwargs)
        np.testing.assert_allclose(f1, f0, rtol=0, atol=1e-6, err_msg=name)
        assert sig1 == sig0, name
    # Another model cache (a fresh conversion) and one intra-op thread.
    monkeypatch.setenv("RUST_BERTSCORE_CACHE", str(tmp_path / "other-cache"))
    threads = rb.get_num_threads()
    rb.set_num_threads(1)
    try:
        f1, sig1 = run(model)
    finally:
        rb.set_num_threads(threads)
    np.testing.assert_allclose(f1, f0, rtol=0, atol=1e-6)
    assert sig1 == sig0


def test_a_field_left_out_of_the_digest_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The planted bug: ``hidden_act`` dropped from the config digest. The check must say so."""
    family, _, mutate = SCORING_MUTATIONS[0]
    monkeypatch.setattr(
        identity, "GRAPH_CONFIG_FIELDS", identity.GRAPH_CONFIG_FIELDS - {"hidden_act"}
    )
    missed = signature_misses(tmp_path, family, mutate)
    assert missed is not None and "the signature did not" in missed


class RecordingConfig(dict):
    """A config.json that records which keys are read."""

    def __init__(self, data: dict, read: set[str]) -> None:
        super().__init__(data)
        self.read = read

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self.read.add(str(key))
        return super().__contains__(key)


CHECKPOINTS = sorted(
    p
    for root in (TINY, MORE, REFERENCE / "nomic", REFERENCE / "gte")
    for p in root.iterdir()
    if (p / "model.safetensors").is_file()
)
"""Every tiny checkpoint of tests/data: the reference families, the further ones and the
remote-code families (nomic_bert, new)."""


@pytest.mark.parametrize("model_dir", CHECKPOINTS, ids=lambda p: p.name)
def test_every_config_field_the_converter_reads_is_in_the_digest(
    model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read: set[str] = set()
    monkeypatch.setattr(registry, "load_config", lambda d: RecordingConfig(load_config(d), read))
    registry.build_model(model_dir, 2)
    registry.build_model(model_dir, None, all_layers=True)
    TextTokenizer(model_dir, RecordingConfig(load_config(model_dir), read))
    assert read, "nothing recorded: the converter no longer reads config.json here"
    assert sorted(read - identity.GRAPH_CONFIG_FIELDS) == []


# Fields some families read from a copy of the configuration ({**config, ...}), which
# RecordingConfig cannot see: listed here from the family modules.
READ_THROUGH_A_COPY = {
    "modernbert": ("global_attn_every_n_layers", "local_attention", "norm_eps",
                   "hidden_activation", "global_rope_theta", "local_rope_theta"),
    "qwen3": ("max_window_layers",),
    "gemma3": ("sliding_window_pattern",),
}  # fmt: skip


def test_fields_read_through_a_copy_are_in_the_digest() -> None:
    for family, fields in READ_THROUGH_A_COPY.items():
        source = Path(registry.__file__).parent / "families" / f"{family}.py"
        text = source.read_text(encoding="utf-8")
        for field in fields:
            assert f'"{field}"' in text, (family, field)  # still read there
            assert field in identity.GRAPH_CONFIG_FIELDS, (family, field)


def test_a_graph_that_does_not_match_its_record_is_refused(tmp_path: Path) -> None:
    bert = str(TINY / "bert")
    one = export_model(bert, tmp_path / "one" / "model.onnx", num_layers=1)
    two = export_model(bert, tmp_path / "two" / "model.onnx", num_layers=2)
    assert one.graph_sha256 != two.graph_sha256 and len(two.graph_sha256) == 64
    assert (
        parse_signature(rb.BERTScorer(model_type=str(tmp_path / "two" / "model.onnx")).signature)[
            "layer"
        ]
        == "2"
    )
    # The layer-1 graph copied over the layer-2 export: its record describes another graph.
    shutil.copy(tmp_path / "one" / "model.onnx", tmp_path / "two" / "model.onnx")
    with pytest.raises(identity.GraphRecordMismatchError, match="is not the graph"):
        rb.BERTScorer(model_type=str(tmp_path / "two" / "model.onnx"))
    with pytest.raises(rb.ModelLoadError, match="graph_sha256"):
        rb.score(["a"], ["b"], model_type=str(tmp_path / "two" / "model.onnx"))


def test_a_record_without_the_graph_digest_is_not_believed(tmp_path: Path) -> None:
    out = tmp_path / "old" / "model.onnx"
    export_model(str(TINY / "bert"), out, num_layers=2)
    record = identity.export_record_path(out)
    data = json.loads(record.read_text())
    del data["graph_sha256"]  # as written before the digest was recorded
    record.write_text(json.dumps(data))
    with pytest.warns(rb.RustBertScoreWarning, match="does not record the digest"):
        fields = parse_signature(rb.BERTScorer(model_type=str(out)).signature)
    assert fields["layer"] == "2" and fields["weights"].startswith(identity.GRAPH_DIGEST_PREFIX)


def test_the_runtime_names_its_versions_where_they_change_the_numbers() -> None:
    import onnxruntime

    bert = str(TINY / "bert")
    fp32 = parse_signature(rb.BERTScorer(model_type=bert, num_layers=2).signature)
    assert fp32["runtime"] == "onnxruntime"  # fp32 is held to bert_score's numbers
    int8 = rb.BERTScorer(model_type=bert, num_layers=2, precision="int8", runtime="onnxruntime")
    int8 = parse_signature(int8.signature)
    assert int8["runtime"] == f"onnxruntime-{onnxruntime.__version__}"
    pytest.importorskip("openvino")
    pytest.importorskip("nncf")
    from importlib.metadata import version

    ov = rb.BERTScorer(model_type=bert, num_layers=2, runtime="openvino", precision="int8")
    want = f"openvino-{version('openvino')}+nncf-{version('nncf')}"
    assert parse_signature(ov.signature)["runtime"] == want
    ov_fp32 = rb.BERTScorer(model_type=bert, num_layers=2, runtime="openvino")
    assert parse_signature(ov_fp32.signature)["runtime"] == "openvino"
