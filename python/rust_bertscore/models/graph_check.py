"""The check a foreign ``.onnx`` graph passes before ONNX Runtime opens it.

A graph passed as ``model_type`` (an export, or any file that ends in ``.onnx``) comes from
outside: a ``Loop`` that never ends would hang the scorer, an output of another rank or type
would fail later with an untyped error, a custom operator would run code from a library ONNX
Runtime was told to load. :func:`check_graph` reads the graph's structure (``onnx.load`` without
its external data, the file bounded by protobuf's 2 GiB) and accepts only what the package's
converter writes: its operators (:data:`CONVERTER_OPS`), in the default ONNX domain or
``com.microsoft``, no subgraphs, no functions, the encoder's inputs and output, weights inline or
in a file beside the graph. Anything else is a ``ModelLoadError`` naming the file and what is
wrong.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import ModelLoadError
from ..support.boundary import library_path
from ..support.inputs import MAX_GRAPH_BYTES

__all__ = ["CONVERTER_OPS", "check_graph"]

MICROSOFT = "com.microsoft"

_DEFAULT_DOMAIN_OPS = """
    Abs Add Cast Clip Concat Conv Cos CumSum Div Einsum Equal Erf Expand Gather GatherElements
    Greater GreaterOrEqual Identity LayerNormalization Less Log MatMul Max Min Mul Neg Not Pad
    Pow QuantizeLinear Range ReduceMax ReduceMean ReduceMin ReduceSum Relu Reshape Shape Sigmoid
    Sin Slice Softmax Sqrt Squeeze Sub Tanh Transpose Unsqueeze Where
"""

CONVERTER_OPS = frozenset(
    {
        *(("", op) for op in _DEFAULT_DOMAIN_OPS.split()),
        (MICROSOFT, "Attention"),
        (MICROSOFT, "MatMulIntegerToFloat"),
    }
)
"""Every ``(domain, op_type)`` the converter writes (``""``: the default ONNX domain). Collected
by converting each tiny checkpoint of ``tests/data/reference/tiny/*``,
``tests/data/reference/more_families/*``, ``gte/*``, ``jina/jina`` (with and without its
``text-matching`` LoRA task) and ``nomic/*`` at every layer and with all layers, as
``convert.build_model(fused=False)`` (the exports' and OpenVINO's graphs),
``convert.build_model(fused=True)`` (the scorer's), ``convert.convert_fp16`` and
``convert.quantize_int8(activations=INT8_ACTIVATIONS)`` of the fused graph, and reading their
nodes' op types (converter version 2, onnx 1.23.2, onnxruntime 1.32.0). A converter that writes a
new operator adds it here (``tests/test_graph_cache_hostile.py`` converts them again)."""

INPUTS = ("input_ids", "attention_mask")
"""The encoder's inputs: int64, batch x sequence."""

OUTPUTS = {"hidden_state": 3, "hidden_states": 4}
"""The encoder's output, float32, and its rank: batch x sequence x hidden, or layers + 1 of
those for an all-layers graph."""


def _onnx() -> Any:
    import onnx  # a dependency of the converter: loaded when a graph is checked, not at import

    return onnx


def _fail(path: Path, what: str) -> ModelLoadError:
    return ModelLoadError(
        f"{path} is not an encoder graph rust-bertscore runs: {what}. Pass the model's "
        "checkpoint, or a graph written by `rust-bertscore export`"
    )


def _tensor(value: Any, onnx: Any) -> tuple[str, int | None]:
    """A graph input's or output's element type name and rank (None: no shape declared)."""
    kind = value.type.WhichOneof("value")
    if kind != "tensor_type":
        return (kind or "no type"), None
    tensor = value.type.tensor_type
    name = onnx.TensorProto.DataType.Name(tensor.elem_type) if tensor.elem_type else "undefined"
    rank = len(tensor.shape.dim) if tensor.HasField("shape") else None
    return name.lower(), rank


def _describe(kind: str, rank: int | None) -> str:
    return f"{kind} of rank {rank}" if rank is not None else f"{kind} without a shape"


def _check_nodes(path: Path, model: Any, onnx: Any) -> None:
    if len(model.functions):
        raise _fail(path, f"it defines functions ({model.functions[0].name!r})")
    domains = {op.domain for op in model.opset_import} - {"", "ai.onnx", MICROSOFT}
    if domains:
        raise _fail(path, f"it imports the operator domain {sorted(domains)[0]!r}")
    subgraph = (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
    for node in model.graph.node:
        domain = "" if node.domain == "ai.onnx" else node.domain
        name = f"{node.name!r} " if node.name else ""
        if domain not in ("", MICROSOFT):
            raise _fail(path, f"node {name}is {domain}.{node.op_type}, a custom operator")
        for attribute in node.attribute:
            if attribute.type in subgraph or attribute.HasField("g") or len(attribute.graphs):
                raise _fail(
                    path,
                    f"node {name}({node.op_type}) holds a subgraph in {attribute.name!r}: "
                    "control flow (Loop, Scan, If) is not run",
                )
        if (domain, node.op_type) not in CONVERTER_OPS:
            where = f"{domain}." if domain else ""
            raise _fail(
                path, f"node {name}is {where}{node.op_type}, not an operator the converter writes"
            )


def _check_io(path: Path, model: Any, onnx: Any) -> None:
    weights = {tensor.name for tensor in model.graph.initializer}
    inputs = [value for value in model.graph.input if value.name not in weights]
    names = sorted(value.name for value in inputs)
    if names != sorted(INPUTS):
        raise _fail(path, f"its inputs are {names}, expected {list(INPUTS)}")
    for value in inputs:
        kind, rank = _tensor(value, onnx)
        if (kind, rank) != ("int64", 2):
            raise _fail(
                path, f"input {value.name!r} is {_describe(kind, rank)}, expected int64 of rank 2"
            )
    outputs = [value.name for value in model.graph.output]
    if len(outputs) != 1 or outputs[0] not in OUTPUTS:
        raise _fail(
            path, f"its outputs are {outputs}, expected one of 'hidden_state' or 'hidden_states'"
        )
    kind, rank = _tensor(model.graph.output[0], onnx)
    want = OUTPUTS[outputs[0]]
    if (kind, rank) != ("float", want):
        raise _fail(
            path,
            f"output {outputs[0]!r} is {_describe(kind, rank)}, expected float32 of rank {want}",
        )


def _check_weights(path: Path, model: Any, onnx: Any) -> None:
    for tensor in model.graph.initializer:
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        location = {entry.key: entry.value for entry in tensor.external_data}.get("location", "")
        if not location or Path(location).name != location or location in (".", ".."):
            raise _fail(
                path,
                f"weight {tensor.name!r} is read from {location!r:.200}, not from a file beside "
                "the graph",
            )


def check_graph(path: str | Path) -> None:
    """Refuse a foreign ``.onnx`` graph the converter could not have written.

    Reads the graph's structure (not its external data) and checks that every node is one of
    :data:`CONVERTER_OPS` (the default ONNX domain or ``com.microsoft`` only), that no node holds
    a subgraph (``Loop``, ``Scan``, ``If``) and the model defines no functions, that its inputs
    are ``input_ids`` and ``attention_mask`` (int64, rank 2) and its one output
    ``hidden_state`` (float32, rank 3) or ``hidden_states`` (float32, rank 4), and that weights
    in external data lie in a file beside it.

    Parameters
    ----------
    path : str or Path
        The ``.onnx`` file.

    Raises
    ------
    ModelLoadError
        Naming the file and what is wrong: over ``support.inputs.MAX_GRAPH_BYTES``, not a
        regular file, not an ONNX model, or anything the checks above refuse.
    FileNotFoundError
        When there is no such file.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from rust_bertscore.models.graph_check import check_graph
    >>> from rust_bertscore import ModelLoadError
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     graph = Path(tmp) / "g.onnx"
    ...     _ = graph.write_bytes(b"not a graph")
    ...     try:
    ...         check_graph(graph)
    ...     except ModelLoadError as e:
    ...         print("not an ONNX model" in str(e))
    True
    """
    path = Path(path)
    onnx = _onnx()
    with library_path(path, max_bytes=MAX_GRAPH_BYTES, error=ModelLoadError) as name:
        try:
            model = onnx.load(name, load_external_data=False)
        except Exception as error:  # protobuf's DecodeError and others: untyped
            what = f"{type(error).__name__}: {error!s:.200}"
            raise _fail(path, f"not an ONNX model ({what})") from None
    _check_nodes(path, model, onnx)
    _check_io(path, model, onnx)
    _check_weights(path, model, onnx)
