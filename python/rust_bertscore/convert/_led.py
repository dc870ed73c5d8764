"""The LED encoder (``model_type`` "led", ``allenai/led-base-16384``) as an ONNX graph.

LED is BART's encoder (post-LayerNorm layers, ``layernorm_embedding``, no final norm, no
embedding scale) with learned positions from row 0 of ``encoder.embed_positions``
(``max_encoder_position_embeddings`` rows) and Longformer's sliding-window self-attention: query
``l`` attends to the non-padding keys with ``|l - r| <= attention_window[layer] / 2``. bert_score
gives no global attention, so ``longformer_self_attn.{query,key,value}_global`` are never read;
transformers' padding of the batch to a window multiple only adds masked keys (see
``_longformer``). The attention's output projection is ``self_attn.output``.
"""

from __future__ import annotations

from typing import Any

import onnx

from ._bart import LAYER_NORM_EPS, _token_embedding
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
from ._encoders import INPUT_IDS, LayerNames
from ._longformer import attention_windows, band_bias


def led_layer_names(i: int) -> LayerNames:
    """Where LED keeps encoder layer ``i``'s tensors."""
    return LayerNames(
        prefix=f"encoder.layers.{i}.",
        query="self_attn.longformer_self_attn.query",
        key="self_attn.longformer_self_attn.key",
        value="self_attn.longformer_self_attn.value",
        attn_out="self_attn.output",
        attn_norm="self_attn_layer_norm",
        ffn_in="fc1",
        ffn_out="fc2",
        ffn_norm="final_layer_norm",
    )


def build_led(
    w: WeightStore,
    config: dict[str, Any],
    num_layers: int | None,
    *,
    all_layers: bool,
    doc: str,
    fused: bool,
) -> onnx.ModelProto:
    """The encoder graph of an LED checkpoint (see ``convert.export_onnx``)."""
    hidden = _int_field(config, "d_model")
    heads = _int_field(config, "encoder_attention_heads")
    if heads <= 0 or hidden % heads:
        raise CheckpointError(f"d_model {hidden} is not a multiple of the number of heads {heads}")
    vocab = _int_field(config, "vocab_size")
    n_positions = _int_field(config, "max_encoder_position_embeddings")
    ffn = _int_field(config, "encoder_ffn_dim")
    activation = str(config.get("activation_function", "gelu"))
    depth = model_depth(config)
    windows = attention_windows(config, depth)
    n_build = layers_to_build(depth, num_layers, all_layers)

    g = new_graph()
    word = g.op(
        "Gather",
        [g.weight("encoder.embed_tokens", _token_embedding(w, vocab, hidden)), INPUT_IDS],
        "embed_tokens",
        axis=0,
    )
    positions = g.weight(
        "encoder.embed_positions", w.get("encoder.embed_positions.weight", (n_positions, hidden))
    )
    x = g.op(
        "Add", [word, position_rows(g, positions, 0, "embed_positions")], "embeddings/add_position"
    )
    x = g.layer_norm(
        x,
        w.get("encoder.layernorm_embedding.weight", (hidden,)),
        w.get("encoder.layernorm_embedding.bias", (hidden,)),
        LAYER_NORM_EPS,
        "encoder.layernorm_embedding",
    )
    states = [x]
    if n_build:
        mask = mask_index(g) if fused else mask_bias(g)
        bands: dict[int, str] = {}
        for i in range(n_build):
            one_sided = windows[i] // 2
            if one_sided not in bands:
                bands[one_sided] = band_bias(g, one_sided)
            x = transformer_layer(
                g,
                w,
                x,
                mask,
                led_layer_names(i),
                hidden=hidden,
                heads=heads,
                intermediate=ffn,
                eps=LAYER_NORM_EPS,
                activation=activation,
                fused=fused,
                extra_bias=bands[one_sided],
            )
            states.append(x)
    return finish(g, states, all_layers=all_layers, hidden=hidden, doc=doc)
