"""MPNet as an ONNX graph: RoBERTa-style positions plus a bucketed relative position bias."""

from __future__ import annotations

import math

import numpy as np
import onnx

from ..blocks import (
    BuildRequest,
    EncoderDims,
    encoder_layers,
    hidden_and_heads,
    new_graph,
    padding_aware_positions,
    seq_len,
    stored_layer_norm,
)
from ..contract import (
    INPUT_IDS,
    CheckpointError,
    LayerNames,
    float_field,
    int_field,
    max_positions,
)
from ..graph import GraphBuilder

PADDING_IDX = 1
"""transformers' MPNetEmbeddings fixes ``padding_idx`` at 1, whatever ``pad_token_id`` says."""

BUCKET_CALL_NUM_BUCKETS = 32
"""``MPNetEncoder.compute_position_bias`` is called without ``num_buckets``: buckets are always
computed for 32, whatever ``relative_attention_num_buckets`` (the bias table's rows) says."""

MAX_DISTANCE = 128


def mpnet_layer_names(i: int) -> LayerNames:
    """Where MPNet keeps layer ``i``'s tensors."""
    return LayerNames(
        prefix=f"encoder.layer.{i}.",
        query="attention.attn.q",
        key="attention.attn.k",
        value="attention.attn.v",
        attn_out="attention.attn.o",
        attn_norm="attention.LayerNorm",
        ffn_in="intermediate.dense",
        ffn_out="output.dense",
        ffn_norm="output.LayerNorm",
    )


def relative_position_bucket(
    relative_position: np.ndarray,
    num_buckets: int = BUCKET_CALL_NUM_BUCKETS,
    max_distance: int = MAX_DISTANCE,
) -> np.ndarray:
    """MPNet's (T5's bidirectional) bucket of each ``key - query`` distance.

    Half the buckets hold keys before the query, half after; within a half, distances below
    ``num_buckets // 4`` get their own bucket, longer ones share logarithmically wider buckets
    up to ``max_distance``. The logarithm is taken in float32 as in transformers (exact at the
    bucket edges 16, 32, 64: checked against float64).
    """
    n = -np.asarray(relative_position, dtype=np.int64)
    half = num_buckets // 2
    ret = (n < 0).astype(np.int64) * half
    n = np.abs(n)
    max_exact = half // 2
    is_small = n < max_exact
    with np.errstate(divide="ignore"):  # log(0) in the branch np.where discards
        ratio = np.log(n.astype(np.float32) / np.float32(max_exact))
    scaled = ratio / np.float32(math.log(max_distance / max_exact)) * np.float32(half - max_exact)
    large = max_exact + np.where(is_small, 0, scaled).astype(np.int64)
    large = np.minimum(large, half - 1)
    return ret + np.where(is_small, n, large)


def relative_bias_table(bias_weight: np.ndarray, max_len: int) -> np.ndarray:
    """``[2 max_len - 1, heads]``: row ``r + max_len - 1`` is the bias of distance ``r``
    (key - query) for ``-(max_len - 1) <= r <= max_len - 1``."""
    distances = np.arange(-(max_len - 1), max_len, dtype=np.int64)
    buckets = relative_position_bucket(distances)
    if buckets.max() >= bias_weight.shape[0]:
        raise CheckpointError(
            f"relative_attention_num_buckets={bias_weight.shape[0]} is too small: transformers "
            f"computes MPNet's buckets for {BUCKET_CALL_NUM_BUCKETS}"
        )
    return np.ascontiguousarray(bias_weight[buckets])


def _position_bias(g: GraphBuilder, table: np.ndarray, max_len: int) -> str:
    """``[1, heads, T, T]`` relative position bias, computed once for every layer."""
    n = g.op("Squeeze", [seq_len(g), g.ints("axis0", [0])], "position_bias/T")
    ar = g.op("Range", [g.scalar(0, "int64"), n, g.scalar(1, "int64")], "position_bias/arange")
    query = g.op("Unsqueeze", [ar, g.ints("axis1", [1])], "position_bias/query")
    key = g.op("Unsqueeze", [ar, g.ints("axis0", [0])], "position_bias/key")
    rel = g.op("Sub", [key, query], "position_bias/distance")
    rows = g.op("Add", [rel, g.scalar(max_len - 1, "int64")], "position_bias/rows")
    values = g.op(
        "Gather",
        [g.weight("encoder.relative_position_bias_table", table), rows],
        "position_bias/gather",
        axis=0,
    )  # [T, T, heads]
    values = g.op("Transpose", [values], "position_bias/heads_first", perm=[2, 0, 1])
    return g.op("Unsqueeze", [values, g.ints("axis0", [0])], "position_bias")


def build_mpnet(request: BuildRequest) -> onnx.ModelProto:
    """MPNet's graph (see ``convert.export_onnx`` for the contract).

    Hidden state 0: LayerNorm(word + position), positions ``cumsum(mask) + 1`` as RoBERTa's with
    padding_idx 1; each layer is BERT's post-LayerNorm layer with the relative position bias of
    ``encoder.relative_attention_bias`` added to the attention scores.
    """
    w, config = request.weights, request.config
    hidden, heads = hidden_and_heads(
        config, "hidden_size", "num_attention_heads", label="hidden size"
    )
    vocab = int_field(config, "vocab_size")
    n_positions = int_field(config, "max_position_embeddings")
    n_buckets = int_field(config, "relative_attention_num_buckets")
    eps = float_field(config, "layer_norm_eps", 1e-12)
    n_build = request.n_build

    g = new_graph()
    word = g.weight(
        "embeddings.word_embeddings", w.get("embeddings.word_embeddings.weight", (vocab, hidden))
    )
    positions = g.weight(
        "embeddings.position_embeddings",
        w.get("embeddings.position_embeddings.weight", (n_positions, hidden)),
    )
    pos_ids = padding_aware_positions(g, PADDING_IDX, "embeddings/position_ids")
    x = g.op(
        "Add",
        [
            g.op("Gather", [word, INPUT_IDS], "embeddings/word", axis=0),
            g.op("Gather", [positions, pos_ids], "embeddings/position", axis=0),
        ],
        "embeddings/add_position",
    )
    x = stored_layer_norm(g, w, x, "embeddings.LayerNorm", hidden, eps)
    position_bias = ""
    if n_build:
        max_len = max(max_positions(config) or 0, 1)
        table = relative_bias_table(
            w.get("encoder.relative_attention_bias.weight", (n_buckets, heads)), max_len
        )
        position_bias = _position_bias(g, table, max_len)
    sizes = EncoderDims(
        hidden=hidden,
        heads=heads,
        vocab=vocab,
        n_positions=n_positions,
        intermediate=int_field(config, "intermediate_size") if n_build else 0,
        activation=str(config.get("hidden_act", "gelu")),
        layer_norm_eps=eps,
    )
    states = encoder_layers(
        g,
        w,
        x,
        n_build,
        mpnet_layer_names,
        sizes,
        fused=request.fused,
        extra_bias=lambda i: position_bias,
    )
    return request.finish(g, states, hidden)
