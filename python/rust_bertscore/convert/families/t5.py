"""The T5 family (T5 v1.0 and v1.1, mT5, ByT5) as ONNX graphs: the encoder stack only.

bert_score loads every ``model_type`` containing "t5" as ``T5EncoderModel`` and scores with its
encoder: token embeddings (the ``shared`` table, no position embeddings, no scaling), then
pre-norm blocks (RMS norm -> self-attention -> residual, RMS norm -> FFN -> residual) whose
attention adds a bucketed relative position bias computed once from the first block's table
and shared by every block, and the encoder's ``final_layer_norm`` after the last block kept.

So the hidden state a truncated graph outputs at layer ``L`` is ``final_layer_norm(block L
output)`` (``L = 0``: of the embeddings), as bert_score's truncated ``T5EncoderModel`` returns,
while ``all_layers`` returns transformers' ``hidden_states`` of the whole model: the embeddings,
the raw outputs of blocks ``1..depth-1`` and the final-normed output of the last block.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx

from ..blocks import BuildRequest, mask_bias, mask_index, new_graph
from ..checkpoint import WeightStore
from ..contract import INPUT_IDS, CheckpointError, float_field, model_depth
from ..graph import FLOAT32_MIN, MS_DOMAIN, GraphBuilder, contiguous

T5_BLOCK = "encoder.block.{i}."
"""Prefix of block ``i``'s tensors in a T5 checkpoint."""

T5_FFN_OUT = "layer.1.DenseReluDense.wo"
"""The FFN output projection of a block, relative to :data:`T5_BLOCK`."""

_ATTN = "layer.0.SelfAttention"
_RELATIVE_BIAS = f"{T5_BLOCK.format(i=0)}{_ATTN}.relative_attention_bias.weight"

# T5Config's defaults: bert_score loads every T5-like checkpoint through T5EncoderModel, hence
# T5Config (not MT5Config), whatever config.json's model_type says.
_DEFAULTS: dict[str, Any] = {
    "d_kv": 64,
    "d_ff": 2048,
    "num_heads": 8,
    "vocab_size": 32128,
    "relative_attention_num_buckets": 32,
    "relative_attention_max_distance": 128,
    "layer_norm_epsilon": 1e-6,
    "feed_forward_proj": "relu",
}


@dataclass(frozen=True)
class T5Spec:
    """The sizes and options of a T5-family checkpoint, read from config.json."""

    model_type: str
    depth: int
    hidden: int
    d_kv: int
    heads: int
    d_ff: int
    vocab_size: int
    eps: float
    gated: bool
    activation: str
    num_buckets: int
    max_distance: int

    @property
    def inner(self) -> int:
        """Width of the attention projections: ``heads * d_kv`` (not always ``hidden``)."""
        return self.heads * self.d_kv


def _field(config: dict[str, Any], name: str) -> int:
    value = config.get(name, _DEFAULTS.get(name))
    if value is None:
        raise CheckpointError(f"config.json has no {name!r} field (needed for a T5 model)")
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise CheckpointError(f"config field {name!r} must be a positive integer, got {value!r}")
    return value


def feed_forward(proj: object) -> tuple[bool, str]:
    """Parse T5's ``feed_forward_proj``: ``"relu"`` -> (False, "relu"), ``"gated-gelu"`` ->
    (True, "gelu_new") as transformers' T5Config does, ``"gated-X"`` -> (True, "X")."""
    if not isinstance(proj, str) or not proj:
        raise CheckpointError(f"config field 'feed_forward_proj' must be a string, got {proj!r}")
    parts = proj.split("-")
    gated = parts[0] == "gated"
    if (len(parts) > 1 and not gated) or len(parts) > 2:
        raise CheckpointError(
            f"config field 'feed_forward_proj' is {proj!r}: expected 'ACT' or 'gated-ACT' "
            "(e.g. 'relu', 'gated-gelu')"
        )
    activation = "gelu_new" if proj == "gated-gelu" else parts[-1]
    return gated, activation


def t5_spec(config: dict[str, Any]) -> T5Spec:
    """Read a :class:`T5Spec` from a T5 / mT5 / ByT5 configuration.

    Missing optional fields take T5Config's defaults (bert_score reads every T5-like config
    through T5Config); ``d_model`` and ``num_layers`` are required.

    Raises
    ------
    CheckpointError
        For a missing or malformed field.
    """
    eps = float_field(config, "layer_norm_epsilon", _DEFAULTS["layer_norm_epsilon"])
    gated, activation = feed_forward(
        config.get("feed_forward_proj", _DEFAULTS["feed_forward_proj"])
    )
    # T5Config derives dense_act_fn and is_gated_act from feed_forward_proj, then
    # PretrainedConfig sets every other config.json field as given: what config.json writes wins.
    dense = config.get("dense_act_fn")
    if dense is not None:
        if not isinstance(dense, str) or not dense:
            raise CheckpointError(f"config field 'dense_act_fn' must be a string, got {dense!r}")
        activation = dense
    is_gated = config.get("is_gated_act")
    if is_gated is not None:
        if not isinstance(is_gated, bool):
            raise CheckpointError(
                f"config field 'is_gated_act' must be true or false, got {is_gated!r}"
            )
        gated = is_gated
    return T5Spec(
        model_type=str(config.get("model_type")),
        depth=model_depth(config),
        hidden=_field(config, "d_model"),
        d_kv=_field(config, "d_kv"),
        heads=_field(config, "num_heads"),
        d_ff=_field(config, "d_ff"),
        vocab_size=_field(config, "vocab_size"),
        eps=eps,
        gated=gated,
        activation=activation,
        num_buckets=_field(config, "relative_attention_num_buckets"),
        max_distance=_field(config, "relative_attention_max_distance"),
    )


def relative_buckets(relative: np.ndarray, num_buckets: int, max_distance: int) -> np.ndarray:
    """T5's bidirectional bucket of each relative position ``key - query`` (int64 array).

    Half the buckets take keys after the query; of each half, the first ``n / 2`` are one
    distance each and the rest grow logarithmically up to ``max_distance``, past which all
    distances share the last bucket. The logarithm is taken in float32 and truncated, as
    transformers does in PyTorch, so the boundaries fall where theirs do.
    """
    half = num_buckets // 2
    buckets = np.where(relative > 0, half, 0).astype(np.int64)
    distance = np.abs(relative).astype(np.int64)
    max_exact = half // 2
    is_small = distance < max_exact
    safe = np.where(is_small, max(max_exact, 1), distance).astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        scaled = (
            np.log(safe / np.float32(max_exact))
            / np.float32(math.log(max_distance / max_exact))
            * np.float32(half - max_exact)
        )
    large = max_exact + np.nan_to_num(scaled, nan=0.0, posinf=0.0, neginf=0.0).astype(np.int64)
    large = np.minimum(large, half - 1)
    return buckets + np.where(is_small, distance, large)


def relative_bias_table(weight: np.ndarray, num_buckets: int, max_distance: int) -> np.ndarray:
    """Rows ``r + K`` (``r = -K..K``) hold the per-head bias of relative position ``r``; every
    ``|r| >= K`` shares the bucket of ``+-K``, so clipping ``key - query`` to ``[-K, K]``
    before the lookup gives T5's bias at any length.

    Raises
    ------
    CheckpointError
        If the bucket parameters make no such ``K`` (a configuration transformers never ships).
    """
    half = num_buckets // 2
    if half < 2 or max_distance <= half // 2:
        raise CheckpointError(
            f"relative_attention_num_buckets={num_buckets} with relative_attention_max_distance="
            f"{max_distance}: need at least 4 buckets and a max distance past {max(half // 2, 1)}"
        )
    k = max_distance
    tail = relative_buckets(np.arange(k, k + 4 * k + 1), num_buckets, max_distance)
    if not (tail == tail[0]).all():
        raise CheckpointError(
            f"relative position buckets do not saturate at relative_attention_max_distance={k}"
        )
    rows = relative_buckets(np.arange(-k, k + 1), num_buckets, max_distance)
    return np.ascontiguousarray(weight[rows])


def _rms_norm(g: GraphBuilder, x: str, weight: np.ndarray, eps: float, name: str) -> str:
    """T5LayerNorm: ``w * x / sqrt(mean(x^2) + eps)`` over the last axis, no mean, no bias.

    ``x * x`` rather than ``Pow(x, 2)`` (the same numbers) keeps ONNX Runtime from fusing the
    chain into SimplifiedLayerNormalization, whose rounding put the tiny random T5 (relu) 3e-5
    from bert_score on one pair; unfused, every case lands within 1e-5 (docs/encoders.md).
    """
    sq = g.op("Mul", [x, x], f"{name}/Square")
    var = g.op("ReduceMean", [sq], f"{name}/ReduceMean", axes=[-1], keepdims=1)
    std = g.op("Sqrt", [g.op("Add", [var, g.scalar(float(eps))], f"{name}/Add")], f"{name}/Sqrt")
    normed = g.op("Div", [x, std], f"{name}/Div")
    return g.op("Mul", [normed, g.weight(f"{name}.weight", weight)], f"{name}/Mul")


def _matmul(g: GraphBuilder, x: str, weight: np.ndarray, name: str) -> str:
    """``x W^T`` for a bias-free PyTorch Linear weight ``(out, in)``."""
    w = g.weight(f"{name}.weight_t", contiguous(weight.T))
    return g.op("MatMul", [x, w], f"{name}/MatMul")


def _position_bias(g: GraphBuilder, spec: T5Spec, w: WeightStore) -> str:
    """``[1, heads, seq, seq]``: block 0's relative position bias, for every block."""
    weight = w.get(_RELATIVE_BIAS, (spec.num_buckets, spec.heads))
    table = relative_bias_table(weight, spec.num_buckets, spec.max_distance)
    k = spec.max_distance
    seq = g.op(
        "Gather",
        [g.op("Shape", [INPUT_IDS], "position_bias/shape"), g.scalar(1, "int64")],
        "position_bias/seq_len",
        axis=0,
    )
    pos = g.op(
        "Range", [g.scalar(0, "int64"), seq, g.scalar(1, "int64")], "position_bias/positions"
    )
    keys = g.op("Unsqueeze", [pos, g.ints("axes_0", [0])], "position_bias/keys")
    queries = g.op("Unsqueeze", [pos, g.ints("axes_1", [1])], "position_bias/queries")
    rel = g.op("Sub", [keys, queries], "position_bias/relative")
    rel = g.op("Max", [rel, g.scalar(-k, "int64")], "position_bias/clip_low")
    rel = g.op("Min", [rel, g.scalar(k, "int64")], "position_bias/clip_high")
    rows = g.op("Add", [rel, g.scalar(k, "int64")], "position_bias/rows")
    bias = g.op(
        "Gather",
        [g.weight("encoder.relative_attention_bias_table", table), rows],
        "position_bias/lookup",
        axis=0,
    )
    bias = g.op("Transpose", [bias], "position_bias/heads", perm=[2, 0, 1])
    return g.op("Unsqueeze", [bias, g.ints("axes_0_b", [0])], "position_bias")


def _embeddings(g: GraphBuilder, spec: T5Spec, w: WeightStore) -> str:
    """Hidden state 0: rows of the ``shared`` table (the encoder's ``embed_tokens`` is the same
    module in T5EncoderModel; a checkpoint may hold either name or both)."""
    name = "shared.weight" if "shared.weight" in w else "encoder.embed_tokens.weight"
    table = g.weight("shared", w.get(name, (spec.vocab_size, spec.hidden)))
    return g.op("Gather", [table, INPUT_IDS], "embeddings/word", axis=0)


def _attention(
    g: GraphBuilder,
    spec: T5Spec,
    w: WeightStore,
    x: str,
    bias: str,
    position_bias: str,
    pre: str,
    *,
    fused: bool,
) -> str:
    """T5 self-attention (no scaling of ``q k^T``, no projection biases), before ``o``.

    Unfused, ``bias`` is ``position_bias + mask`` ``[batch, heads, seq, seq]``, as transformers
    adds the mask to the position bias before adding both to the scores. Fused, ``bias`` is the
    int32 mask and ``position_bias`` goes in as ORT Attention's ``attention_bias``.
    """
    h, n, d = spec.hidden, spec.inner, spec.d_kv
    att = f"{pre}{_ATTN}"
    q, k, v = (w.get(f"{att}.{p}.weight", (n, h)) for p in ("q", "k", "v"))
    if fused:
        packed = np.concatenate([q, k, v], axis=0).T  # rows stacked: a fast copy
        return g.op(
            "Attention",
            [
                x,
                g.weight(f"{att}.qkv.weight_t", packed),
                g.weight(f"{att}.qkv.bias", np.zeros(3 * n, dtype=np.float32)),
                bias,
                "",
                position_bias,
            ],
            f"{att}/Attention",
            domain=MS_DOMAIN,
            num_heads=spec.heads,
            qkv_hidden_sizes=[n, n, n],
            scale=1.0,
            mask_filter_value=FLOAT32_MIN,
        )
    split = g.ints(f"{att}.heads_shape", [0, 0, spec.heads, d])
    merge = g.ints(f"{att}.merged_shape", [0, 0, n])

    def heads(weight: np.ndarray, perm: list[int], tag: str) -> str:
        t = _matmul(g, x, weight, f"{att}.{tag}")
        t = g.op("Reshape", [t, split], f"{att}/{tag}_split")
        return g.op("Transpose", [t], f"{att}/{tag}_heads", perm=perm)

    scores = g.op(
        "MatMul",
        [heads(q, [0, 2, 1, 3], "q"), heads(k, [0, 2, 3, 1], "k")],
        f"{att}/scores",
    )
    scores = g.op("Add", [scores, bias], f"{att}/biased_scores")
    probs = g.op("Softmax", [scores], f"{att}/probs", axis=-1)
    ctx = g.op("MatMul", [probs, heads(v, [0, 2, 1, 3], "v")], f"{att}/context")
    ctx = g.op("Transpose", [ctx], f"{att}/context_t", perm=[0, 2, 1, 3])
    return g.op("Reshape", [ctx, merge], f"{att}/context_merged")


def _block(
    g: GraphBuilder,
    spec: T5Spec,
    w: WeightStore,
    x: str,
    bias: str,
    position_bias: str,
    i: int,
    *,
    fused: bool,
) -> str:
    """One pre-norm T5 block: ``x + o(attn(norm(x)))``, then ``x + wo(ffn(norm(x)))``."""
    pre = T5_BLOCK.format(i=i)
    h, n, f = spec.hidden, spec.inner, spec.d_ff
    normed = _rms_norm(
        g, x, w.get(f"{pre}layer.0.layer_norm.weight", (h,)), spec.eps, f"{pre}layer.0.layer_norm"
    )
    ctx = _attention(g, spec, w, normed, bias, position_bias, pre, fused=fused)
    out = _matmul(g, ctx, w.get(f"{pre}{_ATTN}.o.weight", (h, n)), f"{pre}{_ATTN}.o")
    x = g.op("Add", [x, out], f"{pre}layer.0/residual")
    ffn = f"{pre}layer.1.DenseReluDense"
    normed = _rms_norm(
        g, x, w.get(f"{pre}layer.1.layer_norm.weight", (h,)), spec.eps, f"{pre}layer.1.layer_norm"
    )
    if spec.gated:
        gate = _matmul(g, normed, w.get(f"{ffn}.wi_0.weight", (f, h)), f"{ffn}.wi_0")
        gate = g.activation(gate, spec.activation, f"{ffn}/act")
        linear = _matmul(g, normed, w.get(f"{ffn}.wi_1.weight", (f, h)), f"{ffn}.wi_1")
        inner = g.op("Mul", [gate, linear], f"{ffn}/gated")
    else:
        inner = _matmul(g, normed, w.get(f"{ffn}.wi.weight", (f, h)), f"{ffn}.wi")
        inner = g.activation(inner, spec.activation, f"{ffn}/act")
    out = _matmul(g, inner, w.get(f"{pre}{T5_FFN_OUT}.weight", (h, f)), f"{pre}{T5_FFN_OUT}")
    return g.op("Add", [x, out], f"{pre}layer.1/residual")


def build_t5(request: BuildRequest) -> onnx.ModelProto:
    """Build a T5 / mT5 / ByT5 encoder graph (see ``convert.export_onnx``).

    The truncated graph outputs ``final_layer_norm`` of hidden state ``n_build``, which is
    what bert_score's ``T5EncoderModel`` with ``encoder.block[:num_layers]`` returns; with
    ``all_layers`` the graph outputs transformers' ``hidden_states`` of the whole model (only
    the last one after the final norm).
    """
    spec = t5_spec(request.config)
    n_build, fused = request.n_build, request.fused
    weights = request.weights
    g = new_graph()
    x = _embeddings(g, spec, weights)
    states = [x]
    if n_build:
        position_bias = _position_bias(g, spec, weights)
        if fused:
            bias = mask_index(g)
        else:
            bias = g.op("Add", [position_bias, mask_bias(g)], "attention_bias")
        for i in range(n_build):
            x = _block(g, spec, weights, x, bias, position_bias, i, fused=fused)
            states.append(x)
    final = weights.get("encoder.final_layer_norm.weight", (spec.hidden,))
    states[-1] = _rms_norm(g, states[-1], final, spec.eps, "encoder.final_layer_norm")
    return request.finish(g, states, spec.hidden)


def ffn_out_nodes(i: int) -> tuple[str, ...]:
    """The FFN output projection (``DenseReluDense.wo``) of block ``i``."""
    return (f"{T5_BLOCK.format(i=i)}{T5_FFN_OUT}/MatMul",)
