"""Writing PyTorch ``.bin`` checkpoints as ``torch.save`` does, without torch: for the bench
of ``.bin`` conversion (``benches/bin_checkpoints.py``) and the reader's tests.

:class:`PickleOps` emits pickle opcodes (protocol 2, torch's default) by hand, so a state dict can
name ``torch._utils._rebuild_tensor_v2`` and ``torch.FloatStorage`` as torch's own pickles do
(Python's pickler would import torch to check them), and a test can name any other global.
:func:`state_pickle` writes a state dict of :class:`Entry` tensors; :func:`write_zip` (torch >= 1.6)
and :func:`write_legacy` (before 1.6) lay out the pickle and the storages; :func:`save_zip` and
:func:`save_legacy` save a dict of arrays, each in its own storage.
"""

from __future__ import annotations

import struct
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

LEGACY_MAGIC = 0x1950A86A20F9469CFC6C

STORAGE_OF = {
    "float32": "FloatStorage",
    "float16": "HalfStorage",
    "float64": "DoubleStorage",
    "int64": "LongStorage",
    "int32": "IntStorage",
    "uint8": "ByteStorage",
    "bool": "BoolStorage",
}
"""torch's storage class of each NumPy dtype (bfloat16: ``BFloat16Storage`` over uint16 bits)."""


class PickleOps:
    """A protocol-2 pickle written opcode by opcode (no memo)."""

    def __init__(self) -> None:
        self.out = bytearray(b"\x80\x02")

    def op(self, code: bytes) -> PickleOps:
        self.out += code
        return self

    def global_(self, module: str, name: str) -> PickleOps:
        return self.op(b"c" + module.encode() + b"\n" + name.encode() + b"\n")

    def text(self, value: str) -> PickleOps:
        raw = value.encode()
        return self.op(b"X" + struct.pack("<I", len(raw)) + raw)

    def int_(self, value: int) -> PickleOps:
        if -(2**31) <= value < 2**31:
            return self.op(b"J" + struct.pack("<i", value))
        raw = value.to_bytes((value.bit_length() + 8) // 8, "little", signed=True)
        return self.op(b"\x8a" + bytes([len(raw)]) + raw)

    def ints(self, values: Iterable[int]) -> PickleOps:
        self.op(b"(")
        for v in values:
            self.int_(v)
        return self.op(b"t")

    def done(self) -> bytes:
        return bytes(self.out + b".")


@dataclass(frozen=True)
class Entry:
    """One tensor as torch pickles it: its storage (class, key, elements), offset, size and
    stride, and for the legacy format an optional view ``(view_key, offset, size)``."""

    kind: str
    key: str
    numel: int
    offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    view: tuple[str, int, int] | None = None


def tensor_ops(ops: PickleOps, entry: Entry, *, legacy: bool) -> PickleOps:
    """Push ``_rebuild_tensor_v2(storage, offset, size, stride, False, OrderedDict())``."""
    ops.global_("torch._utils", "_rebuild_tensor_v2").op(b"(")
    ops.op(b"(").text("storage").global_("torch", entry.kind).text(entry.key).text("cpu")
    ops.int_(entry.numel)
    if legacy:
        if entry.view is None:
            ops.op(b"N")
        else:
            ops.op(b"(").text(entry.view[0]).int_(entry.view[1]).int_(entry.view[2]).op(b"t")
    ops.op(b"t").op(b"Q")  # the persistent id
    ops.int_(entry.offset).ints(entry.shape).ints(entry.stride).op(b"\x89")
    ops.global_("collections", "OrderedDict").op(b")").op(b"R")
    return ops.op(b"t").op(b"R")


def state_pickle(entries: dict[str, Entry], *, legacy: bool = False) -> bytes:
    """The pickle of a state dict ``{name: tensor}`` as ``torch.save`` writes it."""
    ops = PickleOps().global_("collections", "OrderedDict").op(b")").op(b"R").op(b"(")
    for name, entry in entries.items():
        tensor_ops(ops.text(name), entry, legacy=legacy)
    return ops.op(b"u").done()


def plain_pickle(value: object) -> bytes:
    """A pickle of plain data (the legacy format's magic number, version, key list...)."""
    import pickle

    return pickle.dumps(value, protocol=2)


def write_zip(
    path: Path,
    pkl: bytes,
    storages: Iterable[tuple[str, bytes]],
    *,
    archive: str = "archive",
    byteorder: str | None = "little",
) -> None:
    """A zip-format checkpoint: ``archive/data.pkl``, each storage as ``archive/data/<key>``
    (stored), ``byteorder`` (left out when None) and ``version``; storages are written one at a
    time, so ``storages`` may be a generator."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as out:
        out.writestr(f"{archive}/data.pkl", pkl)
        if byteorder is not None:
            out.writestr(f"{archive}/byteorder", byteorder)
        for key, raw in storages:
            out.writestr(f"{archive}/data/{key}", raw)
        out.writestr(f"{archive}/version", "3\n")


def write_legacy(path: Path, pkl: bytes, storages: Iterable[tuple[str, int, bytes]]) -> None:
    """A legacy-format checkpoint: magic number, protocol 1001, system facts, ``pkl``, the list of
    storage keys, then each storage's element count and bytes."""
    storages = list(storages)
    info = {"protocol_version": 1001, "little_endian": True, "type_sizes": {"long": 8}}
    with open(path, "wb") as out:
        for head in (LEGACY_MAGIC, 1001, info):
            out.write(plain_pickle(head))
        out.write(pkl)
        out.write(plain_pickle([key for key, _, _ in storages]))
        for _, numel, raw in storages:
            out.write(struct.pack("<q", numel) + raw)


def entry_of(name_index: int, array: np.ndarray) -> Entry:
    """The :class:`Entry` of ``array`` alone in storage ``str(name_index)``, contiguous."""
    kind = STORAGE_OF[array.dtype.name]
    stride = tuple(s // array.itemsize for s in array.strides) if array.ndim else ()
    return Entry(kind, str(name_index), array.size, 0, array.shape, stride)


def _contiguous(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {k: np.ascontiguousarray(v, dtype=v.dtype.newbyteorder("<")) for k, v in arrays.items()}


def save_zip(path: Path, tensors: dict[str, np.ndarray]) -> None:
    """Save ``tensors`` as ``torch.save(state_dict, path)`` does (zip format)."""
    tensors = _contiguous(tensors)
    entries = {k: entry_of(i, v) for i, (k, v) in enumerate(tensors.items())}
    storages = ((str(i), v.tobytes()) for i, v in enumerate(tensors.values()))
    write_zip(path, state_pickle(entries), storages)


def save_legacy(path: Path, tensors: dict[str, np.ndarray]) -> None:
    """Save ``tensors`` as torch before 1.6 did (``_use_new_zipfile_serialization=False``)."""
    tensors = _contiguous(tensors)
    entries = {k: entry_of(i, v) for i, (k, v) in enumerate(tensors.items())}
    pkl = state_pickle(entries, legacy=True)
    write_legacy(path, pkl, ((str(i), v.size, v.tobytes()) for i, v in enumerate(tensors.values())))


def stream_zip(path: Path, specs: list[tuple[str, tuple[int, ...]]], arrays: Iterator) -> None:
    """Save float32 tensors of ``specs`` (name, shape) whose values ``arrays`` yields one at a
    time, in that order (zip format; one tensor in memory at a time)."""
    entries = {}
    for i, (name, shape) in enumerate(specs):
        stride = tuple(int(np.prod(shape[j + 1 :])) for j in range(len(shape)))
        entries[name] = Entry("FloatStorage", str(i), int(np.prod(shape)), 0, shape, stride)
    storages = (
        (str(i), np.ascontiguousarray(a, dtype="<f4").tobytes()) for i, a in enumerate(arrays)
    )
    write_zip(path, state_pickle(entries), storages)
