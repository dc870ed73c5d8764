"""GTE's ``new`` architecture (gte-*-en-v1.5, gte-multilingual-base, snowflake-arctic-embed-m-v2.0)
on the tiny checkpoints made by tests/data/reference/make_gte.py with Alibaba-NLP/new-impl's
modeling code (in a side venv; none of that code is imported here): bert_score's ids, the remote
code's hidden states of every layer alone and in its own padded batch, fixed-NTK rope scaling
with ``mixed_b``, the log-n attention scale, bert_score 0.3.13's scores (idf, multi-reference,
texts up to the context length), int8, refusals and the listing.
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import rust_bertscore as rb
from conftest import REFERENCE, assert_scores_match, load_cases
from rust_bertscore.convert import build_model, int8_fp32_nodes, load_config, max_positions
from rust_bertscore.errors import CheckpointError, RustBertScoreWarning
from rust_bertscore.stages.tokenization import TextTokenizer

GTE = REFERENCE / "gte"
FAMILIES = ("gte", "gte-ntk")
REL_TOL = 1e-5
"""Hidden states: max |got - remote code| / max(|remote|, 1) per layer (measured 4.1e-7)."""
CASES = load_cases(GTE / "cases.json")


def reference(name: str) -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray]:
    with np.load(GTE / name / "hidden_states.npz") as z:
        return [(z[f"ids_{i}"], z[f"hidden_{i}"]) for i in range(4)], z["batched"]


def run(model, rows: list[np.ndarray]) -> np.ndarray:
    sess = ort.InferenceSession(model.SerializeToString())
    width = max(len(r) for r in rows)
    ids = np.zeros((len(rows), width), np.int64)
    mask = np.zeros_like(ids)
    for i, r in enumerate(rows):
        ids[i, : len(r)], mask[i, : len(r)] = r, 1
    return sess.run(None, {"input_ids": ids, "attention_mask": mask})[0]


def assert_close(got: np.ndarray, want: np.ndarray) -> None:
    scale = max(float(np.abs(want).max()), 1.0)
    assert float(np.abs(got - want).max()) / scale < REL_TOL


def with_config(tmp_path: Path, name: str, **changes: object) -> Path:
    out = tmp_path / f"{name}_changed"
    shutil.copytree(GTE / name, out)
    config = {**load_config(out), **changes}
    (out / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return out


@pytest.mark.parametrize("name", FAMILIES)
def test_ids_are_bert_scores(name: str) -> None:
    tok = TextTokenizer(GTE / name, load_config(GTE / name))
    ref, _ = reference(name)
    texts = [*CASES[0]["cands"][:3], CASES[4]["cands"][0]]
    assert tok.encode(texts) == [ids.tolist() for ids, _ in ref]
    # rope: no position limit but the tokenizer's (gte-ntk's max_position_embeddings is 32)
    assert max_positions(load_config(GTE / name)) is None
    assert len(ref[3][0]) == tok.max_length == 128


@pytest.mark.parametrize("name", FAMILIES)
def test_all_hidden_states_match_the_remote_code(name: str) -> None:
    """Each text alone and in one padded batch, against the remote code's batch too."""
    model = build_model(GTE / name, None, all_layers=True)
    ref, remote_batch = reference(name)
    batched = run(model, [ids for ids, _ in ref])
    for row, (ids, hidden) in enumerate(ref):
        alone = run(model, [ids])[:, 0]
        for layer in range(4):
            assert_close(alone[layer], hidden[layer])
            assert_close(batched[layer, row, : len(ids)], hidden[layer])
            assert_close(batched[layer, row, : len(ids)], remote_batch[layer, row, : len(ids)])


@pytest.mark.parametrize("name", FAMILIES)
def test_truncated_graph_outputs_that_layer(name: str) -> None:
    for layer in range(4):
        model = build_model(GTE / name, layer)
        for ids, hidden in reference(name)[0][:2]:
            assert_close(run(model, [ids])[0], hidden[layer])


def test_fields_left_out_take_the_remote_codes_defaults(tmp_path: Path) -> None:
    """A config.json without ``type_vocab_size`` has one token type in the remote code
    (``NewConfig``'s default): it was refused here, which expected two."""
    out = with_config(tmp_path, "gte")
    config = load_config(out)
    assert config.pop("type_vocab_size") == 1
    (out / "config.json").write_text(json.dumps(config), encoding="utf-8")
    ids, hidden = reference("gte")[0][0]
    assert_close(run(build_model(out, 3), [ids])[0], hidden[3])


@pytest.mark.parametrize(
    "change",
    [
        {"rope_scaling": None},
        {"rope_scaling": {"type": "ntk", "factor": 2.0}},
        {"logn_attention_scale": False},
    ],
)
def test_the_options_change_the_states(tmp_path: Path, change: dict) -> None:
    """Each option of gte-ntk matters (so the match above checks it): without the NTK scaling,
    without mixed_b, without the log-n scale, the states differ."""
    ids = reference("gte-ntk")[0][3][0]
    base = run(build_model(GTE / "gte-ntk", 3), [ids])
    other = run(build_model(with_config(tmp_path, "gte-ntk", **change), 3), [ids])
    assert float(np.abs(base - other).max()) > 1e-3


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_bert_score_cases(case: dict) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RustBertScoreWarning)  # empty texts
        got = rb.score(
            case["cands"], case["refs"], model_type=str(GTE / case["model_dir"]), **case["kwargs"]
        )
    assert_scores_match(got, case["expected"], 1e-5)


def test_int8_keeps_the_first_ffn_outputs() -> None:
    names = int8_fp32_nodes(build_model(GTE / "gte", 3))
    assert names == [f"encoder.layer.{i}.mlp.down_proj/MatMul" for i in range(2)]
    case = CASES[0]
    cands, refs = case["cands"][:8], case["refs"][:8]
    fp32 = rb.score(cands, refs, model_type=str(GTE / "gte"), num_layers=2)
    int8 = rb.score(cands, refs, model_type=str(GTE / "gte"), num_layers=2, precision="int8")
    assert 0 < float(np.max(np.abs(int8[2] - fp32[2]))) < 0.05


def test_default_layer_is_the_last_with_a_warning() -> None:
    with pytest.warns(RustBertScoreWarning, match="no tuned layer"):
        scorer = rb.BERTScorer(model_type=str(GTE / "gte"))
    assert scorer.num_layers == 3


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"layer_norm_type": "batch_norm"}, "layer_norm_type"),
        ({"position_embedding_type": "alibi"}, "position_embedding_type"),
        ({"rope_scaling": {"type": "yarn", "factor": 4.0}}, "rope_scaling"),
        ({"pack_qkv": "yes"}, "pack_qkv"),
    ],
)
def test_refused_configurations(tmp_path: Path, change: dict, message: str) -> None:
    with pytest.raises(CheckpointError, match=message):
        build_model(with_config(tmp_path, "gte", **change), 1)


def test_listing_names_the_gte_models() -> None:
    beyond = {m.name: m for m in rb.supported_models(beyond_table=True) if not m.in_bert_score}
    want = {
        "Alibaba-NLP/gte-base-en-v1.5": 12,
        "Alibaba-NLP/gte-large-en-v1.5": 24,
        "Alibaba-NLP/gte-multilingual-base": 12,
        "Snowflake/snowflake-arctic-embed-m-v2.0": 12,
    }
    for name, layer in want.items():
        info = beyond[name]
        assert (info.model_type, info.default_layer, info.convertible) == ("new", layer, True)
        assert rb.model_info(name).default_layer == layer


@pytest.mark.parametrize("name", FAMILIES)
def test_fp16_keeps_the_rotary_angles_in_float32(name: str) -> None:
    from rust_bertscore.convert.fp16 import to_fp16

    graph = to_fp16(build_model(GTE / name, 3))
    half = {t.name for t in graph.graph.initializer if t.data_type == onnx.TensorProto.FLOAT16}
    assert half and not any(n.startswith(("rope/", "logn")) for n in half)
    casts = [n for n in graph.graph.node if n.op_type == "Cast" and n.input[0].startswith("rope/")]
    assert not any(a.i == onnx.TensorProto.FLOAT16 for n in casts for a in n.attribute)
    case = CASES[0]
    model_type = str(GTE / name)
    f16 = rb.score(
        case["cands"][:12], case["refs"][:12], model_type=model_type, num_layers=3, precision="fp16"
    )
    f32 = rb.score(case["cands"][:12], case["refs"][:12], model_type=model_type, num_layers=3)
    assert np.isfinite(f16[2]).all() and float(np.abs(f16[2] - f32[2]).max()) < 0.01
