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

import numpy as np
import onnx

from ..blocks import (
    BuildRequest,
    encoder_dims,
    encoder_layers,
    new_graph,
    stored_layer_norm,
)
from ..contract import CheckpointError
from .bart import LAYER_NORM_EPS, add_learned_positions, bart_layer_names, embed_tokens


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


def build_pegasus(request: BuildRequest) -> onnx.ModelProto:
    """The encoder graph of a Pegasus or Blenderbot checkpoint (see ``convert.export_onnx``)."""
    w, config = request.weights, request.config
    dims = encoder_dims(config, eps=LAYER_NORM_EPS)
    hidden, n_positions = dims.hidden, dims.n_positions
    if n_positions <= 0:
        raise CheckpointError(f"max_position_embeddings must be positive, got {n_positions}")
    n_build = request.n_build

    g = new_graph()
    word = embed_tokens(g, w, dims.vocab, hidden, scale=bool(config.get("scale_embedding", False)))
    if config.get("model_type") == "blenderbot":
        stored = w.get("encoder.embed_positions.weight", (n_positions, hidden))
    else:
        stored = sinusoidal_table(n_positions, hidden)
    x = add_learned_positions(g, word, stored, 0)
    states = encoder_layers(
        g, w, x, n_build, bart_layer_names, dims, fused=request.fused, pre_norm=True
    )
    states[-1] = stored_layer_norm(g, w, states[-1], "encoder.layer_norm", hidden, LAYER_NORM_EPS)
    return request.finish(g, states, hidden)
