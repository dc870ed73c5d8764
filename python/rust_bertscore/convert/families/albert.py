"""ALBERT as an ONNX graph: factorised embeddings and layer groups shared across depth."""

from __future__ import annotations

import dataclasses
from typing import Any

import onnx

from ...errors import InputValueError
from ..blocks import BuildRequest, attention_mask, new_graph
from ..contract import CheckpointError, LayerNames, float_field, int_field, model_depth
from .bert import EncoderSpec, bert_layer, embeddings

GROUP_PREFIX = "encoder.albert_layer_groups.{group}.albert_layers.{inner}."


def albert_layer_names(group: int, inner: int) -> LayerNames:
    """Where ALBERT keeps the tensors of layer ``inner`` of layer group ``group``."""
    return LayerNames(
        prefix=GROUP_PREFIX.format(group=group, inner=inner),
        query="attention.query",
        key="attention.key",
        value="attention.value",
        attn_out="attention.dense",
        attn_norm="attention.LayerNorm",
        ffn_in="ffn",
        ffn_out="ffn_output",
        ffn_norm="full_layer_layer_norm",
    )


def albert_spec(config: dict[str, Any]) -> EncoderSpec:
    """The sizes of an ALBERT checkpoint (``layers`` names group 0's first layer)."""
    position_type = config.get("position_embedding_type", "absolute")
    if position_type != "absolute":
        raise InputValueError(
            f"unsupported position_embedding_type {position_type!r} for model_type 'albert': "
            "only 'absolute' position embeddings are converted"
        )
    hidden = int_field(config, "hidden_size")
    spec = EncoderSpec(
        model_type="albert",
        family="albert",
        depth=model_depth(config),
        hidden=hidden,
        heads=int_field(config, "num_attention_heads"),
        intermediate=int_field(config, "intermediate_size"),
        embedding_size=int_field(config, "embedding_size"),
        vocab_size=int_field(config, "vocab_size"),
        n_positions=int_field(config, "max_position_embeddings"),
        type_vocab_size=int(config.get("type_vocab_size", 2)),
        layer_norm_eps=float_field(config, "layer_norm_eps", 1e-12),
        activation=str(config.get("hidden_act", "gelu_new")),
        pad_token_id=int(config.get("pad_token_id") or 0),
        layers=albert_layer_names(0, 0),
    )
    if spec.heads <= 0 or hidden % spec.heads:
        raise CheckpointError(
            f"hidden size {hidden} is not a multiple of the number of heads {spec.heads}"
        )
    if spec.type_vocab_size < 1:
        raise CheckpointError(f"type_vocab_size must be >= 1, got {spec.type_vocab_size}")
    return spec


def group_of_layer(i: int, n_layers: int, n_groups: int) -> int:
    """The layer group ALBERT applies at depth ``i`` of a model run with ``n_layers`` layers.

    transformers computes ``int(i / (n_layers / n_groups))`` from the *current*
    ``config.num_hidden_layers``, which bert_score lowers to ``num_layers`` to truncate the model:
    with several groups, a truncated model spreads them over its fewer layers as this does.
    """
    return int(i / (n_layers / n_groups))


def build_albert(request: BuildRequest) -> onnx.ModelProto:
    """ALBERT's graph (see ``convert.export_onnx`` for the contract).

    Hidden state 0 is the embeddings (word + position + token type 0, LayerNorm over
    ``embedding_size``) projected to ``hidden_size`` by ``embedding_hidden_mapping_in``; each
    further state applies one layer group (its ``inner_group_num`` layers), the groups being
    stored once and shared across depth.
    """
    w, config = request.weights, request.config
    spec = albert_spec(config)
    n_groups = int_field(config, "num_hidden_groups") if "num_hidden_groups" in config else 1
    n_inner = int_field(config, "inner_group_num") if "inner_group_num" in config else 1
    if n_groups < 1 or n_inner < 1:
        raise CheckpointError(
            f"num_hidden_groups ({n_groups}) and inner_group_num ({n_inner}) must be >= 1"
        )
    n_build = request.n_build
    g = new_graph(share_weights=True)
    x = embeddings(g, dataclasses.replace(spec, hidden=spec.embedding_size), w, "attention_mask")
    x = g.linear(
        x,
        w.get("encoder.embedding_hidden_mapping_in.weight", (spec.hidden, spec.embedding_size)),
        w.get("encoder.embedding_hidden_mapping_in.bias", (spec.hidden,)),
        "encoder.embedding_hidden_mapping_in",
    )
    states = [x]
    if n_build:
        bias = attention_mask(g, request.fused)
        for i in range(n_build):
            group = group_of_layer(i, n_build, n_groups)
            for inner in range(n_inner):
                layer_spec = dataclasses.replace(spec, layers=albert_layer_names(group, inner))
                x = bert_layer(g, layer_spec, w, x, bias, i, fused=request.fused)
            states.append(x)
    return request.finish(g, states, spec.hidden)


def ffn_out_nodes(i: int) -> tuple[str, ...]:
    """The FFN output projection of ALBERT's ``i``-th layer: its one shared layer (one group of
    one layer, as published) applied at depth ``i`` is node ``.../MatMul``, then
    ``.../MatMul_1``, ..."""
    albert = f"{GROUP_PREFIX.format(group=0, inner=0)}ffn_output/MatMul"
    return (albert if i == 0 else f"{albert}_{i}",)
