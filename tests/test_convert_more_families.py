"""The graphs of BERT with relative_key / relative_key_query positions, Longformer, Pegasus,
BigBird, Blenderbot and BlenderbotSmall against PyTorch's hidden states
(tests/data/reference/more_families/, made by make_more_families.py with transformers 4.57.6),
and their Hub checkpoint layouts.

The reference files hold the whole 3-layer model's ``output_hidden_states`` for 4 texts. For
Pegasus and Blenderbot those are the pre-LayerNorm residual stream x_0, x_1, x_2 and then
``layer_norm(x_3)`` (the encoder's final norm follows the last layer run), so the model
bert_score truncates at L < 3 outputs ``layer_norm(x_L)``: derived here in float64 from the
reference x_L and the checkpoint's ``encoder.layer_norm``. BlenderbotSmall is post-LayerNorm
(BART's layers) and has no final norm.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

import encoder_reference
from conftest import MORE, MORE_FAMILIES
from encoder_reference import (
    Reference,
    copy_checkpoint,
    edit_config,
    encoder_final_norm,
    outputs,
    pad_id,
    run,
    same_hidden_states,
    session,
    worst,
)
from rust_bertscore.convert import (
    CheckpointError,
    build_model,
    export_onnx,
    load_config,
    max_positions,
    model_depth,
    model_family,
)
from rust_bertscore.convert.families.pegasus import sinusoidal_table

FAMILIES = MORE_FAMILIES
FINAL_NORM = ("pegasus", "blenderbot")
TOL = 1e-4  # seen: 3.2e-5 (BERT relative_key_query, Longformer), 4.1e-5 (BigBird), 5.6e-5 (Pegasus)
# ProphetNet's random-weight states drift most through fp32 rounding: seen 7.9e-5 and 9.8e-5 (layer
# 3 of the longest text, states of magnitude 3.6); margin for other CPUs' accumulation orders.
FAMILY_TOL = {"prophetnet": 2e-4, "xlm-prophetnet": 2e-4}


def load_reference(family: str) -> Reference:
    """The ids and PyTorch hidden states of every text in ``more_families/<family>``."""
    return encoder_reference.load_reference(family, MORE)


def expected_at(family: str, hidden: np.ndarray, layer: int) -> np.ndarray:
    if family in FINAL_NORM and layer < 3:
        return encoder_final_norm(hidden[layer], MORE / family)
    return hidden[layer]


def scaled_worst(got: list[np.ndarray], want: list[np.ndarray]) -> float:
    """Largest difference of each state relative to max(1, its largest magnitude / 4): Pegasus'
    un-normalised residual stream reaches |x| = 77 in these texts and fp32 rounding scales
    with it."""
    diff = 0.0
    for a, b in zip(got, want):
        states_a = a if a.ndim == 3 else a[None]
        states_b = b if b.ndim == 3 else b[None]
        for state_a, state_b in zip(states_a, states_b):
            scale = max(1.0, float(np.abs(state_b).max()) / 4)
            diff = max(diff, float(np.abs(state_a - state_b).max()) / scale)
    return diff


def assert_close_to_pytorch(
    family: str, alone: list[np.ndarray], batched: list[np.ndarray], want: list[np.ndarray]
) -> None:
    """The texts' outputs run alone and in one padded batch are both within the family's
    tolerance of PyTorch's states ``want`` (by :func:`scaled_worst`)."""
    tol = FAMILY_TOL.get(family, TOL)
    assert scaled_worst(alone, want) <= tol
    assert scaled_worst(batched, want) <= tol


# ---- the graphs against PyTorch ----


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("layer", range(4))
@pytest.mark.parametrize("family", FAMILIES)
def test_truncated_graph_matches_pytorch(
    family: str, layer: int, fused: bool, tmp_path: Path
) -> None:
    refs = load_reference(family)
    model_dir = MORE / family
    sess = session(export_onnx(model_dir, tmp_path / "enc.onnx", layer, fused=fused))
    alone, batched = outputs(sess, [ids for ids, _ in refs], pad=pad_id(model_dir))
    want = [expected_at(family, hidden, layer) for _, hidden in refs]
    assert_close_to_pytorch(family, alone, batched, want)


@pytest.mark.parametrize("family", FAMILIES)
def test_all_layers_match_pytorch(family: str, tmp_path: Path) -> None:
    refs = load_reference(family)
    model_dir = MORE / family
    path = export_onnx(model_dir, tmp_path / "all.onnx", None, all_layers=True, fused=True)
    alone, batched = outputs(session(path), [ids for ids, _ in refs], pad=pad_id(model_dir))
    assert alone[0].shape[0] == 4
    assert_close_to_pytorch(family, alone, batched, [hidden for _, hidden in refs])


@pytest.mark.parametrize("family", FINAL_NORM)
def test_truncated_output_is_final_normed(family: str, tmp_path: Path) -> None:
    refs = load_reference(family)
    sess = session(export_onnx(MORE / family, tmp_path / "enc.onnx", 2))
    alone, _ = outputs(sess, [ids for ids, _ in refs], pad=pad_id(MORE / family))
    assert worst(alone, [hidden[2] for _, hidden in refs]) > 1.0


def test_pegasus_embeddings_are_exact() -> None:
    """Hidden state 0 is ``shared[ids] * 8 + sinusoid[t]``, bit for bit with PyTorch's."""
    w = load_file(str(MORE / "pegasus" / "model.safetensors"))
    table = sinusoidal_table(256, 64)
    for ids, hidden in load_reference("pegasus"):
        want = w["shared.weight"][ids] * np.float32(8.0) + table[: len(ids)]
        np.testing.assert_array_equal(hidden[0], want)


def test_sinusoidal_table_layout() -> None:
    """Sines of the even angles first, cosines of the odd ones second (not interleaved)."""
    table = sinusoidal_table(5, 6)
    pos, j = 3, np.arange(6)
    angles = pos / np.power(10000.0, 2 * (j // 2) / 6)
    np.testing.assert_allclose(table[pos, :3], np.sin(angles[0::2]), rtol=1e-6)
    np.testing.assert_allclose(table[pos, 3:], np.cos(angles[1::2]), rtol=1e-6)
    np.testing.assert_array_equal(table[0], [0, 0, 0, 1, 1, 1])
    assert sinusoidal_table(4, 5)[:, 3:].shape == (4, 2)  # odd size: 3 sines, 2 cosines


@pytest.mark.parametrize("family", ["bert-relative-key", "bert-relative-key-query"])
def test_relative_terms_matter(family: str, tmp_path: Path) -> None:
    """Dropping the distance terms (an absolute-free BERT) moves the states by far more than
    the tolerance: the test data exercise them."""
    model_dir = shutil.copytree(MORE / family, tmp_path / "model")
    weights = load_file(str(model_dir / "model.safetensors"))
    for key in weights:
        if key.endswith("distance_embedding.weight"):
            weights[key] = np.zeros_like(weights[key])
    save_file(weights, str(model_dir / "model.safetensors"))
    refs = load_reference(family)
    sess = session(export_onnx(model_dir, tmp_path / "enc.onnx", 3))
    alone, _ = outputs(sess, [ids for ids, _ in refs], pad=0)
    assert worst(alone, [hidden[3] for _, hidden in refs]) > 0.1


def test_longformer_band_matters(tmp_path: Path) -> None:
    """With windows wide enough to cover every text the states change: the band is real."""
    model_dir = _with_config(tmp_path, "longformer", attention_window=[512, 512, 512])
    refs = load_reference("longformer")
    sess = session(export_onnx(model_dir, tmp_path / "enc.onnx", 3))
    alone, _ = outputs(sess, [ids for ids, _ in refs], pad=1)
    assert worst(alone, [hidden[3] for _, hidden in refs]) > 0.1


@pytest.mark.parametrize("family", FAMILIES)
def test_real_tokens_ignore_padding(family: str, tmp_path: Path) -> None:
    """Random ids in the padded columns change no real token's state (any state)."""
    model_dir = MORE / family
    vocab = int(load_config(model_dir)["vocab_size"])
    rng = np.random.default_rng(0)
    for fused in (False, True):
        path = export_onnx(
            model_dir, tmp_path / f"all{fused}.onnx", None, all_layers=True, fused=fused
        )
        sess = session(path)
        diff = 0.0
        for ids, _ in load_reference(family):
            alone = run(sess, ids[None], np.ones((1, len(ids)), np.int64))[:, 0]
            padded = np.concatenate([ids, rng.integers(0, vocab, size=17)])
            mask = (np.arange(len(padded)) < len(ids)).astype(np.int64)
            got = run(sess, np.stack([padded, np.roll(padded, 1)]), np.stack([mask, mask * 0 + 1]))
            diff = max(diff, float(np.abs(got[:, 0, : len(ids)] - alone).max()))
        assert diff <= 1e-4, (fused, diff)


# ---- configuration ----


def test_families_and_limits() -> None:
    configs = {f: load_config(MORE / f) for f in FAMILIES}
    assert model_family(configs["bert-relative-key"]) == "bert"
    assert model_family(configs["bigbird"]) == "bert"
    assert model_family(configs["longformer"]) == "longformer"
    assert model_family(configs["pegasus"]) == "pegasus"
    assert all(model_depth(c) == 3 for c in configs.values())
    assert max_positions(configs["longformer"]) == 130 - 1 - 1
    assert max_positions(configs["pegasus"]) == 256
    assert max_positions(configs["bert-relative-key"]) == 128
    assert model_family(configs["blenderbot"]) == "blenderbot"
    assert model_family(configs["blenderbot-small"]) == "blenderbot-small"
    assert max_positions(configs["blenderbot"]) == 130  # positions from row 0, no offset
    assert max_positions(configs["blenderbot-small"]) == 256
    assert model_family(configs["led"]) == "led" and max_positions(configs["led"]) == 130
    assert model_family(configs["prophetnet"]) == "prophetnet"


def _with_config(tmp_path: Path, family: str, **changes: object) -> Path:
    model_dir = copy_checkpoint(family, tmp_path / "model", root=MORE)
    edit_config(model_dir, **changes)
    return model_dir


@pytest.mark.parametrize(
    ("family", "changes", "message"),
    [
        ("longformer", {"attention_window": 5}, "attention_window"),
        ("longformer", {"attention_window": [4, 8]}, "list of 3"),
        ("bigbird", {"rescale_embeddings": True}, "rescale_embeddings"),
        ("bigbird", {"use_bias": False}, "use_bias"),
        ("bigbird", {"attention_type": "sparse"}, "attention_type"),
    ],
)
def test_unsupported_options_are_refused(
    family: str, changes: dict, message: str, tmp_path: Path
) -> None:
    model_dir = _with_config(tmp_path, family, **changes)
    with pytest.raises(CheckpointError, match=message):
        build_model(model_dir, 1)


def test_other_position_types_are_refused(tmp_path: Path) -> None:
    model_dir = _with_config(tmp_path, "bert-relative-key", position_embedding_type="rotary")
    with pytest.raises(ValueError, match="position_embedding_type 'rotary'"):
        build_model(model_dir, 1)


# ---- Hub layouts ----


def resave(src: Path, dst: Path, rename, extra: dict[str, np.ndarray], shards: int = 1) -> Path:
    """``src`` with its tensors renamed (None drops one) and ``extra`` added, one file or
    ``shards`` files with an index that has no ``metadata`` (:func:`encoder_reference.resave`)."""
    return encoder_reference.resave(src, dst, rename, extra, shards, metadata=None)


def same_states(model_dir: Path, family: str, tmp: Path) -> float:
    """:func:`encoder_reference.same_hidden_states` against ``more_families/<family>``."""
    return same_hidden_states(model_dir, family, tmp, root=MORE)


def _nan(*shape: int) -> np.ndarray:
    return np.full(shape, np.nan, np.float32)


@pytest.mark.parametrize("family", ["bert-relative-key-query", "bigbird"])
def test_masked_lm_layout(family: str, tmp_path: Path) -> None:
    """``bert.``-prefixed keys (BertForMaskedLM, BigBirdForPreTraining) with heads beside them;
    the heads hold NaN, so reading one would fail."""
    vocab = int(load_config(MORE / family)["vocab_size"])
    extra = {
        "cls.predictions.bias": _nan(vocab),
        "cls.predictions.transform.dense.weight": _nan(64, 64),
        "bert.pooler.dense.weight": _nan(64, 64),
    }
    model_dir = resave(MORE / family, tmp_path / "hub", lambda k: f"bert.{k}", extra, shards=2)
    assert same_states(model_dir, family, tmp_path) <= 1e-6


def test_longformer_masked_lm_layout_ignores_global_projections(tmp_path: Path) -> None:
    """``longformer.``-prefixed keys (LongformerForMaskedLM) and an LM head; the global-attention
    projections are NaN here: bert_score never uses them, nor does the graph."""

    def rename(key: str) -> str:
        return f"longformer.{key}"

    model_dir = resave(
        MORE / "longformer",
        tmp_path / "hub",
        rename,
        {"lm_head.dense.weight": _nan(64, 64), "lm_head.bias": _nan(1500)},
    )
    weights = load_file(str(model_dir / "model.safetensors"))
    globals_ = [k for k in weights if "_global." in k]
    assert len(globals_) == 3 * 6
    for key in globals_:
        weights[key] = np.full_like(weights[key], np.nan)
    save_file(weights, str(model_dir / "model.safetensors"))
    assert same_states(model_dir, "longformer", tmp_path) <= 1e-6


def test_pegasus_conditional_generation_layout(tmp_path: Path) -> None:
    """``model.``-prefixed keys (PegasusForConditionalGeneration), ``lm_head`` and
    ``final_logits_bias``, and no stored position tables (the Hub's checkpoints have none)."""

    def rename(key: str) -> str | None:
        return None if "embed_positions" in key else f"model.{key}"

    vocab = int(load_config(MORE / "pegasus")["vocab_size"])
    extra = {"lm_head.weight": _nan(vocab, 64), "final_logits_bias": _nan(1, vocab)}
    model_dir = resave(MORE / "pegasus", tmp_path / "hub", rename, extra, shards=2)
    assert same_states(model_dir, "pegasus", tmp_path) <= 1e-6


def test_pegasus_stored_position_table_is_not_read(tmp_path: Path) -> None:
    model_dir = shutil.copytree(MORE / "pegasus", tmp_path / "model")
    weights = load_file(str(model_dir / "model.safetensors"))
    weights["encoder.embed_positions.weight"] = _nan(256, 64)
    save_file(weights, str(model_dir / "model.safetensors"))
    assert same_states(model_dir, "pegasus", tmp_path) == 0.0


@pytest.mark.parametrize("family", ["blenderbot", "blenderbot-small"])
def test_blenderbot_conditional_generation_layout(family: str, tmp_path: Path) -> None:
    """``model.``-prefixed keys (Blenderbot(Small)ForConditionalGeneration), the decoder, an LM
    head and ``final_logits_bias`` (NaN: never read), two shards."""
    vocab = int(load_config(MORE / family)["vocab_size"])
    extra = {"lm_head.weight": _nan(vocab, 64), "final_logits_bias": _nan(1, vocab)}
    model_dir = resave(MORE / family, tmp_path / "hub", lambda k: f"model.{k}", extra, shards=2)
    assert same_states(model_dir, family, tmp_path) <= 1e-6


@pytest.mark.parametrize("family", ["blenderbot", "blenderbot-small"])
def test_blenderbot_positions_start_at_row_0(family: str, tmp_path: Path) -> None:
    """Hidden state 0 from the checkpoint's tables: ``embed_tokens * 8 + positions[t]``
    (BlenderbotSmall then ``layernorm_embedding``), rows from 0, unlike BART's offset of 2."""
    w = load_file(str(MORE / family / "model.safetensors"))
    for ids, hidden in load_reference(family):
        x = w["shared.weight"][ids].astype(np.float64) * 8.0
        x += w["encoder.embed_positions.weight"][: len(ids)]
        if family == "blenderbot-small":
            mu = x.mean(-1, keepdims=True)
            var = ((x - mu) ** 2).mean(-1, keepdims=True)
            x = (x - mu) / np.sqrt(var + 1e-5) * w["encoder.layernorm_embedding.weight"]
            x += w["encoder.layernorm_embedding.bias"]
        assert float(np.abs(x - hidden[0]).max()) <= 1e-5


def test_squeezebert_masked_lm_layout(tmp_path: Path) -> None:
    """``transformer.``-prefixed keys (SqueezeBertForMaskedLM) with the MLM head (NaN, never
    read), two shards."""
    vocab = int(load_config(MORE / "squeezebert")["vocab_size"])
    extra = {
        "cls.predictions.bias": _nan(vocab),
        "cls.predictions.transform.dense.weight": _nan(64, 64),
    }
    model_dir = resave(
        MORE / "squeezebert", tmp_path / "hub", lambda k: f"transformer.{k}", extra, shards=2
    )
    assert same_states(model_dir, "squeezebert", tmp_path) <= 1e-6


def test_block_diagonal_is_a_grouped_1x1_conv() -> None:
    """Against the grouped convolution computed group by group."""
    from rust_bertscore.convert.families.squeezebert import block_diagonal

    rng = np.random.default_rng(1)
    conv = rng.normal(size=(12, 2, 1)).astype(np.float32)  # 12 out, 6 in, 3 groups
    x = rng.normal(size=6).astype(np.float32)
    want = np.concatenate([conv[4 * g : 4 * g + 4, :, 0] @ x[2 * g : 2 * g + 2] for g in range(3)])
    np.testing.assert_allclose(block_diagonal(conv, 3) @ x, want, rtol=1e-6)


def test_squeezebert_bad_groups_are_refused(tmp_path: Path) -> None:
    model_dir = _with_config(tmp_path, "squeezebert", intermediate_groups=5)
    with pytest.raises(CheckpointError, match="intermediate_groups"):
        build_model(model_dir, 1)


def test_led_band_and_layout(tmp_path: Path) -> None:
    """LED's windows matter (widened, the states move), and ``led.``-free Hub keys
    (``model.*`` of LEDForConditionalGeneration, global projections NaN) give the same graph."""
    wide = _with_config(tmp_path, "led", attention_window=[512, 512, 512])
    refs = load_reference("led")
    sess = session(export_onnx(wide, tmp_path / "wide.onnx", 3))
    alone, _ = outputs(sess, [ids for ids, _ in refs], pad=1)
    assert worst(alone, [hidden[3] for _, hidden in refs]) > 0.1
    vocab = int(load_config(MORE / "led")["vocab_size"])
    model_dir = resave(
        MORE / "led",
        tmp_path / "hub",
        lambda k: f"model.{k}",
        {"lm_head.weight": _nan(vocab, 64), "final_logits_bias": _nan(1, vocab)},
        shards=2,
    )
    for shard in sorted(model_dir.glob("model-*.safetensors")):
        weights = load_file(str(shard))
        for key in weights:
            if "_global." in key:
                weights[key] = np.full_like(weights[key], np.nan)
        save_file(weights, str(shard))
    assert same_states(model_dir, "led", tmp_path) <= 1e-6


def test_prophetnet_conditional_generation_layout(tmp_path: Path) -> None:
    """``prophetnet.``-prefixed keys (ProphetNetForConditionalGeneration): the shared
    ``word_embeddings`` only (no encoder copy), decoder and LM head present, two shards."""

    def rename(key: str) -> str | None:
        return None if key == "encoder.word_embeddings.weight" else f"prophetnet.{key}"

    vocab = int(load_config(MORE / "prophetnet")["vocab_size"])
    weights = load_file(str(MORE / "prophetnet" / "model.safetensors"))
    table = weights.get("word_embeddings.weight", weights.get("encoder.word_embeddings.weight"))
    extra = {"prophetnet.word_embeddings.weight": table, "lm_head.weight": _nan(vocab, 64)}
    model_dir = resave(MORE / "prophetnet", tmp_path / "hub", rename, extra, shards=2)
    assert same_states(model_dir, "prophetnet", tmp_path) <= 1e-6
