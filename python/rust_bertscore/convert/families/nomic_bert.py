"""NomicBERT (``model_type`` "nomic_bert": nomic-ai/nomic-embed-text-v1, -v1.5, nomic-bert-2048)
as an ONNX graph, from config.json and the weights alone: the repository's Python (the Hub's
``nomic-ai/nomic-bert-2048`` ``modeling_hf_nomic_bert.py``) is never imported or run.

Facts from that code (nomic-ai/contrastors, ``src/contrastors/models/huggingface/``), the path a
CPU float32 run takes (``scaled_dot_product_attention``, no flash-attn):

- Config: a ``GPT2Config`` (``n_embd``, ``n_head``, ``n_layer``, ``n_inner``, ``n_positions``,
  ``layer_norm_epsilon``, ``activation_function``) plus ``rotary_emb_fraction``,
  ``rotary_emb_base``, ``rotary_scaling_factor``, ``max_trained_positions``, ``qkv_proj_bias``,
  ``mlp_fc1_bias``, ``mlp_fc2_bias``, ``prenorm``, ...
- Embeddings: ``word_embeddings[ids] + token_type_embeddings[0]`` (the model passes zeros), plus
  ``position_embeddings[0..T-1]`` only when ``rotary_emb_fraction <= 0``; then ``emb_ln``.
- Post-norm layers: ``h = norm1(x + out_proj(attn(x)))``, ``out = norm2(h + mlp(h))``. Attention:
  ``Wqkv`` packs q, k, v (``(three h d)`` on the output axis); rotary on the first
  ``head_dim * rotary_emb_fraction`` channels of q and k (GPT-NeoX halves, not interleaved),
  ``inv_freq = 1 / base^(2i / dim)`` in float32, positions ``0..T-1``; scores times
  ``head_dim^-0.5``, padding keys get float32's minimum.
- MLP: ``swiglu`` ``fc2(fc11(x) * silu(fc12(x)))``, ``glu`` (sigmoid gate), ``geglu`` (exact gelu
  gate); otherwise ``fc2(gelu(fc1(x)))`` (exact gelu whatever ``activation_function`` says).
- ``rotary_scaling_factor`` (nomic-embed-text-v1.5's long-context setting) selects the dynamic NTK
  rotary: for a sequence of ``n > max_trained_positions`` tokens the base becomes
  ``base * (f * n / max_trained_positions - (f - 1)) ** (dim / (dim - 2))`` (Python floats), the
  inverse frequencies ``1 / base'^(2i / dim)`` in float32 (torch's ``pow``: ``torch_math``). The
  remote module keeps that base and its cos/sin cache between calls (what a call gets depends on
  the calls before it); the graph gives every text what a freshly loaded model gives it alone,
  ``n`` its own length, so padding in a batch never changes a token's state.
- No final norm: hidden state ``L`` is the output of layer ``L`` (``0``: ``emb_ln``'s output).
- ``attn_pdrop``: the remote code passes it to ``scaled_dot_product_attention`` as
  ``dropout_p`` even in eval mode, so a config with ``attn_pdrop > 0`` (``GPT2Config``'s default
  0.1 when the field is absent) gives random outputs there; the published models say 0.0. The
  graph never drops out.
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
from .rope import heads_attention, rope_tables
from .torch_math import torch_pow

NOMIC_FFN_OUT = "encoder.layers.{i}.mlp.fc2"
"""The FFN output projection of layer ``i`` (node ``.../MatMul``; the int8 policy's name)."""

GATED = {"swiglu": "silu", "glu": "sigmoid", "geglu": "gelu"}
"""Gated ``activation_function`` -> the activation on the gate (``fc12``)."""

_PLAIN = ("gelu", "gelu_new", "gelu_fast", "gelu_pytorch_tanh")

_MUST_BE_OFF = (
    "prenorm",
    "parallel_block",
    "causal",
    "use_rms_norm",
    "rotary_emb_interleaved",
    "rotary_head_dim",
    "norm_mlp",
)
"""Options the published nomic_bert text models leave off and the converter refuses."""


@dataclass(frozen=True)
class NomicSpec:
    """The sizes and options of a nomic_bert checkpoint, read from config.json."""

    hidden: int
    heads: int
    vocab: int
    intermediate: int
    n_positions: int
    eps: float
    activation: str
    qkv_bias: bool
    fc1_bias: bool
    fc2_bias: bool
    rotary_dim: int
    base: float
    scaling_factor: float | None
    max_trained: int
    type_vocab: int

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def gated(self) -> bool:
        return self.activation in GATED


def _flag(config: dict[str, Any], name: str, default: bool) -> bool:
    value = config.get(name, default)
    if not isinstance(value, bool):
        raise CheckpointError(f"config field {name!r} must be true or false, got {value!r}")
    return value


def _rotary_dim(config: dict[str, Any], head_dim: int) -> int:
    fraction = config.get("rotary_emb_fraction", 0.0)
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or fraction > 1:
        raise CheckpointError(f"rotary_emb_fraction must be a number <= 1, got {fraction!r}")
    if fraction <= 0:
        return 0
    dim = head_dim * float(fraction)
    if dim != int(dim) or int(dim) % 2:
        raise CheckpointError(
            f"rotary dimension head_dim * rotary_emb_fraction = {dim} must be an even integer"
        )
    return int(dim)


def nomic_spec(config: dict[str, Any], weights: WeightStore) -> NomicSpec:
    """Read a :class:`NomicSpec` (``CheckpointError`` for what is not converted); the vocabulary
    (padded to ``pad_vocab_size_multiple``) and FFN widths are the stored tensors'."""
    for name in _MUST_BE_OFF:
        if _flag(config, name, False):
            raise CheckpointError(f"nomic_bert with {name}=true is not converted")
    if config.get("rotary_emb_scale_base") is not None:
        raise CheckpointError("nomic_bert with rotary_emb_scale_base (xPos) is not converted")
    activation = str(config.get("activation_function", "gelu"))
    if activation not in GATED and activation not in _PLAIN:
        raise CheckpointError(f"nomic_bert activation_function {activation!r} is not converted")
    hidden, heads = int_field(config, "n_embd", "hidden_size"), int_field(config, "n_head")
    if heads <= 0 or hidden % heads:
        raise CheckpointError(f"n_embd {hidden} is not a multiple of the number of heads {heads}")
    kv_heads = config.get("num_heads_kv")
    if kv_heads is not None and kv_heads != heads:
        raise CheckpointError("nomic_bert with num_heads_kv != n_head is not converted")
    fc2 = "encoder.layers.0.mlp.fc2.weight"
    intermediate = weights.spec(fc2)[1][1] if fc2 in weights else 4 * hidden
    vocab = weights.spec("embeddings.word_embeddings.weight")[1][0]
    factor = config.get("rotary_scaling_factor")
    if factor is not None and (isinstance(factor, bool) or not isinstance(factor, (int, float))):
        raise CheckpointError(f"rotary_scaling_factor must be a number, got {factor!r}")
    rotary = _rotary_dim(config, hidden // heads)
    if rotary == 2 and factor:
        raise CheckpointError("the dynamic NTK rotary needs a rotary dimension above 2")
    type_vocab = config.get("type_vocab_size", 2)
    return NomicSpec(
        hidden=hidden,
        heads=heads,
        vocab=vocab,
        intermediate=intermediate,
        n_positions=int_field(config, "n_positions", "max_position_embeddings"),
        eps=float_field(config, "layer_norm_epsilon", 1e-5),
        activation=activation,
        qkv_bias=_flag(config, "qkv_proj_bias", True),
        fc1_bias=_flag(config, "mlp_fc1_bias", True),
        fc2_bias=_flag(config, "mlp_fc2_bias", True),
        rotary_dim=rotary,
        base=float_field(config, "rotary_emb_base", 10000.0),
        scaling_factor=float(factor) if factor else None,
        max_trained=int_field({"max_trained_positions": 2048, **config}, "max_trained_positions"),
        type_vocab=type_vocab if isinstance(type_vocab, int) else 0,
    )


def ntk_inv_freq(spec: NomicSpec) -> np.ndarray:
    """``[n_positions + 1, rotary_dim / 2]``: row ``n`` the inverse frequencies the remote dynamic
    NTK rotary uses for a sequence of ``n`` tokens (the base rescaled past
    ``max_trained_positions``), computed as it does: the base in float64, the powers in float32
    as torch's ``pow`` computes them (:func:`~.torch_math.torch_pow`).

    Examples
    --------
    >>> from rust_bertscore.convert.families.nomic_bert import NomicSpec, ntk_inv_freq
    >>> spec = NomicSpec(8, 1, 10, 16, 6, 1e-12, "swiglu", False, False, False, 8, 1000.0,
    ...                  2.0, 4, 2)
    >>> table = ntk_inv_freq(spec)
    >>> bool((table[4] == table[0]).all()), bool((table[5] < table[4]).all())
    (True, False)
    """
    dim, factor = float(spec.rotary_dim), spec.scaling_factor or 1.0
    exponents = np.arange(0, spec.rotary_dim, 2, dtype=np.float32) / np.float32(dim)
    bases = []
    for n in range(spec.n_positions + 1):
        base = spec.base
        if spec.scaling_factor and n > spec.max_trained:
            base = spec.base * (factor * n / spec.max_trained - (factor - 1)) ** (dim / (dim - 2))
        bases.append(base)
    # `1.0 / (base ** exponents)`: the base rounded to float32, torch's pow (SLEEF), one division
    powers = torch_pow(np.asarray(bases, dtype=np.float64)[:, None], exponents[None, :])
    return (np.float32(1.0) / powers).astype(np.float32)


class _Rotary:
    """cos/sin of one graph: ``[T, dim]`` static tables, or with the dynamic NTK rotary
    ``[batch, 1, T, dim]`` from each row's own length."""

    def __init__(self, g: GraphBuilder, spec: NomicSpec) -> None:
        self.g, self.spec = g, spec
        t = seq_len(g)
        axis0 = g.ints("axis0", [0])
        if spec.scaling_factor is None:
            cos, sin = rope_tables(spec.base, spec.rotary_dim, spec.n_positions)
            start = g.ints("rope/start", [0])
            self.cos = g.op("Slice", [g.weight("rope/cos", cos), start, t, axis0], "rope/cos")
            self.sin = g.op("Slice", [g.weight("rope/sin", sin), start, t, axis0], "rope/sin")
            return
        lengths = g.op(
            "ReduceSum", [ATTENTION_MASK, g.ints("axis1", [1])], "rope/lengths", keepdims=0
        )
        # Through an Identity: a Gather straight from a weight table runs in float16 under
        # precision="fp16" (convert.fp16), and rounded frequencies would turn angles of
        # thousands of positions into noise; this keeps them float32.
        table = g.op("Identity", [g.weight("rope/ntk_inv_freq", ntk_inv_freq(spec))], "rope/table")
        inv = g.op("Gather", [table, lengths], "rope/inv")
        scalar_t = g.op("Squeeze", [t, axis0], "rope/t")
        pos = g.op("Range", [g.scalar(0, "int64"), scalar_t, g.scalar(1, "int64")], "rope/pos")
        pos = g.op("Cast", [pos], "rope/pos_f", to=onnx.TensorProto.FLOAT)
        pos = g.op("Unsqueeze", [pos, g.ints("axes_0_2", [0, 2])], "rope/pos_b")  # [1, T, 1]
        inv = g.op("Unsqueeze", [inv, g.ints("axis1", [1])], "rope/inv_b")  # [B, 1, d/2]
        angles = g.op("Mul", [pos, inv], "rope/angles")
        angles = g.op("Concat", [angles, angles], "rope/angles2", axis=-1)
        angles = g.op("Unsqueeze", [angles, g.ints("axis1", [1])], "rope/angles_h")
        self.cos = g.op("Cos", [angles], "rope/cos")
        self.sin = g.op("Sin", [angles], "rope/sin")

    def apply(self, x: str, name: str) -> str:
        """Rotate the first ``rotary_dim`` channels of ``x`` ``[batch, heads, T, head_dim]``."""
        g, ro, d = self.g, self.spec.rotary_dim, self.spec.head_dim
        axis = g.ints("axis_m1", [-1])

        def part(lo: int, hi: int, tag: str) -> str:
            bounds = [g.ints(f"rope/b{lo}", [lo]), g.ints(f"rope/b{hi}", [hi])]
            return g.op("Slice", [x, *bounds, axis], f"{name}/{tag}")

        first, second = part(0, ro // 2, "first"), part(ro // 2, ro, "second")
        rotated = g.op(
            "Concat", [g.op("Neg", [second], f"{name}/neg"), first], f"{name}/rot", axis=-1
        )
        head = part(0, ro, "head") if ro < d else x
        out = g.op(
            "Add",
            [
                g.op("Mul", [head, self.cos], f"{name}/cos"),
                g.op("Mul", [rotated, self.sin], f"{name}/sin"),
            ],
            name,
        )
        if ro < d:
            out = g.op("Concat", [out, part(ro, d, "pass")], f"{name}/whole", axis=-1)
        return out


def _linear(
    g: GraphBuilder, w: WeightStore, x: str, part: str, shape: tuple[int, int], bias: bool
) -> str:
    weight = w.get(f"{part}.weight", shape)
    if not bias:
        return g.op("MatMul", [x, g.weight(f"{part}.weight_t", weight.T)], f"{part}/MatMul")
    return g.linear(x, weight, w.get(f"{part}.bias", (shape[0],)), part)


def _attention(
    g: GraphBuilder,
    w: WeightStore,
    spec: NomicSpec,
    rope: _Rotary | None,
    x: str,
    bias: str,
    i: int,
) -> str:
    pre = f"encoder.layers.{i}.attn"
    h, d = spec.hidden, spec.head_dim
    packed = w.get(f"{pre}.Wqkv.weight", (3 * h, h))
    packed_b = w.get(f"{pre}.Wqkv.bias", (3 * h,)) if spec.qkv_bias else None
    split = g.ints(f"{pre}/heads_shape", [0, 0, spec.heads, d])
    parts = []
    for j, tag in enumerate("qkv"):
        weight = packed[j * h : (j + 1) * h]
        if packed_b is None:
            t = g.op("MatMul", [x, g.weight(f"{pre}.W{tag}.weight_t", weight.T)], f"{pre}/{tag}")
        else:
            t = g.linear(x, weight, packed_b[j * h : (j + 1) * h], f"{pre}.W{tag}")
        t = g.op("Reshape", [t, split], f"{pre}/{tag}_split")
        t = g.op("Transpose", [t], f"{pre}/{tag}_heads", perm=[0, 2, 1, 3])
        parts.append(rope.apply(t, f"{pre}/{tag}_rope") if rope is not None and tag != "v" else t)
    q, k, v = parts
    ctx = heads_attention(g, q, k, v, bias, pre, h, d, divide=False)
    return _linear(g, w, ctx, f"{pre}.out_proj", (h, h), spec.qkv_bias)


def _mlp(g: GraphBuilder, w: WeightStore, spec: NomicSpec, x: str, i: int) -> str:
    pre = f"encoder.layers.{i}.mlp"
    h, f = spec.hidden, spec.intermediate
    if spec.gated:
        y = _linear(g, w, x, f"{pre}.fc11", (f, h), spec.fc1_bias)
        gate = _linear(g, w, x, f"{pre}.fc12", (f, h), spec.fc1_bias)
        kind = GATED[spec.activation]
        if kind == "sigmoid":
            act = g.op("Sigmoid", [gate], f"{pre}/gate_sigmoid")
        else:
            act = g.activation(gate, kind, f"{pre}/gate_act")
        inner = g.op("Mul", [y, act], f"{pre}/glu")
    else:  # the remote code passes F.gelu (exact) whatever the name says
        inner = g.activation(
            _linear(g, w, x, f"{pre}.fc1", (f, h), spec.fc1_bias), "gelu", f"{pre}/act"
        )
    return _linear(g, w, inner, f"{pre}.fc2", (h, f), spec.fc2_bias)


def build_nomic_bert(request: BuildRequest) -> onnx.ModelProto:
    """The graph of a nomic_bert checkpoint (see ``convert.export_onnx``). No fused variant (the
    rotary embedding sits between the projections and the scores)."""
    w = request.weights
    spec = nomic_spec(request.config, w)
    g = new_graph()
    h = spec.hidden

    def norm(x: str, part: str) -> str:
        return g.layer_norm(
            x, w.get(f"{part}.weight", (h,)), w.get(f"{part}.bias", (h,)), spec.eps, part
        )

    table = g.weight(
        "embeddings.word_embeddings", w.get("embeddings.word_embeddings.weight", (spec.vocab, h))
    )
    x = g.op("Gather", [table, INPUT_IDS], "embeddings/words", axis=0)
    if spec.type_vocab > 0:
        row = w.get("embeddings.token_type_embeddings.weight", (spec.type_vocab, h))[0]
        x = g.op("Add", [x, g.weight("embeddings.token_type_0", row)], "embeddings/token_type")
    if spec.rotary_dim == 0:
        pos = w.get("embeddings.position_embeddings.weight", (spec.n_positions, h))
        start, axis0 = g.ints("positions/start", [0]), g.ints("axis0", [0])
        rows = g.op(
            "Slice",
            [g.weight("embeddings.position_embeddings", pos), start, seq_len(g), axis0],
            "positions/rows",
        )
        x = g.op("Add", [x, rows], "embeddings/positions")
    x = norm(x, "emb_ln")
    states = [x]
    if request.n_build:
        rope = _Rotary(g, spec) if spec.rotary_dim else None
        bias = mask_bias(g)
        for i in range(request.n_build):
            pre = f"encoder.layers.{i}"
            attn = _attention(g, w, spec, rope, x, bias, i)
            x = norm(g.op("Add", [attn, x], f"{pre}/attn_res"), f"{pre}.norm1")
            x = norm(g.op("Add", [_mlp(g, w, spec, x, i), x], f"{pre}/mlp_res"), f"{pre}.norm2")
            states.append(x)
    return request.finish(g, states, h)


def ffn_out_nodes(i: int) -> tuple[str, ...]:
    """Layer ``i``'s FFN output projection (``mlp.fc2``; int8's per-tensor policy keeps the first
    layers' in fp32)."""
    return (f"{NOMIC_FFN_OUT.format(i=i)}/MatMul",)
