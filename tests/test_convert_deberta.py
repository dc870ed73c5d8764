"""The torch-free converter's DeBERTa v1 / v2 / v3 graphs against PyTorch's hidden states."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from deberta_reference import _bucket, deberta_forward
from hypothesis import given, settings
from hypothesis import strategies as st
from safetensors.numpy import load_file, save_file

from conftest import TINY
from encoder_reference import (
    all_layers_sessions,
    config_facts,
    copy_checkpoint,
    edit_config,
    load_reference,
    max_diffs,
    padded_batch,
    run,
    run_one,
    session,
)
from rust_bertscore.convert import (
    SUPPORTED_MODEL_TYPES,
    export_onnx,
    int8_fp32_nodes,
    load_config,
    quantize_int8,
)
from rust_bertscore.convert.families.deberta import deberta_spec, log_bucket, relative_index_table

FAMILIES = ("deberta", "deberta-v2", "deberta-v3")
TOL = 1e-4


@pytest.fixture(scope="module")
def all_layers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ort.InferenceSession]:
    return all_layers_sessions(FAMILIES, tmp_path_factory.mktemp("deberta_all"))


# ---- parity with PyTorch ------------------------------------------------------------------------


@pytest.mark.parametrize("layer", range(4))
@pytest.mark.parametrize("family", FAMILIES)
def test_truncated_graph_matches_pytorch(family: str, layer: int, tmp_path: Path) -> None:
    sess = session(export_onnx(TINY / family, tmp_path / "enc.onnx", layer))
    assert [o.name for o in sess.get_outputs()] == ["hidden_state"]
    single, batch = max_diffs(sess, load_reference(family), 0, layer)
    # Seen: <= 5.8e-5 (v1 layer 3), like the BERT-family tiny models (random weights amplify
    # fp32 rounding; the float64 forward pass of deberta_reference is as far from PyTorch).
    assert single <= TOL
    assert batch <= TOL


@pytest.mark.parametrize("family", FAMILIES)
def test_all_layers_match_pytorch(family: str, all_layers: dict[str, ort.InferenceSession]) -> None:
    sess = all_layers[family]
    ids, mask = padded_batch([ids for ids, _ in load_reference(family)], 0)
    assert run(sess, ids, mask).shape == (4, *ids.shape, 64)
    single, batch = max_diffs(sess, load_reference(family), 0, None)
    assert single <= TOL
    assert batch <= TOL


@settings(max_examples=30, deadline=None)
@given(
    family=st.sampled_from(FAMILIES),
    text=st.integers(0, 3),
    n_pad=st.integers(1, 90),
    pad_with=st.integers(0, 999),
)
def test_real_tokens_ignore_padding(
    all_layers: dict[str, ort.InferenceSession], family: str, text: int, n_pad: int, pad_with: int
) -> None:
    """Whatever id fills the padding and however much (past the bucket range too), real
    tokens' outputs stay put: the conv layer sees zeros there, the attention masks them."""
    sess = all_layers[family]
    ids = load_reference(family)[text][0]
    alone = run_one(sess, ids)[:, 0]
    row = np.concatenate([ids, np.full(n_pad, pad_with, np.int64)])
    mask = (np.arange(len(row)) < len(ids)).astype(np.int64)
    # Seen: 0, or up to 1.1e-5 at layer 3 where the batch shape or the rows of the relative
    # table a longer row reaches change the fp32 kernels' blocking (a leak would be ~1e-1).
    got = run(sess, row[None], mask[None])[:, 0, : len(ids)]
    np.testing.assert_allclose(got, alone, rtol=0, atol=5e-5)
    got = run(sess, np.stack([row, row]), np.stack([mask, np.ones_like(mask)]))[:, 0, : len(ids)]
    np.testing.assert_allclose(got, alone, rtol=0, atol=5e-5)


def test_float64_reference_matches_pytorch() -> None:
    """The independent NumPy forward pass used below agrees with PyTorch where both exist."""
    for family in FAMILIES:
        config = load_config(TINY / family)
        weights = load_file(str(TINY / family / "model.safetensors"))
        for ids, hidden in load_reference(family):
            assert np.abs(deberta_forward(config, weights, ids) - hidden).max() <= TOL


# ---- config variants the checkpoints do not cover (float64 NumPy reference) --------------------

RNG_SEED = 20240611


def _random(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return (rng.standard_normal(shape) * 0.4).astype(np.float32)


def _variant(name: str, tmp_path: Path) -> Path:
    """A tiny checkpoint with one option changed (weights added or resized as it needs)."""
    rng = np.random.default_rng(RNG_SEED)
    family = "deberta" if name.startswith("v1") else "deberta-v2"
    model_dir = copy_checkpoint(family, tmp_path / name)
    w = load_file(str(model_dir / "model.safetensors"))
    if name == "v1-clamped":  # T up to 64 > 8: relative distances clamp at both ends
        edit_config(model_dir, max_relative_positions=8)
        w["encoder.rel_embeddings.weight"] = w["encoder.rel_embeddings.weight"][120:136].copy()
    elif name == "v1-absolute-embed-proj":
        edit_config(
            model_dir,
            position_biased_input=True,
            type_vocab_size=2,
            embedding_size=32,
            pos_att_type="c2p|p2c",
        )
        w["embeddings.word_embeddings.weight"] = _random(rng, 1500, 32)
        w["embeddings.position_embeddings.weight"] = _random(rng, 128, 32)
        w["embeddings.token_type_embeddings.weight"] = _random(rng, 2, 32)
        w["embeddings.embed_proj.weight"] = _random(rng, 64, 32)
    elif name == "v1-p2c-only":
        edit_config(model_dir, pos_att_type=["p2c"])
    elif name == "v2-unshared-unbucketed":
        edit_config(
            model_dir,
            share_att_key=False,
            position_buckets=-1,
            norm_rel_ebd="none",
            conv_act="tanh",
        )
        w["encoder.rel_embeddings.weight"] = _random(rng, 256, 64)
        for i in range(3):
            for proj in ("pos_key_proj", "pos_query_proj"):
                pre = f"encoder.layer.{i}.attention.self.{proj}"
                w[f"{pre}.weight"] = _random(rng, 64, 64)
                w[f"{pre}.bias"] = _random(rng, 64)
    elif name == "v2-small-buckets":  # buckets 4 over 16 positions: saturates both ways
        edit_config(model_dir, position_buckets=4, max_relative_positions=16)
        w["encoder.rel_embeddings.weight"] = w["encoder.rel_embeddings.weight"][:8].copy()
    elif name == "v2-c2p-only":
        edit_config(model_dir, pos_att_type=["c2p"], conv_kernel_size=0)
    elif name == "v2-no-relative":
        edit_config(model_dir, relative_attention=False)
    else:
        raise AssertionError(name)
    save_file(w, str(model_dir / "model.safetensors"))
    return model_dir


VARIANTS = (
    "v1-clamped",
    "v1-absolute-embed-proj",
    "v1-p2c-only",
    "v2-unshared-unbucketed",
    "v2-small-buckets",
    "v2-c2p-only",
    "v2-no-relative",
)


@pytest.mark.parametrize("variant", VARIANTS)
def test_config_variants_match_float64_reference(variant: str, tmp_path: Path) -> None:
    model_dir = _variant(variant, tmp_path)
    config = load_config(model_dir)
    weights = load_file(str(model_dir / "model.safetensors"))
    sess = session(export_onnx(model_dir, tmp_path / "enc.onnx", None, all_layers=True))
    family = "deberta" if variant.startswith("v1") else "deberta-v2"
    refs = [ids for ids, _ in load_reference(family)]
    ids, mask = padded_batch(refs, 0)
    batch = run(sess, ids, mask)
    for row, tokens in enumerate(refs):
        want = deberta_forward(config, weights, tokens)
        # fp32 against float64: seen up to 1.2e-4 at layer 3 (v2-c2p-only); a wrong index,
        # scale or missing term moves outputs by 1e-2 or more.
        np.testing.assert_allclose(run_one(sess, tokens)[:, 0], want, rtol=0, atol=3e-4)
        np.testing.assert_allclose(batch[:, row, : len(tokens)], want, rtol=0, atol=3e-4)
        np.testing.assert_allclose(want[:2], run_one(sess, tokens)[:2, 0], rtol=0, atol=TOL)


# ---- relative positions -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("buckets", "max_position"), [(16, 128), (256, 512), (256, 1024), (32, 512), (4, 16)]
)
def test_log_buckets(buckets: int, max_position: int) -> None:
    rel = np.arange(-3000, 3001)
    # float32 (as transformers computes it) and float64 agree wherever the index is not clamped.
    spec = deberta_spec(
        {
            "model_type": "deberta-v2",
            "hidden_size": 64,
            "num_attention_heads": 4,
            "num_hidden_layers": 1,
            "intermediate_size": 128,
            "vocab_size": 10,
            "max_position_embeddings": max_position,
            "relative_attention": True,
            "position_buckets": buckets,
            "pos_att_type": ["p2c", "c2p"],
        }
    )
    table, reach = relative_index_table(spec)
    index = table[np.clip(rel, -reach, reach) + reach]
    want = np.clip(_bucket(rel, buckets, max_position) + buckets, 0, 2 * buckets - 1)
    np.testing.assert_array_equal(index, want)
    assert index.min() == 0 and index.max() == 2 * buckets - 1
    assert (np.diff(index) >= 0).all()
    np.testing.assert_array_equal(
        log_bucket(-rel, buckets, max_position), -log_bucket(rel, buckets, max_position)
    )
    assert log_bucket(np.array([max_position - 1]), buckets, max_position)[0] == buckets - 1


# ---- checkpoint layouts -------------------------------------------------------------------------

HEADS = {
    "lm_predictions.lm_head.dense.weight": (64, 64),
    "lm_predictions.lm_head.LayerNorm.weight": (64,),
    "lm_predictions.lm_head.bias": (1500,),
    "cls.predictions.transform.dense.weight": (64, 64),
    "pooler.dense.weight": (64, 64),
    "pooler.dense.bias": (64,),
    "classifier.weight": (3, 64),
    "classifier.bias": (3,),
    "mask_predictions.dense.weight": (64, 64),
    "mask_predictions.classifier.weight": (1, 64),
}


@pytest.mark.parametrize("family", FAMILIES)
def test_hub_layouts_prefix_heads_and_shards(family: str, tmp_path: Path) -> None:
    """``deberta.*`` keys, heads to ignore, a stale position table, three shards and an index."""
    model_dir = copy_checkpoint(family, tmp_path / family)
    weights = load_file(str(model_dir / "model.safetensors"))
    (model_dir / "model.safetensors").unlink()
    tensors = {f"deberta.{k}": v for k, v in weights.items()}
    tensors.update({k: np.ones(shape, np.float32) for k, shape in HEADS.items()})
    tensors["deberta.embeddings.position_embeddings.weight"] = np.ones((512, 64), np.float32)
    tensors["deberta.embeddings.position_ids"] = np.arange(128, dtype=np.int64)[None]
    keys = sorted(tensors)
    weight_map = {}
    for n in range(3):
        name = f"model-{n + 1:05d}-of-00003.safetensors"
        save_file({k: tensors[k] for k in keys[n::3]}, str(model_dir / name))
        weight_map.update(dict.fromkeys(keys[n::3], name))
    index = {"metadata": {}, "weight_map": weight_map}
    (model_dir / "model.safetensors.index.json").write_text(json.dumps(index))

    bare = session(export_onnx(TINY / family, tmp_path / "bare.onnx", None, all_layers=True))
    hub = session(export_onnx(model_dir, tmp_path / "hub.onnx", None, all_layers=True))
    for ids, _ in load_reference(family):
        np.testing.assert_array_equal(run_one(hub, ids), run_one(bare, ids))
    single, batch = max_diffs(hub, load_reference(family), 0, None)
    assert max(single, batch) <= TOL


# ---- config helpers, graph contract, errors -----------------------------------------------------


def test_config_helpers() -> None:
    assert SUPPORTED_MODEL_TYPES["deberta"] == "deberta"
    assert SUPPORTED_MODEL_TYPES["deberta-v2"] == "deberta-v2"
    for family in FAMILIES:
        assert config_facts(TINY / family) == (load_config(TINY / family)["model_type"], 3, 128)
    spec = deberta_spec(load_config(TINY / "deberta-v2"))
    assert (spec.span, spec.conv_kernel_size, spec.share_att_key, spec.norm_rel_ebd) == (
        16,
        3,
        True,
        True,
    )
    assert deberta_spec(load_config(TINY / "deberta-v3")).conv_kernel_size == 0
    v1 = deberta_spec(load_config(TINY / "deberta"))
    assert (v1.span, v1.scale_factor, v1.position_biased_input) == (128, 3, False)


@pytest.mark.parametrize("fused", [False, True])
def test_graph_contract(fused: bool, tmp_path: Path) -> None:
    """Standard ONNX ops only (``fused`` has no DeBERTa variant), symbolic batch and length."""
    path = export_onnx(TINY / "deberta-v2", tmp_path / "enc.onnx", 2, fused=fused)
    model = onnx.load(str(path))
    onnx.checker.check_model(model, full_check=True)
    assert {op.domain for op in model.opset_import} <= {"", "ai.onnx"}
    assert [i.name for i in model.graph.input] == ["input_ids", "attention_mask"]
    (out,) = model.graph.output
    assert out.name == "hidden_state"
    assert [d.dim_param or d.dim_value for d in out.type.tensor_type.shape.dim] == [
        "batch",
        "seq",
        64,
    ]


def test_long_inputs_are_not_limited_by_the_graph(tmp_path: Path) -> None:
    """No absolute positions: the graph takes sequences past max_position_embeddings."""
    sess = session(export_onnx(TINY / "deberta", tmp_path / "enc.onnx", 3))
    ids = np.tile(load_reference("deberta")[1][0], 5)[:300]
    out = run_one(sess, ids)
    assert out.shape == (1, 300, 64) and np.isfinite(out).all()


def test_unknown_family_still_fails_clearly(tmp_path: Path) -> None:
    model_dir = copy_checkpoint("deberta-v3", tmp_path / "m")
    edit_config(model_dir, model_type="deberta-v3")
    with pytest.raises(ValueError, match=r"unsupported model_type 'deberta-v3'.*DeBERTa"):
        export_onnx(model_dir, tmp_path / "enc.onnx", 1)
    assert not (tmp_path / "enc.onnx").exists()


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"talking_head": True}, "talking_head"),
        ({"conv_kernel_size": 4}, "conv_kernel_size 4"),
        ({"pos_att_type": 7}, "pos_att_type"),
        ({"relative_attention": "yes"}, "relative_attention"),
    ],
)
def test_unsupported_options(changes: dict, message: str, tmp_path: Path) -> None:
    model_dir = copy_checkpoint("deberta-v2", tmp_path / "m")
    edit_config(model_dir, **changes)
    with pytest.raises(ValueError, match=message):
        export_onnx(model_dir, tmp_path / "enc.onnx", 1)


def test_missing_relative_table(tmp_path: Path) -> None:
    model_dir = copy_checkpoint("deberta", tmp_path / "m")
    weights = load_file(str(model_dir / "model.safetensors"))
    del weights["encoder.rel_embeddings.weight"]
    save_file(weights, str(model_dir / "model.safetensors"))
    export_onnx(model_dir, tmp_path / "ok.onnx", 0)  # the embeddings do not need it
    with pytest.raises(ValueError, match=r"encoder\.rel_embeddings\.weight.*missing"):
        export_onnx(model_dir, tmp_path / "enc.onnx", 1)


# ---- int8 and export ----------------------------------------------------------------------------


def test_int8(tmp_path: Path) -> None:
    src = export_onnx(TINY / "deberta-v3", tmp_path / "fp32.onnx", 3)
    kept = int8_fp32_nodes(onnx.load(str(src)))
    assert "encoder.layer.2.attention.self.rel_key/MatMul" in kept
    assert "encoder.layer.0.output.dense/MatMul" in kept
    dst = quantize_int8(src, tmp_path / "int8.onnx")
    nodes = {n.name: n.op_type for n in onnx.load(str(dst)).graph.node}
    assert nodes["encoder.layer.1.attention.self.rel_query/MatMul"] == "MatMul"
    assert "MatMulInteger" in nodes.values()
    fp32, int8 = session(src), session(dst)
    cosines = []
    for ids, _ in load_reference("deberta-v3"):
        a, b = run_one(fp32, ids)[0], run_one(int8, ids)[0]
        cosines.extend((a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1))
    # Seen: mean 0.79, min 0.41 at layer 3. The random tiny weights (std 0.4) quantise badly:
    # the tiny BERT gives 0.89 / 0.65. A wrong graph or a quantised embedding table is far worse.
    assert np.mean(cosines) > 0.7
    assert np.min(cosines) > 0.2


def test_cli_export(tmp_path: Path) -> None:
    out = tmp_path / "x" / "deberta-L2.onnx"
    cmd = [sys.executable, "-m", "rust_bertscore", "export", str(TINY / "deberta"), "-l", "2"]
    proc = subprocess.run([*cmd, "-o", str(out), "-q"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    record = json.loads((out.parent / "deberta-L2.onnx.json").read_text())
    assert (record["model_type"], record["num_layers"]) == ("deberta", 2)
    single, batch = max_diffs(session(out), load_reference("deberta"), 0, 2)
    assert max(single, batch) <= TOL
