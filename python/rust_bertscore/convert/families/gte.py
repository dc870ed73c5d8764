"""GTE's "new" architecture (``model_type`` "new": Alibaba-NLP/gte-base-en-v1.5, gte-large-en-v1.5,
gte-multilingual-base, Snowflake/snowflake-arctic-embed-m-v2.0) as an ONNX graph, from config.json
and the weights alone: the repository's Python (``Alibaba-NLP/new-impl``'s ``modeling.py``, which
their ``auto_map`` names) is never imported or run.

Facts from that code (the padded path; ``unpad_inputs`` with xformers computes the same per text):

- Embeddings: ``word_embeddings[ids]`` + ``token_type_embeddings[0]`` (when ``type_vocab_size``
  > 0; the ids are ``position_ids * 0``) + ``position_embeddings[0..T-1]`` only when
  ``position_embedding_type`` is "absolute"; then ``embeddings.LayerNorm`` (``layer_norm_eps``).
- Rotary (``position_embedding_type`` "rope", the default): head-sized, GPT-NeoX halves,
  ``inv_freq = 1 / rope_theta^(2i / head_dim)`` in float32 (torch's ``pow``: ``torch_math``),
  positions ``0..T-1`` per row.
  ``rope_scaling`` ``{"type": "ntk", "factor": f}`` (fixed NTK, whatever the length): the base
  becomes ``rope_theta * f`` and ``inv_freq /= f^(2 / head_dim)``; with ``mixed_b`` the base stays
  and ``inv_freq /= exp(a * k^mixed_b)``, ``a = log(f) / (head_dim / 2)^mixed_b``,
  ``k = 1..head_dim/2``. The tables grow with the input: no position limit but the tokenizer's.
- Post-norm layers: ``h = attn_ln(x + o_proj(attn(x)))``, ``out = mlp_ln(h + down_proj(act(gate) *
  up))`` with ``up, gate = split(up_gate_proj(h))`` (``up_gate_proj`` has no bias);
  ``layer_norm_type`` "layer_norm" or "rms_norm" (``weight * x / sqrt(mean(x^2) + eps)``).
  Attention: ``qkv_proj`` packed ``[q; k; v]`` (``pack_qkv``) or ``q_proj``/``k_proj``/``v_proj``;
  rotary on q and k; with ``logn_attention_scale`` the query times ``log(n) / log(max_position_
  embeddings)`` (``n`` the row's real length; at least 1 with ``logn_attention_clip1``); scores over
  ``sqrt(head_dim)``, padding keys float32's minimum.
- No final norm: hidden state ``L`` is the output of layer ``L`` (bert_score truncates
  ``encoder.layer`` as for BERT).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx

from ..blocks import BuildRequest, mask_bias, new_graph, seq_len
from ..checkpoint import WeightStore
from ..contract import ATTENTION_MASK, INPUT_IDS, CheckpointError, float_field, int_field
from ..graph import GraphBuilder
from .rope import heads_attention, rotate
from .torch_math import exp_float32, log_float32, torch_pow, torch_pow_scalar

GTE_FFN_OUT = "encoder.layer.{i}.mlp.down_proj"
"""The FFN output projection of layer ``i`` (node ``.../MatMul``; the int8 policy's name)."""


@dataclass(frozen=True)
class GteSpec:
    """The sizes and options of a ``new`` checkpoint, read from config.json."""

    hidden: int
    heads: int
    intermediate: int
    vocab: int
    n_positions: int
    eps: float
    rms_norm: bool
    activation: str
    rotary: bool
    pack_qkv: bool
    type_vocab: int
    inv_freq: np.ndarray | None
    logn: bool
    logn_clip: bool

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


def _flag(config: dict[str, Any], name: str, default: bool) -> bool:
    value = config.get(name, default)
    if not isinstance(value, bool):
        raise CheckpointError(f"config field {name!r} must be true or false, got {value!r}")
    return value


def gte_inv_freq(theta: float, head_dim: int, scaling: dict[str, Any] | None) -> np.ndarray:
    """The rotary inverse frequencies ``[head_dim / 2]`` (float32) as new-impl computes them,
    with its fixed NTK ``rope_scaling`` when given.

    Examples
    --------
    >>> from rust_bertscore.convert.families.gte import gte_inv_freq
    >>> plain = gte_inv_freq(10000.0, 8, None)
    >>> ntk = gte_inv_freq(10000.0, 8, {"type": "ntk", "factor": 2.0})
    >>> float(plain[0]), bool(ntk[1] < plain[1])
    (1.0, True)
    """
    exponents = np.arange(0, head_dim, 2, dtype=np.int64).astype(np.float32) / np.float32(head_dim)
    if not scaling:
        return (np.float32(1.0) / torch_pow(theta, exponents)).astype(np.float32)
    kind, factor = scaling.get("type"), scaling.get("factor")
    if kind != "ntk" or isinstance(factor, bool) or not isinstance(factor, (int, float)):
        raise CheckpointError(
            f"rope_scaling {scaling!r} is not converted (only new-impl's {{'type': 'ntk', "
            "'factor': f}, with or without mixed_b)"
        )
    if not factor >= 1:
        raise CheckpointError(
            f"rope_scaling factor {factor!r} below 1 is not converted (new-impl's tables would "
            "depend on the input's length)"
        )
    mixed_b = scaling.get("mixed_b")
    if mixed_b is not None and (isinstance(mixed_b, bool) or not isinstance(mixed_b, (int, float))):
        raise CheckpointError(f"rope_scaling mixed_b must be a number, got {mixed_b!r}")
    # new-impl: `1.0 / (base ** (arange(0, dim, 2).float() / dim))`, torch's float32 pow
    base = theta * (factor if mixed_b is None else 1)
    inv = np.float32(1.0) / torch_pow(base, exponents)
    if mixed_b is None:  # `inv_freq / factor ** (2 / dim)`: a Python float, rounded to float32
        return (inv / np.float32(factor ** (2 / head_dim))).astype(np.float32)
    # `a = tensor(factor).log() / (dim / 2) ** mixed_b`,
    # `lambda_1_m = (a * arange(1, dim // 2 + 1).float() ** mixed_b).exp()`
    a = log_float32(factor) / np.float32((head_dim / 2) ** mixed_b)
    k = np.arange(1, head_dim // 2 + 1, dtype=np.int64).astype(np.float32)
    lam = exp_float32(a * torch_pow_scalar(k, mixed_b))
    return (inv / lam).astype(np.float32)


NEW_CONFIG_DEFAULTS: dict[str, Any] = {
    "hidden_size": 768,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "hidden_act": "gelu",
    "max_position_embeddings": 2048,
    "type_vocab_size": 1,
    "layer_norm_type": "layer_norm",
    "layer_norm_eps": 1e-12,
    "position_embedding_type": "rope",
    "rope_theta": 10000.0,
    "pack_qkv": True,
    "logn_attention_scale": False,
    "logn_attention_clip1": False,
}
"""The remote code's ``NewConfig`` defaults (Alibaba-NLP/new-impl ``configuration.py``), for
the fields a ``config.json`` leaves out: a config without ``type_vocab_size`` has one token
type there (it was refused here, expecting two)."""


def gte_spec(config: dict[str, Any], weights: WeightStore) -> GteSpec:
    """Read a :class:`GteSpec` (``CheckpointError`` for what is not converted)."""
    config = {**NEW_CONFIG_DEFAULTS, **config}
    hidden, heads = int_field(config, "hidden_size"), int_field(config, "num_attention_heads")
    if heads <= 0 or hidden % heads or (hidden // heads) % 2:
        raise CheckpointError(
            f"hidden_size {hidden} must be a multiple of num_attention_heads {heads} with an "
            "even head size"
        )
    norm = config.get("layer_norm_type", "layer_norm")
    if norm not in ("layer_norm", "rms_norm"):
        raise CheckpointError(f"layer_norm_type {norm!r} is not converted")
    positions = config.get("position_embedding_type", "rope")
    if positions not in ("rope", "absolute"):
        raise CheckpointError(f"position_embedding_type {positions!r} is not converted")
    rotary = positions == "rope"
    theta = float_field(config, "rope_theta", 10000.0)
    scaling = config.get("rope_scaling") if rotary else None
    if scaling is not None and not isinstance(scaling, dict):
        raise CheckpointError(f"rope_scaling must be an object or null, got {scaling!r}")
    type_vocab = config["type_vocab_size"]
    return GteSpec(
        hidden=hidden,
        heads=heads,
        intermediate=int_field(config, "intermediate_size"),
        vocab=weights.spec("embeddings.word_embeddings.weight")[1][0],
        n_positions=int_field(config, "max_position_embeddings"),
        eps=float_field(config, "layer_norm_eps", 1e-12),
        rms_norm=norm == "rms_norm",
        activation=str(config.get("hidden_act", "gelu")),
        rotary=rotary,
        pack_qkv=_flag(config, "pack_qkv", True),
        type_vocab=type_vocab if isinstance(type_vocab, int) else 0,
        inv_freq=gte_inv_freq(theta, hidden // heads, scaling) if rotary else None,
        logn=_flag(config, "logn_attention_scale", False),
        logn_clip=_flag(config, "logn_attention_clip1", False),
    )


class _Parts:
    """The graph, weights and spec of one build, and the shared pieces of its layers."""

    def __init__(self, g: GraphBuilder, w: WeightStore, spec: GteSpec) -> None:
        self.g, self.w, self.spec = g, w, spec
        self.cos = self.sin = ""
        self.logn: str | None = None
        if spec.rotary and spec.inv_freq is not None:
            t = g.op("Squeeze", [seq_len(g), g.ints("axis0", [0])], "rope/t")
            pos = g.op("Range", [g.scalar(0, "int64"), t, g.scalar(1, "int64")], "rope/pos")
            pos = g.op("Cast", [pos], "rope/pos_f", to=onnx.TensorProto.FLOAT)
            pos = g.op("Unsqueeze", [pos, g.ints("axis1", [1])], "rope/pos_col")  # [T, 1]
            angles = g.op("Mul", [pos, g.weight("rope/inv_freq", spec.inv_freq)], "rope/angles")
            angles = g.op("Concat", [angles, angles], "rope/angles2", axis=-1)  # [T, d]
            self.cos = g.op("Cos", [angles], "rope/cos")
            self.sin = g.op("Sin", [angles], "rope/sin")
        if spec.logn:
            n = g.op("ReduceSum", [ATTENTION_MASK, g.ints("axis1", [1])], "logn/n", keepdims=0)
            n = g.op("Log", [g.op("Cast", [n], "logn/n_f", to=onnx.TensorProto.FLOAT)], "logn/log")
            scale = g.op("Div", [n, g.scalar(float(np.log(np.float32(spec.n_positions))))], "logn")
            if spec.logn_clip:
                scale = g.op("Max", [scale, g.scalar(1.0)], "logn/clip")
            self.logn = g.op("Reshape", [scale, g.ints("logn/shape", [-1, 1, 1, 1])], "logn/b")

    def norm(self, x: str, part: str, rms: bool) -> str:
        g, h = self.g, self.spec.hidden
        weight = self.w.get(f"{part}.weight", (h,))
        if not rms:
            bias = self.w.get(f"{part}.bias", (h,))
            return g.layer_norm(x, weight, bias, self.spec.eps, part)
        sq = g.op("Mul", [x, x], f"{part}/sq")
        mean = g.op("ReduceMean", [sq], f"{part}/mean", axes=[-1], keepdims=1)
        root = g.op(
            "Sqrt", [g.op("Add", [mean, g.scalar(self.spec.eps)], f"{part}/eps")], f"{part}/rms"
        )
        return g.op(
            "Mul", [g.op("Div", [x, root], f"{part}/div"), g.weight(f"{part}.weight", weight)], part
        )

    def rope(self, t: str, name: str) -> str:
        return rotate(self.g, t, self.cos, self.sin, self.spec.head_dim // 2, name)


def _attention(p: _Parts, x: str, bias: str, i: int) -> str:
    g, w, spec = p.g, p.w, p.spec
    pre = f"encoder.layer.{i}.attention"
    h, d = spec.hidden, spec.head_dim
    if spec.pack_qkv:
        packed = w.get(f"{pre}.qkv_proj.weight", (3 * h, h))
        packed_b = w.get(f"{pre}.qkv_proj.bias", (3 * h,))
        params = [(packed[j * h : (j + 1) * h], packed_b[j * h : (j + 1) * h]) for j in range(3)]
    else:
        params = [
            (w.get(f"{pre}.{t}_proj.weight", (h, h)), w.get(f"{pre}.{t}_proj.bias", (h,)))
            for t in "qkv"
        ]
    split = g.ints(f"{pre}/heads_shape", [0, 0, spec.heads, d])
    parts = []
    for (weight, b), tag in zip(params, "qkv"):
        t = g.linear(x, weight, b, f"{pre}.{tag}_proj")
        t = g.op("Reshape", [t, split], f"{pre}/{tag}_split")
        t = g.op("Transpose", [t], f"{pre}/{tag}_heads", perm=[0, 2, 1, 3])
        if spec.rotary and tag != "v":
            t = p.rope(t, f"{pre}/{tag}_rope")
        parts.append(t)
    q, k, v = parts
    if p.logn is not None:
        q = g.op("Mul", [q, p.logn], f"{pre}/q_logn")
    ctx = heads_attention(g, q, k, v, bias, pre, h, d, divide=True)
    return g.linear(
        ctx,
        w.get(f"{pre}.o_proj.weight", (h, h)),
        w.get(f"{pre}.o_proj.bias", (h,)),
        f"{pre}.o_proj",
    )


def _mlp(p: _Parts, x: str, i: int) -> str:
    g, w, spec = p.g, p.w, p.spec
    pre = f"encoder.layer.{i}.mlp"
    h, f = spec.hidden, spec.intermediate
    up_gate = w.get(f"{pre}.up_gate_proj.weight", (2 * f, h))
    up = g.op("MatMul", [x, g.weight(f"{pre}.up_proj.weight_t", up_gate[:f].T)], f"{pre}/up")
    gate = g.op("MatMul", [x, g.weight(f"{pre}.gate_proj.weight_t", up_gate[f:].T)], f"{pre}/gate")
    inner = g.op("Mul", [g.activation(gate, spec.activation, f"{pre}/act"), up], f"{pre}/glu")
    return g.linear(
        inner,
        w.get(f"{pre}.down_proj.weight", (h, f)),
        w.get(f"{pre}.down_proj.bias", (h,)),
        f"{pre}.down_proj",
    )


def build_gte(request: BuildRequest) -> onnx.ModelProto:
    """The graph of a ``new`` (GTE) checkpoint (see ``convert.export_onnx``). No fused variant
    (the rotary embedding sits between the projections and the scores)."""
    w = request.weights
    spec = gte_spec(request.config, w)
    g = new_graph()
    h = spec.hidden
    table = w.get("embeddings.word_embeddings.weight", (spec.vocab, h))
    x = g.op(
        "Gather",
        [g.weight("embeddings.word_embeddings", table), INPUT_IDS],
        "embeddings/words",
        axis=0,
    )
    if spec.type_vocab > 0:
        row = w.get("embeddings.token_type_embeddings.weight", (spec.type_vocab, h))[0]
        x = g.op("Add", [x, g.weight("embeddings.token_type_0", row)], "embeddings/token_type")
    if not spec.rotary:
        pos = w.get("embeddings.position_embeddings.weight", (spec.n_positions, h))
        start, axis0 = g.ints("positions/start", [0]), g.ints("axis0", [0])
        rows = g.op(
            "Slice",
            [g.weight("embeddings.position_embeddings", pos), start, seq_len(g), axis0],
            "positions/rows",
        )
        x = g.op("Add", [x, rows], "embeddings/positions")
    p = _Parts(g, w, spec)
    x = p.norm(x, "embeddings.LayerNorm", False)
    states = [x]
    if request.n_build:
        bias = mask_bias(g)
        for i in range(request.n_build):
            pre = f"encoder.layer.{i}"
            x = p.norm(
                g.op("Add", [x, _attention(p, x, bias, i)], f"{pre}/attn_res"),
                f"{pre}.attn_ln",
                spec.rms_norm,
            )
            x = p.norm(
                g.op("Add", [x, _mlp(p, x, i)], f"{pre}/mlp_res"), f"{pre}.mlp_ln", spec.rms_norm
            )
            states.append(x)
    return request.finish(g, states, h)


def ffn_out_nodes(i: int) -> tuple[str, ...]:
    """Layer ``i``'s FFN output projection (``mlp.down_proj``; int8's per-tensor policy keeps the
    first layers' in fp32)."""
    return (f"{GTE_FFN_OUT.format(i=i)}/MatMul",)
