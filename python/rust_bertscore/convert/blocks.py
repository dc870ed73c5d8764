"""Building blocks shared by the family graphs: the request a builder gets
(:class:`BuildRequest`), a new graph and its outputs (:func:`new_graph`, :func:`finish`), the
attention masks, positions, LayerNorm, multi-head self-attention and the post- or pre-LayerNorm
transformer layer (:func:`transformer_layer`, :func:`encoder_layers`)."""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol

import numpy as np
import onnx

from .checkpoint import WeightStore
from .contract import (
    ATTENTION_MASK,
    HIDDEN_STATE,
    HIDDEN_STATES,
    INPUT_IDS,
    CheckpointError,
    LayerNames,
    int_field,
)
from .graph import FLOAT32_MIN, MS_DOMAIN, GraphBuilder, float_output, int64_input


class SharingGraphBuilder(GraphBuilder):
    """A :class:`GraphBuilder` that stores each distinct constant once.

    ALBERT applies one stored layer at every depth: the graph then names the same weights again
    and again, and keeping one initializer per distinct content (dtype, shape and bytes) keeps
    the file as small as the checkpoint.
    """

    def __init__(self) -> None:
        super().__init__()
        self._by_content: dict[tuple[str, tuple[int, ...], bytes], str] = {}

    def weight(self, name: str, array: np.ndarray) -> str:
        if array.dtype.kind == "f":
            array = np.ascontiguousarray(array, dtype=np.float32)
        else:
            array = np.ascontiguousarray(array)
        key = (array.dtype.str, tuple(array.shape), hashlib.sha256(array.tobytes()).digest())
        if key not in self._by_content:
            self._by_content[key] = super().weight(name, array)
        return self._by_content[key]


def new_graph(*, share_weights: bool = False) -> GraphBuilder:
    """A builder whose names ``input_ids`` and ``attention_mask`` are taken by the graph inputs."""
    g = SharingGraphBuilder() if share_weights else GraphBuilder()
    g.fresh(INPUT_IDS)
    g.fresh(ATTENTION_MASK)
    return g


def finish(
    g: GraphBuilder, states: list[str], *, all_layers: bool, hidden: int, doc: str
) -> onnx.ModelProto:
    """Wrap the graph: ``hidden_states`` (every state stacked) with ``all_layers``, else
    ``hidden_state`` = the last of ``states``."""
    if all_layers:
        axis0 = g.ints("axis_0", [0])
        parts = [g.op("Unsqueeze", [s, axis0], f"hidden_states/{i}") for i, s in enumerate(states)]
        g.nodes.append(
            onnx.helper.make_node("Concat", parts, [HIDDEN_STATES], name=HIDDEN_STATES, axis=0)
        )
        output = float_output(HIDDEN_STATES, [len(states), "batch", "seq", hidden])
    else:
        g.nodes.append(
            onnx.helper.make_node("Identity", [states[-1]], [HIDDEN_STATE], name=HIDDEN_STATE)
        )
        output = float_output(HIDDEN_STATE, ["batch", "seq", hidden])
    return g.model([int64_input(INPUT_IDS), int64_input(ATTENTION_MASK)], [output], doc)


@dataclass(frozen=True)
class BuildRequest:
    """What ``convert.registry.build_model`` hands a family's builder: the checkpoint and how to
    build its graph (see ``convert.export_onnx`` for the contract)."""

    model_dir: str | os.PathLike[str]
    """The checkpoint directory."""
    config: dict[str, Any]
    """The parsed config.json."""
    n_build: int
    """How many layers the graph runs (:func:`~.contract.layers_to_build`, checked already)."""
    all_layers: bool
    """Output every hidden state as ``hidden_states``, else the last as ``hidden_state``."""
    doc: str
    """The model's ``doc_string``."""
    fused: bool
    """Write self-attention as ONNX Runtime's ``com.microsoft.Attention``."""

    @cached_property
    def weights(self) -> WeightStore:
        """The checkpoint's tensors, opened (headers read) on first use: a builder checks the
        config first."""
        return WeightStore(self.model_dir)

    def finish(self, g: GraphBuilder, states: list[str], hidden: int) -> onnx.ModelProto:
        """:func:`finish` with this request's ``all_layers`` and ``doc``."""
        return finish(g, states, all_layers=self.all_layers, hidden=hidden, doc=self.doc)


def seq_len(g: GraphBuilder) -> str:
    """The sequence length ``T`` of ``input_ids`` as a 1-d int64 tensor of one element."""
    shape = g.op("Shape", [INPUT_IDS], "shape/input_ids")
    return g.op("Slice", [shape, g.ints("one", [1]), g.ints("two", [2])], "shape/seq_len")


def position_rows(g: GraphBuilder, table: str, offset: int, name: str) -> str:
    """Rows ``offset .. offset + T - 1`` of a position table (positions ``0..T-1``)."""
    start = g.ints(f"{name}/start", [offset])
    end = g.op("Add", [seq_len(g), start], f"{name}/end")
    return g.op("Slice", [table, start, end, g.ints("axis0", [0])], name)


def padding_aware_positions(g: GraphBuilder, padding_idx: int, name: str) -> str:
    """RoBERTa's position ids: ``cumsum(real) * real + padding_idx``, ``real`` = not the padding
    id and inside the attention mask (so real tokens take ``padding_idx + 1, ...``)."""
    not_pad = g.op(
        "Not",
        [g.op("Equal", [INPUT_IDS, g.scalar(padding_idx, "int64")], f"{name}/is_pad")],
        f"{name}/not_pad",
    )
    real = g.op(
        "Mul",
        [g.op("Cast", [not_pad], f"{name}/not_pad_i64", to=onnx.TensorProto.INT64), ATTENTION_MASK],
        f"{name}/real",
    )
    count = g.op("CumSum", [real, g.scalar(1, "int64")], f"{name}/cumsum")
    return g.op(
        "Add",
        [g.op("Mul", [count, real], f"{name}/count_real"), g.scalar(padding_idx, "int64")],
        f"{name}/ids",
    )


def mask_bias(g: GraphBuilder) -> str:
    """[batch, 1, 1, seq] additive bias: 0 for real keys, float32's most negative for padding."""
    m = g.op("Unsqueeze", [ATTENTION_MASK, g.ints("axes_1_2", [1, 2])], "mask/unsqueeze")
    m = g.op("Cast", [m], "mask/cast", to=onnx.TensorProto.FLOAT)
    m = g.op("Sub", [g.scalar(1.0), m], "mask/invert")
    return g.op("Mul", [m, g.scalar(FLOAT32_MIN)], "mask/bias")


def mask_index(g: GraphBuilder) -> str:
    """The attention mask as int32 ``[batch, seq]``: the ``mask_index`` of ORT's Attention."""
    return g.op("Cast", [ATTENTION_MASK], "mask/int32", to=onnx.TensorProto.INT32)


def attention_mask(g: GraphBuilder, fused: bool) -> str:
    """The layers' mask: :func:`mask_index` with ``fused``, else :func:`mask_bias`."""
    return mask_index(g) if fused else mask_bias(g)


def stored_layer_norm(
    g: GraphBuilder, w: WeightStore, x: str, part: str, hidden: int, eps: float
) -> str:
    """LayerNorm of ``x`` with the stored ``{part}.weight`` and ``{part}.bias``; node ``part``."""
    return g.layer_norm(
        x, w.get(f"{part}.weight", (hidden,)), w.get(f"{part}.bias", (hidden,)), eps, part
    )


def hidden_and_heads(
    config: dict[str, Any], hidden_field: str, heads_field: str, label: str | None = None
) -> tuple[int, int]:
    """The hidden width and the number of heads from config.json, the width a multiple of the
    heads (the error names the width ``label``, else ``hidden_field``)."""
    hidden = int_field(config, hidden_field)
    heads = int_field(config, heads_field)
    if heads <= 0 or hidden % heads:
        raise CheckpointError(
            f"{label or hidden_field} {hidden} is not a multiple of the number of heads {heads}"
        )
    return hidden, heads


class LayerSizes(Protocol):
    """What :func:`encoder_layers` reads of a family's sizes (``EncoderSpec`` has them too)."""

    @property
    def hidden(self) -> int: ...
    @property
    def heads(self) -> int: ...
    @property
    def intermediate(self) -> int: ...
    @property
    def layer_norm_eps(self) -> float: ...
    @property
    def activation(self) -> str: ...


@dataclass(frozen=True)
class EncoderDims:
    """The sizes a seq2seq encoder's config.json gives (BART, Pegasus, LED, ProphetNet)."""

    hidden: int
    heads: int
    vocab: int
    n_positions: int
    intermediate: int
    activation: str
    layer_norm_eps: float


def encoder_dims(
    config: dict[str, Any],
    *,
    eps: float,
    hidden_field: str = "d_model",
    heads_field: str = "encoder_attention_heads",
    positions_field: str = "max_position_embeddings",
) -> EncoderDims:
    """Read :class:`EncoderDims` (``encoder_ffn_dim``, ``activation_function`` default gelu);
    ``eps`` is the layers' LayerNorm eps (config.json has none)."""
    hidden, heads = hidden_and_heads(config, hidden_field, heads_field)
    return EncoderDims(
        hidden=hidden,
        heads=heads,
        vocab=int_field(config, "vocab_size"),
        n_positions=int_field(config, positions_field),
        intermediate=int_field(config, "encoder_ffn_dim"),
        activation=str(config.get("activation_function", "gelu")),
        layer_norm_eps=eps,
    )


Params = tuple[np.ndarray, np.ndarray]
"""A PyTorch Linear's ``(weight (out, in), bias (out,))``."""


def self_attention(
    g: GraphBuilder,
    x: str,
    mask: str,
    qkv: tuple[Params, Params, Params],
    out: Params,
    *,
    heads: int,
    name: str,
    fused: bool,
    extra_bias: str | None = None,
) -> str:
    """Multi-head self-attention ``out(softmax(q k^T / sqrt(d) + bias) v)``.

    Parameters
    ----------
    x
        ``[batch, seq, hidden]`` input.
    mask
        :func:`mask_index` with ``fused``, else :func:`mask_bias`.
    qkv
        The query, key and value projections; 1/sqrt(head size) is folded into the query's.
    out
        The output projection.
    heads
        Number of heads.
    name
        Prefix of the node names.
    fused
        One ``com.microsoft.Attention`` node for the projections, scores and context.
    extra_bias
        ``[1 or batch, heads, seq, seq]`` added to the scores (relative positions), or None.
    """
    (wq, bq), (wk, bk), (wv, bv) = qkv
    hidden = wq.shape[0]
    d = hidden // heads
    scale = np.float32(1.0 / math.sqrt(d))
    wq, bq = wq * scale, bq * scale
    if fused:
        packed_w = np.concatenate([wq, wk, wv], axis=0).T  # rows stacked: a fast copy
        inputs = [
            x,
            g.weight(f"{name}.qkv.weight_t", packed_w),
            g.weight(f"{name}.qkv.bias", np.concatenate([bq, bk, bv])),
            mask,
        ]
        if extra_bias is not None:
            inputs += ["", extra_bias]  # no past state; attention_bias
        ctx = g.op(
            "Attention",
            inputs,
            f"{name}/Attention",
            domain=MS_DOMAIN,
            num_heads=heads,
            scale=1.0,
            mask_filter_value=FLOAT32_MIN,
        )
    else:
        split = g.ints(f"{name}/heads_shape", [0, 0, heads, d])
        merge = g.ints(f"{name}/merged_shape", [0, 0, hidden])

        def project(params: Params, tag: str, perm: list[int]) -> str:
            t = g.linear(x, params[0], params[1], f"{name}.{tag}")
            t = g.op("Reshape", [t, split], f"{name}/{tag}_split")
            return g.op("Transpose", [t], f"{name}/{tag}_heads", perm=perm)

        q = project((wq, bq), "q", [0, 2, 1, 3])
        k = project((wk, bk), "k", [0, 2, 3, 1])
        v = project((wv, bv), "v", [0, 2, 1, 3])
        scores = g.op("MatMul", [q, k], f"{name}/scores")
        if extra_bias is not None:
            scores = g.op("Add", [scores, extra_bias], f"{name}/position_scores")
        scores = g.op("Add", [scores, mask], f"{name}/masked_scores")
        probs = g.op("Softmax", [scores], f"{name}/probs", axis=-1)
        ctx = g.op("MatMul", [probs, v], f"{name}/context")
        ctx = g.op("Transpose", [ctx], f"{name}/context_t", perm=[0, 2, 1, 3])
        ctx = g.op("Reshape", [ctx, merge], f"{name}/context_merged")
    return g.linear(ctx, out[0], out[1], f"{name}.out")


def transformer_layer(
    g: GraphBuilder,
    w: WeightStore,
    x: str,
    mask: str,
    names: LayerNames,
    *,
    hidden: int,
    heads: int,
    intermediate: int,
    eps: float,
    activation: str,
    fused: bool,
    pre_norm: bool = False,
    extra_bias: str | None = None,
) -> str:
    """One transformer layer: self-attention then FFN, each with a residual connection.

    Post-LayerNorm (``pre_norm=False``; BERT, MPNet, BART):
    ``h = LN1(x + attn(x)); out = LN2(h + ffn(h))``.
    Pre-LayerNorm (mBART): ``h = x + attn(LN1(x)); out = h + ffn(LN2(h))``.
    ``names`` gives the tensors (prefix formatted already): ``attn_norm`` is LN1, ``ffn_norm`` LN2.
    """
    pre = names.prefix

    def params(part: str, n_out: int, n_in: int) -> Params:
        return w.get(f"{pre}{part}.weight", (n_out, n_in)), w.get(f"{pre}{part}.bias", (n_out,))

    def norm(t: str, part: str) -> str:
        return stored_layer_norm(g, w, t, f"{pre}{part}", hidden, eps)

    attn_in = norm(x, names.attn_norm) if pre_norm else x
    attn = self_attention(
        g,
        attn_in,
        mask,
        (
            params(names.query, hidden, hidden),
            params(names.key, hidden, hidden),
            params(names.value, hidden, hidden),
        ),
        params(names.attn_out, hidden, hidden),
        heads=heads,
        name=f"{pre}attention",
        fused=fused,
        extra_bias=extra_bias,
    )
    h = g.op("Add", [attn, x], f"{pre}attention/residual")
    if not pre_norm:
        h = norm(h, names.attn_norm)
    ffn_in = norm(h, names.ffn_norm) if pre_norm else h
    inner = g.activation(
        g.linear(ffn_in, *params(names.ffn_in, intermediate, hidden), f"{pre}{names.ffn_in}"),
        activation,
        f"{pre}ffn/act",
    )
    out = g.linear(inner, *params(names.ffn_out, hidden, intermediate), f"{pre}{names.ffn_out}")
    out = g.op("Add", [out, h], f"{pre}ffn/residual")
    return out if pre_norm else norm(out, names.ffn_norm)


def encoder_layers(
    g: GraphBuilder,
    w: WeightStore,
    x: str,
    n_build: int,
    names: Callable[[int], LayerNames],
    sizes: LayerSizes,
    *,
    fused: bool,
    pre_norm: bool = False,
    extra_bias: Callable[[int], str | None] | None = None,
) -> list[str]:
    """``x`` then the output of each of ``n_build`` layers (:func:`transformer_layer`) run on it.

    The mask (:func:`attention_mask`) is built before the first layer; ``extra_bias(i)``, called
    just before layer ``i`` is built, gives that layer's score bias.
    """
    states = [x]
    if n_build:
        mask = attention_mask(g, fused)
        for i in range(n_build):
            x = transformer_layer(
                g,
                w,
                x,
                mask,
                names(i),
                hidden=sizes.hidden,
                heads=sizes.heads,
                intermediate=sizes.intermediate,
                eps=sizes.layer_norm_eps,
                activation=sizes.activation,
                fused=fused,
                pre_norm=pre_norm,
                extra_bias=None if extra_bias is None else extra_bias(i),
            )
            states.append(x)
    return states
