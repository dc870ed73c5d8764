"""Gemma3's text model with bidirectional attention (``model_type`` "gemma3_text" with
``use_bidirectional_attention``: ``Gemma3TextModel`` as google/embeddinggemma-300m runs it) as an
ONNX graph.

Facts from transformers 4.57's ``models/gemma3/modeling_gemma3.py`` and
``configuration_gemma3.py`` (the blocks are in ``decoder.py``):

- Embeddings: ``embed_tokens[ids] * sqrt(hidden_size)`` (the scale a float32 scalar; folded into
  the table here, which gives the same float32 products).
- Layers: ``x + post_attention_layernorm(attn(input_layernorm(x)))``, then
  ``h + post_feedforward_layernorm(mlp(pre_feedforward_layernorm(h)))`` with
  ``mlp = down(gelu_tanh(gate(m)) * up(m))`` (GeGLU); every RMSNorm computes
  ``x / sqrt(mean(x^2) + eps) * (1 + weight)``, the attention's ``q_norm``/``k_norm`` too.
- Attention: grouped-query, scores times ``query_pre_attn_scalar^-0.5``; ``layer_types`` says
  which layers are ``sliding_attention`` (RoPE base ``rope_local_base_freq``) and which
  ``full_attention`` (``rope_theta``). With ``use_bidirectional_attention`` every query sees every
  key (but padding), and a sliding layer hides keys with ``|q - k| >= window``, where ``window``
  is what ``Gemma3TextConfig`` makes of config.json's ``sliding_window`` ``s`` when loading it:
  ``s // 2 + 1`` (so EmbeddingGemma's 512 attends 256 positions each way).
- ``norm`` after the last layer: bert_score's hidden state at layer ``L`` is ``norm(output of
  layer L)``; with ``all_layers`` only the last state is normed (as for Qwen3, ``qwen3.py``).

Causal Gemma3 (``use_bidirectional_attention`` false: the generative models) is refused: no
reference was checked for it.
"""

from __future__ import annotations

import math

import numpy as np
import onnx

from ..blocks import BuildRequest, new_graph
from ..contract import INPUT_IDS, CheckpointError, float_field, int_field
from . import decoder
from .decoder import FULL_ATTENTION, SLIDING_ATTENTION, ffn_out_nodes

__all__ = ["bidirectional_window", "build_gemma3", "ffn_out_nodes", "gemma3_layer_types"]


def gemma3_layer_types(config: dict, depth: int) -> list[str]:
    """``layer_types`` of a Gemma3 text config, or what ``Gemma3TextConfig`` derives without it:
    every ``sliding_window_pattern``-th layer (default 6) full, the others sliding."""
    if config.get("layer_types") is not None:
        return decoder.layer_types(config, depth)
    pattern = int_field({"sliding_window_pattern": 6, **config}, "sliding_window_pattern")
    if pattern <= 0:
        raise CheckpointError(f"config field 'sliding_window_pattern' must be positive: {pattern}")
    return [SLIDING_ATTENTION if (i + 1) % pattern else FULL_ATTENTION for i in range(depth)]


def bidirectional_window(saved: int) -> int:
    """The window transformers 4.57 attends with for a bidirectional Gemma3 whose config.json
    says ``sliding_window`` = ``saved``: keys with ``|q - k| < saved // 2 + 1``.

    Examples
    --------
    >>> from rust_bertscore.convert.families.gemma3 import bidirectional_window
    >>> bidirectional_window(512)  # EmbeddingGemma: 256 positions each way
    257
    """
    return saved // 2 + 1


def _check(config: dict) -> str:
    if config.get("use_bidirectional_attention") is not True:
        raise CheckpointError(
            "gemma3_text is converted with use_bidirectional_attention=true only (EmbeddingGemma); "
            "this config runs causal attention"
        )
    for field in ("attn_logit_softcapping",):
        if config.get(field) is not None:
            raise CheckpointError(f"Gemma3 with {field}={config[field]!r} is not converted")
    decoder.check_plain_rope(config, "Gemma3")
    act = str(config.get("hidden_activation") or config.get("hidden_act") or "gelu_pytorch_tanh")
    if act not in ("gelu_pytorch_tanh", "gelu_new", "gelu"):
        raise CheckpointError(f"Gemma3 with hidden_activation {act!r} is not converted")
    return act


def build_gemma3(request: BuildRequest) -> onnx.ModelProto:
    """The graph of a bidirectional Gemma3 text checkpoint (see ``convert.export_onnx``):
    hidden state ``L`` of a truncated graph is final-normed; ``all_layers`` outputs the states as
    transformers records them (only the last normed). No fused variant."""
    config = request.config
    act = _check(config)
    sizes = decoder.decoder_sizes(config)
    depth = int(config["num_hidden_layers"])
    types = gemma3_layer_types(config, depth)
    saved_window = decoder.window_size(config, types)
    window = None if saved_window is None else bidirectional_window(saved_window)
    thetas = {
        FULL_ATTENTION: float_field(config, "rope_theta", 1_000_000.0),
        SLIDING_ATTENTION: float_field(config, "rope_local_base_freq", 10_000.0),
    }
    scaling = float_field(config, "query_pre_attn_scalar", 256.0) ** -0.5
    g = new_graph()
    scale = np.float32(math.sqrt(sizes.hidden))  # torch.tensor(hidden ** 0.5): float32
    table = request.weights.get("embed_tokens.weight", (sizes.vocab, sizes.hidden)) * scale
    x = g.op("Gather", [g.weight("embed_tokens", table), INPUT_IDS], "embed_tokens/Gather", axis=0)
    del table
    style = decoder.DecoderStyle(
        causal=False,
        thetas=thetas,
        scaling=scaling,
        activation=act,
        sandwich=True,
        unit_offset=True,
    )
    states = decoder.decoder_layers(request, g, sizes, x, types=types, window=window, style=style)
    return request.finish(g, states, sizes.hidden)
