"""Longformer as an ONNX graph: RoBERTa with sliding-window (banded) self-attention.

bert_score passes no global attention, so every layer of ``LongformerModel`` runs its
sliding-window attention only: query ``l`` attends to the keys ``r`` with
``|l - r| <= attention_window[layer] / 2`` that are not padding, with softmax over those keys.
transformers computes it in overlapping chunks after padding the batch (ids with
``pad_token_id``, attention mask with 0) to a multiple of the largest window; the padded
positions are masked keys like any padding, so the outputs of real tokens are those of full
attention restricted to the band, which the graph writes as an additive bias: 0 inside the band,
float32's most negative value outside, on top of the usual padding bias.

The embeddings and the post-LayerNorm layers are RoBERTa's (``query_global``, ``key_global``
and ``value_global``, the projections of global attention, are never read).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import onnx

from ..blocks import BuildRequest, encoder_layers, new_graph
from ..contract import ATTENTION_MASK, INPUT_IDS, CheckpointError, numbered
from ..graph import FLOAT32_MIN, GraphBuilder
from .bert import BERT_LAYER, embeddings, encoder_spec


def attention_windows(config: dict[str, Any], depth: int) -> list[int]:
    """Each layer's ``attention_window`` (both sides together) from config.json.

    Raises
    ------
    CheckpointError
        Unless the field is one positive even integer or a list of ``depth`` of them.
    """
    value = config.get("attention_window", 512)
    windows = [value] * depth if isinstance(value, int) else value
    if (
        not isinstance(windows, list)
        or len(windows) != depth
        or any(isinstance(v, bool) or not isinstance(v, int) or v <= 0 or v % 2 for v in windows)
    ):
        raise CheckpointError(
            f"config field 'attention_window' must be a positive even integer or a list of "
            f"{depth} of them (one per layer), got {value!r}"
        )
    return windows


def band_bias(g: GraphBuilder, one_sided: int) -> str:
    """``[1, 1, T, T]`` float: 0 where ``|l - r| <= one_sided``, float32's most negative else."""
    name = f"band_{one_sided}"
    seq = g.op(
        "Gather",
        [g.op("Shape", [INPUT_IDS], f"{name}/shape"), g.scalar(1, "int64")],
        f"{name}/seq_len",
        axis=0,
    )
    pos = g.op("Range", [g.scalar(0, "int64"), seq, g.scalar(1, "int64")], f"{name}/positions")
    queries = g.op("Unsqueeze", [pos, g.ints(f"{name}/axes_1", [1])], f"{name}/queries")
    keys = g.op("Unsqueeze", [pos, g.ints(f"{name}/axes_0", [0])], f"{name}/keys")
    distance = g.op("Abs", [g.op("Sub", [queries, keys], f"{name}/relative")], f"{name}/distance")
    outside = g.op("Greater", [distance, g.scalar(one_sided, "int64")], f"{name}/outside")
    bias = g.op("Where", [outside, g.scalar(FLOAT32_MIN), g.scalar(0.0)], f"{name}/bias_2d")
    return g.op("Unsqueeze", [bias, g.ints(f"{name}/axes_0_1", [0, 1])], name)


def window_bias(g: GraphBuilder, windows: list[int]) -> Callable[[int], str]:
    """Layer ``i`` -> the :func:`band_bias` of its ``windows[i]``, each band built once (when
    first asked for)."""
    bands: dict[int, str] = {}

    def bias(i: int) -> str:
        one_sided = windows[i] // 2
        if one_sided not in bands:
            bands[one_sided] = band_bias(g, one_sided)
        return bands[one_sided]

    return bias


def build_longformer(request: BuildRequest) -> onnx.ModelProto:
    """The graph of a Longformer checkpoint (see ``convert.export_onnx``): RoBERTa's embeddings
    (positions from ``pad_token_id + 1``) and layers, each layer's attention limited to the band
    of its ``attention_window``. Fused, the band goes in as ORT Attention's ``attention_bias``."""
    w, config = request.weights, request.config
    spec = replace(encoder_spec({**config, "model_type": "roberta"}), model_type="longformer")
    windows = attention_windows(config, spec.depth)
    n_build = request.n_build
    g = new_graph()
    x = embeddings(g, spec, w, ATTENTION_MASK)
    states = encoder_layers(
        g,
        w,
        x,
        n_build,
        numbered(BERT_LAYER),
        spec,
        fused=request.fused,
        extra_bias=window_bias(g, windows),
    )
    return request.finish(g, states, spec.hidden)
