"""The encoders of BART (post-LayerNorm) and mBART (pre-LayerNorm, final LayerNorm) as ONNX
graphs: what bert_score scores with (``model.encoder`` of the seq2seq model)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import onnx

from ..blocks import (
    BuildRequest,
    encoder_dims,
    encoder_layers,
    new_graph,
    position_rows,
    stored_layer_norm,
)
from ..checkpoint import WeightStore
from ..contract import INPUT_IDS, CheckpointError, LayerNames
from ..graph import GraphBuilder

POSITION_OFFSET = 2
"""BART's learned positions start at row 2 of ``embed_positions`` (a fairseq legacy);
BlenderbotSmall's at row 0 (see :func:`position_offset`)."""


def position_offset(config: dict[str, Any]) -> int:
    """The first row of ``embed_positions`` used: 0 for BlenderbotSmall, else 2."""
    return 0 if config.get("model_type") == "blenderbot-small" else POSITION_OFFSET


LAYER_NORM_EPS = 1e-5
"""transformers builds BART's LayerNorms with PyTorch's default eps; config.json has none."""

# Where the token embedding may be stored (after the ``model.`` prefix is stripped): the
# encoder's own copy, else the table shared by encoder and decoder.
TOKEN_EMBEDDING_KEYS = ("encoder.embed_tokens.weight", "shared.weight")


def bart_layer_names(i: int) -> LayerNames:
    """Where BART and mBART keep encoder layer ``i``'s tensors."""
    return LayerNames(
        prefix=f"encoder.layers.{i}.",
        query="self_attn.q_proj",
        key="self_attn.k_proj",
        value="self_attn.v_proj",
        attn_out="self_attn.out_proj",
        attn_norm="self_attn_layer_norm",
        ffn_in="fc1",
        ffn_out="fc2",
        ffn_norm="final_layer_norm",
    )


def _token_embedding(w: WeightStore, vocab: int, hidden: int) -> np.ndarray:
    for key in TOKEN_EMBEDDING_KEYS:
        if key in w:
            return w.get(key, (vocab, hidden))
    where = ", ".join(str(p) for p in w.files)
    raise CheckpointError(
        f"{where}: no token embedding (looked for {', '.join(map(repr, TOKEN_EMBEDDING_KEYS))}, "
        "also under the 'model.' prefix)"
    )


def embed_tokens(g: GraphBuilder, w: WeightStore, vocab: int, hidden: int, *, scale: bool) -> str:
    """The rows of ``encoder.embed_tokens`` (see :func:`_token_embedding`) for ``input_ids``,
    times ``sqrt(hidden)`` when ``scale`` (``scale_embedding``)."""
    table = _token_embedding(w, vocab, hidden)
    if scale:
        # transformers multiplies the looked-up rows by the scale: the same float32 product.
        table = table * np.float32(math.sqrt(hidden))
    return g.op(
        "Gather", [g.weight("encoder.embed_tokens", table), INPUT_IDS], "embed_tokens", axis=0
    )


def add_learned_positions(g: GraphBuilder, word: str, table: np.ndarray, offset: int) -> str:
    """``word`` plus rows ``offset .. offset + T - 1`` of the position table
    ``encoder.embed_positions``."""
    positions = g.weight("encoder.embed_positions", table)
    return g.op(
        "Add",
        [word, position_rows(g, positions, offset, "embed_positions")],
        "embeddings/add_position",
    )


def build_bart(request: BuildRequest) -> onnx.ModelProto:
    """The encoder graph of a BART, mBART or BlenderbotSmall checkpoint (see
    ``convert.export_onnx``). BlenderbotSmall is BART's maths with positions from row 0.

    Hidden state 0: ``layernorm_embedding(embed_tokens[ids] * scale + embed_positions[2 + t])``,
    ``scale = sqrt(d_model)`` when ``scale_embedding``, else 1. BART's layers are post-LayerNorm
    (BERT's maths); mBART's are pre-LayerNorm and the encoder's final ``layer_norm`` follows the
    last layer run: the truncated graph outputs ``layer_norm(x_L)``, and with ``all_layers`` the
    states are ``x_0 .. x_(depth-1)`` then ``layer_norm(x_depth)``, as transformers returns them.
    """
    w, config = request.weights, request.config
    model_type = str(config.get("model_type"))
    pre_norm = model_type == "mbart"
    dims = encoder_dims(config, eps=LAYER_NORM_EPS)
    hidden = dims.hidden
    offset = position_offset(config)
    n_positions = dims.n_positions + offset
    n_build = request.n_build

    g = new_graph()
    word = embed_tokens(g, w, dims.vocab, hidden, scale=bool(config.get("scale_embedding", False)))
    x = add_learned_positions(
        g, word, w.get("encoder.embed_positions.weight", (n_positions, hidden)), offset
    )
    x = stored_layer_norm(g, w, x, "encoder.layernorm_embedding", hidden, LAYER_NORM_EPS)
    states = encoder_layers(
        g, w, x, n_build, bart_layer_names, dims, fused=request.fused, pre_norm=pre_norm
    )
    if pre_norm:
        states[-1] = stored_layer_norm(
            g, w, states[-1], "encoder.layer_norm", hidden, LAYER_NORM_EPS
        )
    return request.finish(g, states, hidden)


def ffn_out_nodes(i: int) -> tuple[str, ...]:
    """The FFN output projection of encoder layer ``i`` (BART, mBART, Pegasus, Blenderbot, LED:
    ``fc2``)."""
    names = bart_layer_names(i)
    return (f"{names.prefix}{names.ffn_out}/MatMul",)
