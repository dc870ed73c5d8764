"""XLM (``model_type`` "xlm") as an ONNX graph.

What bert_score runs (``XLMModel(input_ids, attention_mask=mask)``: no ``langs``, no
``token_type_ids``, positions ``0..T-1``), from transformers 4.57's ``modeling_xlm.py``:

- Embeddings: ``LN(embeddings[ids] + position_embeddings[0..T-1])`` (``layer_norm_emb``); the
  language embeddings (``use_lang_emb`` with ``n_langs > 1``) are added only when ``langs`` is
  passed, which bert_score never does, so they are not part of the graph. The result is
  multiplied by the attention mask (``tensor *= mask.unsqueeze(-1)``): padded positions are 0.
- Post-LayerNorm layers: ``h = LN1(x + attn(x))``, ``out = LN2(h + lin2(act(lin1(h))))``, then
  ``out *= mask`` again; the FFN is ``4 * emb_dim`` wide, ``act`` is GELU (erf) with
  ``gelu_activation`` (the default), else ReLU. Attention scales the query by
  ``1/sqrt(head_dim)`` and fills padded keys with float32's minimum.
- ``sinusoidal_embeddings``: the stored position table is what ``from_pretrained`` loads; it is
  computed (XLM's ``create_sinusoidal_embeddings``) only when the checkpoint lacks it.
- bert_score truncates by setting ``model.n_layers``, so layer ``L``'s output is hidden state L.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx

from ..blocks import (
    BuildRequest,
    attention_mask,
    hidden_and_heads,
    new_graph,
    position_rows,
    self_attention,
)
from ..checkpoint import TransformerPrefixed
from ..contract import ATTENTION_MASK, INPUT_IDS, CheckpointError, float_field, int_field
from ..graph import GraphBuilder

XLM_FFN_OUT = "ffns.{i}.lin2"
"""The FFN output projection of layer ``i`` (node ``ffns.{i}.lin2/MatMul``)."""


@dataclass(frozen=True)
class XLMSpec:
    """The sizes and options of an XLM checkpoint's config.json."""

    hidden: int
    heads: int
    vocab: int
    n_positions: int
    layer_norm_eps: float
    activation: str
    sinusoidal: bool

    @property
    def intermediate(self) -> int:
        """The FFN width: ``4 * emb_dim`` (fixed in ``XLMModel``)."""
        return 4 * self.hidden


def xlm_spec(config: dict[str, Any]) -> XLMSpec:
    """Read and check an XLM config.

    Raises
    ------
    CheckpointError
        For sizes that disagree, a causal model or a decoder (``is_encoder`` false, which
        transformers refuses too).
    """
    hidden, heads = hidden_and_heads(config, "emb_dim", "n_heads")
    if config.get("causal", False):
        raise CheckpointError(
            "XLM with causal=true (left-to-right attention, the CLM checkpoints) is not "
            "converted: bert_score's XLM models are masked language models"
        )
    if not config.get("is_encoder", True):
        raise CheckpointError("XLM with is_encoder=false is not supported (transformers neither)")
    return XLMSpec(
        hidden=hidden,
        heads=heads,
        vocab=int_field(config, "vocab_size", "n_words"),
        n_positions=int_field(config, "max_position_embeddings"),
        layer_norm_eps=float_field(config, "layer_norm_eps", 1e-12),
        activation="gelu" if config.get("gelu_activation", True) else "relu",
        sinusoidal=bool(config.get("sinusoidal_embeddings", False)),
    )


def sinusoidal_table(n_pos: int, dim: int) -> np.ndarray:
    """XLM's ``create_sinusoidal_embeddings``: ``pos / 10000^(2 (j // 2) / dim)``, sin on the
    even columns and cos on the odd ones, computed in float64 then stored as float32."""
    j = np.arange(dim)
    angles = np.arange(n_pos)[:, None] / np.power(10000, 2 * (j // 2) / dim)[None, :]
    table = np.empty((n_pos, dim), dtype=np.float32)
    table[:, 0::2] = np.sin(angles[:, 0::2])
    table[:, 1::2] = np.cos(angles[:, 1::2])
    return table


def _position_table(w: TransformerPrefixed, spec: XLMSpec) -> np.ndarray:
    name = "position_embeddings.weight"
    if name not in w and spec.sinusoidal:
        return sinusoidal_table(spec.n_positions, spec.hidden)
    return w.get(name, (spec.n_positions, spec.hidden))


def _norm(g: GraphBuilder, w: TransformerPrefixed, x: str, part: str, spec: XLMSpec) -> str:
    return g.layer_norm(
        x,
        w.get(f"{part}.weight", (spec.hidden,)),
        w.get(f"{part}.bias", (spec.hidden,)),
        spec.layer_norm_eps,
        part,
    )


def xlm_layer(
    g: GraphBuilder,
    w: TransformerPrefixed,
    spec: XLMSpec,
    x: str,
    mask: str,
    keep: str,
    i: int,
    *,
    fused: bool,
) -> str:
    """Layer ``i`` on ``x``; ``mask`` is the attention mask, ``keep`` ``[B, T, 1]`` the float
    mask that zeroes padded positions."""
    h, ffn = spec.hidden, spec.intermediate

    def params(part: str, n_out: int, n_in: int) -> tuple[np.ndarray, np.ndarray]:
        return w.get(f"{part}.weight", (n_out, n_in)), w.get(f"{part}.bias", (n_out,))

    att = f"attentions.{i}"
    attn = self_attention(
        g,
        x,
        mask,
        (params(f"{att}.q_lin", h, h), params(f"{att}.k_lin", h, h), params(f"{att}.v_lin", h, h)),
        params(f"{att}.out_lin", h, h),
        heads=spec.heads,
        name=att,
        fused=fused,
    )
    x = _norm(g, w, g.op("Add", [x, attn], f"{att}/residual"), f"layer_norm1.{i}", spec)
    inner = g.linear(x, *params(f"ffns.{i}.lin1", ffn, h), f"ffns.{i}.lin1")
    inner = g.activation(inner, spec.activation, f"ffns.{i}/act")
    out = g.linear(inner, *params(XLM_FFN_OUT.format(i=i), h, ffn), XLM_FFN_OUT.format(i=i))
    out = _norm(g, w, g.op("Add", [x, out], f"ffns.{i}/residual"), f"layer_norm2.{i}", spec)
    return g.op("Mul", [out, keep], f"layer_{i}/zero_padding")


def build_xlm(request: BuildRequest) -> onnx.ModelProto:
    """The graph of an XLM checkpoint (see ``convert.export_onnx``)."""
    w = TransformerPrefixed(request.weights)
    spec = xlm_spec(request.config)
    g = new_graph()
    words = g.weight("embeddings.weight", w.get("embeddings.weight", (spec.vocab, spec.hidden)))
    x = g.op("Gather", [words, INPUT_IDS], "embeddings", axis=0)
    table = g.weight("position_embeddings.weight", _position_table(w, spec))
    x = g.op("Add", [x, position_rows(g, table, 0, "position_embeddings")], "embeddings/sum")
    x = _norm(g, w, x, "layer_norm_emb", spec)
    keep = g.op("Unsqueeze", [ATTENTION_MASK, g.ints("axes_2", [2])], "keep/unsqueeze")
    keep = g.op("Cast", [keep], "keep/float", to=onnx.TensorProto.FLOAT)
    x = g.op("Mul", [x, keep], "embeddings/zero_padding")
    states = [x]
    if request.n_build:
        mask = attention_mask(g, request.fused)
        for i in range(request.n_build):
            x = xlm_layer(g, w, spec, x, mask, keep, i, fused=request.fused)
            states.append(x)
    return request.finish(g, states, spec.hidden)


def ffn_out_nodes(i: int) -> tuple[str, ...]:
    """The FFN output projection of layer ``i`` (``ffns.{i}.lin2``)."""
    return (f"{XLM_FFN_OUT.format(i=i)}/MatMul",)
