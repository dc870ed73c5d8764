"""The LED encoder (``model_type`` "led", ``allenai/led-base-16384``) as an ONNX graph.

LED is BART's encoder (post-LayerNorm layers, ``layernorm_embedding``, no final norm, no
embedding scale) with learned positions from row 0 of ``encoder.embed_positions``
(``max_encoder_position_embeddings`` rows) and Longformer's sliding-window self-attention: query
``l`` attends to the non-padding keys with ``|l - r| <= attention_window[layer] / 2``. bert_score
gives no global attention, so ``longformer_self_attn.{query,key,value}_global`` are never read;
transformers' padding of the batch to a window multiple only adds masked keys (see
``longformer``). The attention's output projection is ``self_attn.output``.
"""

from __future__ import annotations

from dataclasses import replace

import onnx

from ..blocks import (
    BuildRequest,
    encoder_dims,
    encoder_layers,
    new_graph,
    stored_layer_norm,
)
from ..contract import LayerNames, model_depth
from .bart import LAYER_NORM_EPS, add_learned_positions, bart_layer_names, embed_tokens
from .longformer import attention_windows, window_bias


def led_layer_names(i: int) -> LayerNames:
    """Where LED keeps encoder layer ``i``'s tensors: BART's, but for the attention's."""
    attn = "self_attn.longformer_self_attn"
    return replace(
        bart_layer_names(i),
        **{part: f"{attn}.{part}" for part in ("query", "key", "value")},
        attn_out="self_attn.output",
    )


def build_led(request: BuildRequest) -> onnx.ModelProto:
    """The encoder graph of an LED checkpoint (see ``convert.export_onnx``)."""
    w, config = request.weights, request.config
    dims = encoder_dims(
        config, eps=LAYER_NORM_EPS, positions_field="max_encoder_position_embeddings"
    )
    hidden = dims.hidden
    depth = model_depth(config)
    windows = attention_windows(config, depth)
    n_build = request.n_build

    g = new_graph()
    word = embed_tokens(g, w, dims.vocab, hidden, scale=False)
    table = w.get("encoder.embed_positions.weight", (dims.n_positions, hidden))
    x = add_learned_positions(g, word, table, 0)
    x = stored_layer_norm(g, w, x, "encoder.layernorm_embedding", hidden, LAYER_NORM_EPS)
    states = encoder_layers(
        g,
        w,
        x,
        n_build,
        led_layer_names,
        dims,
        fused=request.fused,
        extra_bias=window_bias(g, windows),
    )
    return request.finish(g, states, hidden)
