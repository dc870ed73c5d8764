"""The encoder families built outside ``_encoders``: ALBERT, MPNet, BART, mBART, Longformer,
Pegasus, Blenderbot(Small), SqueezeBERT, LED and ProphetNet."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import onnx

from ._albert import GROUP_PREFIX, build_albert
from ._bart import bart_layer_names, build_bart
from ._blocks import BuildRequest
from ._checkpoint import WeightStore, model_depth
from ._encoders import layers_to_build
from ._led import build_led
from ._longformer import build_longformer
from ._mpnet import build_mpnet
from ._pegasus import build_pegasus
from ._prophetnet import build_prophetnet
from ._squeezebert import SQUEEZEBERT_LAYER, build_squeezebert

Builder = Callable[[BuildRequest], onnx.ModelProto]

FAMILY_BUILDERS: dict[str, Builder] = {
    "albert": build_albert,
    "mpnet": build_mpnet,
    "bart": build_bart,
    "mbart": build_bart,
    "longformer": build_longformer,
    "pegasus": build_pegasus,
    "blenderbot": build_pegasus,
    "blenderbot-small": build_bart,
    "squeezebert": build_squeezebert,
    "led": build_led,
    "prophetnet": build_prophetnet,
}
"""Family (see ``SUPPORTED_MODEL_TYPES``) -> the function that builds its graph."""


def build_family(
    family: str,
    model_dir: str | os.PathLike[str],
    config: dict[str, Any],
    num_layers: int | None,
    *,
    all_layers: bool,
    doc: str,
    fused: bool,
) -> onnx.ModelProto:
    """Build the graph of a checkpoint of one of :data:`FAMILY_BUILDERS`' families."""
    n_build = layers_to_build(model_depth(config), num_layers, all_layers)  # before reading weights
    request = BuildRequest(
        WeightStore(model_dir), config, n_build, all_layers=all_layers, doc=doc, fused=fused
    )
    return FAMILY_BUILDERS[family](request)


def ffn_out_nodes(i: int) -> tuple[str, ...]:
    """Names the FFN output projection of layer ``i`` may have in these families' graphs
    (MPNet's are BERT's): BART/mBART ``fc2``; ALBERT's one shared layer, whose i-th application
    is node ``.../MatMul`` then ``.../MatMul_1``, ... (one group of one layer, as published)."""
    albert = f"{GROUP_PREFIX.format(group=0, inner=0)}ffn_output/MatMul"
    return (
        f"{bart_layer_names(i).prefix}{bart_layer_names(i).ffn_out}/MatMul",
        albert if i == 0 else f"{albert}_{i}",
        f"{SQUEEZEBERT_LAYER.prefix.format(i=i)}{SQUEEZEBERT_LAYER.ffn_out}/MatMul",
    )
