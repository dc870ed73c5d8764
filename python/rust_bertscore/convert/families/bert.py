"""The BERT family as ONNX graphs: BERT (MiniLM, ELECTRA discriminators, BigBird's full
attention), RoBERTa / XLM-RoBERTa and DistilBERT, with BERT's ``relative_key(_query)`` position
scores (``relative_key``). Their embeddings (:func:`embeddings`) and post-LayerNorm layer
(:func:`bert_layer`) are also what ALBERT, Longformer and SqueezeBERT build on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx

from ...errors import InputValueError
from ..blocks import BuildRequest, attention_mask, new_graph
from ..checkpoint import WeightStore
from ..contract import (
    ATTENTION_MASK,
    INPUT_IDS,
    CheckpointError,
    LayerNames,
    float_field,
    int_field,
    model_depth,
    model_family,
)
from ..graph import FLOAT32_MIN, MS_DOMAIN, GraphBuilder
from .relative_key import DISTANCE_TABLE, RELATIVE_TYPES, add_relative_scores, distance_rows

BERT_LAYER = LayerNames(
    prefix="encoder.layer.{i}.",
    query="attention.self.query",
    key="attention.self.key",
    value="attention.self.value",
    attn_out="attention.output.dense",
    attn_norm="attention.output.LayerNorm",
    ffn_in="intermediate.dense",
    ffn_out="output.dense",
    ffn_norm="output.LayerNorm",
)

DISTILBERT_LAYER = LayerNames(
    prefix="transformer.layer.{i}.",
    query="attention.q_lin",
    key="attention.k_lin",
    value="attention.v_lin",
    attn_out="attention.out_lin",
    attn_norm="sa_layer_norm",
    ffn_in="ffn.lin1",
    ffn_out="ffn.lin2",
    ffn_norm="output_layer_norm",
)


@dataclass(frozen=True)
class EncoderSpec:
    """The sizes and options of one checkpoint, read from config.json."""

    model_type: str
    family: str
    depth: int
    hidden: int
    heads: int
    intermediate: int
    embedding_size: int
    vocab_size: int
    n_positions: int
    type_vocab_size: int
    layer_norm_eps: float
    activation: str
    pad_token_id: int
    layers: LayerNames
    position_embedding_type: str = "absolute"
    """``absolute``, or BERT's ``relative_key`` / ``relative_key_query`` (``relative_key``)."""

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


def encoder_spec(config: dict[str, Any]) -> EncoderSpec:
    """Read an :class:`EncoderSpec` from a configuration (``ValueError`` if unsupported)."""
    family = model_family(config)
    model_type = str(config["model_type"])
    distilbert = family == "distilbert"
    if distilbert:
        hidden = int_field(config, "dim")
        embedding_size = hidden
        eps = 1e-12  # fixed in transformers' DistilBERT code, not in config.json
        position_type = "absolute"
    else:
        position_type = config.get("position_embedding_type", "absolute")
        if position_type != "absolute" and (
            family != "bert" or position_type not in RELATIVE_TYPES
        ):
            raise InputValueError(
                f"unsupported position_embedding_type {position_type!r} for model_type "
                f"{model_type!r}: only 'absolute' position embeddings are converted (and "
                "'relative_key' / 'relative_key_query' for BERT)"
            )
        hidden = int_field(config, "hidden_size")
        embedding_size = hidden
        if model_type == "electra" and config.get("embedding_size") is not None:
            embedding_size = int_field(config, "embedding_size")
        eps = float_field(config, "layer_norm_eps", 1e-12)
    # DistilBERT names the fields of config.json its own way and has no token type table.
    spec = EncoderSpec(
        model_type=model_type,
        family=family,
        depth=model_depth(config),
        hidden=hidden,
        heads=int_field(config, "n_heads" if distilbert else "num_attention_heads"),
        intermediate=int_field(config, "hidden_dim" if distilbert else "intermediate_size"),
        embedding_size=embedding_size,
        vocab_size=int_field(config, "vocab_size"),
        n_positions=int_field(config, "max_position_embeddings"),
        type_vocab_size=0 if distilbert else int(config.get("type_vocab_size", 2)),
        layer_norm_eps=eps,
        activation=str(config.get("activation" if distilbert else "hidden_act", "gelu")),
        pad_token_id=int(config.get("pad_token_id") or 0),
        layers=DISTILBERT_LAYER if distilbert else BERT_LAYER,
        position_embedding_type=str(position_type),
    )
    if spec.heads <= 0 or spec.hidden % spec.heads:
        raise CheckpointError(
            f"hidden size {spec.hidden} is not a multiple of the number of heads {spec.heads}"
        )
    if not distilbert and spec.type_vocab_size < 1:
        raise CheckpointError(f"type_vocab_size must be >= 1, got {spec.type_vocab_size}")
    return spec


def embeddings(g: GraphBuilder, spec: EncoderSpec, w: WeightStore, mask_i64: str) -> str:
    """Hidden state 0: word + token type 0 + position embeddings, LayerNorm, ELECTRA projection."""
    e = spec.embedding_size
    word = g.weight(
        "embeddings.word_embeddings",
        w.get("embeddings.word_embeddings.weight", (spec.vocab_size, e)),
    )
    x = g.op("Gather", [word, INPUT_IDS], "embeddings/word", axis=0)
    if spec.family != "distilbert":
        # bert_score passes no token_type_ids: every token takes row 0 of the table.
        token_types = w.get("embeddings.token_type_embeddings.weight", (spec.type_vocab_size, e))
        x = g.op(
            "Add", [x, g.weight("embeddings.token_type_0", token_types[0])], "embeddings/add_type"
        )
    if spec.position_embedding_type != "absolute":
        # relative_key(_query): no absolute position term, the attention scores carry positions
        return embedding_norm(g, spec, w, x)
    table = w.get("embeddings.position_embeddings.weight", (spec.n_positions, e))
    positions = g.weight("embeddings.position_embeddings", table)
    if spec.family == "roberta":
        # transformers: mask = input_ids != padding_idx; ids = cumsum(mask) * mask + padding_idx.
        # Also masking with attention_mask keeps whatever id the caller pads with out of the count.
        not_pad = g.op(
            "Not",
            [g.op("Equal", [INPUT_IDS, g.scalar(spec.pad_token_id, "int64")], "embeddings/is_pad")],
            "embeddings/not_pad",
        )
        real = g.op(
            "Mul",
            [
                g.op("Cast", [not_pad], "embeddings/not_pad_i64", to=onnx.TensorProto.INT64),
                mask_i64,
            ],
            "embeddings/real",
        )
        count = g.op("CumSum", [real, g.scalar(1, "int64")], "embeddings/cumsum")
        pos_ids = g.op(
            "Add",
            [
                g.op("Mul", [count, real], "embeddings/count_real"),
                g.scalar(spec.pad_token_id, "int64"),
            ],
            "embeddings/position_ids",
        )
        pos = g.op("Gather", [positions, pos_ids], "embeddings/position", axis=0)
    else:
        # positions 0..T-1: the first T rows of the table, broadcast over the batch.
        seq = g.op(
            "Slice",
            [
                g.op("Shape", [INPUT_IDS], "embeddings/shape"),
                g.ints("one", [1]),
                g.ints("two", [2]),
            ],
            "embeddings/seq_len",
        )
        pos = g.op(
            "Slice",
            [positions, g.ints("zero", [0]), seq, g.ints("axis0", [0])],
            "embeddings/position",
        )
    x = g.op("Add", [x, pos], "embeddings/add_position")
    return embedding_norm(g, spec, w, x)


def embedding_norm(g: GraphBuilder, spec: EncoderSpec, w: WeightStore, x: str) -> str:
    """The embeddings' LayerNorm, then ELECTRA's projection when it has one."""
    e = spec.embedding_size
    x = g.layer_norm(
        x,
        w.get("embeddings.LayerNorm.weight", (e,)),
        w.get("embeddings.LayerNorm.bias", (e,)),
        spec.layer_norm_eps,
        "embeddings.LayerNorm",
    )
    if e != spec.hidden:  # ELECTRA with embedding_size != hidden_size
        x = g.linear(
            x,
            w.get("embeddings_project.weight", (spec.hidden, e)),
            w.get("embeddings_project.bias", (spec.hidden,)),
            "embeddings_project",
        )
    return x


def bert_layer(
    g: GraphBuilder,
    spec: EncoderSpec,
    w: WeightStore,
    x: str,
    bias: str,
    i: int,
    *,
    fused: bool = False,
    distance: str | None = None,
) -> str:
    """One post-LayerNorm transformer layer (identical maths in BERT, RoBERTa and DistilBERT).

    ``distance`` (unfused only): the :func:`~.relative_key.distance_rows` of a BERT with
    relative position scores.

    ``bias`` is the additive mask of :func:`~..blocks.mask_bias`, or with ``fused`` the int32
    mask of :func:`~..blocks.mask_index` for ONNX Runtime's ``com.microsoft.Attention``, which
    takes the three projections as one packed (hidden x 3 hidden) weight and does the heads'
    split, scores, masked softmax and context in one kernel.
    """
    names = spec.layers
    pre = names.prefix.format(i=i)
    h, d, f = spec.hidden, spec.head_dim, spec.intermediate

    def params(
        part: str, n_out: int, n_in: int, scale: float = 1.0
    ) -> tuple[np.ndarray, np.ndarray]:
        weight = w.get(f"{pre}{part}.weight", (n_out, n_in))
        b = w.get(f"{pre}{part}.bias", (n_out,))
        if scale != 1.0:
            weight, b = weight * np.float32(scale), b * np.float32(scale)
        return weight, b

    def lin(x: str, part: str, n_out: int, n_in: int, scale: float = 1.0) -> str:
        return g.linear(x, *params(part, n_out, n_in, scale), f"{pre}{part}")

    # 1/sqrt(d) folded into the query projection (transformers divides the scores, DistilBERT
    # divides q: the same number up to rounding).
    q_scale = 1.0 / math.sqrt(d)
    if fused:
        qkv = [
            params(names.query, h, h, q_scale),
            params(names.key, h, h),
            params(names.value, h, h),
        ]
        packed_w = np.concatenate([wt for wt, _ in qkv], axis=0).T  # rows stacked: a fast copy
        packed_b = np.concatenate([b for _, b in qkv])
        ctx = g.op(
            "Attention",
            [
                x,
                g.weight(f"{pre}attention.qkv.weight_t", packed_w),
                g.weight(f"{pre}attention.qkv.bias", packed_b),
                bias,
            ],
            f"{pre}attention/Attention",
            domain=MS_DOMAIN,
            num_heads=spec.heads,
            scale=1.0,
            mask_filter_value=FLOAT32_MIN,
        )
    else:
        split = g.ints(f"{pre}heads_shape", [0, 0, spec.heads, d])
        merge = g.ints(f"{pre}merged_shape", [0, 0, h])

        def heads(t: str, perm: list[int], tag: str) -> str:
            t = g.op("Reshape", [t, split], f"{pre}attention/{tag}_split")
            return g.op("Transpose", [t], f"{pre}attention/{tag}_heads", perm=perm)

        q = heads(lin(x, names.query, h, h, q_scale), [0, 2, 1, 3], "q")
        k = heads(lin(x, names.key, h, h), [0, 2, 3, 1], "k")
        v = heads(lin(x, names.value, h, h), [0, 2, 1, 3], "v")
        scores = g.op("MatMul", [q, k], f"{pre}attention/scores")
        if distance is not None:
            scores = add_relative_scores(
                g,
                scores,
                q,
                k,
                w.get(f"{pre}{DISTANCE_TABLE}", (2 * spec.n_positions - 1, d)),
                distance,
                kind=spec.position_embedding_type,
                scale=q_scale,
                name=f"{pre}attention.self",
            )
        scores = g.op("Add", [scores, bias], f"{pre}attention/masked_scores")
        probs = g.op("Softmax", [scores], f"{pre}attention/probs", axis=-1)
        ctx = g.op("MatMul", [probs, v], f"{pre}attention/context")
        ctx = g.op("Transpose", [ctx], f"{pre}attention/context_t", perm=[0, 2, 1, 3])
        ctx = g.op("Reshape", [ctx, merge], f"{pre}attention/context_merged")
    attn = g.op("Add", [lin(ctx, names.attn_out, h, h), x], f"{pre}attention/residual")
    attn = g.layer_norm(
        attn,
        w.get(f"{pre}{names.attn_norm}.weight", (h,)),
        w.get(f"{pre}{names.attn_norm}.bias", (h,)),
        spec.layer_norm_eps,
        f"{pre}{names.attn_norm}",
    )
    inner = g.activation(lin(attn, names.ffn_in, f, h), spec.activation, f"{pre}ffn/act")
    out = g.op("Add", [lin(inner, names.ffn_out, h, f), attn], f"{pre}ffn/residual")
    return g.layer_norm(
        out,
        w.get(f"{pre}{names.ffn_norm}.weight", (h,)),
        w.get(f"{pre}{names.ffn_norm}.bias", (h,)),
        spec.layer_norm_eps,
        f"{pre}{names.ffn_norm}",
    )


def build_bert(request: BuildRequest) -> onnx.ModelProto:
    """The graph of a BERT, ELECTRA, RoBERTa, XLM-RoBERTa or DistilBERT checkpoint (see
    ``convert.export_onnx``): :func:`embeddings`, then ``n_build`` :func:`bert_layer` s. Relative
    position scores have no fused variant: such a graph is written unfused."""
    spec = encoder_spec(request.config)
    n_build = request.n_build
    weights = request.weights
    fused = request.fused
    g = new_graph()
    x = embeddings(g, spec, weights, ATTENTION_MASK)
    states = [x]
    distance = None
    if n_build and spec.position_embedding_type != "absolute":
        fused = False  # no fused variant: the scores carry query- and key-dependent terms
        distance = distance_rows(g, INPUT_IDS, spec.n_positions)
    if n_build:
        bias = attention_mask(g, fused)
        for i in range(n_build):
            x = bert_layer(g, spec, weights, x, bias, i, fused=fused, distance=distance)
            states.append(x)
    return request.finish(g, states, spec.hidden)


def ffn_out_nodes(i: int) -> tuple[str, ...]:
    """The names of layer ``i``'s FFN output projection (MatMul node) in BERT-like graphs
    (BERT's ``output.dense``, also MPNet's and Longformer's; DistilBERT's ``ffn.lin2``)."""
    return tuple(
        f"{layout.prefix.format(i=i)}{layout.ffn_out}/MatMul"
        for layout in (BERT_LAYER, DISTILBERT_LAYER)
    )
