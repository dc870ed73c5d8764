"""A small builder over ``onnx.helper`` for the encoder graphs: named ops, initializer weights."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from typing import Any, Protocol

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ..errors import InputValueError

OPSET = 17
"""ONNX opset of the graphs: 17 has a native LayerNormalization."""

IR_VERSION = 8
"""The IR version that goes with opset 17, readable by every onnxruntime the package supports."""

MS_DOMAIN = "com.microsoft"
"""ONNX Runtime's contrib-op domain (of the fused ``Attention`` that ``build_model`` can write)."""

FLOAT32_MIN = float(np.finfo(np.float32).min)
"""The additive attention bias of padding keys, as in transformers' eager code."""


class WeightSink(Protocol):
    """Where a builder puts its large initializers instead of holding them (``writer``'s
    :class:`~.writer.ExternalDataFile`): it writes the array out and returns the tensor that
    refers to it."""

    def accepts(self, array: np.ndarray) -> bool:
        """Whether ``array`` goes to the sink (large enough)."""
        ...

    def tensor(self, name: str, array: np.ndarray) -> onnx.TensorProto:
        """Write ``array`` out; the initializer named ``name`` that refers to it."""
        ...


TRANSPOSE_ROWS = 64
"""Rows of the source a transposed copy takes at a time (:func:`contiguous`)."""


def contiguous(array: np.ndarray) -> np.ndarray:
    """``array`` C-contiguous: as it is when it already is; a transposed view of a C-contiguous
    matrix (a Linear weight's ``W.T``) copied :data:`TRANSPOSE_ROWS` source rows at a time,
    which keeps both sides in cache (5x NumPy's element-order copy for a 4,096 x 1,024
    matrix: 1.2 GB of roberta-large's projections took seconds to transpose); the same values.

    Examples
    --------
    >>> w = np.arange(12, dtype=np.float32).reshape(3, 4)
    >>> t = contiguous(w.T)
    >>> t.flags.c_contiguous, bool((t == w.T).all())
    (True, True)
    """
    if array.flags.c_contiguous and array.ndim:  # (NumPy's copy makes a 0-d array 1-d)
        return array
    if array.ndim == 2 and array.T.flags.c_contiguous:
        source = array.T  # (rows, cols), stored row by row
        out = np.empty(array.shape, dtype=array.dtype)
        for start in range(0, source.shape[0], TRANSPOSE_ROWS):
            out[:, start : start + TRANSPOSE_ROWS] = source[start : start + TRANSPOSE_ROWS].T
        return out
    return np.ascontiguousarray(array)


_SINK: ContextVar[WeightSink | None] = ContextVar("rust_bertscore_weight_sink", default=None)


@contextlib.contextmanager
def streaming_weights(sink: WeightSink) -> Iterator[WeightSink]:
    """Within the block, every :class:`GraphBuilder` made sends the initializers ``sink``
    accepts to it as they are added (so a graph is never held whole in memory)."""
    token = _SINK.set(sink)
    try:
        yield sink
    finally:
        _SINK.reset(token)


class GraphBuilder:
    """Collects nodes and initializers; every op returns the name of its (single) output."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._used: set[str] = set()
        self._scalars: dict[tuple[str, float | int], str] = {}
        self.domains: set[str] = set()
        self.sink = _SINK.get()

    def fresh(self, hint: str) -> str:
        """Return a name not used yet, ``hint`` if possible."""
        name, i = hint, 1
        while name in self._used:
            name, i = f"{hint}_{i}", i + 1
        self._used.add(name)
        return name

    def weight(self, name: str, array: np.ndarray) -> str:
        """Add ``array`` as an initializer (float32 unless integer) and return its name; a
        transposed view (``weight.T``) is copied out block by block (:func:`contiguous`)."""
        if array.dtype.kind == "f":
            array = contiguous(array.astype(np.float32, copy=False))
        name = self.fresh(name)
        if self.sink is not None and self.sink.accepts(array):
            self.initializers.append(self.sink.tensor(name, array))
        else:
            self.initializers.append(numpy_helper.from_array(array, name))
        return name

    def scalar(self, value: float | int, dtype: str = "float32") -> str:
        """A shared 0-d constant."""
        key = (dtype, value)
        if key not in self._scalars:
            self._scalars[key] = self.weight(f"const_{dtype}_{value}", np.array(value, dtype=dtype))
        return self._scalars[key]

    def ints(self, name: str, values: Sequence[int]) -> str:
        """A 1-d int64 constant (shapes, axes, slice bounds)."""
        return self.weight(name, np.asarray(values, dtype=np.int64))

    def op(
        self, op_type: str, inputs: Sequence[str], name: str, *, domain: str = "", **attrs: Any
    ) -> str:
        """Append one node (of ``domain``, default ONNX's) and return its output name."""
        out = self.fresh(name)
        self.nodes.append(
            helper.make_node(op_type, list(inputs), [out], name=out, domain=domain, **attrs)
        )
        if domain:
            self.domains.add(domain)
        return out

    # ---- composite layers -------------------------------------------------------------------

    def linear(self, x: str, weight: np.ndarray, bias: np.ndarray, name: str) -> str:
        """``x W^T + b`` for a PyTorch Linear weight ``(out, in)``: MatMul then Add."""
        w = self.weight(f"{name}.weight_t", weight.T)
        b = self.weight(f"{name}.bias", bias)
        return self.op("Add", [self.op("MatMul", [x, w], f"{name}/MatMul"), b], f"{name}/Add")

    def layer_norm(
        self, x: str, weight: np.ndarray, bias: np.ndarray, eps: float, name: str
    ) -> str:
        """LayerNormalization over the last axis."""
        w = self.weight(f"{name}.weight", weight)
        b = self.weight(f"{name}.bias", bias)
        return self.op("LayerNormalization", [x, w, b], name, axis=-1, epsilon=float(eps))

    def activation(self, x: str, kind: str, name: str) -> str:
        """The FFN activation named by ``hidden_act`` / ``activation`` in config.json."""
        if kind == "gelu":
            # x * 0.5 * (1 + erf(x / sqrt 2)): the pattern ORT's GeluFusion turns into one Gelu.
            d = self.op("Div", [x, self.scalar(math.sqrt(2.0))], f"{name}/Div")
            e = self.op("Erf", [d], f"{name}/Erf")
            a = self.op("Add", [e, self.scalar(1.0)], f"{name}/Add")
            m = self.op("Mul", [x, a], f"{name}/Mul")
            return self.op("Mul", [m, self.scalar(0.5)], f"{name}/Mul_half")
        if kind in ("gelu_new", "gelu_pytorch_tanh"):
            # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
            cube = self.op("Pow", [x, self.scalar(3.0)], f"{name}/Pow")
            inner = self.op("Mul", [cube, self.scalar(0.044715)], f"{name}/Mul_c")
            inner = self.op("Add", [x, inner], f"{name}/Add_x")
            inner = self.op("Mul", [inner, self.scalar(math.sqrt(2.0 / math.pi))], f"{name}/Mul_k")
            t = self.op("Tanh", [inner], f"{name}/Tanh")
            t = self.op("Add", [t, self.scalar(1.0)], f"{name}/Add_1")
            h = self.op("Mul", [x, self.scalar(0.5)], f"{name}/Mul_half")
            return self.op("Mul", [h, t], f"{name}/Mul")
        if kind == "relu":
            return self.op("Relu", [x], f"{name}/Relu")
        if kind in ("silu", "swish"):
            return self.op("Mul", [x, self.op("Sigmoid", [x], f"{name}/Sigmoid")], f"{name}/Mul")
        raise InputValueError(
            f"unsupported activation {kind!r}: expected gelu, gelu_new, gelu_pytorch_tanh, relu "
            "or silu"
        )

    def model(
        self,
        inputs: Sequence[onnx.ValueInfoProto],
        outputs: Sequence[onnx.ValueInfoProto],
        doc: str,
    ) -> onnx.ModelProto:
        """Wrap the nodes into a model of :data:`OPSET`."""
        graph = helper.make_graph(self.nodes, "encoder", list(inputs), list(outputs))
        model = helper.make_model(
            graph,
            opset_imports=[
                helper.make_opsetid("", OPSET),
                *(helper.make_opsetid(d, 1) for d in sorted(self.domains)),
            ],
            ir_version=IR_VERSION,
            producer_name="rust_bertscore.convert",
            doc_string=doc,
        )
        # Move the weights in one at a time (protobuf copies on append): the builder's copy of
        # each is dropped as soon as the model has it, so a large model is never held twice.
        weights, self.initializers = self.initializers, []
        weights.reverse()
        while weights:
            model.graph.initializer.append(weights.pop())
        return model


def int64_input(name: str) -> onnx.ValueInfoProto:
    """A ``[batch, seq]`` int64 graph input."""
    return helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "seq"])


def float_output(name: str, shape: Sequence[int | str]) -> onnx.ValueInfoProto:
    """A float32 graph output of the given (partly symbolic) shape."""
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))
