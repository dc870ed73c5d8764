"""XLNet (``model_type`` "xlnet") as an ONNX graph: the content stream with relative positions.

What bert_score runs (``XLNetModel(input_ids, attention_mask=mask)``, right-padded batches, no
``token_type_ids``, no ``perm_mask``/``target_mapping``/``mems``), from transformers 4.57's
``modeling_xlnet.py``:

- Hidden state 0 is the word embedding alone (no position table, no LayerNorm).
- Relative positions: ``pos = T, T-1, ..., 1-T`` (``attn_type`` "bi", ``klen = qlen = T``),
  clamped to ``+-clamp_len`` when ``clamp_len > 0``; ``pos_emb = [sin(pos f), cos(pos f)]``
  (halves concatenated, not interleaved) with ``f = 1 / 10000^(2k / d_model)``.
- Each layer's attention (no biases on the projections, weights ``[d_model, n_head, d_head]``):
  ``ac = (q + r_w_bias) k^T``, ``bd = rel_shift((q + r_r_bias) (pos_emb W_r)^T)``, score
  ``(ac + bd) / sqrt(d_head)``; ``rel_shift`` is Transformer-XL's reshape trick, which makes
  ``bd[i, j]`` the term of relative position ``i - j``. Without ``token_type_ids`` the segment
  term (``seg_embed``, ``r_s_bias``) is absent. Then ``LN(o(attn) + x)`` and
  ``LN(layer_2(act(layer_1(h))) + h)``.
- The mask: transformers builds ``input_mask = 1 - attention_mask`` and lets no query attend to
  a padded key but itself (``non_tgt_mask``); for the real tokens this is the usual key-padding
  mask, and outputs at padded positions are never read.

There is no fused variant (the scores carry query-dependent position terms): ``fused`` is
ignored, as for DeBERTa.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx

from ..blocks import BuildRequest, hidden_and_heads, mask_bias, new_graph, seq_len
from ..checkpoint import TransformerPrefixed
from ..contract import INPUT_IDS, CheckpointError, float_field, int_field
from ..graph import GraphBuilder, contiguous

XLNET_LAYER = "layer.{i}."
"""Prefix of layer ``i``'s tensors (and of its graph nodes)."""
XLNET_FFN_OUT = "ff.layer_2"
"""The FFN output projection of a layer (node ``layer.{i}.ff.layer_2/MatMul``)."""


@dataclass(frozen=True)
class XLNetSpec:
    """The sizes and options of an XLNet checkpoint's config.json."""

    hidden: int
    heads: int
    head_dim: int
    intermediate: int
    vocab: int
    layer_norm_eps: float
    activation: str
    clamp_len: int


def xlnet_spec(config: dict[str, Any]) -> XLNetSpec:
    """Read and check an XLNet config.

    Raises
    ------
    CheckpointError
        For sizes that disagree, or options bert_score's use of the model never meets and this
        graph does not reproduce (``attn_type`` "uni", ``bi_data``).
    """
    hidden, heads = hidden_and_heads(config, "d_model", "n_head")
    head_dim = int_field(config, "d_head")
    if head_dim * heads != hidden:
        raise CheckpointError(f"d_head {head_dim} x n_head {heads} != d_model {hidden}")
    attn_type = config.get("attn_type", "bi")
    if attn_type != "bi":
        raise CheckpointError(
            f"XLNet attn_type {attn_type!r} is not converted: only 'bi' (bidirectional "
            "attention, every published checkpoint) is"
        )
    if config.get("bi_data", False):
        raise CheckpointError(
            "XLNet with bi_data=true (forward and backward position encodings over the two "
            "halves of a batch) is not converted"
        )
    clamp_len = config.get("clamp_len", -1)
    if isinstance(clamp_len, bool) or not isinstance(clamp_len, int):
        raise CheckpointError(f"config field 'clamp_len' must be an integer, got {clamp_len!r}")
    activation = config.get("ff_activation", "gelu")
    if not isinstance(activation, str):
        raise CheckpointError(f"config field 'ff_activation' must be a name, got {activation!r}")
    return XLNetSpec(
        hidden=hidden,
        heads=heads,
        head_dim=head_dim,
        intermediate=int_field(config, "d_inner"),
        vocab=int_field(config, "vocab_size"),
        layer_norm_eps=float_field(config, "layer_norm_eps", 1e-12),
        activation=activation,
        clamp_len=clamp_len,
    )


def inverse_frequencies(hidden: int) -> np.ndarray:
    """``1 / 10000^(k / d_model)`` for ``k = 0, 2, 4, ...``, in float32 as transformers computes
    it (``freq_seq / d_model`` then ``torch.pow`` in float32)."""
    freq_seq = np.arange(0, hidden, 2, dtype=np.float32)
    exponent = freq_seq / np.float32(hidden)
    return (np.float32(1.0) / np.power(np.float32(10000.0), exponent)).astype(np.float32)


def relative_positions(g: GraphBuilder, spec: XLNetSpec) -> str:
    """``pos_emb`` ``[2T, d_model]``: sin and cos of ``pos * f`` for ``pos = T .. 1-T``."""
    t = g.op("Squeeze", [seq_len(g), g.ints("axes_0", [0])], "pos/T")
    neg_t = g.op("Neg", [t], "pos/minus_T")
    pos = g.op("Range", [t, neg_t, g.scalar(-1, "int64")], "pos/range")
    pos = g.op("Cast", [pos], "pos/float", to=onnx.TensorProto.FLOAT)
    if spec.clamp_len > 0:
        c = float(spec.clamp_len)
        pos = g.op("Clip", [pos, g.scalar(-c), g.scalar(c)], "pos/clamp")
    pos = g.op("Unsqueeze", [pos, g.ints("axes_1", [1])], "pos/column")
    inv_freq = g.weight("pos/inv_freq", inverse_frequencies(spec.hidden))
    angles = g.op("Mul", [pos, inv_freq], "pos/angles")
    return g.op(
        "Concat",
        [g.op("Sin", [angles], "pos/sin"), g.op("Cos", [angles], "pos/cos")],
        "pos/emb",
        axis=-1,
    )


def rel_shift(g: GraphBuilder, bd: str, name: str) -> str:
    """Transformer-XL's shift of ``[B, n, T, 2T]`` scores to ``[B, n, T, T]``: view as
    ``[B, n, 2T, T]``, drop the first row, view as ``[B, n, T, 2T-1]``, keep ``T`` columns."""
    t = seq_len(g)
    zeros = g.ints("shape/keep_2", [0, 0])
    tall = g.op("Concat", [zeros, g.ints("shape/minus_1", [-1]), t], f"{name}/tall_shape", axis=0)
    x = g.op("Reshape", [bd, tall], f"{name}/tall")
    big = g.ints("shape/int64_max", [np.iinfo(np.int64).max])
    x = g.op("Slice", [x, g.ints("one", [1]), big, g.ints("axis_2", [2])], f"{name}/drop_row")
    wide = g.op("Concat", [zeros, t, g.ints("shape/minus_1", [-1])], f"{name}/wide_shape", axis=0)
    x = g.op("Reshape", [x, wide], f"{name}/wide")
    return g.op("Slice", [x, g.ints("zero", [0]), t, g.ints("axis_3", [3])], f"{name}/shifted")


def _heads(g: GraphBuilder, x: str, spec: XLNetSpec, name: str, perm: list[int]) -> str:
    split = g.ints("shape/heads", [0, 0, spec.heads, spec.head_dim])
    return g.op(
        "Transpose", [g.op("Reshape", [x, split], f"{name}_split")], f"{name}_heads", perm=perm
    )


def xlnet_layer(
    g: GraphBuilder,
    w: TransformerPrefixed,
    spec: XLNetSpec,
    x: str,
    pos_emb: str,
    mask: str,
    i: int,
) -> str:
    """Layer ``i`` of the content stream on ``x`` ``[B, T, d_model]``."""
    pre = XLNET_LAYER.format(i=i)
    att = f"{pre}rel_attn."
    h, n, d = spec.hidden, spec.heads, spec.head_dim
    scale = np.float32(1.0 / math.sqrt(d))

    def proj(part: str, factor: np.float32 | None = None) -> np.ndarray:
        weight = w.get(f"{att}{part}", (h, n, d)).reshape(h, n * d)
        return weight * factor if factor is not None else weight

    def bias(part: str) -> str:  # [n, 1, d]: broadcasts over [B, n, T, d], scale folded in
        value = w.get(f"{att}{part}", (n, d)) * scale
        return g.weight(f"{att}{part}", value.reshape(n, 1, d))

    def matmul(t: str, weight: np.ndarray, node: str) -> str:
        return g.op("MatMul", [t, g.weight(f"{node}.weight", weight)], f"{node}/MatMul")

    q = _heads(g, matmul(x, proj("q", scale), f"{att}q"), spec, f"{att}q", [0, 2, 1, 3])
    k = _heads(g, matmul(x, proj("k"), f"{att}k"), spec, f"{att}k", [0, 2, 3, 1])
    v = _heads(g, matmul(x, proj("v"), f"{att}v"), spec, f"{att}v", [0, 2, 1, 3])
    r = matmul(pos_emb, proj("r"), f"{att}r")  # [2T, n*d]
    r = g.op("Reshape", [r, g.ints("shape/pos_heads", [-1, n, d])], f"{att}r_split")
    r = g.op("Transpose", [r], f"{att}r_heads", perm=[1, 2, 0])  # [n, d, 2T]
    ac = g.op("MatMul", [g.op("Add", [q, bias("r_w_bias")], f"{att}q_w"), k], f"{att}ac")
    bd = g.op("MatMul", [g.op("Add", [q, bias("r_r_bias")], f"{att}q_r"), r], f"{att}bd_raw")
    scores = g.op("Add", [ac, rel_shift(g, bd, f"{att}bd")], f"{att}scores")
    scores = g.op("Add", [scores, mask], f"{att}masked_scores")
    probs = g.op("Softmax", [scores], f"{att}probs", axis=-1)
    ctx = g.op("MatMul", [probs, v], f"{att}context")
    ctx = g.op("Transpose", [ctx], f"{att}context_t", perm=[0, 2, 1, 3])
    ctx = g.op("Reshape", [ctx, g.ints("shape/merged", [0, 0, n * d])], f"{att}context_merged")
    out = matmul(ctx, contiguous(proj("o").T), f"{att}o")
    hid = g.op("Add", [out, x], f"{att}residual")
    hid = g.layer_norm(
        hid,
        w.get(f"{att}layer_norm.weight", (h,)),
        w.get(f"{att}layer_norm.bias", (h,)),
        spec.layer_norm_eps,
        f"{att}layer_norm",
    )
    ff = f"{pre}ff."
    inner = g.linear(
        hid,
        w.get(f"{ff}layer_1.weight", (spec.intermediate, h)),
        w.get(f"{ff}layer_1.bias", (spec.intermediate,)),
        f"{ff}layer_1",
    )
    inner = g.activation(inner, spec.activation, f"{ff}act")
    out = g.linear(
        inner,
        w.get(f"{ff}layer_2.weight", (h, spec.intermediate)),
        w.get(f"{ff}layer_2.bias", (h,)),
        f"{pre}{XLNET_FFN_OUT}",
    )
    out = g.op("Add", [out, hid], f"{ff}residual")
    return g.layer_norm(
        out,
        w.get(f"{ff}layer_norm.weight", (h,)),
        w.get(f"{ff}layer_norm.bias", (h,)),
        spec.layer_norm_eps,
        f"{ff}layer_norm",
    )


def build_xlnet(request: BuildRequest) -> onnx.ModelProto:
    """The graph of an XLNet checkpoint (see ``convert.export_onnx``); ``fused`` is ignored."""
    w = TransformerPrefixed(request.weights)
    spec = xlnet_spec(request.config)
    g = new_graph()
    table = g.weight(
        "word_embedding.weight", w.get("word_embedding.weight", (spec.vocab, spec.hidden))
    )
    x = g.op("Gather", [table, INPUT_IDS], "word_embedding", axis=0)
    states = [x]
    if request.n_build:
        pos_emb = relative_positions(g, spec)
        mask = mask_bias(g)
        for i in range(request.n_build):
            x = xlnet_layer(g, w, spec, x, pos_emb, mask, i)
            states.append(x)
    return request.finish(g, states, spec.hidden)


def ffn_out_nodes(i: int) -> tuple[str, ...]:
    """The FFN output projection of layer ``i`` (``ff.layer_2``)."""
    return (f"{XLNET_LAYER.format(i=i)}{XLNET_FFN_OUT}/MatMul",)
