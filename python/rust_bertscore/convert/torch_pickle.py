"""The allow-list unpickler of PyTorch state dicts (see :mod:`.torch_bin`).

A state dict's pickle names a few globals: ``torch._utils._rebuild_tensor_v2`` (or
``_rebuild_parameter``) for each tensor, ``torch.<Kind>Storage`` for its storage's element type,
``collections.OrderedDict`` for the dict and the tensors' hooks. :func:`unpickle` runs the pickle
on :class:`~.pickle_vm.Machine` (never ``pickle.Unpickler``) and resolves those names, and only
those (:data:`ALLOWED_GLOBALS`), to stand-ins made for this one load: frozen records of where each
tensor's elements are (:class:`TensorRecord`) that call nothing of torch. Any other global is
refused with a ``CheckpointError`` before anything is imported or resolved, so a pickle that
would call ``os.system`` or ``builtins.eval`` runs nothing; the only state a pickle may set
(BUILD) is an ``OrderedDict``'s ``_metadata``, which a state dict carries and which is dropped.
No process-wide object is handed to a pickle, so one file cannot change how the next is read.
"""

from __future__ import annotations

import collections
import math
import mmap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import CheckpointError
from .pickle_vm import Machine, MalformedPickle, brief

__all__ = ["MalformedPickle", "brief"]

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

MAX_COUNT = 2**62
"""The largest size, stride, offset or element count a tensor may name (no file holds more)."""

MAX_DIMS = 32
"""The most dimensions a tensor may have (NumPy's limit is 64; a state dict's have 4 at most)."""


@dataclass(frozen=True, slots=True)
class StorageType:
    """The stand-in for ``torch.<Kind>Storage``: a name and an element dtype, never called."""

    name: str
    dtype: str

    @property
    def itemsize(self) -> int:
        return 2 if self.dtype == "bf16" else int(self.dtype[1:])


@dataclass(frozen=True, slots=True)
class Storage:
    """A storage the pickle named: its key in the file, element type, length, and where it
    starts in its root storage (elements; non-zero for a legacy view)."""

    key: str
    kind: StorageType
    numel: int
    base: int = 0


@dataclass(frozen=True, slots=True)
class TensorRecord:
    """One tensor of the state dict: its storage, offset (elements), shape and strides, each a
    Python int (no overflow)."""

    storage: Storage
    offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

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

    def check(self) -> None:
        """:class:`MalformedPickle` unless every element lies in the storage, and the tensor
        holds no more elements than the storage (a stride of 0 may not make a small file a
        large tensor)."""
        storage = self.storage
        if math.prod(n for n in self.shape if n) > MAX_COUNT // 8:
            raise MalformedPickle(f"a tensor of size {brief(self.shape)}: no array is that large")
        if self.numel and self.offset + self.span > storage.numel:
            raise MalformedPickle(
                f"a tensor of size {brief(self.shape)}, stride {brief(self.stride)} at offset "
                f"{self.offset} reads past its storage {brief(storage.key)} of {storage.numel} "
                "elements"
            )
        if self.numel > max(storage.numel, 1):
            raise MalformedPickle(
                f"a tensor of size {brief(self.shape)} has {self.numel} elements, more than its "
                f"storage {brief(storage.key)} holds ({storage.numel}): strides "
                f"{brief(self.stride)} repeat elements"
            )


def as_count(value: Any, what: str) -> int:
    """``value`` if it is an int in ``[0, MAX_COUNT]``, else :class:`MalformedPickle`."""
    if type(value) is not int or not 0 <= value <= MAX_COUNT:
        raise MalformedPickle(f"{what} should be an int in [0, 2**62], got {brief(value)}")
    return value


def as_counts(value: Any, what: str) -> tuple[int, ...]:
    """``value`` if it is a tuple of at most :data:`MAX_DIMS` counts, else
    :class:`MalformedPickle`."""
    if type(value) is not tuple or len(value) > MAX_DIMS:
        raise MalformedPickle(f"{what} should be a tuple of ints, got {brief(value)}")
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
    if type(storage) is not Storage:
        raise MalformedPickle(
            f"a tensor's storage should be a persistent storage, got {brief(storage)}"
        )
    record = TensorRecord(
        storage,
        as_count(storage_offset, "offset"),
        as_counts(size, "size"),
        as_counts(stride, "stride"),
    )
    if len(record.shape) != len(record.stride):
        raise MalformedPickle(
            f"size {brief(record.shape)} and stride {brief(record.stride)} differ in length"
        )
    return record  # its extent is checked by the reader, which knows its key


def _rebuild_parameter(data: Any, requires_grad: Any = False, hooks: Any = None) -> TensorRecord:
    if type(data) is not TensorRecord:
        raise MalformedPickle(f"a parameter should wrap a tensor, got {brief(data)}")
    return data


def _rebuild_parameter_with_state(
    data: Any, requires_grad: Any = False, hooks: Any = None, state: Any = None
) -> TensorRecord:
    return _rebuild_parameter(data)


def _ordered_dict() -> collections.OrderedDict:
    return collections.OrderedDict()


@dataclass(frozen=True, slots=True)
class Rebuilder:
    """The stand-in for an allowed function: REDUCE calls ``call`` with at most ``arity``
    arguments."""

    name: str
    call: Callable[..., Any]
    arity: int


_FUNCTIONS: dict[str, tuple[Callable[..., Any], int]] = {
    "collections.OrderedDict": (_ordered_dict, 0),
    "torch._utils._rebuild_tensor_v2": (_rebuild_tensor_v2, 7),
    "torch._utils._rebuild_parameter": (_rebuild_parameter, 3),
    "torch._utils._rebuild_parameter_with_state": (_rebuild_parameter_with_state, 4),
}

ALLOWED_GLOBALS = frozenset(_FUNCTIONS) | {f"torch.{name}" for name in STORAGE_DTYPES}
"""The globals a state dict's pickle may name; each resolves to a stand-in made for one load."""


class _Load:
    """The callbacks of one pickle's :class:`Machine`: fresh stand-ins, nothing shared."""

    def __init__(self, path: Path, storage: Callable[[Any], Storage]) -> None:
        self.path, self.persistent = path, storage

    def resolve(self, module: str, name: str) -> Any:
        full = f"{module}.{name}"
        if full not in ALLOWED_GLOBALS:
            raise CheckpointError(
                f"{self.path}: refused to unpickle the global {brief(full)}: a PyTorch "
                "state dict names only torch's tensor rebuilders, storage types and "
                "collections.OrderedDict, so this file is not a plain checkpoint (nothing in it "
                "was run)"
            )
        if full in _FUNCTIONS:
            call, arity = _FUNCTIONS[full]
            return Rebuilder(full, call, arity)
        return StorageType(name, STORAGE_DTYPES[name])

    @staticmethod
    def call(func: Any, args: tuple) -> Any:
        if type(func) is not Rebuilder:
            raise MalformedPickle(f"REDUCE calls {brief(func)}, which is not a function")
        if len(args) > func.arity or (func.arity and len(args) < 1):
            raise MalformedPickle(f"{func.name} called with {len(args)} arguments")
        if func.name == "torch._utils._rebuild_tensor_v2" and len(args) < 4:
            raise MalformedPickle(f"{func.name} called with {len(args)} arguments")
        return func.call(*args)

    @staticmethod
    def build(target: Any, state: Any) -> None:
        """BUILD sets an object's state: allowed only for an ``OrderedDict``'s ``_metadata``
        (``torch.save`` writes it with every state dict), and dropped."""
        if (
            type(target) is collections.OrderedDict
            and type(state) is dict
            and set(state) == {"_metadata"}
        ):
            return
        raise MalformedPickle(
            f"BUILD (set an object's state) on a {type(target).__name__} with "
            f"{brief(state)}: a state dict sets only an OrderedDict's _metadata"
        )


def text(value: Any) -> Any:
    """A Python 2 pickle's bytes as text (ASCII, else :class:`MalformedPickle`)."""
    if isinstance(value, bytes):
        try:
            return value.decode("ascii")
        except UnicodeDecodeError:
            raise MalformedPickle(f"a key that is not ASCII text: {brief(value)}") from None
    return value


def unpickle(
    data: bytes | mmap.mmap,
    path: Path,
    storage: Callable[[Any], Storage] | None = None,
    start: int = 0,
    where: str = "the pickle",
) -> tuple[Any, int]:
    """Unpickle one pickle of ``data`` from byte ``start`` with :data:`ALLOWED_GLOBALS` only;
    ``storage`` maps persistent ids to storages. The value and the byte after the pickle's end.
    Any failure is a ``CheckpointError`` naming ``path``, ``where`` (a zip member) and the byte.

    Examples
    --------
    >>> import pickle
    >>> from pathlib import Path
    >>> from rust_bertscore.convert.torch_pickle import unpickle
    >>> unpickle(pickle.dumps({"a": (1, 2)}, 2), Path("x.bin"))[0]
    {'a': (1, 2)}
    >>> unpickle(pickle.dumps(print, 4), Path("x.bin"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rust_bertscore.errors.CheckpointError: x.bin: refused to unpickle the global 'builtins.print'...
    """

    def no_storage(pid: Any) -> Storage:
        raise MalformedPickle(f"unexpected persistent id {brief(pid)}")

    load = _Load(path, storage or no_storage)
    machine = Machine(data, start, load.resolve, load.call, load.build, load.persistent)
    try:
        return machine.run(), machine.pos
    except CheckpointError:
        raise
    except Exception as exc:  # MalformedPickle, or anything a stand-in raised on bad arguments
        key = _pending_key(machine)
        at = f"{path}: {where}, opcode at byte {machine.at}" + (
            f" (tensor {brief(key)})" if key is not None else ""
        )
        if isinstance(exc, MalformedPickle):
            raise CheckpointError(f"{at}: {exc}") from exc
        raise CheckpointError(
            f"{at}: cannot unpickle the state dict, the file may be truncated or corrupt "
            f"({type(exc).__name__}: {brief(str(exc))})"
        ) from exc


def _pending_key(machine: Machine) -> Any:
    """The key of the state dict entry the pickle stopped at, if any: torch pushes ``key,
    tensor`` pairs above the dict's MARK, so it is the first key not followed by a finished
    tensor, else the last key (an opcode after its tensor, BUILD on it)."""
    if not machine.marks:
        return None
    items = machine.stack[machine.marks[0] :]
    j = 0
    while j + 1 < len(items) and type(items[j]) is str and type(items[j + 1]) is TensorRecord:
        j += 2
    if j == len(items) and j >= 2:
        return items[j - 2]
    return items[j] if j < len(items) and type(items[j]) in (str, bytes) else None


def storage_args(pid: Any, count: int) -> tuple[StorageType, str, int, Any]:
    """``(type, key, numel, view)`` of a persistent id ``('storage', type, key, location,
    numel[, view])``."""
    if type(pid) is not tuple or len(pid) != count or text(pid[0]) != "storage":
        raise MalformedPickle(f"unexpected persistent id {brief(pid)}")
    kind, key, numel = pid[1], text(pid[2]), pid[4]
    if type(kind) is not StorageType or type(key) is not str:
        raise MalformedPickle(f"unexpected persistent id {brief(pid)}")
    return kind, key, as_count(numel, "a storage's size"), pid[5] if count == 6 else None
