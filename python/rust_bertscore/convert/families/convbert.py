"""ConvBERT (``model_type`` "convbert", YituTech/conv-bert-*) as an ONNX graph.

Facts from transformers 4.57's ``models/convbert/modeling_convbert.py``:

- Embeddings as ELECTRA's: word + position (``0..T-1``) + token type 0 at ``embedding_size``,
  LayerNorm, then ``embeddings_project`` (Linear to ``hidden_size``) when the sizes differ.
- Post-LayerNorm layers (BERT's ``attention.output`` and ``output`` blocks) whose attention is
  *mixed*: ``n = num_attention_heads // head_ratio`` self-attention heads (1 if that is 0) of
  width ``d = hidden / n / 2``, ``A = n * d`` channels, beside ``n`` span-based dynamic
  convolution heads of the same width. The convolution part, for a sequence ``x [T, hidden]``:

  - ``key_conv = pointwise(depthwise(x)) + bias``: a depthwise Conv1d over the sequence
    (kernel ``K = conv_kernel_size``, zero padding ``K // 2`` at both ends, no bias), then a
    1x1 conv to ``A`` channels;
  - ``kernel = softmax_K(Linear(key_conv * query))`` per head (the query projection before
    any scaling), ``[T, n, K]``;
  - ``value = conv_out_layer(x)`` (Linear to ``A``), unfolded over the window
    ``t - K//2 .. t + K//2`` with zeros past both ends of the sequence, and weighed by the
    kernel: ``out[t, h*d + c] = sum_k value[t + k - K//2, h*d + c] * kernel[t, h, k]``;
  - the context is ``concat(self-attention heads, convolution heads)`` (``2A = hidden``).
- The FFN's two projections are ``GroupedLinearLayer``s when ``num_groups > 1``: weight
  ``[G, in/G, out/G]``, group ``g`` maps input channels ``g*in/G ..`` to output channels
  ``g*out/G ..``, i.e. a block-diagonal Linear (built here as one dense MatMul).

Padding: transformers applies the attention mask to the self-attention scores only. The
convolutions read the hidden states of the padded positions of a batch row as if they were
text, so in PyTorch a text's vectors depend on how much padding its batch gives it (measured on
the tiny reference model: up to 2.9 in a hidden state; bert_score 0.3.13's own scores of
the reference cases move by up to 0.06 with ``PYTHONHASHSEED``, which orders its batches). The
graph zeroes the convolutions' inputs at padded positions, so every text gets the vectors
transformers gives it alone in a batch (zero padding past its end): the same whatever the
batch (docs/encoders.md, "ConvBERT").
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import onnx

from ..blocks import BuildRequest, mask_bias, new_graph
from ..checkpoint import WeightStore
from ..contract import ATTENTION_MASK, CheckpointError, int_field
from ..graph import GraphBuilder, contiguous
from .bert import BERT_LAYER, EncoderSpec, embeddings, encoder_spec

CONVBERT_LAYER = BERT_LAYER
"""ConvBERT names its layer tensors as BERT (``encoder.layer.{i}.``, ``output.dense`` ...)."""

_SELF = "attention.self."


@dataclass(frozen=True)
class ConvBertSpec:
    """The sizes of a ConvBERT checkpoint beyond BERT's."""

    base: EncoderSpec
    heads: int
    """Self-attention heads (as many convolution heads): ``num_attention_heads // head_ratio``."""
    head_dim: int
    kernel: int
    groups: int

    @property
    def width(self) -> int:
        """Channels of the self-attention (and of the convolution) half: ``heads * head_dim``."""
        return self.heads * self.head_dim


def convbert_spec(config: dict[str, Any]) -> ConvBertSpec:
    """Read a :class:`ConvBertSpec` from config.json (``CheckpointError`` for sizes transformers
    could not run)."""
    # ELECTRA's reading of config.json: hidden_size, embedding_size, layer_norm_eps ...
    base = replace(encoder_spec({**config, "model_type": "electra"}), model_type="convbert")
    ratio = int_field(config, "head_ratio") if "head_ratio" in config else 2
    kernel = int_field(config, "conv_kernel_size") if "conv_kernel_size" in config else 9
    groups = int_field(config, "num_groups") if "num_groups" in config else 1
    if ratio <= 0 or kernel <= 0 or groups <= 0:
        raise CheckpointError(
            f"head_ratio ({ratio}), conv_kernel_size ({kernel}) and num_groups ({groups}) "
            "must be positive"
        )
    heads = max(base.heads // ratio, 1)
    head_dim = (base.hidden // heads) // 2
    if base.hidden % heads or 2 * heads * head_dim != base.hidden:
        raise CheckpointError(
            f"hidden_size {base.hidden} must be an even multiple of the {heads} self-attention "
            f"heads (num_attention_heads {base.heads} // head_ratio {ratio})"
        )
    if kernel % 2 == 0:
        raise CheckpointError(f"conv_kernel_size must be odd, got {kernel}")
    if base.hidden % groups or base.intermediate % groups:
        raise CheckpointError(
            f"num_groups {groups} must divide hidden_size {base.hidden} and intermediate_size "
            f"{base.intermediate}"
        )
    return ConvBertSpec(base, heads, head_dim, kernel, groups)


def grouped_dense(weight: np.ndarray) -> np.ndarray:
    """The PyTorch Linear weight ``(out, in)`` of a ``GroupedLinearLayer`` weight
    ``[G, in/G, out/G]``: block diagonal, group ``g`` from inputs ``g*in/G ..`` to outputs
    ``g*out/G ..``."""
    groups, n_in, n_out = weight.shape
    dense = np.zeros((groups * n_in, groups * n_out), dtype=np.float32)
    for g in range(groups):
        dense[g * n_in : (g + 1) * n_in, g * n_out : (g + 1) * n_out] = weight[g]
    return contiguous(dense.T)


def _ffn_weight(w: WeightStore, name: str, n_out: int, n_in: int, groups: int) -> np.ndarray:
    if groups == 1:
        return w.get(name, (n_out, n_in))
    return grouped_dense(w.get(name, (groups, n_in // groups, n_out // groups)))


def _dynamic_conv(
    g: GraphBuilder, w: WeightStore, spec: ConvBertSpec, x: str, query: str, keep: str, pre: str
) -> str:
    """The convolution heads' ``[batch, seq, A]`` output (``query``: the unscaled projection;
    ``keep``: ``[batch, seq, 1]`` float mask zeroing the padded positions)."""
    hidden, width, kernel, heads = spec.base.hidden, spec.width, spec.kernel, spec.heads
    name = f"{pre}{_SELF}".rstrip(".")
    half = kernel // 2
    x_real = g.op("Mul", [x, keep], f"{name}/real_x")
    # depthwise Conv1d over the sequence in [batch, channels, seq] layout, zeros past both ends
    depth_w = w.get(f"{pre}{_SELF}key_conv_attn_layer.depthwise.weight", (hidden, 1, kernel))
    cx = g.op("Transpose", [x_real], f"{name}/key_conv/to_nct", perm=[0, 2, 1])
    cx = g.op(
        "Conv",
        [cx, g.weight(f"{name}.key_conv_attn_layer.depthwise.weight", depth_w)],
        f"{name}/key_conv/depthwise",
        group=hidden,
        kernel_shape=[kernel],
        pads=[half, half],
    )
    cx = g.op("Transpose", [cx], f"{name}/key_conv/to_ntc", perm=[0, 2, 1])
    point = w.get(f"{pre}{_SELF}key_conv_attn_layer.pointwise.weight", (width, hidden, 1))
    bias = w.get(f"{pre}{_SELF}key_conv_attn_layer.bias", (width, 1))
    key_conv = g.linear(cx, point[:, :, 0], bias[:, 0], f"{name}.key_conv_attn_layer.pointwise")
    # one softmax-normalised kernel of K taps per position and head
    attn = g.op("Mul", [key_conv, query], f"{name}/conv_attn")
    taps = g.linear(
        attn,
        w.get(f"{pre}{_SELF}conv_kernel_layer.weight", (heads * kernel, width)),
        w.get(f"{pre}{_SELF}conv_kernel_layer.bias", (heads * kernel,)),
        f"{name}.conv_kernel_layer",
    )
    taps = g.op(
        "Reshape", [taps, g.ints(f"{name}/taps_shape", [0, 0, heads, kernel, 1])], f"{name}/taps"
    )
    taps = g.op("Softmax", [taps], f"{name}/taps_softmax", axis=3)
    # the value projection, zero at padded positions and past both ends, unfolded over the window
    value = g.linear(
        x,
        w.get(f"{pre}{_SELF}conv_out_layer.weight", (width, hidden)),
        w.get(f"{pre}{_SELF}conv_out_layer.bias", (width,)),
        f"{name}.conv_out_layer",
    )
    value = g.op("Mul", [value, keep], f"{name}/conv_out_real")
    padded = g.op(
        "Pad",
        [value, g.ints(f"{name}/pads", [0, half, 0, 0, half, 0])],
        f"{name}/conv_out_padded",
    )
    axis1 = g.ints("axis_1", [1])
    axis_last = g.ints("axis_last", [-1])
    windows = []
    for k in range(kernel):
        # rows k .. k + T - 1 of the T + 2*half padded rows
        end = g.ints(f"{name}/end_{k}", [k - 2 * half if k < 2 * half else np.iinfo(np.int64).max])
        rows = g.op(
            "Slice", [padded, g.ints(f"{name}/start_{k}", [k]), end, axis1], f"{name}/tap_{k}"
        )
        windows.append(g.op("Unsqueeze", [rows, axis_last], f"{name}/tap_{k}_u"))
    unfolded = g.op("Concat", windows, f"{name}/unfolded", axis=-1)  # [B, T, A, K]
    unfolded = g.op(
        "Reshape",
        [unfolded, g.ints(f"{name}/unfold_shape", [0, 0, heads, spec.head_dim, kernel])],
        f"{name}/unfolded_heads",
    )
    out = g.op("MatMul", [unfolded, taps], f"{name}/conv_context")  # [B, T, n, d, 1]
    return g.op("Reshape", [out, g.ints(f"{name}/conv_merge", [0, 0, width])], f"{name}/conv_out")


def _self_attention(
    g: GraphBuilder, w: WeightStore, spec: ConvBertSpec, x: str, query: str, bias: str, pre: str
) -> str:
    """The self-attention heads' ``[batch, seq, A]`` context (``query`` unscaled)."""
    name = f"{pre}{_SELF}".rstrip(".")
    hidden, width, d = spec.base.hidden, spec.width, spec.head_dim
    split = g.ints(f"{name}/heads_shape", [0, 0, spec.heads, d])

    def heads(t: str, perm: list[int], tag: str) -> str:
        t = g.op("Reshape", [t, split], f"{name}/{tag}_split")
        return g.op("Transpose", [t], f"{name}/{tag}_heads", perm=perm)

    def proj(part: str) -> str:
        return g.linear(
            x,
            w.get(f"{pre}{_SELF}{part}.weight", (width, hidden)),
            w.get(f"{pre}{_SELF}{part}.bias", (width,)),
            f"{name}.{part}",
        )

    q = heads(query, [0, 2, 1, 3], "q")
    k = heads(proj("key"), [0, 2, 3, 1], "k")
    v = heads(proj("value"), [0, 2, 1, 3], "v")
    scores = g.op("MatMul", [q, k], f"{name}/scores")
    scores = g.op("Div", [scores, g.scalar(float(np.sqrt(d)))], f"{name}/scaled_scores")
    scores = g.op("Add", [scores, bias], f"{name}/masked_scores")
    probs = g.op("Softmax", [scores], f"{name}/probs", axis=-1)
    ctx = g.op("MatMul", [probs, v], f"{name}/context")
    ctx = g.op("Transpose", [ctx], f"{name}/context_t", perm=[0, 2, 1, 3])
    return g.op("Reshape", [ctx, g.ints(f"{name}/merged", [0, 0, width])], f"{name}/context_m")


def _layer(
    g: GraphBuilder, w: WeightStore, spec: ConvBertSpec, x: str, bias: str, keep: str, i: int
) -> str:
    base, names = spec.base, CONVBERT_LAYER
    pre = names.prefix.format(i=i)
    h, f, eps = base.hidden, base.intermediate, base.layer_norm_eps

    def norm(t: str, part: str) -> str:
        return g.layer_norm(
            t, w.get(f"{pre}{part}.weight", (h,)), w.get(f"{pre}{part}.bias", (h,)), eps, pre + part
        )

    query = g.linear(
        x,
        w.get(f"{pre}{_SELF}query.weight", (spec.width, h)),
        w.get(f"{pre}{_SELF}query.bias", (spec.width,)),
        f"{pre}{_SELF}query",
    )
    ctx = g.op(
        "Concat",
        [
            _self_attention(g, w, spec, x, query, bias, pre),
            _dynamic_conv(g, w, spec, x, query, keep, pre),
        ],
        f"{pre}attention/mixed_context",
        axis=-1,
    )
    out = g.linear(
        ctx,
        w.get(f"{pre}{names.attn_out}.weight", (h, h)),
        w.get(f"{pre}{names.attn_out}.bias", (h,)),
        pre + names.attn_out,
    )
    attn = norm(g.op("Add", [out, x], f"{pre}attention/residual"), names.attn_norm)
    inner = g.linear(
        attn,
        _ffn_weight(w, f"{pre}{names.ffn_in}.weight", f, h, spec.groups),
        w.get(f"{pre}{names.ffn_in}.bias", (f,)),
        pre + names.ffn_in,
    )
    inner = g.activation(inner, base.activation, f"{pre}ffn/act")
    out = g.linear(
        inner,
        _ffn_weight(w, f"{pre}{names.ffn_out}.weight", h, f, spec.groups),
        w.get(f"{pre}{names.ffn_out}.bias", (h,)),
        pre + names.ffn_out,
    )
    return norm(g.op("Add", [out, attn], f"{pre}ffn/residual"), names.ffn_norm)


def build_convbert(request: BuildRequest) -> onnx.ModelProto:
    """The graph of a ConvBERT checkpoint (see ``convert.export_onnx``). No fused variant: the
    convolution heads share the query projection with the self-attention heads."""
    spec = convbert_spec(request.config)
    w = request.weights
    g = new_graph()
    x = embeddings(g, spec.base, w, ATTENTION_MASK)
    states = [x]
    if request.n_build:
        bias = mask_bias(g)
        keep = g.op(
            "Cast",
            [g.op("Unsqueeze", [ATTENTION_MASK, g.ints("axes_2", [2])], "mask/keep_i64")],
            "mask/keep",
            to=onnx.TensorProto.FLOAT,
        )
        for i in range(request.n_build):
            x = _layer(g, w, spec, x, bias, keep, i)
            states.append(x)
    return request.finish(g, states, spec.base.hidden)
