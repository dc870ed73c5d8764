"""Blocks of the decoder-style embedding models (Qwen3, Gemma3): RMSNorm, grouped-query
self-attention with per-head query/key norms and RoPE, causal and sliding-window masks, and the
gated MLP.

Facts from transformers 4.57's ``models/qwen3/modeling_qwen3.py`` and
``models/gemma3/modeling_gemma3.py``:

- RMSNorm: ``x / sqrt(mean(x^2) + eps)`` over the last axis (float32), times ``weight`` (Qwen3)
  or ``1 + weight`` (Gemma3).
- Attention: ``q, k, v = x Wq, x Wk, x Wv`` split into ``num_attention_heads`` query heads and
  ``num_key_value_heads`` key/value heads of ``head_dim`` (query head ``h`` reads key/value head
  ``h // (heads / kv_heads)``: ``repeat_kv``); ``q_norm``/``k_norm`` (RMSNorm over ``head_dim``)
  then RoPE on queries and keys; ``softmax(q k^T * scaling + mask) v`` merged and ``o_proj``.
- Masks (``masking_utils``): the padding of the keys always; causal: key ``k`` hidden from query
  ``q`` when ``k > q``; a sliding window of ``w``: when ``q - k >= w`` (causal) or
  ``|q - k| >= w`` (Gemma3 with ``use_bidirectional_attention``).
- MLP: ``down(act(gate(x)) * up(x))``: SwiGLU (``silu``, Qwen3), GeGLU (``gelu_pytorch_tanh``,
  Gemma3).
- Layers (:func:`decoder_layers`): pre-norm residual blocks, attention then MLP; Gemma3 also
  norms each block's output (its "sandwich" norms); ``norm`` after the last layer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..blocks import BuildRequest, mask_bias, seq_len
from ..checkpoint import WeightStore
from ..contract import CheckpointError, float_field, int_field
from ..graph import FLOAT32_MIN, GraphBuilder
from .rope import Rotary

FFN_OUT = "layers.{i}.mlp.down_proj"
"""The MLP output projection of layer ``i`` (node ``.../MatMul``; the int8 policy's name)."""

FULL_ATTENTION = "full_attention"
SLIDING_ATTENTION = "sliding_attention"


@dataclass(frozen=True)
class DecoderSizes:
    """The sizes of a Qwen3 or Gemma3 text model, read from config.json."""

    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    eps: float
    attention_bias: bool

    @property
    def q_width(self) -> int:
        """The width of the queries (and of the attention output): ``heads * head_dim``."""
        return self.heads * self.head_dim

    @property
    def kv_width(self) -> int:
        """The width of the keys and values: ``kv_heads * head_dim``."""
        return self.kv_heads * self.head_dim


def layer_types(config: dict, depth: int) -> list[str]:
    """config.json's ``layer_types`` (``full_attention`` / ``sliding_attention``), one a layer."""
    types = config.get("layer_types")
    if not isinstance(types, list) or len(types) != depth:
        raise CheckpointError(
            f"config field 'layer_types' must list one attention type for each of the {depth} "
            f"layers, got {types!r}"
        )
    for i, kind in enumerate(types):
        if kind not in (FULL_ATTENTION, SLIDING_ATTENTION):
            raise CheckpointError(
                f"config field 'layer_types'[{i}] is {kind!r}: expected {FULL_ATTENTION!r} or "
                f"{SLIDING_ATTENTION!r}"
            )
    return [str(t) for t in types]


def rms_norm(g: GraphBuilder, x: str, weight: np.ndarray, eps: float, name: str) -> str:
    """``x / sqrt(mean(x^2) + eps) * weight`` over the last axis (the pattern ONNX Runtime fuses
    into one SimplifiedLayerNormalization)."""
    sq = g.op("Pow", [x, g.scalar(2.0)], f"{name}/Pow")
    mean = g.op("ReduceMean", [sq], f"{name}/ReduceMean", axes=[-1], keepdims=1)
    std = g.op("Sqrt", [g.op("Add", [mean, g.scalar(float(eps))], f"{name}/Add")], f"{name}/Sqrt")
    normed = g.op("Div", [x, std], f"{name}/Div")
    return g.op("Mul", [normed, g.weight(f"{name}.weight", weight)], f"{name}/Mul")


def projection(
    g: GraphBuilder, w: WeightStore, x: str, part: str, n_out: int, n_in: int, bias: bool
) -> str:
    """``x W^T (+ b)`` of the stored Linear ``part`` (node ``{part}/MatMul``)."""
    weight = w.get(f"{part}.weight", (n_out, n_in))
    if bias:
        return g.linear(x, weight, w.get(f"{part}.bias", (n_out,)), part)
    return g.op("MatMul", [x, g.weight(f"{part}.weight_t", weight.T)], f"{part}/MatMul")


def position_bias(
    g: GraphBuilder, padding: str, *, causal: bool, window: int | None, name: str
) -> str:
    """``[batch, 1, seq, seq]``: the padding bias (``[batch, 1, 1, seq]``), and float32's
    minimum where a key is hidden from a query: ``k > q`` when ``causal``; ``|q - k| >= window``
    (``q - k >= window`` when causal) with a ``window``."""
    if not causal and window is None:
        return padding
    t = g.op("Squeeze", [seq_len(g), g.ints("axis0", [0])], f"{name}/t")
    pos = g.op("Range", [g.scalar(0, "int64"), t, g.scalar(1, "int64")], f"{name}/positions")
    rows = g.op("Unsqueeze", [pos, g.ints("axis_1", [1])], f"{name}/rows")  # queries
    cols = g.op("Unsqueeze", [pos, g.ints("axis0", [0])], f"{name}/cols")  # keys
    ahead = g.op("Sub", [rows, cols], f"{name}/q_minus_k")
    hidden: str | None = None
    if causal:
        hidden = g.op("Less", [ahead, g.scalar(0, "int64")], f"{name}/future")
    if window is not None:
        distance = ahead if causal else g.op("Abs", [ahead], f"{name}/distance")
        far = g.op("GreaterOrEqual", [distance, g.scalar(window, "int64")], f"{name}/far")
        hidden = far if hidden is None else g.op("Or", [hidden, far], f"{name}/hidden")
    assert hidden is not None  # causal or a window
    return g.op("Where", [hidden, g.scalar(FLOAT32_MIN), padding], f"{name}/bias")


def grouped_attention(
    g: GraphBuilder,
    w: WeightStore,
    sizes: DecoderSizes,
    x: str,
    *,
    bias: str,
    rope: Rotary,
    theta: float,
    qk_norm: tuple[np.ndarray, np.ndarray],
    scaling: float,
    prefix: str,
) -> str:
    """Grouped-query self-attention of ``x`` ``[batch, seq, hidden]`` (``prefix`` =
    ``layers.{i}.self_attn``): projections, ``q_norm``/``k_norm`` (weights ``qk_norm``, already
    ``1 + w`` for Gemma3), RoPE at ``theta``, scores times ``scaling`` plus ``bias``, ``o_proj``.

    The query heads sharing a key/value head are stacked along the sequence axis (``[batch,
    kv_heads, group * seq, head_dim]``) so that the keys and values are never repeated.
    """
    h, d, n_kv = sizes.hidden, sizes.head_dim, sizes.kv_heads
    heads_shape = g.ints(f"{prefix}/heads_shape", [0, 0, -1, d])

    def heads(part: str, n_out: int, norm: np.ndarray | None) -> str:
        t = projection(g, w, x, f"{prefix}.{part}", n_out, h, sizes.attention_bias)
        t = g.op("Reshape", [t, heads_shape], f"{prefix}/{part}_split")  # [b, t, heads, d]
        if norm is not None:
            t = rms_norm(g, t, norm, sizes.eps, f"{prefix}.{part[0]}_norm")
        return g.op("Transpose", [t], f"{prefix}/{part}_heads", perm=[0, 2, 1, 3])

    q = rope.apply(heads("q_proj", sizes.q_width, qk_norm[0]), theta, f"{prefix}/q_rope")
    k = rope.apply(heads("k_proj", sizes.kv_width, qk_norm[1]), theta, f"{prefix}/k_rope")
    v = heads("v_proj", sizes.kv_width, None)
    grouped = g.ints(f"{prefix}/grouped", [0, n_kv, -1, 0])  # [b, kv, group * t, .]
    per_head = g.ints(f"{prefix}/per_head", [0, sizes.heads, -1, 0])  # [b, heads, t, .]
    q = g.op("Reshape", [q, grouped], f"{prefix}/q_grouped")
    k = g.op("Transpose", [k], f"{prefix}/k_t", perm=[0, 1, 3, 2])
    scores = g.op("MatMul", [q, k], f"{prefix}/scores")
    scores = g.op("Reshape", [scores, per_head], f"{prefix}/scores_per_head")
    scores = g.op("Mul", [scores, g.scalar(float(np.float32(scaling)))], f"{prefix}/scaled")
    scores = g.op("Add", [scores, bias], f"{prefix}/masked_scores")
    probs = g.op("Softmax", [scores], f"{prefix}/probs", axis=-1)
    probs = g.op("Reshape", [probs, grouped], f"{prefix}/probs_grouped")
    ctx = g.op("MatMul", [probs, v], f"{prefix}/context")
    ctx = g.op("Reshape", [ctx, per_head], f"{prefix}/context_per_head")
    ctx = g.op("Transpose", [ctx], f"{prefix}/context_t", perm=[0, 2, 1, 3])
    ctx = g.op("Reshape", [ctx, g.ints(f"{prefix}/merged", [0, 0, sizes.q_width])], f"{prefix}/ctx")
    return projection(g, w, ctx, f"{prefix}.o_proj", h, sizes.q_width, sizes.attention_bias)


def gated_mlp(
    g: GraphBuilder, w: WeightStore, sizes: DecoderSizes, x: str, activation: str, i: int
) -> str:
    """``down_proj(act(gate_proj(x)) * up_proj(x))`` of layer ``i`` (no biases)."""
    pre = f"layers.{i}.mlp"
    h, f = sizes.hidden, sizes.intermediate
    gate = projection(g, w, x, f"{pre}.gate_proj", f, h, False)
    up = projection(g, w, x, f"{pre}.up_proj", f, h, False)
    act = g.activation(gate, activation, f"{pre}/act")
    return projection(g, w, g.op("Mul", [act, up], f"{pre}/glu"), FFN_OUT.format(i=i), h, f, False)


def ffn_out_nodes(i: int) -> tuple[str, ...]:
    """Layer ``i``'s MLP output projection (``mlp.down_proj``; int8's per-tensor policy keeps the
    first layers' in fp32)."""
    return (f"{FFN_OUT.format(i=i)}/MatMul",)


def check_plain_rope(config: dict, family: str) -> None:
    """``CheckpointError`` for a ``rope_scaling`` other than none or ``"default"``."""
    scaling = config.get("rope_scaling")
    if scaling and (
        not isinstance(scaling, dict)
        or scaling.get("rope_type", scaling.get("type")) not in (None, "default")
    ):
        raise CheckpointError(
            f"{family} with rope_scaling {scaling!r} is not converted (only plain RoPE)"
        )


def decoder_sizes(config: dict, *, eps_default: float = 1e-6) -> DecoderSizes:
    """Read :class:`DecoderSizes` (``CheckpointError`` for what does not fit together)."""
    hidden = int_field(config, "hidden_size")
    heads = int_field(config, "num_attention_heads")
    kv_heads = int_field(config, "num_key_value_heads", "num_attention_heads")
    if heads <= 0 or kv_heads <= 0 or heads % kv_heads:
        raise CheckpointError(
            f"num_attention_heads ({heads}) must be a positive multiple of num_key_value_heads "
            f"({kv_heads})"
        )
    head_dim = int_field(config, "head_dim") if config.get("head_dim") is not None else 0
    if not head_dim:
        if hidden % heads:
            raise CheckpointError(f"hidden_size {hidden} is not a multiple of the {heads} heads")
        head_dim = hidden // heads
    if head_dim <= 0 or head_dim % 2:
        raise CheckpointError(f"head_dim {head_dim} must be positive and even for RoPE")
    bias = config.get("attention_bias", False)
    if not isinstance(bias, bool):
        raise CheckpointError(f"config field 'attention_bias' must be true or false, got {bias!r}")
    return DecoderSizes(
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate=int_field(config, "intermediate_size"),
        vocab=int_field(config, "vocab_size"),
        eps=float_field(config, "rms_norm_eps", eps_default),
        attention_bias=bias,
    )


def window_size(config: dict, types: list[str]) -> int | None:
    """config.json's ``sliding_window`` when some layer slides (a positive integer), else None."""
    if SLIDING_ATTENTION not in types:
        return None
    window = config.get("sliding_window")
    if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
        raise CheckpointError(
            f"config field 'sliding_window' must be a positive integer when layer_types has "
            f"{SLIDING_ATTENTION!r} layers, got {window!r}"
        )
    return window


@dataclass(frozen=True)
class DecoderStyle:
    """How a decoder family's layers differ from one another's (Qwen3, Gemma3).

    Attributes
    ----------
    causal : bool
        Keys after the query are hidden (Qwen3); else attention is bidirectional (Gemma3).
    thetas : Mapping[str, float]
        The RoPE base of each layer type (:data:`FULL_ATTENTION`, :data:`SLIDING_ATTENTION`).
    scaling : float
        What the attention scores are multiplied by.
    activation : str
        The gated MLP's activation.
    sandwich : bool
        Gemma3's layout: ``post_attention_layernorm`` norms the attention's output and
        ``pre_feedforward_layernorm``/``post_feedforward_layernorm`` the MLP's input/output;
        else (Qwen3) ``post_attention_layernorm`` norms the MLP's input.
    unit_offset : bool
        Every RMSNorm (``q_norm``/``k_norm`` too) scales by ``1 + weight`` (Gemma3), not ``weight``.

    Examples
    --------
    >>> from rust_bertscore.convert.families.decoder import FULL_ATTENTION, DecoderStyle
    >>> qwen3 = DecoderStyle(causal=True, thetas={FULL_ATTENTION: 1e6}, scaling=0.125,
    ...                      activation="silu", sandwich=False, unit_offset=False)
    >>> qwen3.thetas[FULL_ATTENTION]
    1000000.0
    """

    causal: bool
    thetas: Mapping[str, float]
    scaling: float
    activation: str
    sandwich: bool
    unit_offset: bool


def decoder_layers(
    request: BuildRequest,
    g: GraphBuilder,
    sizes: DecoderSizes,
    x: str,
    *,
    types: Sequence[str],
    window: int | None,
    style: DecoderStyle,
) -> list[str]:
    """The hidden states of the first ``request.n_build`` layers over the embeddings ``x``.

    Parameters
    ----------
    request : BuildRequest
        The checkpoint (its weights ``layers.{i}.*`` and ``norm.weight``) and ``n_build``.
    g, sizes : GraphBuilder, DecoderSizes
        The graph, which holds ``x``, and the model's sizes.
    x : str
        The embeddings ``[batch, seq, hidden]``.
    types : sequence of str
        Each layer's attention type (:data:`FULL_ATTENTION` or :data:`SLIDING_ATTENTION`).
    window : int or None
        How far a sliding layer attends (see :func:`position_bias`); None when none slides.
    style : DecoderStyle
        What the family's layers do differently.

    Returns
    -------
    list of str
        ``n_build + 1`` states: the embeddings, then each layer's output, the last one put
        through the final ``norm`` (the model's output, which bert_score takes).

    Examples
    --------
    One Qwen3-style layer with random weights:

    >>> import tempfile
    >>> import numpy as np
    >>> from safetensors.numpy import save_file
    >>> from rust_bertscore.convert.blocks import BuildRequest, new_graph
    >>> from rust_bertscore.convert.families import decoder
    >>> config = {"hidden_size": 8, "num_attention_heads": 2, "num_key_value_heads": 1,
    ...           "intermediate_size": 16, "vocab_size": 10, "max_position_embeddings": 32}
    >>> shapes = {"input_layernorm": 8, "post_attention_layernorm": 8, "self_attn.q_norm": 4,
    ...           "self_attn.k_norm": 4, "self_attn.q_proj": (8, 8), "self_attn.k_proj": (4, 8),
    ...           "self_attn.v_proj": (4, 8), "self_attn.o_proj": (8, 8),
    ...           "mlp.gate_proj": (16, 8), "mlp.up_proj": (16, 8), "mlp.down_proj": (8, 16)}
    >>> rng, tmp = np.random.default_rng(0), tempfile.TemporaryDirectory()
    >>> save_file({f"layers.0.{k}.weight": rng.random(v, np.float32) for k, v in shapes.items()}
    ...           | {"norm.weight": np.ones(8, np.float32)}, f"{tmp.name}/model.safetensors")
    >>> request = BuildRequest(tmp.name, config, n_build=1, all_layers=True, doc="", fused=False)
    >>> style = decoder.DecoderStyle(causal=True, thetas={decoder.FULL_ATTENTION: 1e4},
    ...     scaling=0.5, activation="silu", sandwich=False, unit_offset=False)
    >>> states = decoder.decoder_layers(request, new_graph(), decoder.decoder_sizes(config),
    ...     "embeddings", types=[decoder.FULL_ATTENTION], window=None, style=style)
    >>> len(states), states[0]  # the embeddings, then the final-normed output of layer 1
    (2, 'embeddings')
    >>> tmp.cleanup()
    """
    w = request.weights
    states = [x]
    rope = Rotary(g, sizes.head_dim)
    padding = mask_bias(g) if request.n_build else ""
    biases: dict[str, str] = {}

    def weight(part: str, width: int) -> np.ndarray:
        stored = w.get(f"{part}.weight", (width,))
        return stored + np.float32(1.0) if style.unit_offset else stored  # 1 + w in float32

    def norm(t: str, part: str) -> str:
        return rms_norm(g, t, weight(part, sizes.hidden), sizes.eps, part)

    for i in range(request.n_build):
        kind = types[i]
        if kind not in biases:
            biases[kind] = position_bias(
                g,
                padding,
                causal=style.causal,
                window=window if kind == SLIDING_ATTENTION else None,
                name=f"mask/{kind}",
            )
        pre = f"layers.{i}"
        d = sizes.head_dim
        attn = grouped_attention(
            g,
            w,
            sizes,
            norm(x, f"{pre}.input_layernorm"),
            bias=biases[kind],
            rope=rope,
            theta=style.thetas[kind],
            qk_norm=(weight(f"{pre}.self_attn.q_norm", d), weight(f"{pre}.self_attn.k_norm", d)),
            scaling=style.scaling,
            prefix=f"{pre}.self_attn",
        )
        if style.sandwich:
            attn = norm(attn, f"{pre}.post_attention_layernorm")
        x = g.op("Add", [x, attn], f"{pre}/attn_res")
        mlp_norm = "pre_feedforward_layernorm" if style.sandwich else "post_attention_layernorm"
        mlp = gated_mlp(g, w, sizes, norm(x, f"{pre}.{mlp_norm}"), style.activation, i)
        if style.sandwich:
            mlp = norm(mlp, f"{pre}.post_feedforward_layernorm")
        x = g.op("Add", [x, mlp], f"{pre}/mlp_res")
        states.append(x)
    states.append(norm(states.pop(), "norm"))  # the model's output (either way)
    return states
