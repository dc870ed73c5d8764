"""SqueezeBERT (``model_type`` "squeezebert") as an ONNX graph.

SqueezeBERT is BERT's post-LayerNorm encoder computed in ``[batch, channels, seq]`` layout with
kernel-size-1 ``Conv1d`` layers in place of the Linear projections, some of them grouped
(``q_groups``, ``k_groups``, ``v_groups``, ``post_attention_groups``, ``intermediate_groups``,
``output_groups``). A 1x1 convolution with ``G`` groups is a Linear whose weight is block
diagonal: output channel ``o`` of group ``o // (out / G)`` reads only that group's input
channels. The converter expands each conv weight ``(out, in / G, 1)`` into that dense
``(out, in)`` matrix and builds BERT's layer (``blocks.transformer_layer``): attention heads
split the channels as BERT's do, ``post_attention`` is ``LayerNorm(conv(context) + x)``, then
``LayerNorm(conv(act(conv(h))) + h)``. Embeddings are BERT's (word + position + token type 0,
LayerNorm). Keys may sit under ``transformer.`` (``SqueezeBertForMaskedLM``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import onnx

from ..blocks import BuildRequest, encoder_layers, new_graph
from ..checkpoint import WeightStore
from ..contract import ATTENTION_MASK, CheckpointError, LayerNames, int_field, numbered
from .bert import embeddings, encoder_spec

SQUEEZEBERT_LAYER = LayerNames(
    prefix="encoder.layers.{i}.",
    query="attention.query",
    key="attention.key",
    value="attention.value",
    attn_out="post_attention.conv1d",
    attn_norm="post_attention.layernorm",
    ffn_in="intermediate.conv1d",
    ffn_out="output.conv1d",
    ffn_norm="output.layernorm",
)

_GROUP_FIELDS = {
    "attention.query": "q_groups",
    "attention.key": "k_groups",
    "attention.value": "v_groups",
    "post_attention.conv1d": "post_attention_groups",
    "intermediate.conv1d": "intermediate_groups",
    "output.conv1d": "output_groups",
}


def block_diagonal(conv: np.ndarray, groups: int) -> np.ndarray:
    """The dense ``(out, in)`` Linear weight of a kernel-size-1 Conv1d weight ``(out, in/G, 1)``
    with ``G = groups``."""
    out_ch, in_per_group, _ = conv.shape
    out_per_group = out_ch // groups
    dense = np.zeros((out_ch, in_per_group * groups), dtype=np.float32)
    for g in range(groups):
        rows = slice(g * out_per_group, (g + 1) * out_per_group)
        cols = slice(g * in_per_group, (g + 1) * in_per_group)
        dense[rows, cols] = conv[rows, :, 0]
    return dense


class SqueezeBertWeights:
    """A :class:`WeightStore` view that reads bare or ``transformer.``-prefixed keys and serves
    the conv weights of the layers as dense Linear weights."""

    def __init__(self, store: WeightStore, groups: dict[str, int]) -> None:
        self.store = store
        self.groups = groups
        self.files = store.files

    def _key(self, name: str) -> str:
        prefixed = f"transformer.{name}"
        return prefixed if name not in self.store and prefixed in self.store else name

    def __contains__(self, name: str) -> bool:
        return name in self.store or f"transformer.{name}" in self.store

    def get(self, name: str, shape: Sequence[int]) -> np.ndarray:
        part = next((p for p in _GROUP_FIELDS if name.endswith(f".{p}.weight")), None)
        if part is None or len(shape) != 2:
            return self.store.get(self._key(name), shape)
        groups = self.groups[_GROUP_FIELDS[part]]
        out_ch, in_ch = shape
        conv = self.store.get(self._key(name), (out_ch, in_ch // groups, 1))
        return block_diagonal(conv, groups)


def squeezebert_groups(config: dict[str, Any], hidden: int, intermediate: int) -> dict[str, int]:
    """The group counts of config.json (each defaults to 1), checked against the widths.

    Raises
    ------
    CheckpointError
        For a count that is not a positive integer dividing its conv's channels.
    """
    groups = {}
    for part, field in _GROUP_FIELDS.items():
        value = int_field(config, field) if field in config else 1
        cin = intermediate if part == "output.conv1d" else hidden
        cout = intermediate if part == "intermediate.conv1d" else hidden
        if value <= 0 or cin % value or cout % value:
            raise CheckpointError(
                f"config field {field!r} is {value}: it must divide the conv's {cin} input and "
                f"{cout} output channels"
            )
        groups[field] = value
    return groups


def build_squeezebert(request: BuildRequest) -> onnx.ModelProto:
    """The graph of a SqueezeBERT checkpoint (see ``convert.export_onnx``)."""
    w, config = request.weights, request.config
    spec = replace(encoder_spec({**config, "model_type": "bert"}), model_type="squeezebert")
    embedding_size = config.get("embedding_size", spec.hidden)
    if embedding_size != spec.hidden:
        raise CheckpointError(
            f"SqueezeBERT with embedding_size {embedding_size} != hidden_size {spec.hidden} is "
            "not converted (transformers requires them equal)"
        )
    weights = SqueezeBertWeights(w, squeezebert_groups(config, spec.hidden, spec.intermediate))
    n_build = request.n_build
    g = new_graph()
    x = embeddings(g, spec, weights, ATTENTION_MASK)  # type: ignore[arg-type]
    states = encoder_layers(
        g,
        weights,  # type: ignore[arg-type]
        x,
        n_build,
        numbered(SQUEEZEBERT_LAYER),
        spec,
        fused=request.fused,  # type: ignore[arg-type]
    )
    return request.finish(g, states, spec.hidden)


def ffn_out_nodes(i: int) -> tuple[str, ...]:
    """The FFN output projection (``output.conv1d`` as a MatMul) of layer ``i``."""
    return (f"{SQUEEZEBERT_LAYER.prefix.format(i=i)}{SQUEEZEBERT_LAYER.ffn_out}/MatMul",)
