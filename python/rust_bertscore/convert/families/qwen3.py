"""Qwen3 (``model_type`` "qwen3": ``Qwen3Model``, the architecture of Qwen/Qwen3-Embedding-*) as
an ONNX graph.

Facts from transformers 4.57's ``models/qwen3/modeling_qwen3.py`` (the blocks are in
``decoder.py``):

- Embeddings: ``embed_tokens[ids]``, nothing else (positions enter through RoPE, ``rope_theta``).
- Pre-norm layers: ``h = x + o_proj(attn(input_layernorm(x)))``,
  ``out = h + down(silu(gate(m)) * up(m))`` with ``m = post_attention_layernorm(h)``; RMSNorm
  ``weight * x / sqrt(mean(x^2) + rms_norm_eps)``; causal grouped-query attention with
  ``q_norm``/``k_norm`` on each head, scores times ``head_dim^-0.5``; a layer listed as
  ``sliding_attention`` in ``layer_types`` (``use_sliding_window``) also hides keys
  ``sliding_window`` or more positions back.
- ``norm`` after the last layer. bert_score truncates ``model.layers`` and takes the model's
  output, so its hidden state at layer ``L`` is ``norm(output of layer L)`` (``L = 0``: of the
  embeddings). With ``output_hidden_states`` (bert_score's ``all_layers``) transformers records
  each layer's input and replaces the last entry by the model's output: states ``0..depth-1`` are
  raw, state ``depth`` is normed.
"""

from __future__ import annotations

import onnx

from ..blocks import BuildRequest, new_graph
from ..contract import INPUT_IDS, CheckpointError, float_field, int_field
from . import decoder
from .decoder import SLIDING_ATTENTION, ffn_out_nodes

__all__ = ["build_qwen3", "ffn_out_nodes", "qwen3_layer_types"]


def qwen3_layer_types(config: dict, depth: int) -> list[str]:
    """``layer_types`` of a Qwen3 config, or what ``Qwen3Config`` derives without it: sliding
    from layer ``max_window_layers`` on when ``use_sliding_window``, else full attention."""
    if config.get("layer_types") is not None:
        return decoder.layer_types(config, depth)
    if not config.get("use_sliding_window", False):
        return [decoder.FULL_ATTENTION] * depth
    first = int_field({"max_window_layers": 28, **config}, "max_window_layers")
    return [SLIDING_ATTENTION if i >= first else decoder.FULL_ATTENTION for i in range(depth)]


def build_qwen3(request: BuildRequest) -> onnx.ModelProto:
    """The graph of a Qwen3 checkpoint (see ``convert.export_onnx``): hidden state ``L`` of a
    truncated graph is final-normed; ``all_layers`` outputs the states as transformers records
    them (only the last normed). No fused variant (RoPE sits between projections and scores)."""
    config = request.config
    decoder.check_plain_rope(config, "Qwen3")
    act = str(config.get("hidden_act", "silu"))
    if act not in ("silu", "swish"):
        raise CheckpointError(f"Qwen3 with hidden_act {act!r} is not converted (only silu)")
    sizes = decoder.decoder_sizes(config)
    depth = int(config["num_hidden_layers"])
    types = qwen3_layer_types(config, depth)
    window = decoder.window_size(config, types)
    theta = float_field(config, "rope_theta", 10000.0)
    g = new_graph()
    table = request.weights.get("embed_tokens.weight", (sizes.vocab, sizes.hidden))
    x = g.op("Gather", [g.weight("embed_tokens", table), INPUT_IDS], "embed_tokens/Gather", axis=0)
    del table
    style = decoder.DecoderStyle(
        causal=True,
        thetas=dict.fromkeys((decoder.FULL_ATTENTION, SLIDING_ATTENTION), theta),
        scaling=sizes.head_dim**-0.5,
        activation=act,
        sandwich=False,
        unit_offset=False,
    )
    states = decoder.decoder_layers(request, g, sizes, x, types=types, window=window, style=style)
    return request.finish(g, states, sizes.hidden)
