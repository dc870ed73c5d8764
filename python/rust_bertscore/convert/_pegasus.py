"""The Pegasus and Blenderbot encoders as ONNX graphs: what bert_score scores with
(``model.encoder``).

Hidden state 0 is ``embed_tokens[ids] * sqrt(d_model)`` (``scale_embedding``) plus the
sinusoidal position ``t`` (no offset, no LayerNorm after it). Pegasus keeps no learned position
table: transformers computes it (``PegasusSinusoidalPositionalEmbedding``) in float64 with NumPy,
sines of the even-indexed angles in the first half of each row and cosines of the odd-indexed
ones in the second half, then casts it to float32; :func:`sinusoidal_table` does the same, and a
table stored in the checkpoint is not read. The layers are pre-LayerNorm (mBART's) and the
encoder's final ``layer_norm`` follows the last layer run, so the truncated graph at ``L``
outputs ``layer_norm(x_L)`` and ``all_layers`` gives ``x_0 .. x_(depth-1), layer_norm(x_depth)``.

Blenderbot (``blenderbot-400M-distill``) is the same encoder with learned positions: rows
``0 .. T-1`` of ``encoder.embed_positions`` (no offset, unlike BART's).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import onnx

from ._bart import LAYER_NORM_EPS, _token_embedding, bart_layer_names
from ._blocks import (
    finish,
    layers_to_build,
    mask_bias,
    mask_index,
    new_graph,
    position_rows,
    transformer_layer,
)
from ._checkpoint import CheckpointError, WeightStore, _int_field, model_depth
from ._encoders import INPUT_IDS


def sinusoidal_table(n_positions: int, dim: int) -> np.ndarray:
    """Pegasus' position table ``(n_positions, dim)`` float32, as transformers builds it.

    Angle ``[pos, j] = pos / 10000 ** (2 * (j // 2) / dim)`` in float64; columns
    ``0 .. ceil(dim / 2) - 1`` hold ``sin`` of the even ``j``, the rest ``cos`` of the odd ``j``.
    """
    j = np.arange(dim)
    angles = np.arange(n_positions, dtype=np.float64)[:, None] / np.power(
        10000.0, 2 * (j // 2) / dim
    )
    out = np.empty((n_positions, dim), dtype=np.float32)
    sentinel = dim // 2 + dim % 2
    out[:, :sentinel] = np.sin(angles[:, 0::2])
    out[:, sentinel:] = np.cos(angles[:, 1::2])
    return out


def build_pegasus(
    w: WeightStore,
    config: dict[str, Any],
    num_layers: int | None,
    *,
    all_layers: bool,
    doc: str,
    fused: bool,
) -> onnx.ModelProto:
    """The encoder graph of a Pegasus or Blenderbot checkpoint (see ``convert.export_onnx``)."""
    hidden = _int_field(config, "d_model")
    heads = _int_field(config, "encoder_attention_heads")
    if heads <= 0 or hidden % heads:
        raise CheckpointError(f"d_model {hidden} is not a multiple of the number of heads {heads}")
    vocab = _int_field(config, "vocab_size")
    n_positions = _int_field(config, "max_position_embeddings")
    if n_positions <= 0:
        raise CheckpointError(f"max_position_embeddings must be positive, got {n_positions}")
    ffn = _int_field(config, "encoder_ffn_dim")
    activation = str(config.get("activation_function", "gelu"))
    n_build = layers_to_build(model_depth(config), num_layers, all_layers)

    g = new_graph()
    table = _token_embedding(w, vocab, hidden)
    if config.get("scale_embedding", False):
        table = table * np.float32(math.sqrt(hidden))
    word = g.op(
        "Gather", [g.weight("encoder.embed_tokens", table), INPUT_IDS], "embed_tokens", axis=0
    )
    if config.get("model_type") == "blenderbot":
        stored = w.get("encoder.embed_positions.weight", (n_positions, hidden))
    else:
        stored = sinusoidal_table(n_positions, hidden)
    positions = g.weight("encoder.embed_positions", stored)
    x = g.op(
        "Add", [word, position_rows(g, positions, 0, "embed_positions")], "embeddings/add_position"
    )
    states = [x]
    if n_build:
        mask = mask_index(g) if fused else mask_bias(g)
        for i in range(n_build):
            x = transformer_layer(
                g,
                w,
                x,
                mask,
                bart_layer_names(i),
                hidden=hidden,
                heads=heads,
                intermediate=ffn,
                eps=LAYER_NORM_EPS,
                activation=activation,
                fused=fused,
                pre_norm=True,
            )
            states.append(x)
    states[-1] = g.layer_norm(
        states[-1],
        w.get("encoder.layer_norm.weight", (hidden,)),
        w.get("encoder.layer_norm.bias", (hidden,)),
        LAYER_NORM_EPS,
        "encoder.layer_norm",
    )
    return finish(g, states, all_layers=all_layers, hidden=hidden, doc=doc)
