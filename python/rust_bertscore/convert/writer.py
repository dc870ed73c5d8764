"""Writing a graph to disk: one ``.onnx`` file streamed one weight at a time, or the graph
with its weights in a ``.data`` file beside it when they pass protobuf's 2 GiB limit."""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import BinaryIO

import numpy as np
import onnx
from onnx import helper

from ..errors import InputValueError
from ..support.boundary import NO_CAP, open_stream

EXTERNAL_DATA_THRESHOLD = 2**31 - 2**27
"""Weight bytes above which graphs are saved with external data (protobuf caps a file at 2 GiB)."""


def weight_bytes(model: onnx.ModelProto) -> int:
    """The bytes of ``model``'s initializers, those in external data included."""
    total = 0
    for tensor in model.graph.initializer:
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            info = {e.key: e.value for e in tensor.external_data}
            total += int(info.get("length", 0))
        else:
            total += len(tensor.raw_data)
    return total


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
            raise InputValueError(f"{self.path} is closed")
        array = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
        offset = -(-self.bytes_written // 4096) * 4096
        if offset > self.bytes_written:
            self._handle.write(b"\0" * (offset - self.bytes_written))
        self._handle.write(array.data.cast("B"))
        self.bytes_written = offset + array.nbytes
        tensor = _tensor_shell(name, array)
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


class HeldWeights:
    """The large initializers of a graph written as one ``.onnx`` file, kept as the builder's
    arrays (``graph.streaming_weights``) and written by :func:`write_streamed` from their own
    buffers: each accepted array becomes an initializer without data, filled in as the file is
    written. Turning them into ``TensorProto``s first copied every weight three times (the
    tensor's bytes, its append to the graph, its serialisation): about 4 s of roberta-large's
    conversion on a 2-core Xeon."""

    def __init__(self, min_bytes: int = EXTERNAL_MIN_BYTES) -> None:
        self.min_bytes = min_bytes
        self.arrays: dict[str, np.ndarray] = {}

    def accepts(self, array: np.ndarray) -> bool:
        """Whether ``array`` is large enough to be held rather than copied into a tensor."""
        return array.nbytes >= self.min_bytes

    def tensor(self, name: str, array: np.ndarray) -> onnx.TensorProto:
        """Hold ``array`` (little-endian) and return the initializer ``name`` it will fill."""
        if name in self.arrays:
            raise InputValueError(f"initializer {name!r} is held twice")
        self.arrays[name] = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
        return _tensor_shell(name, array)


def _tensor_shell(name: str, array: np.ndarray) -> onnx.TensorProto:
    """An initializer ``name`` with ``array``'s type and shape and no data yet."""
    tensor = onnx.TensorProto()
    tensor.name = name
    tensor.data_type = helper.np_dtype_to_tensor_dtype(array.dtype)
    tensor.dims.extend(array.shape)
    return tensor


def external_at(model: onnx.ModelProto, base_dir: Path) -> None:
    """Make the external-data locations of ``model``'s initializers absolute (under
    ``base_dir``), so that :func:`write_streamed` can copy them into another graph."""
    for tensor in model.graph.initializer:
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            for entry in tensor.external_data:
                if entry.key == "location":
                    entry.value = str(Path(base_dir) / entry.value)


def inline_external(model: onnx.ModelProto) -> None:
    """Read every initializer whose data lies in an external file (absolute ``location``, see
    :func:`external_at`) into the model."""
    for tensor in model.graph.initializer:
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            _, source, length = _tensor_parts(tensor, True)
            assert source is not None
            path, offset, _ = source
            with open_stream(path, max_bytes=NO_CAP, error=InputValueError) as handle:
                handle.seek(offset)
                raw = handle.read(length)
            if len(raw) != length:
                raise InputValueError(f"{path}: external data of {tensor.name!r} is truncated")
            tensor.raw_data = raw
            tensor.data_location = onnx.TensorProto.DEFAULT
            del tensor.external_data[:]


def has_external_tensors(model: onnx.ModelProto) -> bool:
    """Whether some initializer of ``model`` lives in an external data file already."""
    return any(t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer)


def save_model(
    model: onnx.ModelProto, path: Path, external: bool, held: HeldWeights | None = None
) -> None:
    """Write ``model`` to ``path``, its weights in ``<path name>.data`` when ``external`` (a
    graph built with its weights streamed out has that file already: only the graph is
    written); ``held``: the arrays of the initializers a :class:`HeldWeights` kept (one file)."""
    if held is not None:
        if external:
            raise InputValueError("held weights are written into the .onnx file, not beside it")
        with open(path, "wb") as handle:
            write_streamed(model, handle, held=held.arrays)
    elif external and has_external_tensors(model):
        with open(path, "wb") as handle:
            write_streamed(model, handle, inline_external=False)
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


def write_streamed(
    model: onnx.ModelProto,
    handle: BinaryIO,
    *,
    inline_external: bool = True,
    held: dict[str, np.ndarray] | None = None,
) -> None:
    """Write ``model`` as ``SerializeToString`` would, one initializer at a time.

    ``SerializeToString`` builds the whole file in memory: a second copy of the weights (1 GB
    for roberta-large). Protobuf parsers accept a message's fields in any order, so the model
    without its weights goes first and the graph's initializers are appended to the graph
    field one by one. An initializer named in ``held`` (:class:`HeldWeights`) is written with
    that array's bytes as its ``raw_data``, straight from the array's buffer.
    """
    held = held or {}
    weights = list(model.graph.initializer)
    shell = onnx.ModelProto()
    _copy_fields(model, shell, skip="graph")
    shell_graph = onnx.GraphProto()
    _copy_fields(model.graph, shell_graph, skip="initializer")
    graph = shell_graph.SerializeToString()
    parts = [
        _held_parts(t, held[t.name]) if t.name in held else _tensor_parts(t, inline_external)
        for t in weights
    ]
    missing = sorted(held.keys() - {t.name for t in weights})[:3]
    if missing:
        raise InputValueError(f"held weights {missing} are not initializers of the graph")
    sizes = [len(head) + copied for head, _, copied in parts]
    graph_size = len(graph) + sum(1 + len(varint(n)) + n for n in sizes)
    handle.write(shell.SerializeToString())
    handle.write(_GRAPH_FIELD + varint(graph_size) + graph)
    for (head, source, _), size in zip(parts, sizes):
        handle.write(_INITIALIZER_FIELD + varint(size) + head)
        if isinstance(source, np.ndarray):  # a held array, from its own buffer
            handle.write(source.reshape(-1).view(np.uint8).data)
        elif source is not None:  # the bytes of an external tensor, copied in chunks
            _copy_range(source, handle)


def _held_parts(tensor: onnx.TensorProto, array: np.ndarray) -> tuple[bytes, np.ndarray, int]:
    """(serialised head, the array, its bytes): the data-less initializer ``tensor`` that
    :class:`HeldWeights` made for ``array``, with the ``raw_data`` field's header."""
    if tensor.raw_data or tensor.data_location == onnx.TensorProto.EXTERNAL:
        raise InputValueError(f"initializer {tensor.name!r} has data and a held array")
    if tuple(tensor.dims) != array.shape:
        raise InputValueError(
            f"initializer {tensor.name!r}: dims {tuple(tensor.dims)}, held array {array.shape}"
        )
    return tensor.SerializeToString() + _RAW_DATA_FIELD + varint(array.nbytes), array, array.nbytes


_RAW_DATA_FIELD = b"\x4a"  # TensorProto.raw_data: field 9, length-delimited


def _tensor_parts(
    tensor: onnx.TensorProto, inline_external: bool
) -> tuple[bytes, tuple[Path, int, int] | None, int]:
    """(serialised head, external source, bytes to copy after it): an in-memory tensor is its
    serialisation; one whose data is external (``location`` an absolute path, as
    ``quantize_int8`` leaves the fp32 weights it did not quantise) becomes the tensor without
    its external reference plus its ``raw_data`` field, read from the file while writing."""
    if not inline_external or tensor.data_location != onnx.TensorProto.EXTERNAL:
        return tensor.SerializeToString(), None, 0
    info = {e.key: e.value for e in tensor.external_data}
    path = Path(info["location"])
    if not path.is_absolute():
        raise InputValueError(
            f"tensor {tensor.name!r}: external data location {path} is not absolute"
        )
    offset = int(info.get("offset", 0))
    length = int(info["length"]) if "length" in info else path.stat().st_size - offset
    inline = onnx.TensorProto()
    inline.CopyFrom(tensor)
    inline.data_location = onnx.TensorProto.DEFAULT
    del inline.external_data[:]
    field = _RAW_DATA_FIELD + varint(length)
    return inline.SerializeToString() + field, (path, offset, length), length


def _copy_range(source: tuple[Path, int, int], out: BinaryIO) -> None:
    """Copy ``length`` bytes at ``offset`` of ``path`` to ``out`` in 1 MiB chunks."""
    path, offset, length = source
    with open_stream(path, max_bytes=NO_CAP, error=InputValueError) as handle:
        handle.seek(offset)
        left = length
        while left:
            chunk = handle.read(min(left, 1 << 20))
            if not chunk:
                raise InputValueError(f"{path}: external data ends {left} bytes early")
            out.write(chunk)
            left -= len(chunk)


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
