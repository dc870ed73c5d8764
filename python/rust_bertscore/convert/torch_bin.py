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

Nothing the file declares is trusted before it is checked against what the file holds:
``data.pkl`` is inflated to at most :data:`MAX_PICKLE_BYTES` and :data:`MAX_PICKLE_RATIO` times
its compressed size; a stored member's bytes must lie in the file (its declared size is never
allocated first); a compressed member is read in chunks, so memory follows what it really
holds; only ``stored`` and ``deflated`` members are read; each tensor's extent (``offset +
sum((size - 1) * stride)``, Python ints) is checked against its storage, and the storage against
its member, before a byte is read, and a tensor may not hold more elements than its storage.
Every failure is a :class:`~rust_bertscore.errors.CheckpointError` naming the file and the key
or member.
"""

from __future__ import annotations

import io
import mmap
import os
import struct
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import CheckpointError
from ..support.boundary import NO_CAP, open_stream
from .torch_pickle import (
    MalformedPickle,
    Storage,
    StorageType,
    TensorRecord,
    as_count,
    brief,
    storage_args,
    text,
    unpickle,
)

BIN_NAME = "pytorch_model.bin"
BIN_INDEX_NAME = "pytorch_model.bin.index.json"

LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
LEGACY_PROTOCOL = 1001

MAX_PICKLE_BYTES = 256 << 20
"""The most ``data.pkl`` may inflate to (a state dict's pickle is about 100 bytes a tensor)."""

MAX_PICKLE_RATIO = 200
"""The most a compressed ``data.pkl`` may inflate, as a multiple of its compressed size (plus
1 MiB): a pickle deflates about tenfold, a zip bomb a thousandfold."""

_CHUNK = 16 << 20
_READABLE = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)


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
        ``torch_pickle.ALLOWED_GLOBALS`` (refused before it is resolved), sets state other than
        a state dict's, or declares more than the file holds.

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
        # Where each root storage's bytes are (a zip member, or an offset in the file) and how
        # many bytes it really holds there.
        self._members: dict[str, zipfile.ZipInfo] = {}
        self._offsets: dict[str, int] = {}
        self._sizes: dict[str, int] = {}
        try:
            with open_stream(self.path, max_bytes=NO_CAP, error=CheckpointError) as handle:
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
        self.tensors: dict[str, TensorRecord] = {}
        for k, v in state.items():
            if isinstance(v, TensorRecord):
                try:
                    key = text(k)
                except MalformedPickle as exc:
                    raise CheckpointError(f"{self.path}: {exc}") from None
                if isinstance(key, str):
                    self._check(key, v)
                    self.tensors[key] = v
        if not self.tensors:
            raise CheckpointError(f"{self.path}: the state dict holds no tensors")

    def _check(self, key: str, record: TensorRecord) -> None:
        """CheckpointError naming ``key`` unless ``record`` lies in its storage and the storage
        in the bytes the file holds for it."""
        try:
            record.check()
        except MalformedPickle as exc:
            raise CheckpointError(f"{self.path}: tensor {brief(key)}: {exc}") from None
        storage = record.storage
        end = (storage.base + record.offset + record.span) * storage.kind.itemsize
        held = self._sizes.get(storage.key, 0)
        if record.numel and end > held:
            raise CheckpointError(
                f"{self.path}: tensor {brief(key)} reads to byte {end} of storage "
                f"{brief(storage.key)}, which holds {held} bytes"
            )

    # -- zip -------------------------------------------------------------------------------------
    def _member(self, archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytes:
        """A small member's bytes, inflated to at most ``limit`` bytes."""
        self._readable(info)
        out = bytearray()
        try:
            with archive.open(
                info
            ) as member:  # boundary-exempt: a member of the archive opened through the boundary
                while chunk := member.read(min(_CHUNK, limit + 1 - len(out))):
                    out += chunk
                    if len(out) > limit:
                        raise CheckpointError(
                            f"{self.path}: {brief(info.filename)} inflates to more than {limit} "
                            f"bytes ({info.compress_size} compressed): refused (a zip bomb?)"
                        )
        except (zipfile.BadZipFile, OSError, EOFError, zlib.error, NotImplementedError) as exc:
            raise CheckpointError(
                f"{self.path}: cannot read {brief(info.filename)} ({exc})"
            ) from exc
        return bytes(out)

    def _readable(self, info: zipfile.ZipInfo) -> None:
        if info.compress_type not in _READABLE or info.flag_bits & 0x1:
            what = "encrypted" if info.flag_bits & 0x1 else f"compression {info.compress_type}"
            raise CheckpointError(
                f"{self.path}: member {brief(info.filename)} is {what}; a checkpoint's members "
                "are stored or deflated"
            )

    def _data_start(self, handle: Any, info: zipfile.ZipInfo) -> int:
        """Where a stored member's bytes begin: after its local header."""
        handle.seek(info.header_offset)
        local = handle.read(30)
        if len(local) != 30 or local[:4] != b"PK\x03\x04":
            raise CheckpointError(f"{self.path}: bad zip header of {brief(info.filename)}")
        name_len, extra_len = struct.unpack("<HH", local[26:30])
        return info.header_offset + 30 + name_len + extra_len

    def _read_zip(self, handle: io.BufferedReader) -> Any:
        size = os.fstat(handle.fileno()).st_size
        try:
            archive = zipfile.ZipFile(handle)
        except Exception as exc:  # BadZipFile, ValueError, UnicodeDecodeError of a name...
            raise CheckpointError(
                f"{self.path}: a zip file that cannot be opened, it may be truncated or corrupt "
                f"({type(exc).__name__}: {brief(str(exc))})"
            ) from exc
        with archive:
            infos = archive.infolist()
            prefix = infos[0].filename.split("/")[0] if infos else ""
            members = {info.filename: info for info in infos}
            pkl = members.get(f"{prefix}/data.pkl")
            if pkl is None:
                raise CheckpointError(f"{self.path}: a zip file without {brief(prefix)}/data.pkl")
            order = members.get(f"{prefix}/byteorder")
            if order is not None:
                named = self._member(archive, order, 16).decode("ascii", "replace")
                if named not in ("little", "big"):
                    raise CheckpointError(f"{self.path}: unknown byteorder {brief(named)}")
                self.big_endian = named == "big"

            def storage(pid: Any) -> Storage:
                kind, key, numel, _ = storage_args(pid, 5)
                if key not in self._storages:
                    name = f"{prefix}/data/{key}"
                    info = members.get(name)
                    if info is None:
                        raise MalformedPickle(f"storage {brief(key)} has no member {brief(name)}")
                    self._readable(info)
                    if info.compress_type == zipfile.ZIP_STORED:
                        start = self._data_start(handle, info)
                        if info.compress_size != info.file_size or start + info.file_size > size:
                            raise MalformedPickle(
                                f"{brief(name)} declares {info.file_size} bytes, the file holds "
                                f"{max(0, min(info.compress_size, size - start))} of them"
                            )
                        self._offsets[key] = start
                    if info.file_size < numel * kind.itemsize:
                        raise MalformedPickle(
                            f"{brief(name)} holds {info.file_size} bytes, fewer than "
                            f"{numel} elements of {kind.name}"
                        )
                    self._members[key] = info
                    self._sizes[key] = numel * kind.itemsize
                    self._storages[key] = Storage(key, kind, numel)
                elif self._storages[key].kind != kind or self._storages[key].numel != numel:
                    raise MalformedPickle(f"storage {brief(key)} named with two types or sizes")
                return self._storages[key]

            limit = MAX_PICKLE_BYTES
            if pkl.compress_type != zipfile.ZIP_STORED:
                limit = min(limit, MAX_PICKLE_RATIO * pkl.compress_size + (1 << 20))
            data = self._member(archive, pkl, limit)
            return unpickle(data, self.path, storage, where=pkl.filename)[0]

    # -- legacy ----------------------------------------------------------------------------------
    def _read_legacy(self, handle: io.BufferedReader) -> Any:
        size = os.fstat(handle.fileno()).st_size
        # torch pickled the magic number with protocol 2: b"\x80\x02\x8a\x0a" and its bytes.
        if size < 2 or handle.read(1) != b"\x80":
            raise CheckpointError(
                f"{self.path}: not a PyTorch checkpoint (neither a zip file nor torch's legacy "
                "format); it may be truncated or corrupt"
            )
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return self._read_legacy_pickles(data, size)

    def _read_legacy_pickles(self, data: mmap.mmap, size: int) -> Any:
        magic, pos = unpickle(data, self.path, where="the magic number")
        if type(magic) is not int or magic != LEGACY_MAGIC:
            raise CheckpointError(
                f"{self.path}: not a PyTorch checkpoint (neither a zip file nor torch's legacy "
                "format); it may be truncated or corrupt"
            )
        version, pos = unpickle(data, self.path, start=pos, where="the protocol version")
        if type(version) is not int or version != LEGACY_PROTOCOL:
            raise CheckpointError(f"{self.path}: unknown legacy protocol version {brief(version)}")
        # sys_info: the storages are little-endian whatever it says
        _, pos = unpickle(data, self.path, start=pos, where="the system facts")
        roots: dict[str, tuple[StorageType, int]] = {}

        def storage(pid: Any) -> Storage:
            kind, key, numel, view = storage_args(pid, 6)
            known = roots.setdefault(key, (kind, numel))
            if known != (kind, numel):
                raise MalformedPickle(f"storage {brief(key)} named with two types or sizes")
            if view is None:
                return self._storages.setdefault(key, Storage(key, kind, numel))
            if type(view) is not tuple or len(view) != 3:
                raise MalformedPickle(f"a view of storage {brief(key)} is {brief(view)}")
            view_key, offset, count = view
            offset, count = as_count(offset, "a view's offset"), as_count(count, "a view's size")
            if offset + count > numel:
                raise MalformedPickle(f"view {brief(view_key)} reads past storage {brief(key)}")
            return Storage(key, kind, count, offset)

        state, pos = unpickle(data, self.path, storage, start=pos, where="the state dict")
        keys, pos = unpickle(data, self.path, start=pos, where="the storage keys")
        if not isinstance(keys, list):
            raise CheckpointError(f"{self.path}: the list of storage keys is a {type(keys)}")
        for raw in keys:
            try:
                key = text(raw)
            except MalformedPickle as exc:
                raise CheckpointError(f"{self.path}: {exc}") from None
            if not isinstance(key, str) or key not in roots:
                raise CheckpointError(f"{self.path}: storage {brief(key)} is not named by the dict")
            if key in self._offsets:
                raise CheckpointError(f"{self.path}: storage {brief(key)} is listed twice")
            kind, numel = roots[key]
            if pos + 8 > size:
                raise CheckpointError(f"{self.path}: truncated before storage {brief(key)}")
            (count,) = struct.unpack("<q", data[pos : pos + 8])
            if count != numel:
                raise CheckpointError(
                    f"{self.path}: storage {brief(key)} holds {count} elements, the dict says "
                    f"{numel}"
                )
            self._offsets[key] = pos = pos + 8
            self._sizes[key] = numel * kind.itemsize
            pos += numel * kind.itemsize
            if pos > size:
                raise CheckpointError(
                    f"{self.path}: truncated: storage {brief(key)} ends at byte {pos}, the file "
                    f"at {size}"
                )
        missing = sorted(set(roots) - set(self._offsets))
        if missing:
            raise CheckpointError(
                f"{self.path}: storages {brief(missing)} have no data (truncated?)"
            )
        return state

    # -- tensors ---------------------------------------------------------------------------------
    def shape(self, key: str) -> tuple[int, ...]:
        """The shape of tensor ``key``."""
        return self.tensors[key].shape

    def _read(self, storage: Storage, start: int, count: int) -> bytes | bytearray:
        """``count`` bytes of ``storage``'s root from byte ``start``, read from the file (the
        caller checked that they lie in what the file holds for it)."""
        info = self._members.get(storage.key)
        try:
            with open_stream(self.path, max_bytes=NO_CAP, error=CheckpointError) as handle:
                if storage.key in self._offsets:  # stored: the bytes are in the file, checked
                    buffer = bytearray(count)
                    handle.seek(self._offsets[storage.key] + start)
                    got = handle.readinto(buffer)
                else:  # deflated by a zip tool: read in chunks, memory follows what it holds
                    assert info is not None
                    chunks = bytearray()
                    with (
                        zipfile.ZipFile(handle) as archive,
                        # boundary-exempt: a member of the archive opened through the boundary
                        archive.open(info) as member,
                    ):
                        member.seek(start)
                        while len(chunks) < count and (
                            chunk := member.read(min(_CHUNK, count - len(chunks)))
                        ):
                            chunks += chunk
                    buffer, got = chunks, len(chunks)
        except (OSError, EOFError, zipfile.BadZipFile, zlib.error, NotImplementedError) as exc:
            raise CheckpointError(
                f"{self.path}: cannot read storage {brief(storage.key)}, the file may be corrupt "
                f"({exc})"
            ) from exc
        if got != count:
            raise CheckpointError(
                f"{self.path}: storage {brief(storage.key)} is truncated ({got} of {count} bytes)"
            )
        return buffer

    def load(self, key: str) -> np.ndarray:
        """Read tensor ``key``: its own elements only, as a new array of the saved dtype
        (bfloat16 as float32).

        Raises
        ------
        CheckpointError
            If the tensor does not lie in the bytes the file holds for its storage, or the file
            is shorter than the storage.
        """
        record = self.tensors[key]
        self._check(key, record)  # before any read, whatever happened since
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
                array = flat[: record.numel].reshape(record.shape)
            else:  # every index lies in flat: the extent was checked above
                strides = [s * kind.itemsize for s in record.stride]
                view = np.lib.stride_tricks.as_strided(flat, record.shape, strides, writeable=False)
                array = np.array(view)
        if kind.dtype == "bf16":
            array = (array.astype(np.uint32) << 16).view(np.float32)
        return array
