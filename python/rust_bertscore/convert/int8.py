"""int8 graphs: :func:`quantize_int8` (ONNX Runtime's dynamic quantisation, or per-token
activation scales, ``per_token.py``) and the nodes the per-tensor policy keeps in fp32
(:func:`int8_fp32_nodes`, from the families' facts in ``registry``)."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path

import onnx

from ..errors import InputValueError
from ..support.atomic import write_files_atomic
from . import writer
from .registry import always_fp32_nodes, ffn_out_nodes

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


class _DropPreprocessingHint(logging.Filter):
    """Hide quantize_dynamic's root-logger advice to run ORT's pre-processing script first."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Please consider to run pre-processing")


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

    Examples
    --------
    >>> from rust_bertscore import DEFAULT_MODEL
    >>> from rust_bertscore.models.files import resolve_model
    >>> model_dir = resolve_model(DEFAULT_MODEL).model_dir  # all-MiniLM-L6-v2's checkpoint
    >>> from rust_bertscore.convert import build_model, int8_fp32_nodes
    >>> int8_fp32_nodes(build_model(model_dir, 6))  # the first INT8_FP32_LAYERS = 2 layers
    ['encoder.layer.0.output.dense/MatMul', 'encoder.layer.1.output.dense/MatMul']
    """
    present = {node.name for node in graph.graph.node}
    names: list[str] = []
    for i in range(layers):
        names.extend(name for name in ffn_out_nodes(i) if name in present)
    # DeBERTa: also the projections of the relative embeddings, in every layer.
    names.extend(always_fp32_nodes(node.name for node in graph.graph.node))
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
        activation scale per token (see ``per_token.py``: mean |dF| 0.0028 against fp32 on
        all-MiniLM-L6-v2 over the WMT pairs, against 0.0076), the fused attention stays fp32;
        ``per_channel``, ``op_types`` and ``reduce_range`` do not apply, ``nodes_to_exclude``
        (None: none) names MatMuls to keep in fp32. The graph is rewritten in place, so
        quantising holds one copy of the model, not ONNX Runtime's three.

    Returns
    -------
    pathlib.Path
        ``dst_onnx``.

    Examples
    --------
    >>> from rust_bertscore import DEFAULT_MODEL
    >>> from rust_bertscore.models.files import resolve_model
    >>> model_dir = resolve_model(DEFAULT_MODEL).model_dir  # all-MiniLM-L6-v2's checkpoint
    >>> import pathlib, tempfile
    >>> from rust_bertscore.convert import export_onnx, quantize_int8
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     fp32 = export_onnx(model_dir, pathlib.Path(tmp) / "minilm-l1.onnx", 1)
    ...     int8 = quantize_int8(fp32, pathlib.Path(tmp) / "minilm-l1-int8.onnx")
    ...     print(int8.stat().st_size < fp32.stat().st_size)
    True
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic

    src = Path(src_onnx)
    if not src.is_file():
        raise FileNotFoundError(f"{src}: no such ONNX file")
    data = src.with_name(f"{src.name}.data")
    size = src.stat().st_size + (data.stat().st_size if data.is_file() else 0)
    if activations == "per-token":
        from .per_token import per_token_matmuls

        # The fp32 weights stay in their file: each is read when quantised, and those left in
        # fp32 (the embedding table) are copied from it while the int8 graph is written, so
        # the peak is about the int8 weights (writer.write_streamed).
        # boundary-exempt: export_onnx's graph, by contract (see src_onnx)
        model = onnx.load(str(src), load_external_data=False)
        per_token_matmuls(model, nodes_to_exclude or (), str(src.parent))
        writer.external_at(model, src.parent.resolve())
        external = writer.weight_bytes(model) > writer.EXTERNAL_DATA_THRESHOLD
        if external:  # too large for one file: read in, then written out to its own .data
            writer.inline_external(model)
        return write_files_atomic(dst_onnx, lambda path: writer.save_model(model, path, external))
    if activations != "per-tensor":
        raise InputValueError(
            f"activations must be 'per-tensor' or 'per-token', got {activations!r}"
        )
    graph = onnx.load(str(src), load_external_data=False)  # boundary-exempt: as above
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
            use_external_data_format=size > writer.EXTERNAL_DATA_THRESHOLD,
            # Shape inference knows no com.microsoft op: outputs it cannot type are float.
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )

    return write_files_atomic(dst_onnx, write)
