"""PyTorch ``.bin`` checkpoints read without torch, and without running their pickles.

``torch.save`` writes a state dict in one of two formats:

* zip (torch >= 1.6): ``<archive>/data.pkl`` (the pickled dict), ``<archive>/data/<key>`` (each
  storage's raw bytes, stored uncompressed), ``<archive>/byteorder`` (``little`` or ``big``;
  little when absent) and ``<archive>/version``;
* legacy (before 1.6): pickles one after another (the magic number ``0x1950a86a20f9469cfc6c``,
  the protocol version 1001, a dict of system facts, the dict itself, the list of storage keys),
  then each storage in the order of that list: its element count (8 bytes, little-endian) and
  its bytes (little-endian).

In both the dict's tensors are ``torch._utils._rebuild_tensor_v2(storage, offset, size,
stride, ...)`` calls whose storage is a persistent id. :class:`BinFile` unpickles the dict with
:mod:`.torch_pickle`'s allow-list: each allowed global resolves to a stand-in that records where
a tensor's elements are; any other global (``os.system``, ``builtins.eval``, ...) raises
:class:`~rust_bertscore.errors.CheckpointError` when the pickle names it, before anything is
imported or called. A storage's bytes are read only when one of its tensors is
asked for (:meth:`BinFile.load`), and only the elements that tensor spans.
"""

from __future__ import annotations

import io
import os
import struct
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import CheckpointError
from .torch_pickle import (
    MalformedPickle,
    Storage,
    StorageType,
    TensorRecord,
    as_count,
    storage_args,
    text,
    unpickle,
)

BIN_NAME = "pytorch_model.bin"
BIN_INDEX_NAME = "pytorch_model.bin.index.json"

LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
LEGACY_PROTOCOL = 1001


class BinFile:
    """The tensors of one PyTorch ``.bin`` file, by key as saved; bytes read on :meth:`load`.

    Parameters
    ----------
    path
        A ``torch.save`` file of a state dict, zip or legacy format.

    Raises
    ------
    CheckpointError
        If the file is neither format, is truncated, or its pickle names a global outside
        ``torch_pickle.ALLOWED_GLOBALS`` (refused before it is resolved).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from rust_bertscore.convert.torch_bin import BinFile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "pytorch_model.bin"
    >>> _ = path.write_bytes(b"not a checkpoint")
    >>> BinFile(path)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rust_bertscore.errors.CheckpointError: .../pytorch_model.bin: not a PyTorch checkpoint...
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.big_endian = False
        self._storages: dict[str, Storage] = {}
        # Where each root storage's bytes are: a zip member, or an offset in the file.
        self._members: dict[str, zipfile.ZipInfo] = {}
        self._offsets: dict[str, int] = {}
        try:
            with open(self.path, "rb") as handle:
                magic = handle.read(4)
                handle.seek(0)
                if magic == b"PK\x03\x04":
                    state = self._read_zip(handle)
                else:
                    state = self._read_legacy(handle)
        except OSError as exc:
            raise CheckpointError(f"{self.path}: cannot read ({exc})") from exc
        if not isinstance(state, dict):
            raise CheckpointError(
                f"{self.path}: holds a {type(state).__name__}, expected a state dict"
            )
        # Entries other than named tensors (none in a state dict) are left out.
        self.tensors: dict[str, TensorRecord] = {
            text(k): v
            for k, v in state.items()
            if isinstance(v, TensorRecord) and isinstance(text(k), str)
        }
        if not self.tensors:
            raise CheckpointError(f"{self.path}: the state dict holds no tensors")

    def _read_zip(self, handle: io.BufferedIOBase) -> Any:
        try:
            archive = zipfile.ZipFile(handle)
        except (zipfile.BadZipFile, ValueError) as exc:
            raise CheckpointError(
                f"{self.path}: a zip file that cannot be opened, it may be truncated or corrupt "
                f"({exc})"
            ) from exc
        with archive:
            infos = archive.infolist()
            prefix = infos[0].filename.split("/")[0] if infos else ""
            members = {info.filename: info for info in infos}
            pkl = members.get(f"{prefix}/data.pkl")
            if pkl is None:
                raise CheckpointError(f"{self.path}: a zip file without {prefix}/data.pkl")
            order = members.get(f"{prefix}/byteorder")
            if order is not None:
                named = archive.read(order).decode("ascii", "replace")
                if named not in ("little", "big"):
                    raise CheckpointError(f"{self.path}: unknown byteorder {named!r}")
                self.big_endian = named == "big"

            def storage(pid: Any) -> Storage:
                kind, key, numel, _ = storage_args(pid, 5)
                if key not in self._storages:
                    info = members.get(f"{prefix}/data/{key}")
                    if info is None:
                        raise MalformedPickle(f"storage {key!r} has no {prefix}/data/{key}")
                    if info.file_size < numel * kind.itemsize:
                        raise MalformedPickle(
                            f"{prefix}/data/{key} holds {info.file_size} bytes, fewer than "
                            f"{numel} elements of {kind.name}"
                        )
                    self._members[key] = info
                    self._storages[key] = Storage(key, kind, numel)
                return self._storages[key]

            try:
                data = archive.read(pkl)
            except (zipfile.BadZipFile, OSError, EOFError) as exc:
                raise CheckpointError(f"{self.path}: cannot read {pkl.filename} ({exc})") from exc
            return unpickle(data, self.path, storage)

    def _read_legacy(self, handle: io.BufferedIOBase) -> Any:
        # torch pickled the magic number with protocol 2: b"\x80\x02\x8a\x0a" and its bytes.
        first = handle.read(1)
        handle.seek(0)
        magic = unpickle(handle, self.path) if first == b"\x80" else None
        if magic != LEGACY_MAGIC:
            raise CheckpointError(
                f"{self.path}: not a PyTorch checkpoint (neither a zip file nor torch's legacy "
                "format); it may be truncated or corrupt"
            )
        version = unpickle(handle, self.path)
        if version != LEGACY_PROTOCOL:
            raise CheckpointError(f"{self.path}: unknown legacy protocol version {version!r}")
        unpickle(handle, self.path)  # sys_info: the storages are little-endian whatever it says
        roots: dict[str, tuple[StorageType, int]] = {}

        def storage(pid: Any) -> Storage:
            kind, key, numel, view = storage_args(pid, 6)
            roots.setdefault(key, (kind, numel))
            if view is None:
                return self._storages.setdefault(key, Storage(key, kind, numel))
            view_key, offset, size = view
            if as_count(offset, "a view's offset") + as_count(size, "a view's size") > numel:
                raise MalformedPickle(f"view {view_key!r} reads past storage {key!r}")
            return Storage(key, kind, size, offset)

        state = unpickle(handle, self.path, storage)
        keys = unpickle(handle, self.path)
        if not isinstance(keys, list):
            raise CheckpointError(f"{self.path}: the list of storage keys is a {type(keys)}")
        size = os.fstat(handle.fileno()).st_size
        for key in map(text, keys):
            if key not in roots:
                raise CheckpointError(f"{self.path}: storage {key!r} is not named by the dict")
            kind, numel = roots[key]
            header = handle.read(8)
            if len(header) != 8:
                raise CheckpointError(f"{self.path}: truncated before storage {key!r}")
            (count,) = struct.unpack("<q", header)
            if count != numel:
                raise CheckpointError(
                    f"{self.path}: storage {key!r} holds {count} elements, the dict says {numel}"
                )
            self._offsets[key] = handle.tell()
            end = handle.tell() + numel * kind.itemsize
            if end > size:
                raise CheckpointError(
                    f"{self.path}: truncated: storage {key!r} ends at byte {end}, the file "
                    f"at {size}"
                )
            handle.seek(end)
        missing = sorted(set(roots) - set(self._offsets))
        if missing:
            raise CheckpointError(f"{self.path}: storages {missing} have no data (truncated?)")
        return state

    def shape(self, key: str) -> tuple[int, ...]:
        """The shape of tensor ``key``."""
        return self.tensors[key].shape

    def _data_start(self, handle: io.BufferedIOBase, info: zipfile.ZipInfo) -> int:
        """Where a stored member's bytes begin: after its local header."""
        handle.seek(info.header_offset)
        local = handle.read(30)
        if len(local) != 30 or local[:4] != b"PK\x03\x04":
            raise CheckpointError(f"{self.path}: bad zip header of {info.filename}")
        name_len, extra_len = struct.unpack("<HH", local[26:30])
        return info.header_offset + 30 + name_len + extra_len

    def _read(self, storage: Storage, start: int, count: int) -> bytearray:
        """``count`` bytes of ``storage``'s root from byte ``start``, read from the file."""
        buffer = bytearray(count)
        info = self._members.get(storage.key)
        try:
            with open(self.path, "rb") as handle:
                if info is None or info.compress_type == zipfile.ZIP_STORED:
                    begin = (
                        self._offsets[storage.key]
                        if info is None
                        else self._data_start(handle, info)
                    )
                    handle.seek(begin + start)
                    got = handle.readinto(buffer)
                else:  # not torch's layout, but a zip tool may have compressed the storages
                    with zipfile.ZipFile(handle) as archive, archive.open(info) as member:
                        member.seek(start)
                        data = member.read(count)
                        got = len(data)
                        buffer[:got] = data
        except (OSError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
            raise CheckpointError(
                f"{self.path}: cannot read storage {storage.key!r}, the file may be corrupt ({exc})"
            ) from exc
        if got != count:
            raise CheckpointError(
                f"{self.path}: storage {storage.key!r} is truncated ({got} of {count} bytes)"
            )
        return buffer

    def load(self, key: str) -> np.ndarray:
        """Read tensor ``key``: its own elements only, as a new array of the saved dtype
        (bfloat16 as float32).

        Raises
        ------
        CheckpointError
            If the file is shorter than the storage.
        """
        record = self.tensors[key]
        kind = record.storage.kind
        code = "u2" if kind.dtype == "bf16" else kind.dtype
        dtype = np.dtype(code).newbyteorder(">" if self.big_endian else "<")
        if record.numel == 0:
            array = np.zeros(record.shape, dtype)
        else:
            start = (record.storage.base + record.offset) * kind.itemsize
            buffer = self._read(record.storage, start, record.span * kind.itemsize)
            flat = np.frombuffer(buffer, dtype=dtype)
            if record.contiguous:
                array = flat.reshape(record.shape)
            else:
                strides = [s * kind.itemsize for s in record.stride]
                view = np.lib.stride_tricks.as_strided(flat, record.shape, strides, writeable=False)
                array = np.array(view)
        if kind.dtype == "bf16":
            array = (array.astype(np.uint32) << 16).view(np.float32)
        return array
