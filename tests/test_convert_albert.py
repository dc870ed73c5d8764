"""The ALBERT graph against PyTorch's hidden states (tests/data/reference/tiny/albert) and a
float64 NumPy forward pass for layer-group layouts the reference checkpoint does not have."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from safetensors.numpy import load_file, save_file

from encoder_reference import (
    TINY,
    Float64Weights,
    config_facts,
    int8_runs,
    load_reference,
    outputs,
    padding_invariance,
    resave,
    same_hidden_states,
    session,
    worst,
)
from rust_bertscore.convert import (
    build_model,
    export_onnx,
    int8_fp32_nodes,
    load_config,
    quantize_int8,
)

MODEL = TINY / "albert"
# Seen: 9.5e-5 at layer 3. Random weights (std 0.4) amplify fp32 rounding: PyTorch's own output
# is up to 1.6e-4 from a float64 forward pass on these texts, the graph's up to 1.2e-4.
TOL = 2e-4
GROUP = "encoder.albert_layer_groups.{g}.albert_layers.{j}."


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("layer", range(4))
def test_truncated_graph_matches_pytorch(layer: int, fused: bool, tmp_path: Path) -> None:
    refs = load_reference("albert")
    sess = session(export_onnx(MODEL, tmp_path / "enc.onnx", layer, fused=fused))
    alone, batched = outputs(sess, [ids for ids, _ in refs], pad=0)
    want = [hidden[layer] for _, hidden in refs]
    assert worst(alone, want) <= TOL
    assert worst(batched, want) <= TOL


@pytest.mark.parametrize("fused", [False, True])
def test_all_layers_match_pytorch(fused: bool, tmp_path: Path) -> None:
    refs = load_reference("albert")
    path = export_onnx(MODEL, tmp_path / "all.onnx", 1, all_layers=True, fused=fused)
    alone, batched = outputs(session(path), [ids for ids, _ in refs], pad=0)
    assert alone[0].shape[0] == 4  # the whole model's states, num_layers notwithstanding
    want = [hidden for _, hidden in refs]
    assert worst(alone, want) <= TOL
    assert worst(batched, want) <= TOL


def test_real_tokens_ignore_padding(tmp_path: Path) -> None:
    sess = session(export_onnx(MODEL, tmp_path / "all.onnx", None, all_layers=True, fused=True))
    assert padding_invariance(sess, "albert", vocab=1000) <= 1e-5


def test_hub_layout_prefix_heads_and_shards(tmp_path: Path) -> None:
    """``albert.*`` keys (AlbertForMaskedLM / AlbertForPreTraining), heads, sharded files."""
    extra = {
        "predictions.bias": np.zeros(1000, np.float32),
        "predictions.dense.weight": np.ones((32, 64), np.float32),
        "predictions.decoder.weight": np.ones((1000, 32), np.float32),
        "sop_classifier.classifier.weight": np.ones((2, 64), np.float32),
        "albert.embeddings.position_ids": np.arange(128, dtype=np.int64)[None],
    }
    model_dir = resave(
        MODEL,
        tmp_path / "hub",
        lambda key: None if key.startswith("pooler.") else f"albert.{key}",
        extra,
        shards=2,
    )
    assert same_hidden_states(model_dir, "albert", tmp_path) <= 1e-6


def test_config_helpers() -> None:
    assert config_facts(MODEL) == ("albert", 3, 128)


def test_shared_layer_is_stored_once(tmp_path: Path) -> None:
    """Three applications of one stored layer: the graph is no bigger than the checkpoint."""
    path = export_onnx(MODEL, tmp_path / "all.onnx", None, all_layers=True)
    assert path.stat().st_size < 1.05 * (MODEL / "model.safetensors").stat().st_size


def test_int8(tmp_path: Path) -> None:
    out = int8_runs("albert", tmp_path)
    assert out.shape == (1, len(load_reference("albert")[0][0]), 64)
    assert np.isfinite(out).all()


# ---- several layer groups and inner layers (float64 NumPy forward) ------------------------------


def _grouped_checkpoint(dst: Path, n_groups: int, n_inner: int) -> Path:
    """The tiny checkpoint with ``n_groups`` groups of ``n_inner`` layers, each a perturbed copy
    of the stored layer (so that applying the wrong one shows)."""
    shutil.copytree(MODEL, dst)
    weights = load_file(str(dst / "model.safetensors"))
    layer = {
        k[len(GROUP.format(g=0, j=0)) :]: weights.pop(k)
        for k in list(weights)
        if k.startswith(GROUP.format(g=0, j=0))
    }
    rng = np.random.default_rng(7)
    for g in range(n_groups):
        for j in range(n_inner):
            for name, value in layer.items():
                noise = rng.normal(0.0, 0.1, size=value.shape).astype(np.float32)
                weights[GROUP.format(g=g, j=j) + name] = value + noise
    save_file(weights, str(dst / "model.safetensors"))
    config = json.loads((dst / "config.json").read_text())
    config.update(num_hidden_groups=n_groups, inner_group_num=n_inner)
    (dst / "config.json").write_text(json.dumps(config))
    return dst


def _numpy_albert(model_dir: Path, ids: np.ndarray, groups: list[int]) -> np.ndarray:
    """Hidden states of a forward pass applying layer group ``groups[i]`` at depth i (float64)."""
    config = load_config(model_dir)
    w = Float64Weights(model_dir, config["layer_norm_eps"])
    heads, norm, lin = config["num_attention_heads"], w.norm, w.lin

    def gelu_new(x: np.ndarray) -> np.ndarray:
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))

    n = len(ids)
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.token_type_embeddings.weight"][0]
        + w["embeddings.position_embeddings.weight"][:n]
    )
    x = lin(norm(x, "embeddings.LayerNorm"), "encoder.embedding_hidden_mapping_in")
    states = [x]
    for g in groups:
        for j in range(config["inner_group_num"]):
            p = GROUP.format(g=g, j=j)
            ctx = w.self_attention(x, p + "attention.", heads)
            a = norm(lin(ctx, p + "attention.dense") + x, p + "attention.LayerNorm")
            x = norm(
                lin(gelu_new(lin(a, p + "ffn")), p + "ffn_output") + a, p + "full_layer_layer_norm"
            )
        states.append(x)
    return np.stack(states)


# transformers picks group int(i / (n / groups)) at depth i of a model run with n layers, and
# bert_score truncates by setting n = num_layers: 2 groups over 3 layers -> 0, 0, 1; over the
# 2 layers of a model truncated at 2 -> 0, 1; at 1 -> 0.
@pytest.mark.parametrize(
    ("num_layers", "groups"), [(None, [0, 0, 1]), (2, [0, 1]), (1, [0]), (0, [])]
)
def test_layer_groups_and_inner_layers(
    num_layers: int | None, groups: list[int], tmp_path: Path
) -> None:
    model_dir = _grouped_checkpoint(tmp_path / "grouped", n_groups=2, n_inner=2)
    path = export_onnx(model_dir, tmp_path / "enc.onnx", num_layers, all_layers=num_layers is None)
    ids_list = [ids for ids, _ in load_reference("albert")]
    alone, batched = outputs(session(path), ids_list, pad=0)
    want = [_numpy_albert(model_dir, ids, groups) for ids in ids_list]
    if num_layers is not None:
        want = [states[-1] for states in want]
    # Seen: 4.3e-4 after 2 x 2 layers (fp32 rounding grows with depth); a wrong group is O(1) off.
    assert worst(alone, want) <= 1e-3
    assert worst(batched, want) <= 1e-3


def test_int8_keeps_first_ffn_outputs_fp32(tmp_path: Path) -> None:
    """The shared layer's first two applications keep their FFN output projection in fp32."""
    model = build_model(MODEL, 3, fused=True)
    name = "encoder.albert_layer_groups.0.albert_layers.0.ffn_output/MatMul"
    assert int8_fp32_nodes(model) == [name, f"{name}_1"]
    int8 = quantize_int8(export_onnx(MODEL, tmp_path / "fp32.onnx", 3), tmp_path / "int8.onnx")
    ops = {n.name: n.op_type for n in onnx.load(str(int8)).graph.node}
    assert ops[name] == ops[f"{name}_1"] == "MatMul"
    assert "MatMulInteger" in ops.values()
