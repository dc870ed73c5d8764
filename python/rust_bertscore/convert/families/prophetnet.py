"""The ProphetNet encoder (``model_type`` "prophetnet") as an ONNX graph.

bert_score scores ProphetNet with ``model.encoder`` (depth ``num_encoder_layers``), truncating
its ``layers``. Hidden state 0 is ``embeddings_layer_norm(word[ids] + position[p])`` where the
position ids are RoBERTa-like, ``cumsum(mask) * mask + pad_token_id``, clamped to
``max_position_embeddings - 1`` (``ProphetNetPositionalEmbeddings``). The layers are
post-LayerNorm (BERT's maths, PyTorch's LayerNorm eps 1e-5) under the names
``self_attn.{query,key,value,out}_proj``, ``self_attn_layer_norm``,
``feed_forward.{intermediate,output}``, ``feed_forward_layer_norm``; the encoder has no final
norm. Keys may sit under ``prophetnet.`` (``ProphetNetForConditionalGeneration``) and the token
table under ``encoder.word_embeddings`` or the model's shared ``word_embeddings``.
"""

from __future__ import annotations

import onnx

from ..blocks import (
    BuildRequest,
    encoder_dims,
    encoder_layers,
    new_graph,
    stored_layer_norm,
)
from ..contract import ATTENTION_MASK, INPUT_IDS, LayerNames

LAYER_NORM_EPS = 1e-5
"""``torch.nn.LayerNorm``'s default, which ProphetNet uses everywhere (config.json has none)."""


def prophetnet_layer_names(i: int) -> LayerNames:
    """Where ProphetNet keeps encoder layer ``i``'s tensors."""
    return LayerNames(
        prefix=f"encoder.layers.{i}.",
        query="self_attn.query_proj",
        key="self_attn.key_proj",
        value="self_attn.value_proj",
        attn_out="self_attn.out_proj",
        attn_norm="self_attn_layer_norm",
        ffn_in="feed_forward.intermediate",
        ffn_out="feed_forward.output",
        ffn_norm="feed_forward_layer_norm",
    )


def build_prophetnet(request: BuildRequest) -> onnx.ModelProto:
    """The encoder graph of a ProphetNet checkpoint (see ``convert.export_onnx``)."""
    w, config = request.weights, request.config
    dims = encoder_dims(
        config,
        eps=LAYER_NORM_EPS,
        hidden_field="hidden_size",
        heads_field="num_encoder_attention_heads",
    )
    hidden, n_positions = dims.hidden, dims.n_positions
    pad = int(config.get("pad_token_id") or 0)
    n_build = request.n_build

    g = new_graph()
    key = next(
        (k for k in ("encoder.word_embeddings.weight", "word_embeddings.weight") if k in w),
        "encoder.word_embeddings.weight",
    )
    word = g.op(
        "Gather",
        [g.weight("encoder.word_embeddings", w.get(key, (dims.vocab, hidden))), INPUT_IDS],
        "word_embeddings",
        axis=0,
    )
    count = g.op("CumSum", [ATTENTION_MASK, g.scalar(1, "int64")], "positions/cumsum")
    pos_ids = g.op(
        "Add",
        [g.op("Mul", [count, ATTENTION_MASK], "positions/real"), g.scalar(pad, "int64")],
        "positions/ids",
    )
    pos_ids = g.op("Min", [pos_ids, g.scalar(n_positions - 1, "int64")], "positions/clamped")
    table = w.get("encoder.position_embeddings.weight", (n_positions, hidden))
    pos = g.op(
        "Gather",
        [g.weight("encoder.position_embeddings", table), pos_ids],
        "position_embeddings",
        axis=0,
    )
    x = g.op("Add", [word, pos], "embeddings/add_position")
    x = stored_layer_norm(g, w, x, "encoder.embeddings_layer_norm", hidden, LAYER_NORM_EPS)
    states = encoder_layers(g, w, x, n_build, prophetnet_layer_names, dims, fused=request.fused)
    return request.finish(g, states, hidden)
