"""Writing a graph to disk: one ``.onnx`` file streamed one weight at a time, or the graph
with its weights in a ``.data`` file beside it when they pass protobuf's 2 GiB limit."""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

import onnx

EXTERNAL_DATA_THRESHOLD = 2**31 - 2**27
"""Weight bytes above which graphs are saved with external data (protobuf caps a file at 2 GiB)."""


def weight_bytes(model: onnx.ModelProto) -> int:
    """The bytes of ``model``'s initializers."""
    return sum(len(t.raw_data) for t in model.graph.initializer)


def save_model(model: onnx.ModelProto, path: Path, external: bool) -> None:
    """Write ``model`` to ``path``, its weights in ``<path name>.data`` when ``external``."""
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
            write_streamed(model, handle)


def varint(value: int) -> bytes:
    """``value`` as a protobuf base-128 varint."""
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


_GRAPH_FIELD = b"\x3a"  # ModelProto.graph: field 7, length-delimited
_INITIALIZER_FIELD = b"\x2a"  # GraphProto.initializer: field 5, length-delimited


def write_streamed(model: onnx.ModelProto, handle: BinaryIO) -> None:
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
    graph_size = len(graph) + sum(1 + len(varint(n)) + n for n in sizes)
    handle.write(shell.SerializeToString())
    handle.write(_GRAPH_FIELD + varint(graph_size) + graph)
    for tensor, size in zip(weights, sizes):
        handle.write(_INITIALIZER_FIELD + varint(size) + tensor.SerializeToString())


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
