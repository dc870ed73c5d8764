"""Writing a graph to disk: one ``.onnx`` file streamed one weight at a time, or the graph
with its weights in a ``.data`` file beside it when they pass protobuf's 2 GiB limit."""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import BinaryIO

import numpy as np
import onnx
from onnx import helper

EXTERNAL_DATA_THRESHOLD = 2**31 - 2**27
"""Weight bytes above which graphs are saved with external data (protobuf caps a file at 2 GiB)."""


def weight_bytes(model: onnx.ModelProto) -> int:
    """The bytes of ``model``'s initializers."""
    return sum(len(t.raw_data) for t in model.graph.initializer)


EXTERNAL_MIN_BYTES = 1024
"""Initializers from this size on go to the external data file (smaller ones stay inline)."""


class ExternalDataFile:
    """The ``.data`` file of a graph whose weights are written out as they are built
    (``graph.streaming_weights``): each accepted array is appended (at an offset aligned to
    4,096 bytes, so that a runtime may map it) and becomes an initializer that names the file,
    the offset and the length, as ``onnx.save_model(save_as_external_data=True)`` writes them."""

    def __init__(self, path: Path, min_bytes: int = EXTERNAL_MIN_BYTES) -> None:
        self.path = Path(path)
        self.location = self.path.name
        self.min_bytes = min_bytes
        self.bytes_written = 0
        self._handle: BinaryIO | None = open(self.path, "wb")  # noqa: SIM115 - closed by close()

    def accepts(self, array: np.ndarray) -> bool:
        """Whether ``array`` is large enough to go to the file."""
        return array.nbytes >= self.min_bytes

    def tensor(self, name: str, array: np.ndarray) -> onnx.TensorProto:
        """Append ``array`` (little-endian) and return the initializer ``name`` referring to it."""
        if self._handle is None:
            raise ValueError(f"{self.path} is closed")
        array = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
        offset = -(-self.bytes_written // 4096) * 4096
        if offset > self.bytes_written:
            self._handle.write(b"\0" * (offset - self.bytes_written))
        self._handle.write(array.data.cast("B"))
        self.bytes_written = offset + array.nbytes
        tensor = onnx.TensorProto()
        tensor.name = name
        tensor.data_type = helper.np_dtype_to_tensor_dtype(array.dtype)
        tensor.dims.extend(array.shape)
        tensor.data_location = onnx.TensorProto.EXTERNAL
        for key, value in (
            ("location", self.location),
            ("offset", str(offset)),
            ("length", str(array.nbytes)),
        ):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
        return tensor

    def close(self) -> None:
        """Flush and close the file."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def __enter__(self) -> ExternalDataFile:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def has_external_tensors(model: onnx.ModelProto) -> bool:
    """Whether some initializer of ``model`` lives in an external data file already."""
    return any(t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer)


def save_model(model: onnx.ModelProto, path: Path, external: bool) -> None:
    """Write ``model`` to ``path``, its weights in ``<path name>.data`` when ``external`` (a
    graph built with its weights streamed out has that file already: only the graph is
    written)."""
    if external and has_external_tensors(model):
        with open(path, "wb") as handle:
            write_streamed(model, handle)
    elif external:
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
