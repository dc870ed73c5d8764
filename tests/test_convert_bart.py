"""The BART and mBART encoder graphs against PyTorch's hidden states
(tests/data/reference/tiny/{bart,mbart}).

The reference files hold the whole 3-layer encoder's ``output_hidden_states``. For mBART those
are the pre-LayerNorm residual stream x_0, x_1, x_2 and then ``layer_norm(x_3)``: transformers
applies the encoder's final ``layer_norm`` after the last layer it runs. The model bert_score
truncates at L (``model.layers[:L]``) therefore outputs ``layer_norm(x_L)``; the expected values
at L < 3 are derived here from the reference x_L and the checkpoint's ``encoder.layer_norm`` in
float64 (bert_score's end-to-end scores in tiny/cases2.json confirm it).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from encoder_reference import (
    TINY,
    config_facts,
    encoder_final_norm,
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
    CheckpointError,
    build_model,
    export_onnx,
    int8_fp32_nodes,
    load_config,
    model_depth,
)

TOL = 1e-4  # seen: 6.4e-5 (bart layer 3), 2.0e-5 (mbart)
VOCAB = {"bart": 1500, "mbart": 1027}


def expected_at(family: str, hidden: np.ndarray, layer: int) -> np.ndarray:
    """What the model truncated at ``layer`` outputs, from the whole model's states."""
    if family == "mbart" and layer < 3:
        return encoder_final_norm(hidden[layer], TINY / "mbart")
    return hidden[layer]


def scaled_worst(got: list[np.ndarray], want: list[np.ndarray]) -> float:
    """Largest difference of each state relative to max(1, its largest magnitude / 4).

    mBART's un-normalised residual stream reaches |x| = 75 in these texts: fp32 rounding
    scales with it.
    """
    diff = 0.0
    for a, b in zip(got, want):
        for state_a, state_b in zip(a, b):
            scale = max(1.0, float(np.abs(state_b).max()) / 4)
            diff = max(diff, float(np.abs(state_a - state_b).max()) / scale)
    return diff


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("layer", range(4))
@pytest.mark.parametrize("family", ["bart", "mbart"])
def test_truncated_graph_matches_pytorch(
    family: str, layer: int, fused: bool, tmp_path: Path
) -> None:
    refs = load_reference(family)
    sess = session(export_onnx(TINY / family, tmp_path / "enc.onnx", layer, fused=fused))
    alone, batched = outputs(sess, [ids for ids, _ in refs], pad=1)
    want = [expected_at(family, hidden, layer) for _, hidden in refs]
    assert worst(alone, want) <= TOL
    assert worst(batched, want) <= TOL


def test_mbart_truncated_output_is_final_normed(tmp_path: Path) -> None:
    """At L < 3 the truncated mBART graph is not the whole model's state L (it is normed)."""
    refs = load_reference("mbart")
    sess = session(export_onnx(TINY / "mbart", tmp_path / "enc.onnx", 2))
    alone, _ = outputs(sess, [ids for ids, _ in refs], pad=1)
    assert worst(alone, [hidden[2] for _, hidden in refs]) > 1.0


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("family", ["bart", "mbart"])
def test_all_layers_match_pytorch(family: str, fused: bool, tmp_path: Path) -> None:
    """The whole encoder's states, as transformers returns them (mBART: the last one normed)."""
    refs = load_reference(family)
    path = export_onnx(TINY / family, tmp_path / "all.onnx", 1, all_layers=True, fused=fused)
    alone, batched = outputs(session(path), [ids for ids, _ in refs], pad=1)
    assert alone[0].shape[0] == 4
    want = [hidden for _, hidden in refs]
    # Seen: bart 6.4e-5; mbart 2.6e-4 on states of magnitude 75 (3.4e-6 once scaled).
    assert scaled_worst(alone, want) <= TOL
    assert scaled_worst(batched, want) <= TOL


@pytest.mark.parametrize("family", ["bart", "mbart"])
def test_real_tokens_ignore_padding(family: str, tmp_path: Path) -> None:
    path = export_onnx(TINY / family, tmp_path / "all.onnx", None, all_layers=True, fused=True)
    assert padding_invariance(session(path), family, vocab=VOCAB[family]) <= 1e-4


# ---- Hub layouts --------------------------------------------------------------------------------


def _decoder_and_heads(vocab: int) -> dict[str, np.ndarray]:
    """Tensors a seq2seq checkpoint holds besides the encoder (decoys: none may be read)."""
    return {
        "model.decoder.embed_tokens.weight": np.zeros((vocab, 64), np.float32),
        "model.decoder.embed_positions.weight": np.zeros((130, 64), np.float32),
        "model.decoder.layers.0.fc1.weight": np.zeros((128, 64), np.float32),
        "model.decoder.layers.0.self_attn.q_proj.weight": np.zeros((64, 64), np.float32),
        "model.decoder.layernorm_embedding.weight": np.zeros(64, np.float32),
        "lm_head.weight": np.zeros((vocab, 64), np.float32),
        "final_logits_bias": np.zeros((1, vocab), np.float32),
    }


@pytest.mark.parametrize("family", ["bart", "mbart"])
def test_conditional_generation_layout_sharded(family: str, tmp_path: Path) -> None:
    """``model.shared.weight`` + ``model.encoder.*`` (…ForConditionalGeneration), decoder and
    LM head present, weights in two shards."""
    model_dir = resave(
        TINY / family,
        tmp_path / "hub",
        lambda key: f"model.{key}",
        _decoder_and_heads(VOCAB[family]),
        shards=2,
    )
    assert same_hidden_states(model_dir, family, tmp_path) <= 1e-6


@pytest.mark.parametrize("family", ["bart", "mbart"])
def test_encoder_embed_tokens_layout(family: str, tmp_path: Path) -> None:
    """The token table stored only as the encoder's ``embed_tokens`` (no ``shared``), plus a
    classification head."""
    extra = {
        "classification_head.dense.weight": np.zeros((64, 64), np.float32),
        "classification_head.out_proj.weight": np.zeros((3, 64), np.float32),
    }
    model_dir = resave(
        TINY / family,
        tmp_path / "hub",
        lambda key: (
            "model.encoder.embed_tokens.weight" if key == "shared.weight" else f"model.{key}"
        ),
        extra,
    )
    assert same_hidden_states(model_dir, family, tmp_path) <= 1e-6


def test_missing_token_embedding(tmp_path: Path) -> None:
    model_dir = resave(
        TINY / "bart", tmp_path / "hub", lambda key: None if key == "shared.weight" else key
    )
    with pytest.raises(CheckpointError, match="no token embedding"):
        export_onnx(model_dir, tmp_path / "enc.onnx", 1)


# ---- config, mBART-50, int8 ---------------------------------------------------------------------


@pytest.mark.parametrize("family", ["bart", "mbart", "mbart-50"])
def test_config_helpers(family: str, tmp_path: Path) -> None:
    want_family = "bart" if family == "bart" else "mbart"
    assert config_facts(TINY / family) == (want_family, 3, 128)  # 130 rows, positions from row 2
    config = load_config(TINY / family)
    # The encoder's depth is encoder_layers, whatever num_hidden_layers or decoder_layers say.
    changed = {**config, "encoder_layers": 2, "num_hidden_layers": 3, "decoder_layers": 5}
    assert model_depth(changed) == 2


def test_encoder_layers_sets_the_depth(tmp_path: Path) -> None:
    model_dir = resave(TINY / "bart", tmp_path / "two", lambda key: key)
    config = json.loads((model_dir / "config.json").read_text())
    config.update(encoder_layers=2)
    (model_dir / "config.json").write_text(json.dumps(config))
    path = export_onnx(model_dir, tmp_path / "all.onnx", None, all_layers=True)
    refs = load_reference("bart")
    alone, _ = outputs(session(path), [ids for ids, _ in refs], pad=1)
    assert alone[0].shape[0] == 3
    assert worst(alone, [hidden[:3] for _, hidden in refs]) <= TOL
    with pytest.raises(ValueError, match=r"0\.\.2"):
        export_onnx(model_dir, tmp_path / "enc.onnx", 3)


def test_mbart50_checkpoint_converts(tmp_path: Path) -> None:
    """mBART-50's tiny checkpoint (no hidden-state reference; bert_score's scores in
    tiny/cases2.json check it end to end): it converts, and a padded batch agrees with the
    texts run alone."""
    path = export_onnx(TINY / "mbart-50", tmp_path / "enc.onnx", 2, fused=True)
    rng = np.random.default_rng(3)
    ids_list = [rng.integers(3, 1054, size=n) for n in (5, 17, 2)]
    alone, batched = outputs(session(path), ids_list, pad=1)
    assert [a.shape for a in alone] == [(5, 64), (17, 64), (2, 64)]
    assert worst(batched, alone) <= 1e-5


@pytest.mark.parametrize("family", ["bart", "mbart"])
def test_int8(family: str, tmp_path: Path) -> None:
    out = int8_runs(family, tmp_path)
    assert out.shape == (1, len(load_reference(family)[0][0]), 64)
    assert np.isfinite(out).all()


@pytest.mark.parametrize("family", ["bart", "mbart"])
def test_int8_keeps_first_ffn_outputs_fp32(family: str) -> None:
    model = build_model(TINY / family, 3, fused=True)
    assert int8_fp32_nodes(model) == ["encoder.layers.0.fc2/MatMul", "encoder.layers.1.fc2/MatMul"]
