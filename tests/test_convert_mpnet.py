"""The MPNet graph against PyTorch's hidden states (tests/data/reference/tiny/mpnet)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from encoder_reference import (
    TINY,
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
)
from rust_bertscore.convert.families.mpnet import relative_position_bucket

MODEL = TINY / "mpnet"
TOL = 1e-4  # seen: 6.5e-5 (layer 3, fused)


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("layer", range(4))
def test_truncated_graph_matches_pytorch(layer: int, fused: bool, tmp_path: Path) -> None:
    refs = load_reference("mpnet")
    sess = session(export_onnx(MODEL, tmp_path / "enc.onnx", layer, fused=fused))
    alone, batched = outputs(sess, [ids for ids, _ in refs], pad=1)
    want = [hidden[layer] for _, hidden in refs]
    assert worst(alone, want) <= TOL
    assert worst(batched, want) <= TOL


@pytest.mark.parametrize("fused", [False, True])
def test_all_layers_match_pytorch(fused: bool, tmp_path: Path) -> None:
    refs = load_reference("mpnet")
    path = export_onnx(MODEL, tmp_path / "all.onnx", 2, all_layers=True, fused=fused)
    alone, batched = outputs(session(path), [ids for ids, _ in refs], pad=1)
    assert alone[0].shape[0] == 4
    want = [hidden for _, hidden in refs]
    assert worst(alone, want) <= TOL
    assert worst(batched, want) <= TOL


@pytest.mark.parametrize("fused", [False, True])
def test_real_tokens_ignore_padding(fused: bool, tmp_path: Path) -> None:
    path = export_onnx(MODEL, tmp_path / "all.onnx", None, all_layers=True, fused=fused)
    assert padding_invariance(session(path), "mpnet", vocab=1501) <= 1e-5


def test_relative_position_buckets() -> None:
    """Buckets worked out by hand from transformers' MPNetEncoder.relative_position_bucket
    (32 buckets, max distance 128): keys before the query take buckets 0-15, keys after it
    16-31; distances below 8 have their own bucket, then 8 + int(8 log(n/8) / log 16)."""
    distance = np.array([0, -1, -7, -8, -15, -16, -31, -32, -63, -64, -127, -500, 1, 7, 16, 200])
    expected = np.array([0, 1, 7, 8, 9, 10, 11, 12, 13, 14, 15, 15, 17, 23, 26, 31])
    np.testing.assert_array_equal(relative_position_bucket(distance), expected)


def test_hub_layout_prefix_heads_and_shards(tmp_path: Path) -> None:
    """``mpnet.*`` keys (MPNetForMaskedLM), the LM head, sharded files."""
    extra = {
        "lm_head.bias": np.zeros(1501, np.float32),
        "lm_head.dense.weight": np.ones((64, 64), np.float32),
        "lm_head.decoder.weight": np.ones((1501, 64), np.float32),
        "lm_head.layer_norm.weight": np.ones(64, np.float32),
    }
    model_dir = resave(
        MODEL,
        tmp_path / "hub",
        lambda key: None if key.startswith("pooler.") else f"mpnet.{key}",
        extra,
        shards=3,
    )
    assert same_hidden_states(model_dir, "mpnet", tmp_path) <= 1e-6


def test_config_helpers() -> None:
    # 130 position rows, positions start after padding_idx 1: 128 tokens.
    assert config_facts(MODEL) == ("mpnet", 3, 128)


def test_longest_input(tmp_path: Path) -> None:
    """128 tokens reach position row 129 and relative distances up to 127."""
    sess = session(export_onnx(MODEL, tmp_path / "enc.onnx", 3, fused=True))
    ids = np.random.default_rng(1).integers(3, 1501, size=(1, 128))
    out = sess.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})[0]
    assert out.shape == (1, 128, 64)
    assert np.isfinite(out).all()


def test_int8(tmp_path: Path) -> None:
    out = int8_runs("mpnet", tmp_path)
    assert out.shape == (1, len(load_reference("mpnet")[0][0]), 64)
    assert np.isfinite(out).all()


def test_int8_keeps_first_ffn_outputs_fp32() -> None:
    model = build_model(MODEL, 3, fused=True)
    assert int8_fp32_nodes(model) == [
        "encoder.layer.0.output.dense/MatMul",
        "encoder.layer.1.output.dense/MatMul",
    ]
