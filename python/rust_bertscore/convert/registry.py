"""Every ``model_type`` the converter handles -> its family's graph builder; :func:`build_model`.

The top of the converter: this module imports every family module (``families/``), and no
family module imports it. Each :class:`FamilyConverter` names the function that builds the graph
from a :class:`~.blocks.BuildRequest` and the per-family facts int8 needs (which node is a
layer's FFN output projection, which nodes always stay fp32).

Adding a family (say ``model_type`` ``"foo"``)
----------------------------------------------
1. ``rust_bertscore/models/configs.py``: ``"foo": "foo"`` in ``SUPPORTED_MODEL_TYPES``, ``"foo"``
   in ``SUPPORTED_FAMILIES``, and in ``model_depth`` / ``max_positions`` the config fields of its
   depth and position limit where they are not BERT's (``num_hidden_layers``,
   ``max_position_embeddings``). The tokenizer and ``supported_models()`` read these tables.
2. ``convert/families/foo.py``: ``build_foo(request: BuildRequest) -> onnx.ModelProto``, reading
   ``request.config`` (check it first), ``request.weights`` and ``request.n_build``, built from
   ``convert.blocks`` (``new_graph``, ``encoder_layers`` / ``transformer_layer``,
   ``self_attention``, ``stored_layer_norm``, ...) and ``convert.contract`` (``INPUT_IDS``,
   ``LayerNames``, ``int_field``, ...), ending with ``request.finish(g, states, hidden)``;
   if int8 should keep its first FFN output projections in fp32, ``ffn_out_nodes(i)`` naming
   layer ``i``'s. Import another family module only if the family extends it (as ALBERT does
   BERT); never this registry.
3. Here: ``"foo": FamilyConverter(foo.build_foo, foo.ffn_out_nodes)`` in :data:`CONVERTERS`.
4. If the checkpoint's keys carry a task-model prefix (``foo.``), add it to
   ``convert/checkpoint.py``'s ``_PREFIXES``; then tests (``tests/test_convert*.py``) against
   reference hidden states, and ``tests/test_model_configs.py`` checks that
   :data:`CONVERTERS` and ``SUPPORTED_MODEL_TYPES`` name the same model_types.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import onnx

from ..catalog.configs import (
    CONFIG_NAME,
    load_config,
    model_depth,
    model_family,
    remote_code_class,
)
from ..catalog.lora_tasks import LORA_MODEL_CLASS, with_lora_task
from ..errors import CheckpointError, InputValueError, RustBertScoreError
from .blocks import BuildRequest
from .contract import layers_to_build
from .families import (
    albert,
    bart,
    bert,
    bigbird,
    convbert,
    deberta,
    gemma3,
    gte,
    jina_lora,
    led,
    longformer,
    modernbert,
    mpnet,
    nomic_bert,
    pegasus,
    prophetnet,
    qwen3,
    squeezebert,
    t5,
    xlm,
    xlnet,
)

Builder = Callable[[BuildRequest], onnx.ModelProto]
"""Builds one checkpoint's graph (see ``convert.export_onnx`` for the contract)."""


def no_nodes(i: int) -> tuple[str, ...]:
    """No node names (a family without an int8 fp32 exception)."""
    return ()


def none_of(node_names: Iterable[str]) -> list[str]:
    """None of ``node_names``."""
    return []


@dataclass(frozen=True)
class FamilyConverter:
    """How the converter handles one ``model_type``."""

    build: Builder
    """Builds the graph."""
    ffn_out_nodes: Callable[[int], tuple[str, ...]] = no_nodes
    """Names layer ``i``'s FFN output projection (MatMul node) may have: int8's per-tensor
    policy keeps those of the first layers in fp32 (``convert.int8.int8_fp32_nodes``)."""
    fp32_nodes: Callable[[Iterable[str]], list[str]] = none_of
    """Among a graph's node names, those int8 keeps in fp32 in every layer."""


_BERT = FamilyConverter(bert.build_bert, bert.ffn_out_nodes)
_BART = FamilyConverter(bart.build_bart, bart.ffn_out_nodes)
_PEGASUS = FamilyConverter(pegasus.build_pegasus, bart.ffn_out_nodes)
_DEBERTA = FamilyConverter(deberta.build_deberta, fp32_nodes=deberta.rel_projection_nodes)
_T5 = FamilyConverter(t5.build_t5, t5.ffn_out_nodes)
_PROPHETNET = FamilyConverter(prophetnet.build_prophetnet)

CONVERTERS: dict[str, FamilyConverter] = {
    "bert": _BERT,
    "electra": _BERT,
    "roberta": _BERT,
    "xlm-roberta": _BERT,
    "distilbert": _BERT,
    "big_bird": FamilyConverter(bigbird.build_bigbird, bert.ffn_out_nodes),
    "albert": FamilyConverter(albert.build_albert, albert.ffn_out_nodes),
    "mpnet": FamilyConverter(mpnet.build_mpnet, bert.ffn_out_nodes),
    "longformer": FamilyConverter(longformer.build_longformer, bert.ffn_out_nodes),
    "squeezebert": FamilyConverter(squeezebert.build_squeezebert, squeezebert.ffn_out_nodes),
    "deberta": _DEBERTA,
    "deberta-v2": _DEBERTA,
    "t5": _T5,
    "mt5": _T5,
    "bart": _BART,
    "mbart": _BART,
    "blenderbot-small": _BART,
    "pegasus": _PEGASUS,
    "blenderbot": _PEGASUS,
    "led": FamilyConverter(led.build_led, bart.ffn_out_nodes),
    "prophetnet": _PROPHETNET,
    "xlm-prophetnet": _PROPHETNET,
    "xlnet": FamilyConverter(xlnet.build_xlnet, xlnet.ffn_out_nodes),
    "xlm": FamilyConverter(xlm.build_xlm, xlm.ffn_out_nodes),
    "convbert": FamilyConverter(convbert.build_convbert, bert.ffn_out_nodes),
    "modernbert": FamilyConverter(modernbert.build_modernbert, modernbert.ffn_out_nodes),
    "qwen3": FamilyConverter(qwen3.build_qwen3, qwen3.ffn_out_nodes),
    "gemma3_text": FamilyConverter(gemma3.build_gemma3, gemma3.ffn_out_nodes),
    "nomic_bert": FamilyConverter(nomic_bert.build_nomic_bert, nomic_bert.ffn_out_nodes),
    "new": FamilyConverter(gte.build_gte, gte.ffn_out_nodes),
}
"""``config.json``'s ``model_type`` (the keys of ``models.configs.SUPPORTED_MODEL_TYPES``) ->
its converter."""

_JINA = FamilyConverter(jina_lora.build_jina_lora, jina_lora.ffn_out_nodes)
"""jina-embeddings-v3 (``model_type`` "xlm-roberta", chosen by its ``auto_map``'s
``XLMRobertaLoRA``: :func:`converter_for`)."""


def converter_for(config: dict[str, object]) -> FamilyConverter:
    """The :class:`FamilyConverter` of a configuration's ``model_type``.

    Raises
    ------
    ValueError
        If the converter does not handle the ``model_type`` (the message lists those it does).
    """
    model_family(config)  # names the supported model_types when this one is not
    if remote_code_class(config) == LORA_MODEL_CLASS:
        return _JINA
    model_type = str(config["model_type"])
    if model_type not in CONVERTERS:
        raise InputValueError(
            f"model_type {model_type!r} has no graph builder in rust_bertscore.convert.registry "
            f"(builders: {', '.join(sorted(CONVERTERS))})"
        )
    return CONVERTERS[model_type]


def build_model(
    model_dir: str | os.PathLike[str],
    num_layers: int | None,
    *,
    all_layers: bool = False,
    doc: str = "",
    fused: bool = False,
    task: str | None = None,
) -> onnx.ModelProto:
    """Build a checkpoint's ONNX encoder in memory (see ``convert.export_onnx`` for the
    contract).

    Parameters
    ----------
    model_dir
        Hugging Face checkpoint directory.
    num_layers
        Hidden state to output, ``0..depth``; ignored with ``all_layers``.
    all_layers
        Output every hidden state ``0..depth`` of the whole model as ``hidden_states``.
    doc
        The model's ``doc_string``.
    fused
        Write each layer's self-attention as one ``com.microsoft.Attention`` node (ONNX Runtime
        only; faster) instead of standard ONNX ops. Families whose attention scores carry
        query-dependent position terms (DeBERTa, BERT ``relative_key``) ignore it.
    task
        A LoRA checkpoint's task adapter, merged into the weights (``catalog.lora_tasks``);
        None: the base weights.

    Returns
    -------
    onnx.ModelProto
        The graph, weights included as initializers.

    Examples
    --------
    >>> from rust_bertscore import DEFAULT_MODEL
    >>> from rust_bertscore.models.files import resolve_model
    >>> model_dir = resolve_model(DEFAULT_MODEL).model_dir  # all-MiniLM-L6-v2's checkpoint
    >>> from rust_bertscore.convert import HIDDEN_STATE, build_model
    >>> graph = build_model(model_dir, 2)
    >>> [o.name for o in graph.graph.output] == [HIDDEN_STATE]
    True
    """
    config = with_lora_task(load_config(model_dir), task, str(Path(model_dir) / CONFIG_NAME))
    converter = converter_for(config)
    n_build = layers_to_build(model_depth(config), num_layers, all_layers)  # before the weights
    request = BuildRequest(model_dir, config, n_build, all_layers=all_layers, doc=doc, fused=fused)
    config_path = Path(model_dir) / CONFIG_NAME
    try:
        return converter.build(request)
    except (CheckpointError, InputValueError) as exc:
        if str(Path(model_dir)) in str(exc):
            raise
        # a config.json field the family refuses (heads, type_vocab_size, an activation)
        raise type(exc)(f"{config_path}: {exc}") from exc
    except RustBertScoreError:
        raise
    except (TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError) as exc:
        # A config.json whose fields pass check_config_fields one by one but not together (a
        # hidden size the heads do not divide, a field of a kind no check knows).
        raise CheckpointError(
            f"{Path(model_dir) / CONFIG_NAME}: cannot build the encoder this config.json "
            f"describes ({type(exc).__name__}: {str(exc)[:200]})"
        ) from exc


def _unique(items: Iterable[Callable]) -> list[Callable]:
    out: list[Callable] = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


def ffn_out_nodes(i: int) -> list[str]:
    """Every name layer ``i``'s FFN output projection may have, over all families."""
    names: list[str] = []
    for nodes in _unique(c.ffn_out_nodes for c in CONVERTERS.values()):
        names.extend(n for n in nodes(i) if n not in names)
    return names


def always_fp32_nodes(node_names: Iterable[str]) -> list[str]:
    """Among ``node_names``, those some family keeps in fp32 in every layer under int8."""
    names = list(node_names)
    out: list[str] = []
    for pick in _unique(c.fp32_nodes for c in CONVERTERS.values()):
        out.extend(n for n in pick(names) if n not in out)
    return out


__all__ = [
    "CONVERTERS",
    "Builder",
    "FamilyConverter",
    "always_fp32_nodes",
    "build_model",
    "converter_for",
    "ffn_out_nodes",
]
