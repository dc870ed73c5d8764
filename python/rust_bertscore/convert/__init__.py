"""Torch-free conversion of Hugging Face encoder checkpoints to ONNX graphs.

Reads ``config.json`` and safetensors weights (single file or sharded) with ``safetensors``'
NumPy backend and writes an fp32 ONNX graph (opset 17, weights as initializers) that reproduces
transformers' eager forward pass of the BERT, RoBERTa/XLM-RoBERTa, DistilBERT and DeBERTa (v1,
v2/v3) families, and of the T5 / mT5 / ByT5 encoder (see ``_t5.py``); the further families
(ALBERT, MPNet, BART/mBART, Longformer, Pegasus, Blenderbot, LED, ProphetNet, SqueezeBERT, BigBird
and BERT with relative positions) are listed in ``_families.py`` and ``_checkpoint.py``.

Graph contract
--------------
Inputs
    ``input_ids`` int64 ``[batch, seq]`` and ``attention_mask`` int64 ``[batch, seq]``
    (1 = real token, 0 = padding; padding at the end of each row).
Output of a truncated graph (``all_layers=False``)
    ``hidden_state`` float32 ``[batch, seq, hidden]``: hidden state ``num_layers``
    (0 = the embeddings output, k = the output of layer k).
Output with ``all_layers=True``
    ``hidden_states`` float32 ``[depth + 1, batch, seq, hidden]``: every hidden state of the
    whole model, ``num_layers`` notwithstanding (as bert_score does).

Padding keys get float32's most negative finite value as additive attention bias, so the outputs
of real tokens do not depend on padding; the outputs at padded positions are meaningless.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

import onnx

from ..atomic import write_files_atomic
from ._checkpoint import (
    SUPPORTED_FAMILIES,
    SUPPORTED_MODEL_TYPES,
    CheckpointError,
    load_config,
    max_positions,
    model_depth,
    model_family,
    weight_files,
    weights_fingerprint,
)
from ._deberta import rel_projection_nodes
from ._encoders import (
    ATTENTION_MASK,
    BERT_LAYER,
    DISTILBERT_LAYER,
    HIDDEN_STATE,
    HIDDEN_STATES,
    INPUT_IDS,
    build_model,
)
from ._families import ffn_out_nodes
from ._graph import OPSET
from ._t5 import T5_BLOCK, T5_FFN_OUT

__all__ = [
    "ATTENTION_MASK",
    "CONVERTER_VERSION",
    "EXTERNAL_DATA_THRESHOLD",
    "HIDDEN_STATE",
    "HIDDEN_STATES",
    "INPUT_IDS",
    "INT8_ACTIVATIONS",
    "INT8_FP32_LAYERS",
    "INT8_POLICY",
    "OPSET",
    "SUPPORTED_FAMILIES",
    "SUPPORTED_MODEL_TYPES",
    "CheckpointError",
    "build_model",
    "export_onnx",
    "int8_fp32_nodes",
    "load_config",
    "max_positions",
    "model_depth",
    "model_family",
    "quantize_int8",
    "weight_files",
    "weights_fingerprint",
]

CONVERTER_VERSION = "2"
"""Version of the graphs written here; bump it whenever they change (part of the cache key)."""

INT8_FP32_LAYERS = 2
"""The first this many layers keep their FFN output projection in fp32 under int8 (see
:func:`int8_fp32_nodes`)."""

INT8_ACTIVATIONS = "per-token"
"""How ``precision="int8"`` quantises activations (:func:`quantize_int8`'s ``activations``):
one scale per token. Mean |dF| against fp32 on the 3,003 WMT pairs with all-MiniLM-L6-v2:
0.0023-0.0028, against 0.0076-0.0080 with ONNX Runtime's one scale per tensor
(docs/performance.md, "int8 levers")."""

INT8_POLICY = "int8-v2:per-token-activations:7-bit-per-channel-weights:attention-fp32"
"""What ``precision="int8"`` does (:data:`INT8_ACTIVATIONS`: every MatMul with a constant weight
in int8 with per-token activation scales, the fused attention in fp32), named for cache keys;
change it with the policy. (``int8-v1`` was ONNX Runtime's per-tensor dynamic quantisation
with :func:`int8_fp32_nodes` kept in fp32: still :func:`quantize_int8`'s default.)"""

EXTERNAL_DATA_THRESHOLD = 2**31 - 2**27
"""Weight bytes above which graphs are saved with external data (protobuf caps a file at 2 GiB)."""


class _DropPreprocessingHint(logging.Filter):
    """Hide quantize_dynamic's root-logger advice to run ORT's pre-processing script first."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Please consider to run pre-processing")


def _weight_bytes(model: onnx.ModelProto) -> int:
    return sum(len(t.raw_data) for t in model.graph.initializer)


def _save(model: onnx.ModelProto, path: Path, external: bool) -> None:
    if external:
        onnx.save_model(
            model,
            str(path),
            save_as_external_data=True,
            all_tensors_to_one_file=True,
            location=f"{path.name}.data",
            size_threshold=1024,
        )
    else:
        with open(path, "wb") as handle:
            _write_streamed(model, handle)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


_GRAPH_FIELD = b"\x3a"  # ModelProto.graph: field 7, length-delimited
_INITIALIZER_FIELD = b"\x2a"  # GraphProto.initializer: field 5, length-delimited


def _write_streamed(model: onnx.ModelProto, handle: BinaryIO) -> None:
    """Write ``model`` as ``SerializeToString`` would, one initializer at a time.

    ``SerializeToString`` builds the whole file in memory: a second copy of the weights (1 GB
    for roberta-large). Protobuf parsers accept a message's fields in any order, so the model
    without its weights goes first and the graph's initializers are appended to the graph
    field one by one.
    """
    weights = list(model.graph.initializer)
    shell = onnx.ModelProto()
    _copy_fields(model, shell, skip="graph")
    shell_graph = onnx.GraphProto()
    _copy_fields(model.graph, shell_graph, skip="initializer")
    graph = shell_graph.SerializeToString()
    sizes = [t.ByteSize() for t in weights]
    graph_size = len(graph) + sum(1 + len(_varint(n)) + n for n in sizes)
    handle.write(shell.SerializeToString())
    handle.write(_GRAPH_FIELD + _varint(graph_size) + graph)
    for tensor, size in zip(weights, sizes):
        handle.write(_INITIALIZER_FIELD + _varint(size) + tensor.SerializeToString())


def _copy_fields(source, target, skip: str) -> None:
    """Copy the set fields of protobuf message ``source`` into ``target``, but ``skip``."""
    for field, value in source.ListFields():
        if field.name == skip:
            continue
        if isinstance(value, (list, tuple)) or hasattr(value, "extend"):
            getattr(target, field.name).extend(value)
        elif field.message_type is not None:
            getattr(target, field.name).CopyFrom(value)
        else:
            setattr(target, field.name, value)


def export_onnx(
    model_dir: str | os.PathLike[str],
    out_path: str | os.PathLike[str],
    num_layers: int | None,
    *,
    all_layers: bool = False,
    external_data: bool | None = None,
    fused: bool = False,
) -> Path:
    """Convert a checkpoint to an ONNX encoder graph and write it atomically.

    Parameters
    ----------
    model_dir
        Hugging Face checkpoint directory: ``config.json`` and ``model.safetensors`` (or shards
        listed in ``model.safetensors.index.json``).
    out_path
        Where to write the ``.onnx`` file (parent directories are created).
    num_layers
        Number of transformer layers to keep, ``0 <= num_layers <= depth``; the graph outputs
        ``hidden_state``, hidden state ``num_layers``. Ignored (may be None) with ``all_layers``.
    all_layers
        Build the whole model and output ``hidden_states`` = hidden states ``0..depth``.
    external_data
        Store the weights in ``<out_path name>.data`` beside the graph. Default: only when they
        exceed :data:`EXTERNAL_DATA_THRESHOLD` bytes.
    fused
        Write self-attention as ONNX Runtime's fused ``com.microsoft.Attention`` (what the
        scorer runs: faster, same numbers within 1e-5) rather than standard ONNX ops, which any
        ONNX runtime can load. DeBERTa graphs have no fused variant and ignore it.

    Returns
    -------
    pathlib.Path
        ``out_path``.

    Raises
    ------
    ValueError
        For an unsupported ``model_type`` or ``num_layers`` outside ``0..depth``.
    CheckpointError
        (a ValueError) For a corrupt or truncated weight file, a missing tensor or a shape that
        disagrees with ``config.json``; the message names the file and the tensor.
    FileNotFoundError
        If ``config.json`` or the weights are missing.
    """
    config = load_config(model_dir)
    doc = (
        f"rust_bertscore.convert {CONVERTER_VERSION}: model_type={config.get('model_type')!r}, "
        + ("all hidden states" if all_layers else f"hidden state {num_layers}")
        + (", fused attention" if fused else "")
    )
    model = build_model(model_dir, num_layers, all_layers=all_layers, doc=doc, fused=fused)
    external = (
        _weight_bytes(model) > EXTERNAL_DATA_THRESHOLD if external_data is None else external_data
    )
    return write_files_atomic(out_path, lambda path: _save(model, path, external))


def int8_fp32_nodes(graph: onnx.ModelProto, layers: int = INT8_FP32_LAYERS) -> list[str]:
    """The nodes :func:`quantize_int8` keeps in fp32 by default: the FFN output projections
    (BERT and MPNet ``output.dense``, DistilBERT ``ffn.lin2``, ALBERT ``ffn_output``, BART and
    mBART ``fc2``, T5 ``DenseReluDense.wo``) of the first ``layers`` layers, and in DeBERTa graphs
    the relative-embedding projections of every layer.

    Their input, the GELU output of early layers, has a few channels far larger than the rest,
    so one int8 scale per tensor leaves the others a handful of levels; these projections move
    BERTScore most when quantised (measured on all-MiniLM-L6-v2 over 3,003 WMT pairs: mean
    |dF| 0.0109 with everything quantised, 0.0078 with these two in fp32; see
    docs/performance.md).
    """
    present = {node.name for node in graph.graph.node}
    names = []
    for i in range(layers):
        for prefix, ffn_out in (
            *((layout.prefix, layout.ffn_out) for layout in (BERT_LAYER, DISTILBERT_LAYER)),
            (T5_BLOCK, T5_FFN_OUT),
        ):
            name = f"{prefix.format(i=i)}{ffn_out}/MatMul"
            if name in present:
                names.append(name)
        names.extend(name for name in ffn_out_nodes(i) if name in present)
    # DeBERTa: also the projections of the relative embeddings, in every layer.
    names.extend(rel_projection_nodes(node.name for node in graph.graph.node))
    return names


def _biased_attention_nodes(graph: onnx.ModelProto) -> list[str]:
    """Fused ``Attention`` nodes with an ``attention_bias`` input (T5's relative position bias):
    ORT's quantizer would turn them into ``QAttention``, which has no such input and would drop
    the bias, so they always stay fp32."""
    return [
        node.name
        for node in graph.graph.node
        if node.op_type == "Attention" and len(node.input) > 5 and node.input[5]
    ]


def quantize_int8(
    src_onnx: str | os.PathLike[str],
    dst_onnx: str | os.PathLike[str],
    *,
    per_channel: bool = True,
    nodes_to_exclude: Sequence[str] | None = None,
    op_types: Sequence[str] = ("MatMul", "Attention"),
    reduce_range: bool = False,
    activations: str = "per-tensor",
) -> Path:
    """Dynamically quantise a graph's weights to int8 with ONNX Runtime and write it atomically.

    Parameters
    ----------
    src_onnx
        An fp32 graph written by :func:`export_onnx` (fused or not).
    dst_onnx
        Where to write the quantised graph.
    per_channel
        One scale per output channel of each weight matrix (closer to fp32) instead of one per
        matrix.
    nodes_to_exclude
        Node names to keep in fp32 (e.g. ``"encoder.layer.0.intermediate.dense/MatMul"``).
        None: :func:`int8_fp32_nodes` (the policy :data:`INT8_POLICY` names); ``[]``:
        quantise every node of ``op_types``. Fused attention with a position bias (T5) always
        stays fp32: ONNX Runtime's ``QAttention`` cannot take the bias.
    op_types
        Op types to quantise. The default quantises the projections (MatMul with a constant
        weight, and the packed QKV projection of a fused ``Attention``) and keeps the embedding
        tables in fp32.
    reduce_range
        Quantise weights to 7 bits, which avoids saturation in the u8s8 kernels of CPUs without
        VNNI (but costs accuracy where there is none).
    activations
        ``"per-tensor"`` (default): ONNX Runtime's dynamic quantisation, one activation scale
        per tensor and batch. ``"per-token"`` (what ``precision="int8"`` uses,
        :data:`INT8_ACTIVATIONS`): every MatMul with a constant weight gets one
        activation scale per token (see ``_per_token.py``: mean |dF| 0.0028 against fp32 on
        all-MiniLM-L6-v2 over the WMT pairs, against 0.0076), the fused attention stays fp32;
        ``per_channel``, ``op_types`` and ``reduce_range`` do not apply, ``nodes_to_exclude``
        (None: none) names MatMuls to keep in fp32. The graph is rewritten in place, so
        quantising holds one copy of the model, not ONNX Runtime's three.

    Returns
    -------
    pathlib.Path
        ``dst_onnx``.
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic

    src = Path(src_onnx)
    if not src.is_file():
        raise FileNotFoundError(f"{src}: no such ONNX file")
    data = src.with_name(f"{src.name}.data")
    size = src.stat().st_size + (data.stat().st_size if data.is_file() else 0)
    if activations == "per-token":
        from ._per_token import per_token_matmuls

        model = onnx.load(str(src))
        per_token_matmuls(model, nodes_to_exclude or ())
        external = _weight_bytes(model) > EXTERNAL_DATA_THRESHOLD
        return write_files_atomic(dst_onnx, lambda path: _save(model, path, external))
    if activations != "per-tensor":
        raise ValueError(f"activations must be 'per-tensor' or 'per-token', got {activations!r}")
    graph = onnx.load(str(src), load_external_data=False)
    if nodes_to_exclude is None:
        nodes_to_exclude = int8_fp32_nodes(graph)
    nodes_to_exclude = [*nodes_to_exclude, *_biased_attention_nodes(graph)]
    del graph

    def write(path: Path) -> None:
        hint_filter = _DropPreprocessingHint()
        logging.getLogger().addFilter(hint_filter)
        try:
            _quantize(path)
        finally:
            logging.getLogger().removeFilter(hint_filter)

    def _quantize(path: Path) -> None:
        quantize_dynamic(
            model_input=src,
            model_output=path,
            op_types_to_quantize=list(op_types),
            per_channel=per_channel,
            reduce_range=reduce_range,
            weight_type=QuantType.QInt8,
            nodes_to_exclude=list(nodes_to_exclude or []),
            use_external_data_format=size > EXTERNAL_DATA_THRESHOLD,
            # Shape inference knows no com.microsoft op: outputs it cannot type are float.
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )

    return write_files_atomic(dst_onnx, write)
