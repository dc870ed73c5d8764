"""jina-embeddings-v3 (``auto_map`` ``AutoModel``: ``XLMRobertaLoRA``) as an ONNX graph, from
config.json and the weights alone: the repository's Python
(``jinaai/xlm-roberta-flash-implementation``'s ``modeling_lora.py``, ``modeling_xlm_roberta.py``,
``mha.py``, ``rotary.py``, ``block.py``, ``mlp.py``, ``embedding.py``) is never imported or run.

Facts from that code (its torch path, ``use_flash_attn`` off; flash attention computes the same
per text):

- LoRA (``modeling_lora.py``): every ``nn.Linear`` and ``nn.Embedding`` carries a
  parametrisation with one adapter per task of ``lora_adaptations``; the checkpoint keeps the
  base weight as ``<layer>.parametrizations.weight.original`` and the adapters as
  ``...parametrizations.weight.0.lora_A`` / ``lora_B``. With a task ``t`` (``adapter_mask``) a
  linear layer's weight is ``W + (B[t] @ A[t]) * lora_alpha / lora_rank`` (``A`` ``[tasks, rank,
  in]``, ``B`` ``[tasks, out, rank]``), an embedding's ``W + (A[t] @ B[t]) * alpha / rank``
  (``A`` ``[tasks, vocab, rank]``, ``B`` ``[tasks, rank, hidden]``); without a task (``encode()``
  without ``task``) the base weights. The task is merged here, at conversion: the graph is an
  XLM-R with rotary positions and the chosen weights (``catalog.lora_tasks``).
- Embeddings: ``word_embeddings[ids]`` + ``token_type_embeddings[0]`` (``type_vocab_size`` > 0;
  the ids are zeros), no position table (``position_embedding_type`` "rotary"), then ``emb_ln``.
- Attention (``mha.py``): ``Wqkv`` packed ``(three heads head_dim)``; rotary on q and k
  (GPT-NeoX halves, ``rotary_emb_dim`` = the head size, ``inv_freq = 1 / rotary_emb_base^(2i /
  dim)`` in float32, positions ``0..T-1``); scores over ``sqrt(head_dim)``, padding keys -10000
  (here float32's minimum: the same softmax); ``out_proj``.
- Post-norm blocks: ``h = norm1(x + attn(x))``, ``out = norm2(h + fc2(gelu(fc1(h))))``.
- ``output_hidden_states``: ``emb_ln``'s output and each block's, as BERT's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx

from ...catalog.lora_tasks import lora_task, lora_tasks
from ..blocks import BuildRequest, mask_bias, new_graph, seq_len
from ..checkpoint import WeightStore
from ..contract import INPUT_IDS, CheckpointError, float_field, int_field
from ..graph import GraphBuilder
from .gte import gte_inv_freq
from .rope import heads_attention, rotate

JINA_FFN_OUT = "encoder.layers.{i}.mlp.fc2"
"""The FFN output projection of layer ``i`` (node ``.../MatMul``; the int8 policy's name)."""


@dataclass(frozen=True)
class JinaSpec:
    """The sizes and options of an ``XLMRobertaLoRA`` checkpoint, read from config.json, and the
    adapter to merge (``task`` None: the base weights)."""

    hidden: int
    heads: int
    intermediate: int
    vocab: int
    eps: float
    activation: str
    type_vocab: int
    inv_freq: np.ndarray
    task_index: int | None
    scaling: float

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


def jina_spec(config: dict[str, Any], weights: WeightStore) -> JinaSpec:
    """Read a :class:`JinaSpec` (``CheckpointError`` for what is not converted)."""
    hidden, heads = int_field(config, "hidden_size"), int_field(config, "num_attention_heads")
    if heads <= 0 or hidden % heads or (hidden // heads) % 2:
        raise CheckpointError(
            f"hidden_size {hidden} must be a multiple of num_attention_heads {heads} with an "
            "even head size"
        )
    head_dim = hidden // heads
    if config.get("position_embedding_type", "rotary") != "rotary":
        raise CheckpointError(
            f"position_embedding_type {config.get('position_embedding_type')!r} is not "
            "converted for XLMRobertaLoRA (only jina-embeddings-v3's 'rotary')"
        )
    rotary_dim = config.get("rotary_emb_dim", head_dim)
    if rotary_dim != head_dim:
        raise CheckpointError(f"rotary_emb_dim {rotary_dim!r} (not the head size) is not converted")
    if config.get("rotary_emb_scale_base") is not None or config.get("rotary_emb_interleaved"):
        raise CheckpointError(
            "rotary_emb_scale_base (xPos) and interleaved rotary are not converted"
        )
    rank = int_field(config, "lora_rank")
    alpha = float_field(config, "lora_alpha", 1.0)
    if rank <= 0:
        raise CheckpointError(f"lora_rank must be positive, got {rank}")
    task = lora_task(config)
    type_vocab = config.get("type_vocab_size", 1)
    vocab_name = _weight_name(weights, "embeddings.word_embeddings")
    return JinaSpec(
        hidden=hidden,
        heads=heads,
        intermediate=int_field(config, "intermediate_size"),
        vocab=weights.spec(vocab_name)[1][0],
        eps=float_field(config, "layer_norm_eps", 1e-5),
        activation=str(config.get("hidden_act", "gelu")),
        type_vocab=type_vocab if isinstance(type_vocab, int) else 0,
        inv_freq=gte_inv_freq(float_field(config, "rotary_emb_base", 10000.0), head_dim, None),
        task_index=None if task is None else lora_tasks(config).index(task),
        scaling=alpha / rank,
    )


def _weight_name(w: WeightStore, layer: str) -> str:
    """The base weight's key: the parametrisation's ``original``, or a plain ``weight``."""
    original = f"{layer}.parametrizations.weight.original"
    return original if original in w else f"{layer}.weight"


def merged(
    w: WeightStore, spec: JinaSpec, layer: str, shape: tuple[int, int], kind: str
) -> np.ndarray:
    """``layer``'s weight with ``spec``'s task adapter merged (float32, in the remote code's
    order: ``W + (product) * scaling``); the base weight without a task."""
    base = w.get(_weight_name(w, layer), shape)
    if spec.task_index is None:
        return base
    pre = f"{layer}.parametrizations.weight.0"
    t = spec.task_index
    a_shape, b_shape = w.spec(f"{pre}.lora_A")[1], w.spec(f"{pre}.lora_B")[1]
    lora_a = w.get(f"{pre}.lora_A", a_shape)
    lora_b = w.get(f"{pre}.lora_B", b_shape)
    if t >= lora_a.shape[0] or t >= lora_b.shape[0]:
        raise CheckpointError(
            f"{pre}.lora_A/B hold {lora_a.shape[0]} adapters, fewer than lora_adaptations"
        )
    # linear: B[t] (out, rank) @ A[t] (rank, in); embedding: A[t] (vocab, rank) @ B[t] (rank, h)
    product = lora_b[t] @ lora_a[t] if kind == "linear" else lora_a[t] @ lora_b[t]
    if product.shape != tuple(shape):
        raise CheckpointError(
            f"{pre}: the adapter's product has shape {product.shape}, the weight {tuple(shape)}"
        )
    return (base + product.astype(np.float32) * np.float32(spec.scaling)).astype(np.float32)


class _Rotary:
    """``cos``/``sin`` rows ``0..T-1`` (``[T, head_dim]``) computed in the graph, and their
    application to a ``[batch, heads, T, head_dim]`` tensor."""

    def __init__(self, g: GraphBuilder, spec: JinaSpec) -> None:
        self.g, self.half = g, spec.head_dim // 2
        t = g.op("Squeeze", [seq_len(g), g.ints("axis0", [0])], "rope/t")
        pos = g.op("Range", [g.scalar(0, "int64"), t, g.scalar(1, "int64")], "rope/pos")
        pos = g.op("Cast", [pos], "rope/pos_f", to=onnx.TensorProto.FLOAT)
        pos = g.op("Unsqueeze", [pos, g.ints("axis1", [1])], "rope/pos_col")
        angles = g.op("Mul", [pos, g.weight("rope/inv_freq", spec.inv_freq)], "rope/angles")
        angles = g.op("Concat", [angles, angles], "rope/angles2", axis=-1)
        self.cos = g.op("Cos", [angles], "rope/cos")
        self.sin = g.op("Sin", [angles], "rope/sin")

    def apply(self, t: str, name: str) -> str:
        return rotate(self.g, t, self.cos, self.sin, self.half, name)


def _attention(
    g: GraphBuilder, w: WeightStore, spec: JinaSpec, rope: _Rotary, x: str, bias: str, i: int
) -> str:
    pre = f"encoder.layers.{i}.mixer"
    h, d = spec.hidden, spec.head_dim
    packed = merged(w, spec, f"{pre}.Wqkv", (3 * h, h), "linear")
    packed_b = w.get(f"{pre}.Wqkv.bias", (3 * h,))
    split = g.ints(f"{pre}/heads_shape", [0, 0, spec.heads, d])
    parts = []
    for j, tag in enumerate("qkv"):
        t = g.linear(x, packed[j * h : (j + 1) * h], packed_b[j * h : (j + 1) * h], f"{pre}.W{tag}")
        t = g.op("Reshape", [t, split], f"{pre}/{tag}_split")
        t = g.op("Transpose", [t], f"{pre}/{tag}_heads", perm=[0, 2, 1, 3])
        if tag != "v":
            t = rope.apply(t, f"{pre}/{tag}_rope")
        parts.append(t)
    q, k, v = parts
    ctx = heads_attention(g, q, k, v, bias, pre, h, d, divide=True)
    out_w = merged(w, spec, f"{pre}.out_proj", (h, h), "linear")
    return g.linear(ctx, out_w, w.get(f"{pre}.out_proj.bias", (h,)), f"{pre}.out_proj")


def _mlp(g: GraphBuilder, w: WeightStore, spec: JinaSpec, x: str, i: int) -> str:
    pre = f"encoder.layers.{i}.mlp"
    h, f = spec.hidden, spec.intermediate
    inner = g.linear(
        x,
        merged(w, spec, f"{pre}.fc1", (f, h), "linear"),
        w.get(f"{pre}.fc1.bias", (f,)),
        f"{pre}.fc1",
    )
    inner = g.activation(inner, spec.activation, f"{pre}/act")
    return g.linear(
        inner,
        merged(w, spec, f"{pre}.fc2", (h, f), "linear"),
        w.get(f"{pre}.fc2.bias", (h,)),
        f"{pre}.fc2",
    )


def build_jina_lora(request: BuildRequest) -> onnx.ModelProto:
    """The graph of an ``XLMRobertaLoRA`` checkpoint with its task merged (see
    ``convert.export_onnx``). No fused variant (the rotary embedding sits between the
    projections and the scores)."""
    w = request.weights
    spec = jina_spec(request.config, w)
    g = new_graph()
    h = spec.hidden
    table = merged(w, spec, "embeddings.word_embeddings", (spec.vocab, h), "embedding")
    x = g.op(
        "Gather",
        [g.weight("embeddings.word_embeddings", table), INPUT_IDS],
        "embeddings/words",
        axis=0,
    )
    if spec.type_vocab > 0:
        types = merged(
            w, spec, "embeddings.token_type_embeddings", (spec.type_vocab, h), "embedding"
        )
        x = g.op("Add", [x, g.weight("embeddings.token_type_0", types[0])], "embeddings/token_type")
    x = g.layer_norm(
        x, w.get("emb_ln.weight", (h,)), w.get("emb_ln.bias", (h,)), spec.eps, "emb_ln"
    )
    states = [x]
    if request.n_build:
        bias = mask_bias(g)
        rope = _Rotary(g, spec)
        for i in range(request.n_build):
            pre = f"encoder.layers.{i}"
            a = g.op("Add", [x, _attention(g, w, spec, rope, x, bias, i)], f"{pre}/attn_res")
            x = g.layer_norm(
                a,
                w.get(f"{pre}.norm1.weight", (h,)),
                w.get(f"{pre}.norm1.bias", (h,)),
                spec.eps,
                f"{pre}.norm1",
            )
            m = g.op("Add", [x, _mlp(g, w, spec, x, i)], f"{pre}/mlp_res")
            x = g.layer_norm(
                m,
                w.get(f"{pre}.norm2.weight", (h,)),
                w.get(f"{pre}.norm2.bias", (h,)),
                spec.eps,
                f"{pre}.norm2",
            )
            states.append(x)
    return request.finish(g, states, h)


def ffn_out_nodes(i: int) -> tuple[str, ...]:
    """Layer ``i``'s FFN output projection (``mlp.fc2``; int8's per-tensor policy keeps the first
    layers' in fp32)."""
    return (f"{JINA_FFN_OUT.format(i=i)}/MatMul",)
