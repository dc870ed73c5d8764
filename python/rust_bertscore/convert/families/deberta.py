"""DeBERTa v1 (``deberta``) and v2/v3 (``deberta-v2``) encoders as ONNX graphs.

What transformers' eager code computes, and how it is written here:

- Embeddings: ``word[ids]`` (+ positions ``0..T-1`` if ``position_biased_input``; + token type 0
  if ``type_vocab_size > 0``), ``embed_proj`` (no bias) when ``embedding_size != hidden_size``,
  LayerNorm, then multiplied by the attention mask (padding rows are zero).
- Disentangled attention, per head: ``scores[i, j] = (q_i.k_j + q_i.pk[idx(i, j)] +
  k_j.pq[idx(i, j)]) / s`` with ``s = sqrt(d * scale_factor)`` (float32), where ``pk``/``pq``
  are the relative embeddings projected by the layer (v1: ``pos_proj``/``pos_q_proj``; v2:
  ``pos_key_proj``/``pos_query_proj``, or ``key_proj``/``query_proj`` with ``share_att_key``)
  and ``idx(i, j) = clamp(bucket(i - j) + S, 0, 2 S - 1)``. ``S`` is ``max_relative_positions``
  (v1, and v2 without buckets) or ``position_buckets``; ``bucket`` is the identity, or v2's
  log bucketing (computed in float32 as transformers does, tabulated here at build time).
  Both terms of transformers' code (its ``att_span`` slice, its gathers and transposes) reduce
  to that one index; the graph slices the rows of the relative table that a length ``T`` can
  reach before projecting them.
- Padding keys are masked with float32's most negative value; post-LayerNorm layers as in BERT.
- v2 with ``conv_kernel_size > 0``: after layer 0, ``LayerNorm(layer0 + act(conv(h0)))`` times
  the mask, where ``h0`` is the (masked) embeddings output and ``conv`` a same-padded Conv1d.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import onnx

from ..blocks import BuildRequest, new_graph
from ..checkpoint import WeightStore
from ..contract import ATTENTION_MASK, INPUT_IDS
from ..graph import FLOAT32_MIN, GraphBuilder, contiguous
from .deberta_spec import (
    DEBERTA_MODEL_TYPES,
    DebertaSpec,
    deberta_spec,
    log_bucket,
    relative_index_table,
)

REL_KEY = "rel_key"
REL_QUERY = "rel_query"
"""Names (after ``encoder.layer.{i}.attention.self.``) of the projections of the relative
embeddings: their MatMul nodes are ``<name>/MatMul``."""


def rel_projection_nodes(node_names: Iterable[str]) -> list[str]:
    """The MatMul nodes projecting the relative embeddings, among ``node_names``.

    They are small (at most ``2 S`` rows, whatever the batch) and every attention score depends
    on them, so int8 keeps them in fp32 (on the tiny random DeBERTa models this raised the mean
    token cosine to the fp32 output at layer 3 from 0.73-0.84 to 0.75-0.85).
    """
    suffixes = (f".{REL_KEY}/MatMul", f".{REL_QUERY}/MatMul")
    return [n for n in node_names if n.startswith("encoder.layer.") and n.endswith(suffixes)]


class _Builder:
    """Builds one DeBERTa graph's hidden states into a :class:`GraphBuilder`."""

    def __init__(
        self, g: GraphBuilder, spec: DebertaSpec, w: WeightStore, input_ids: str, mask: str
    ) -> None:
        self.g, self.spec, self.w = g, spec, w
        self.input_ids, self.mask_i64 = input_ids, mask

    # ---- small helpers ----------------------------------------------------------------------

    def lin(
        self, x: str, name: str, n_out: int, n_in: int, bias: bool = True, node: str = ""
    ) -> str:
        """``x W^T (+ b)`` with the weights ``name``; ``node`` names the MatMul (default:
        ``name``)."""
        weight = self.w.get(f"{name}.weight", (n_out, n_in))
        node = node or name
        if bias:
            return self.g.linear(x, weight, self.w.get(f"{name}.bias", (n_out,)), node)
        w_t = self.g.weight(f"{name}.weight_t", contiguous(weight.T))
        return self.g.op("MatMul", [x, w_t], f"{node}/MatMul")

    def norm(self, x: str, name: str, size: int) -> str:
        return self.g.layer_norm(
            x,
            self.w.get(f"{name}.weight", (size,)),
            self.w.get(f"{name}.bias", (size,)),
            self.spec.layer_norm_eps,
            name,
        )

    def act(self, x: str, kind: str, name: str) -> str:
        if kind == "tanh":
            return self.g.op("Tanh", [x], f"{name}/Tanh")
        return self.g.activation(x, kind, name)

    # ---- graph parts ------------------------------------------------------------------------

    def masks(self) -> None:
        g = self.g
        mask_f = g.op("Cast", [self.mask_i64], "mask/float", to=onnx.TensorProto.FLOAT)
        self.mask_rows = g.op("Unsqueeze", [mask_f, g.ints("axes_2", [2])], "mask/rows")
        keys = g.op("Unsqueeze", [self.mask_i64, g.ints("axes_1_2", [1, 2])], "mask/keys")
        self.key_ok = g.op("Cast", [keys], "mask/keys_bool", to=onnx.TensorProto.BOOL)
        shape = g.op("Shape", [self.input_ids], "shape")
        self.seq = g.op(
            "Slice", [shape, g.ints("one", [1]), g.ints("two", [2])], "seq_len"
        )  # [T] as a 1-d tensor

    def embeddings(self) -> str:
        g, spec, w = self.g, self.spec, self.w
        e = spec.embedding_size
        word = g.weight(
            "embeddings.word_embeddings",
            w.get("embeddings.word_embeddings.weight", (spec.vocab_size, e)),
        )
        x = g.op("Gather", [word, self.input_ids], "embeddings/word", axis=0)
        if spec.position_biased_input:
            table = g.weight(
                "embeddings.position_embeddings",
                w.get("embeddings.position_embeddings.weight", (spec.n_positions, e)),
            )
            pos = g.op(
                "Slice",
                [table, g.ints("zero", [0]), self.seq, g.ints("axis0", [0])],
                "embeddings/position",
            )
            x = g.op("Add", [x, pos], "embeddings/add_position")
        if spec.type_vocab_size > 0:
            # bert_score passes no token_type_ids: every token takes row 0 of the table.
            types = w.get("embeddings.token_type_embeddings.weight", (spec.type_vocab_size, e))
            x = g.op("Add", [x, g.weight("embeddings.token_type_0", types[0])], "embeddings/type")
        if e != spec.hidden:
            x = self.lin(x, "embeddings.embed_proj", spec.hidden, e, bias=False)
        x = self.norm(x, "embeddings.LayerNorm", spec.hidden)
        return g.op("Mul", [x, self.mask_rows], "embeddings/masked")

    def relative(self) -> None:
        """The rows of the relative table a length T reaches, and their index matrix."""
        g, spec = self.g, self.spec
        table, reach = relative_index_table(spec)
        zero, one = g.scalar(0, "int64"), g.scalar(1, "int64")
        t = g.op("Squeeze", [self.seq, g.ints("axes_0", [0])], "rel/T")
        r = g.op("Range", [zero, t, one], "rel/range")
        rows = g.op("Unsqueeze", [r, g.ints("axes_1", [1])], "rel/rows")
        cols = g.op("Unsqueeze", [r, g.ints("axes_0b", [0])], "rel/cols")
        rel = g.op("Sub", [rows, cols], "rel/i_minus_j")  # [T, T]
        lo_r, hi_r = g.scalar(-reach, "int64"), g.scalar(reach, "int64")
        rel = g.op("Clip", [rel, lo_r, hi_r], "rel/clip")
        tab = g.weight("rel/index_table", table.astype(np.int64))
        idx = g.op("Gather", [tab, g.op("Add", [rel, hi_r], "rel/offset")], "rel/index", axis=0)
        # Rows reached: table[-(T-1)] .. table[T-1] (the table is monotone).
        t_1 = g.op("Sub", [self.seq, g.ints("one_b", [1])], "rel/T_1")
        far = g.op("Clip", [t_1, zero, hi_r], "rel/far")
        lo = g.op("Gather", [tab, g.op("Sub", [hi_r, far], "rel/lo_at")], "rel/lo", axis=0)
        hi = g.op("Gather", [tab, g.op("Add", [hi_r, far], "rel/hi_at")], "rel/hi_last", axis=0)
        hi = g.op("Add", [hi, g.ints("one_c", [1])], "rel/hi")
        self.rel_index = g.op("Sub", [idx, lo], "rel/local_index")  # [T, T]
        self.rel_index_t = g.op("Transpose", [self.rel_index], "rel/local_index_t", perm=[1, 0])
        n_rows = 2 * spec.span
        name = "encoder.rel_embeddings.weight"
        emb = self.w.get(name, (n_rows, spec.hidden))
        rel_emb = g.weight("encoder.rel_embeddings", emb)
        rel_emb = g.op("Slice", [rel_emb, lo, hi, g.ints("axis0b", [0])], "rel/embeddings")
        if spec.norm_rel_ebd:
            rel_emb = self.norm(rel_emb, "encoder.LayerNorm", spec.hidden)
        self.rel_emb = rel_emb  # [W, hidden]

    def heads(self, x: str, name: str, perm: list[int]) -> str:
        """``[..., T, A]`` -> heads; perm on ``[B, T, H, d]``."""
        g = self.g
        shape = g.ints(f"{name}/shape", [0, 0, self.spec.heads, self.spec.head_dim])
        x = g.op("Reshape", [x, shape], f"{name}/split")
        return g.op("Transpose", [x], f"{name}/heads", perm=perm)

    def rel_heads(self, x: str, name: str) -> str:
        """``[W, A]`` -> ``[H, d, W]`` (ready as the right operand of a MatMul)."""
        g = self.g
        shape = g.ints(f"{name}/shape", [0, self.spec.heads, self.spec.head_dim])
        x = g.op("Reshape", [x, shape], f"{name}/split")
        return g.op("Transpose", [x], f"{name}/heads", perm=[1, 2, 0])

    def attention(self, x: str, i: int) -> str:
        g, spec = self.g, self.spec
        pre = f"encoder.layer.{i}.attention.self."
        h, a, d = spec.hidden, spec.all_head, spec.head_dim
        scale = g.scalar(float(np.sqrt(np.float32(d * spec.scale_factor))))
        if spec.v2:
            q = self.lin(x, pre + "query_proj", a, h)
            k = self.lin(x, pre + "key_proj", a, h)
            v = self.lin(x, pre + "value_proj", a, h)
        else:
            packed = self.w.get(pre + "in_proj.weight", (3 * a, h))
            per_head = packed.reshape(spec.heads, 3, d, h)
            q_w, k_w, v_w = (per_head[:, n].reshape(a, h) for n in range(3))
            q = g.linear(x, q_w, self.w.get(pre + "q_bias", (a,)), pre + "query")
            k_t = g.weight(pre + "key.weight_t", contiguous(k_w.T))
            k = g.op("MatMul", [x, k_t], pre + "key/MatMul")
            v = g.linear(x, v_w, self.w.get(pre + "v_bias", (a,)), pre + "value")
        q = g.op("Div", [q, scale], pre + "query/scaled")
        qh = self.heads(q, pre + "q", [0, 2, 1, 3])  # [B, H, T, d]
        kt = self.heads(k, pre + "k", [0, 2, 3, 1])  # [B, H, d, T]
        vh = self.heads(v, pre + "v", [0, 2, 1, 3])
        scores = g.op("MatMul", [qh, kt], pre + "scores")
        if spec.c2p or spec.p2c:
            shape = g.op("Shape", [scores], pre + "scores_shape")
        if spec.c2p:
            node = pre + REL_KEY
            if spec.v2:
                name = pre + ("key_proj" if spec.share_att_key else "pos_key_proj")
                pk = self.lin(self.rel_emb, name, a, h, node=node)
            else:
                pk = self.lin(self.rel_emb, pre + "pos_proj", a, h, bias=False, node=node)
            pk = self.rel_heads(pk, pre + "pos_key")
            c2p = g.op("MatMul", [qh, pk], pre + "c2p_all")  # [B, H, T, W]
            index = g.op("Expand", [self.rel_index, shape], pre + "c2p_index")
            c2p = g.op("GatherElements", [c2p, index], pre + "c2p", axis=3)
            scores = g.op("Add", [scores, c2p], pre + "scores_c2p")
        if spec.p2c:
            if spec.v2:
                name = pre + ("query_proj" if spec.share_att_key else "pos_query_proj")
            else:
                name = pre + "pos_q_proj"
            pq = self.lin(self.rel_emb, name, a, h, node=pre + REL_QUERY)
            pq = g.op("Div", [pq, scale], pre + "pos_query/scaled")
            pq = self.rel_heads(pq, pre + "pos_query")
            k_heads = self.heads(k, pre + "k_rows", [0, 2, 1, 3])  # [B, H, T, d]
            p2c = g.op("MatMul", [k_heads, pq], pre + "p2c_all")  # [B, H, T(key), W]
            index = g.op("Expand", [self.rel_index_t, shape], pre + "p2c_index")
            p2c = g.op("GatherElements", [p2c, index], pre + "p2c_t", axis=3)
            p2c = g.op("Transpose", [p2c], pre + "p2c", perm=[0, 1, 3, 2])
            scores = g.op("Add", [scores, p2c], pre + "scores_p2c")
        scores = g.op("Where", [self.key_ok, scores, g.scalar(FLOAT32_MIN)], pre + "masked")
        probs = g.op("Softmax", [scores], pre + "probs", axis=-1)
        ctx = g.op("MatMul", [probs, vh], pre + "context")
        ctx = g.op("Transpose", [ctx], pre + "context_t", perm=[0, 2, 1, 3])
        return g.op("Reshape", [ctx, g.ints(pre + "merged", [0, 0, a])], pre + "context_merged")

    def layer(self, x: str, i: int) -> str:
        g, spec = self.g, self.spec
        pre = f"encoder.layer.{i}."
        h, f = spec.hidden, spec.intermediate
        ctx = self.attention(x, i)
        out = self.lin(ctx, pre + "attention.output.dense", h, spec.all_head)
        attn = self.norm(
            g.op("Add", [out, x], pre + "attention/residual"), pre + "attention.output.LayerNorm", h
        )
        inner = self.act(
            self.lin(attn, pre + "intermediate.dense", f, h), spec.activation, pre + "ffn/act"
        )
        out = g.op("Add", [self.lin(inner, pre + "output.dense", h, f), attn], pre + "ffn/residual")
        return self.norm(out, pre + "output.LayerNorm", h)

    def conv(self, embedded: str, layer0: str) -> str:
        g, spec = self.g, self.spec
        h, k, groups = spec.hidden, spec.conv_kernel_size, spec.conv_groups
        weight = self.w.get("encoder.conv.conv.weight", (h, h // groups, k))
        bias = self.w.get("encoder.conv.conv.bias", (h,))
        x = g.op("Transpose", [embedded], "encoder.conv/channels_first", perm=[0, 2, 1])
        pad = (k - 1) // 2
        x = g.op(
            "Conv",
            [
                x,
                g.weight("encoder.conv.conv.weight", weight),
                g.weight("encoder.conv.conv.bias", bias),
            ],
            "encoder.conv/Conv",
            kernel_shape=[k],
            pads=[pad, pad],
            group=groups,
        )
        x = g.op("Transpose", [x], "encoder.conv/channels_last", perm=[0, 2, 1])
        x = g.op("Mul", [x, self.mask_rows], "encoder.conv/masked")
        x = self.act(x, spec.conv_act, "encoder.conv/act")
        x = self.norm(
            g.op("Add", [layer0, x], "encoder.conv/residual"), "encoder.conv.LayerNorm", h
        )
        return g.op("Mul", [x, self.mask_rows], "encoder.conv/out_masked")


def deberta_states(
    g: GraphBuilder,
    config: dict[str, Any],
    weights: WeightStore,
    n_build: int,
    input_ids: str,
    attention_mask: str,
) -> list[str]:
    """Add a DeBERTa encoder's first ``n_build`` layers to ``g``; return hidden states
    ``0..n_build`` (names of ``[batch, seq, hidden]`` float tensors)."""
    spec = deberta_spec(config)
    b = _Builder(g, spec, weights, input_ids, attention_mask)
    b.masks()
    x = b.embeddings()
    states = [x]
    if n_build and (spec.c2p or spec.p2c):
        b.relative()
    for i in range(n_build):
        out = b.layer(x, i)
        if i == 0 and spec.conv_kernel_size > 0:
            out = b.conv(states[0], out)
        x = out
        states.append(x)
    return states


def build_deberta(request: BuildRequest) -> onnx.ModelProto:
    """The graph of a DeBERTa v1 or v2/v3 checkpoint (see ``convert.export_onnx``). There is no
    fused variant (the attention scores carry relative-position terms): ``fused`` is ignored."""
    spec = deberta_spec(request.config)
    g = new_graph()
    states = deberta_states(
        g, request.config, request.weights, request.n_build, INPUT_IDS, ATTENTION_MASK
    )
    return request.finish(g, states, spec.hidden)


__all__ = [
    "DEBERTA_MODEL_TYPES",
    "DebertaSpec",
    "build_deberta",
    "deberta_spec",
    "deberta_states",
    "log_bucket",
    "rel_projection_nodes",
    "relative_index_table",
]
