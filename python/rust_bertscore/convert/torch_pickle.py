"""The allow-list unpickler of PyTorch state dicts (see :mod:`.torch_bin`).

A state dict's pickle names a few globals: ``torch._utils._rebuild_tensor_v2`` (or
``_rebuild_parameter``) for each tensor, ``torch.<Kind>Storage`` for its storage's element type,
``collections.OrderedDict`` for the dict and the tensors' hooks. :class:`Unpickler` resolves
those to the stand-ins of :data:`ALLOWED_GLOBALS`, which record where each tensor's elements are
(:class:`TensorRecord`) and call nothing of torch; ``find_class`` refuses any other global with a
``CheckpointError`` before it is imported or resolved, so a pickle that would call ``os.system``
or ``builtins.eval`` runs nothing.
"""

from __future__ import annotations

import collections
import io
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import CheckpointError

# torch's storage classes: the dtype of their elements (bfloat16 read as its 16 bits).
STORAGE_DTYPES = {
    "FloatStorage": "f4",
    "HalfStorage": "f2",
    "BFloat16Storage": "bf16",
    "DoubleStorage": "f8",
    "LongStorage": "i8",
    "IntStorage": "i4",
    "ShortStorage": "i2",
    "CharStorage": "i1",
    "ByteStorage": "u1",
    "BoolStorage": "b1",
}


class MalformedPickle(Exception):
    """What the pickle holds is not a state dict as ``torch.save`` writes one; :func:`unpickle`
    turns it into a ``CheckpointError`` that names the file."""


class StorageType:
    """The stand-in for ``torch.<Kind>Storage``: a name and an element dtype, never called."""

    __slots__ = ("dtype", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self.dtype = STORAGE_DTYPES[name]

    @property
    def itemsize(self) -> int:
        return 2 if self.dtype == "bf16" else int(self.dtype[1:])


class Storage:
    """A storage the pickle named: its key in the file, element type, length, and where it
    starts in its root storage (elements; non-zero for a legacy view)."""

    __slots__ = ("base", "key", "kind", "numel")

    def __init__(self, key: str, kind: StorageType, numel: int, base: int = 0) -> None:
        self.key, self.kind, self.numel, self.base = key, kind, numel, base


class TensorRecord:
    """One tensor of the state dict: its storage, offset (elements), shape and strides."""

    __slots__ = ("offset", "shape", "storage", "stride")

    def __init__(self, storage: Storage, offset: int, shape: tuple, stride: tuple) -> None:
        self.storage, self.offset, self.shape, self.stride = storage, offset, shape, stride

    @property
    def numel(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def span(self) -> int:
        """The elements from the first to the last one the tensor reads (0 when empty)."""
        if self.numel == 0:
            return 0
        return 1 + sum((n - 1) * s for n, s in zip(self.shape, self.stride))

    @property
    def contiguous(self) -> bool:
        expected, step = [], 1
        for n in reversed(self.shape):
            expected.append(step)
            step *= n
        return all(n == 1 or s == e for n, s, e in zip(self.shape, self.stride, expected[::-1]))


def as_count(value: Any, what: str) -> int:
    """``value`` if it is a non-negative int, else :class:`MalformedPickle` naming ``what``."""
    if type(value) is not int or value < 0:
        raise MalformedPickle(f"{what} should be a non-negative int, got {value!r}")
    return value


def as_counts(value: Any, what: str) -> tuple[int, ...]:
    """``value`` if it is a tuple of non-negative ints, else :class:`MalformedPickle`."""
    if not isinstance(value, tuple):
        raise MalformedPickle(f"{what} should be a tuple of ints, got {value!r}")
    return tuple(as_count(v, what) for v in value)


def _rebuild_tensor_v2(
    storage: Any,
    storage_offset: Any,
    size: Any,
    stride: Any,
    requires_grad: Any = False,
    backward_hooks: Any = None,
    metadata: Any = None,
) -> TensorRecord:
    if not isinstance(storage, Storage):
        raise MalformedPickle(f"a tensor's storage should be a persistent storage, got {storage!r}")
    record = TensorRecord(
        storage,
        as_count(storage_offset, "offset"),
        as_counts(size, "size"),
        as_counts(stride, "stride"),
    )
    if len(record.shape) != len(record.stride):
        raise MalformedPickle(f"size {record.shape} and stride {record.stride} differ in length")
    if record.offset + record.span > storage.numel:
        raise MalformedPickle(
            f"a tensor of size {record.shape}, stride {record.stride} at offset {record.offset} "
            f"reads past its storage {storage.key!r} of {storage.numel} elements"
        )
    return record


def _rebuild_parameter(data: Any, requires_grad: Any = False, hooks: Any = None) -> TensorRecord:
    if not isinstance(data, TensorRecord):
        raise MalformedPickle(f"a parameter should wrap a tensor, got {data!r}")
    return data


def _rebuild_parameter_with_state(
    data: Any, requires_grad: Any = False, hooks: Any = None, state: Any = None
) -> TensorRecord:
    return _rebuild_parameter(data)


ALLOWED_GLOBALS: dict[str, Any] = {
    "collections.OrderedDict": collections.OrderedDict,
    "torch._utils._rebuild_tensor_v2": _rebuild_tensor_v2,
    "torch._utils._rebuild_parameter": _rebuild_parameter,
    "torch._utils._rebuild_parameter_with_state": _rebuild_parameter_with_state,
} | {f"torch.{name}": StorageType(name) for name in STORAGE_DTYPES}
"""The globals a state dict's pickle may name, and the stand-ins they resolve to."""


class Unpickler(pickle.Unpickler):
    """``pickle.Unpickler`` resolving only :data:`ALLOWED_GLOBALS`; ``storage`` maps each
    persistent id to a :class:`Storage` (or raises)."""

    def __init__(self, data: bytes | io.BufferedIOBase, path: Path, storage: Callable) -> None:
        stream = io.BytesIO(data) if isinstance(data, bytes) else data
        super().__init__(stream, encoding="utf-8")
        self.path, self.storage = path, storage

    def find_class(self, module: str, name: str) -> Any:
        target = ALLOWED_GLOBALS.get(f"{module}.{name}")
        if target is None:
            raise CheckpointError(
                f"{self.path}: refused to unpickle the global {module}.{name}: a PyTorch "
                "state dict names only torch's tensor rebuilders, storage types and "
                "collections.OrderedDict, so this file is not a plain checkpoint (nothing in it "
                "was run)"
            )
        return target

    def persistent_load(self, pid: Any) -> Storage:
        return self.storage(pid)


def text(value: Any) -> Any:
    """A Python 2 pickle's bytes as text."""
    return value.decode("ascii") if isinstance(value, bytes) else value


def unpickle(data: bytes | io.BufferedIOBase, path: Path, storage: Callable | None = None) -> Any:
    """Unpickle one pickle of ``data`` (from its current position) with :data:`ALLOWED_GLOBALS`
    only; ``storage`` maps persistent ids to storages. Any failure is a ``CheckpointError``
    naming ``path``."""

    def no_storage(pid: Any) -> Storage:
        raise MalformedPickle(f"unexpected persistent id {pid!r}")

    try:
        return Unpickler(data, path, storage or no_storage).load()
    except CheckpointError:
        raise
    except Exception as exc:  # a corrupt pickle raises anything from EOFError to MemoryError
        raise CheckpointError(
            f"{path}: cannot unpickle the state dict, the file may be truncated or corrupt "
            f"({type(exc).__name__}: {exc})"
        ) from exc


def storage_args(pid: Any, count: int) -> tuple[StorageType, str, int, Any]:
    """``(type, key, numel, view)`` of a persistent id ``('storage', type, key, location,
    numel[, view])``."""
    if not isinstance(pid, tuple) or len(pid) != count or text(pid[0]) != "storage":
        raise MalformedPickle(f"unexpected persistent id {pid!r}")
    kind, key, numel = pid[1], text(pid[2]), pid[4]
    if not isinstance(kind, StorageType) or not isinstance(key, str):
        raise MalformedPickle(f"unexpected persistent id {pid!r}")
    return kind, key, as_count(numel, "a storage's size"), pid[5] if count == 6 else None
