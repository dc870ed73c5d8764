"""ModernBERT (``model_type`` "modernbert", answerdotai/ModernBERT-*) as an ONNX graph.

Facts from transformers 4.57's ``models/modernbert/modeling_modernbert.py`` (eager/SDPA path,
the one bert_score runs on CPU):

- Embeddings: ``tok_embeddings`` then a LayerNorm (``norm_eps``, bias only with ``norm_bias``);
  no position table: positions enter through rotary embeddings (RoPE) on queries and keys.
- Pre-norm layers: ``h = x + Wo(attention(attn_norm(x)))``, ``out = h + Wo(act(a) * b)`` with
  ``a, b = chunk(Wi(mlp_norm(h)), 2)`` (GeGLU). Layer 0 has no ``attn_norm`` (Identity).
  ``attention_bias`` / ``mlp_bias`` say whether the projections have biases.
- Attention: ``Wqkv`` packs q, k, v (``[3, heads, head_dim]`` on the output axis); RoPE with
  ``inv_freq = 1 / theta^(2i / head_dim)``, ``cos``/``sin`` of ``position * inv_freq`` over
  positions ``0..T-1`` (float32), ``q * cos + rotate_half(q) * sin``; scores times
  ``head_dim^-0.5``. Layer ``i`` is global when ``i % global_attn_every_n_layers == 0``
  (``global_rope_theta``, every key), else local (``local_rope_theta``, keys at most
  ``local_attention // 2`` positions away; the others get float32's minimum, as padding does).
- ``final_norm`` after the last layer. bert_score truncates ``model.layers``, so its hidden
  state at layer ``L`` is ``final_norm(output of layer L)`` (``L = 0``: of the embeddings);
  ``output_hidden_states`` (bert_score's ``all_layers``) holds the raw outputs, no final norm
  on any of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx

from ..blocks import BuildRequest, hidden_and_heads, mask_bias, new_graph, seq_len
from ..checkpoint import WeightStore
from ..contract import INPUT_IDS, CheckpointError, float_field, int_field
from ..graph import FLOAT32_MIN, GraphBuilder
from .rope import Rotary, heads_attention

MODERNBERT_FFN_OUT = "layers.{i}.mlp.Wo"
"""The FFN output projection of layer ``i`` (node ``.../MatMul``; the int8 policy's name)."""

_DEFAULTS: dict[str, Any] = {  # ModernBertConfig's
    "global_rope_theta": 160000.0,
    "local_rope_theta": 10000.0,
    "global_attn_every_n_layers": 3,
    "local_attention": 128,
    "norm_eps": 1e-5,
    "hidden_activation": "gelu",
}


@dataclass(frozen=True)
class ModernBertSpec:
    """The sizes and options of a ModernBERT checkpoint, read from config.json."""

    hidden: int
    heads: int
    intermediate: int
    vocab: int
    eps: float
    norm_bias: bool
    attention_bias: bool
    mlp_bias: bool
    activation: str
    global_theta: float
    local_theta: float
    global_every: int
    window: int

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    def is_global(self, i: int) -> bool:
        """Whether layer ``i`` attends to every key (else to a sliding window)."""
        return i % self.global_every == 0


def _flag(config: dict[str, Any], name: str) -> bool:
    value = config.get(name, False)
    if not isinstance(value, bool):
        raise CheckpointError(f"config field {name!r} must be true or false, got {value!r}")
    return value


def modernbert_spec(config: dict[str, Any]) -> ModernBertSpec:
    """Read a :class:`ModernBertSpec` (``CheckpointError`` for what is not converted)."""
    if config.get("rope_scaling"):
        raise CheckpointError("ModernBERT with rope_scaling is not converted (only plain RoPE)")
    hidden, heads = hidden_and_heads(config, "hidden_size", "num_attention_heads")
    if (hidden // heads) % 2:
        raise CheckpointError(f"head size {hidden // heads} must be even for rotary embeddings")
    full = {**_DEFAULTS, **{k: v for k, v in config.items() if v is not None}}
    every = int_field(full, "global_attn_every_n_layers")
    window = int_field(full, "local_attention")
    if every <= 0 or window <= 0:
        raise CheckpointError(
            f"global_attn_every_n_layers ({every}) and local_attention ({window}) must be positive"
        )
    return ModernBertSpec(
        hidden=hidden,
        heads=heads,
        intermediate=int_field(config, "intermediate_size"),
        vocab=int_field(config, "vocab_size"),
        eps=float_field(full, "norm_eps", 1e-5),
        norm_bias=_flag(config, "norm_bias"),
        attention_bias=_flag(config, "attention_bias"),
        mlp_bias=_flag(config, "mlp_bias"),
        activation=str(full["hidden_activation"]),
        global_theta=float_field(full, "global_rope_theta", 160000.0),
        local_theta=float_field(full, "local_rope_theta", 10000.0),
        global_every=every,
        window=window,
    )


class _Norms:
    """LayerNorms of the checkpoint: stored weight, stored bias or zeros (``norm_bias``)."""

    def __init__(self, g: GraphBuilder, w: WeightStore, spec: ModernBertSpec) -> None:
        self.g, self.w, self.spec = g, w, spec

    def __call__(self, x: str, part: str) -> str:
        h = self.spec.hidden
        bias = self.w.get(f"{part}.bias", (h,)) if self.spec.norm_bias else np.zeros(h, np.float32)
        return self.g.layer_norm(x, self.w.get(f"{part}.weight", (h,)), bias, self.spec.eps, part)


def _linear(
    g: GraphBuilder, w: WeightStore, x: str, part: str, n_out: int, n_in: int, bias: bool
) -> str:
    weight = w.get(f"{part}.weight", (n_out, n_in))
    b = w.get(f"{part}.bias", (n_out,)) if bias else None
    if b is None:
        return g.op("MatMul", [x, g.weight(f"{part}.weight_t", weight.T)], f"{part}/MatMul")
    return g.linear(x, weight, b, part)


def _window_bias(g: GraphBuilder, global_bias: str, window: int) -> str:
    """``[batch, 1, seq, seq]``: the padding bias, and float32's minimum where the key is more
    than ``window // 2`` positions from the query (transformers' ``sliding_window_mask``)."""
    t = g.op("Squeeze", [seq_len(g), g.ints("axis0", [0])], "window/t")
    pos = g.op("Range", [g.scalar(0, "int64"), t, g.scalar(1, "int64")], "window/positions")
    rows = g.op("Unsqueeze", [pos, g.ints("axis_1", [1])], "window/rows")
    cols = g.op("Unsqueeze", [pos, g.ints("axis0", [0])], "window/cols")
    distance = g.op("Abs", [g.op("Sub", [rows, cols], "window/sub")], "window/distance")
    outside = g.op("Greater", [distance, g.scalar(window // 2, "int64")], "window/outside")
    return g.op("Where", [outside, g.scalar(FLOAT32_MIN), global_bias], "window/bias")


def _attention(
    g: GraphBuilder,
    w: WeightStore,
    spec: ModernBertSpec,
    rope: Rotary,
    x: str,
    bias: str,
    i: int,
) -> str:
    pre = f"layers.{i}.attn"
    h, d = spec.hidden, spec.head_dim
    packed = w.get(f"{pre}.Wqkv.weight", (3 * h, h))
    packed_b = w.get(f"{pre}.Wqkv.bias", (3 * h,)) if spec.attention_bias else None
    split = g.ints(f"{pre}/heads_shape", [0, 0, spec.heads, d])
    theta = spec.global_theta if spec.is_global(i) else spec.local_theta
    parts = []
    for j, tag in enumerate("qkv"):
        weight = packed[j * h : (j + 1) * h]
        if packed_b is None:
            t = g.op("MatMul", [x, g.weight(f"{pre}.W{tag}.weight_t", weight.T)], f"{pre}/{tag}")
        else:
            t = g.linear(x, weight, packed_b[j * h : (j + 1) * h], f"{pre}.W{tag}")
        t = g.op("Reshape", [t, split], f"{pre}/{tag}_split")
        t = g.op("Transpose", [t], f"{pre}/{tag}_heads", perm=[0, 2, 1, 3])
        parts.append(rope.apply(t, theta, f"{pre}/{tag}_rope") if tag != "v" else t)
    q, k, v = parts
    ctx = heads_attention(g, q, k, v, bias, pre, h, d, divide=False)
    return _linear(g, w, ctx, f"{pre}.Wo", h, h, spec.attention_bias)


def _mlp(g: GraphBuilder, w: WeightStore, spec: ModernBertSpec, x: str, i: int) -> str:
    pre = f"layers.{i}.mlp"
    h, f = spec.hidden, spec.intermediate
    wi = w.get(f"{pre}.Wi.weight", (2 * f, h))
    bi = w.get(f"{pre}.Wi.bias", (2 * f,)) if spec.mlp_bias else None
    halves = []
    for j, tag in enumerate(("input", "gate")):
        weight = wi[j * f : (j + 1) * f]
        if bi is None:
            t = g.op("MatMul", [x, g.weight(f"{pre}.Wi_{tag}.weight_t", weight.T)], f"{pre}/{tag}")
        else:
            t = g.linear(x, weight, bi[j * f : (j + 1) * f], f"{pre}.Wi_{tag}")
        halves.append(t)
    act = g.activation(halves[0], spec.activation, f"{pre}/act")
    glu = g.op("Mul", [act, halves[1]], f"{pre}/glu")
    return _linear(g, w, glu, f"{pre}.Wo", h, f, spec.mlp_bias)


def build_modernbert(request: BuildRequest) -> onnx.ModelProto:
    """The graph of a ModernBERT checkpoint (see ``convert.export_onnx``): hidden state ``L``
    of a truncated graph is final-normed, ``all_layers`` outputs the raw states, as bert_score
    gets them. No fused variant (RoPE is applied between the projections and the scores)."""
    spec = modernbert_spec(request.config)
    w = request.weights
    g = new_graph()
    norm = _Norms(g, w, spec)
    table = g.weight(
        "embeddings.tok_embeddings",
        w.get("embeddings.tok_embeddings.weight", (spec.vocab, spec.hidden)),
    )
    x = norm(g.op("Gather", [table, INPUT_IDS], "embeddings/tokens", axis=0), "embeddings.norm")
    states = [x]
    if request.n_build:
        rope = Rotary(g, spec.head_dim)
        global_bias = mask_bias(g)
        local_bias: str | None = None
        for i in range(request.n_build):
            if spec.is_global(i):
                bias = global_bias
            else:
                local_bias = local_bias or _window_bias(g, global_bias, spec.window)
                bias = local_bias
            attn_in = x if i == 0 else norm(x, f"layers.{i}.attn_norm")
            x = g.op(
                "Add", [x, _attention(g, w, spec, rope, attn_in, bias, i)], f"layers.{i}/attn_res"
            )
            mlp = _mlp(g, w, spec, norm(x, f"layers.{i}.mlp_norm"), i)
            x = g.op("Add", [x, mlp], f"layers.{i}/mlp_res")
            states.append(x)
    if not request.all_layers:
        states.append(norm(states.pop(), "final_norm"))
    return request.finish(g, states, spec.hidden)


def ffn_out_nodes(i: int) -> tuple[str, ...]:
    """Layer ``i``'s FFN output projection (``mlp.Wo``; int8's per-tensor policy keeps the first
    layers' in fp32)."""
    return (f"{MODERNBERT_FFN_OUT.format(i=i)}/MatMul",)
