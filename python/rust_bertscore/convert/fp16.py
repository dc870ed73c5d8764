"""Half-precision graphs: :func:`to_fp16` rewrites an fp32 encoder graph so that its
projections, attention, convolutions and embedding tables run in float16, and keeps in float32
what float16 breaks.

Kept in float32 (:data:`FP32_OPS`): LayerNorm (``LayerNormalization``, and the statistics of a
decomposed norm: ``Pow``, ``ReduceMean``, ``Sqrt``: a sum of squares overflows float16's
65,504 on BERT, RoBERTa and DeBERTa activations), ``Softmax``, and every op fed by a float32
value, so the residual stream (the sum of a float16 projection and the float32 output of a
norm) stays float32 from one norm to the next. Float16 (:data:`FP16_OPS`): ``MatMul``, the fused
``Attention`` (ONNX Runtime's kernels accumulate its softmax in float32), ``Conv``, and
``Gather`` from a weight table; the other ops follow their inputs. Casts go where a value
crosses from one side to the other; inputs (int64 ids and mask) and the output (float32) are
what they were, so the graph keeps the converter's contract.

The rewrite is this package's own (no ``onnxruntime.transformers``) and runs on ONNX Runtime's
CPU provider as well as on CUDA (the CPU computes float16 ops in float32 after rounding their
inputs, which is what CI tests).
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ..errors import InputValueError
from ..support.atomic import write_files_atomic
from . import writer

FP16_POLICY = "fp16-v1:matmul-attention-conv-gather-fp16:norms-softmax-residual-fp32"
"""What ``precision="fp16"`` does, named for cache keys; change it with :func:`to_fp16`."""

FP16_OPS = frozenset({"MatMul", "Gemm", "Attention", "MultiHeadAttention", "Conv", "Einsum"})
"""Ops run in float16 whatever their inputs (``Gather`` too, when it reads a weight table)."""

FP32_OPS = frozenset(
    {
        "LayerNormalization",
        "SimplifiedLayerNormalization",
        "SkipLayerNormalization",
        "SkipSimplifiedLayerNormalization",
        "Softmax",
        "LogSoftmax",
        "Pow",
        "Sqrt",
        "Reciprocal",
        "ReduceMean",
        "ReduceSum",
        "ReduceSumSquare",
        "ReduceL2",
        "CumSum",
        "Range",
    }
)
"""Ops kept in float32 whatever their inputs."""

FP16_MAX = float(np.finfo(np.float16).max)

_INT64_OUT = frozenset({"Shape", "Size", "NonZero", "ArgMax", "ArgMin"})
_BOOL_OUT = frozenset(
    {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Not", "And", "Or", "Xor"}
    | {"IsNaN", "IsInf"}
)
_FLOAT = TensorProto.FLOAT
_HALF = TensorProto.FLOAT16


def _output_types(node: onnx.NodeProto, types: dict[str, int]) -> list[int | None]:
    """The element types of ``node``'s outputs, from its inputs' (as ONNX's type rules give
    them for the ops the converter writes)."""
    op = node.op_type
    attrs = {a.name: a for a in node.attribute}
    if op == "Cast":
        kind: int | None = attrs["to"].i
    elif op in _INT64_OUT:
        kind = TensorProto.INT64
    elif op in _BOOL_OUT:
        kind = TensorProto.BOOL
    elif op == "Constant":
        kind = attrs["value"].t.data_type if "value" in attrs else None
    elif op == "ConstantOfShape":
        kind = attrs["value"].t.data_type if "value" in attrs else _FLOAT
    elif op == "Where":
        kind = types.get(node.input[1])
    else:
        kind = next((types[name] for name in node.input if name in types), None)
    kinds: list[int | None] = [kind] * len(node.output)
    if op == "TopK" and len(kinds) > 1:
        kinds[1] = TensorProto.INT64
    return kinds


def to_fp16(model: onnx.ModelProto) -> onnx.ModelProto:
    """Rewrite ``model`` (an fp32 encoder graph) in place to float16 with float32 islands.

    Parameters
    ----------
    model : onnx.ModelProto
        A graph written by the converter (fused or not, one layer or all), weights inside.

    Returns
    -------
    onnx.ModelProto
        ``model``, with float16 weights for the ops that run in float16, Casts between the two
        sides, and its inputs and outputs as they were.

    Examples
    --------
    >>> from rust_bertscore import DEFAULT_MODEL
    >>> from rust_bertscore.models.files import resolve_model
    >>> from rust_bertscore.convert import build_model, to_fp16
    >>> model = to_fp16(build_model(resolve_model(DEFAULT_MODEL).model_dir, 1, fused=True))
    >>> sorted({n.op_type for n in model.graph.node if n.op_type in ("Cast", "Attention")})
    ['Attention', 'Cast']
    >>> model.graph.output[0].type.tensor_type.elem_type == 1  # float32 out
    True
    """
    graph = model.graph
    if any(
        a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
        for n in graph.node
        for a in n.attribute
    ):
        raise InputValueError("to_fp16: graphs with subgraphs (If, Loop, Scan) are not supported")
    weights = {t.name: t for t in graph.initializer}
    types: dict[str, int] = {t.name: t.data_type for t in graph.initializer}
    types.update({v.name: v.type.tensor_type.elem_type for v in graph.input})
    half: dict[str, bool] = {}  # float tensors produced by nodes: True when float16
    plans: list[tuple[onnx.NodeProto, bool]] = []
    for node in graph.node:
        floats = [x for x in node.input if x and types.get(x) == _FLOAT]
        dynamic = [x for x in floats if x not in weights]
        if node.op_type in FP32_OPS or node.op_type == "Cast":
            in_half = False
        elif node.op_type in FP16_OPS or (
            node.op_type == "Gather" and node.input[0] in weights and floats
        ):
            in_half = True
        else:  # follow the inputs: float16 only when every float input computed is float16
            in_half = bool(dynamic) and all(half.get(x, False) for x in dynamic)
        plans.append((node, in_half))
        for name, kind in zip(node.output, _output_types(node, types)):
            if kind is not None:
                types[name] = kind
            if kind == _FLOAT:
                half[name] = in_half
    consumers: dict[str, set[bool]] = defaultdict(set)
    for node, in_half in plans:
        for x in node.input:
            if x in weights and types.get(x) == _FLOAT:
                consumers[x].add(in_half)
    # Weights: to float16 where only float16 ops read them, a float16 copy where both do.
    renamed: dict[str, str] = {}
    for name, sides in consumers.items():
        if True not in sides:
            continue
        values = np.clip(numpy_helper.to_array(weights[name]), -FP16_MAX, FP16_MAX)
        if False in sides:
            renamed[name] = f"{name}/fp16"
            graph.initializer.append(
                numpy_helper.from_array(values.astype(np.float16), renamed[name])
            )
        else:
            weights[name].CopyFrom(numpy_helper.from_array(values.astype(np.float16), name))
            types[name] = _HALF
    casts: dict[tuple[str, bool], str] = {}
    nodes: list[onnx.NodeProto] = []

    def cast(name: str, to_half: bool) -> str:
        key = (name, to_half)
        if key not in casts:
            casts[key] = f"{name}/to_{'fp16' if to_half else 'fp32'}"
            nodes.append(
                helper.make_node(
                    "Cast", [name], [casts[key]], name=casts[key], to=_HALF if to_half else _FLOAT
                )
            )
        return casts[key]

    for node, in_half in plans:
        for k, x in enumerate(node.input):
            if not x or types.get(x) not in (_FLOAT, _HALF):
                continue
            if x in weights:
                if in_half and x in renamed:
                    node.input[k] = renamed[x]
            elif half.get(x, False) != in_half:
                node.input[k] = cast(x, in_half)
        if in_half and node.op_type == "Cast":  # pragma: no cover - Casts run as float32
            raise AssertionError(node.name)
        nodes.append(node)
    for out in graph.output:  # the contract: float32 out
        if half.get(out.name, False):
            inner = f"{out.name}/fp16"
            for node in nodes:
                node.output[:] = [inner if o == out.name else o for o in node.output]
                node.input[:] = [inner if i == out.name else i for i in node.input]
            nodes.append(
                helper.make_node("Cast", [inner], [out.name], name=f"{out.name}/out", to=_FLOAT)
            )
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.value_info[:]  # intermediate types changed: ONNX Runtime infers them again
    return model


def convert_fp16(src_onnx: str | os.PathLike[str], dst_onnx: str | os.PathLike[str]) -> Path:
    """Write the float16 rewrite (:func:`to_fp16`) of the fp32 graph ``src_onnx`` to
    ``dst_onnx``, atomically.

    Examples
    --------
    >>> from rust_bertscore import DEFAULT_MODEL
    >>> from rust_bertscore.models.files import resolve_model
    >>> import pathlib, tempfile
    >>> from rust_bertscore.convert import convert_fp16, export_onnx
    >>> model_dir = resolve_model(DEFAULT_MODEL).model_dir
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     fp32 = export_onnx(model_dir, pathlib.Path(tmp) / "l1.onnx", 1, fused=True)
    ...     fp16 = convert_fp16(fp32, pathlib.Path(tmp) / "l1-fp16.onnx")
    ...     print(fp16.stat().st_size < 0.6 * fp32.stat().st_size)
    True
    """
    src = Path(src_onnx)
    if not src.is_file():
        raise FileNotFoundError(f"{src}: no such ONNX file")
    model = to_fp16(onnx.load(str(src)))  # boundary-exempt: export_onnx's graph, by contract
    external = writer.weight_bytes(model) > writer.EXTERNAL_DATA_THRESHOLD
    return write_files_atomic(dst_onnx, lambda path: writer.save_model(model, path, external))
