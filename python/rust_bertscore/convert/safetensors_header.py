"""A safetensors file's header, read and checked before any tensor is: the declared length
against the file's size and a cap, the JSON (depth, types), each entry's dtype, shape and
offsets (within the data, the size its shape and dtype take, no two tensors overlapping), in
overflow-free Python integers. Every failure is a :class:`~rust_bertscore.errors.CheckpointError`
naming the file and the tensor or the byte offset; the ``safetensors`` library reads the data
only after this passed (and checks again).
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

from ..errors import CheckpointError
from ..support.boundary import NO_CAP, open_regular
from ..support.inputs import parse_json

MAX_HEADER_BYTES = 100 * (1 << 20)
"""The header's declared length: the ``safetensors`` library's own cap (100 MB)."""

MAX_TENSORS = 100_000
"""Tensors in one file (the largest checkpoints hold a few thousand): counted before any work is
done per tensor, so a legal-size header of a million zero-size tensors is refused at once."""


MAX_DIMS = 8
"""Dimensions a tensor's shape may have."""

MAX_DIM = 1 << 31
"""The largest size of one dimension (the largest vocabularies have a few hundred thousand
rows): a zero-size tensor of shape ``[0, 2**62, 2**62]`` holds no byte, but NumPy cannot even
describe it."""

DTYPE_BYTES = {
    "BOOL": 1,
    "U8": 1,
    "I8": 1,
    "F8_E5M2": 1,
    "F8_E4M3": 1,
    "I16": 2,
    "U16": 2,
    "F16": 2,
    "BF16": 2,
    "I32": 4,
    "U32": 4,
    "F32": 4,
    "F64": 8,
    "I64": 8,
    "U64": 8,
}
"""Bytes per element of each safetensors dtype."""


@dataclass(frozen=True)
class TensorInfo:
    """One header entry, checked: dtype name, shape, and the byte range ``[start, end)`` in
    the file (absolute offsets)."""

    dtype: str
    shape: tuple[int, ...]
    start: int
    end: int


def _int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def read_header(path: str | os.PathLike[str]) -> dict[str, TensorInfo]:
    """The checked header entries of the safetensors file ``path`` by tensor name
    (``__metadata__`` left out).

    Raises
    ------
    CheckpointError
        Naming the file and the tensor or offset, if the file is shorter than its header says,
        the header is over :data:`MAX_HEADER_BYTES`, not a JSON object of entries, or an entry
        has an unknown dtype, a bad shape, offsets outside the data or of another size than
        its shape and dtype take, or overlapping another entry.

    Examples
    --------
    >>> from rust_bertscore import DEFAULT_MODEL
    >>> from rust_bertscore.models.files import resolve_model
    >>> path = resolve_model(DEFAULT_MODEL).model_dir / "model.safetensors"
    >>> info = read_header(path)["embeddings.word_embeddings.weight"]
    >>> info.dtype, info.shape, info.end - info.start == 4 * 30522 * 384
    ('F32', (30522, 384), True)
    """
    try:
        return _read_header(Path(path))
    except CheckpointError as exc:
        raise CheckpointError(f"{exc} (the file may be truncated or corrupt)") from None


def _read_exactly(fd: int, count: int) -> bytes:
    """Up to ``count`` bytes from ``fd``'s position (fewer only at the end of the file)."""
    chunks, left = [], count
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 24))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _read_header(path: Path) -> dict[str, TensorInfo]:
    # The boundary's open: a FIFO is refused at once, the size is the open file's.
    with open_regular(path, max_bytes=NO_CAP, error=CheckpointError) as (fd, size):
        try:
            prefix = _read_exactly(fd, 8)
            if len(prefix) < 8:
                raise CheckpointError(f"{path}: {size} bytes, too short for a safetensors file")
            (declared,) = struct.unpack("<Q", prefix)
            if declared > MAX_HEADER_BYTES:
                raise CheckpointError(
                    f"{path}: header length {declared} at offset 0 is over the limit of "
                    f"{MAX_HEADER_BYTES} bytes"
                )
            if 8 + declared > size:
                raise CheckpointError(
                    f"{path}: header length {declared} at offset 0 runs past the end of the "
                    f"file ({size} bytes): truncated or not a safetensors file"
                )
            raw = _read_exactly(fd, declared)
        except OSError as exc:
            raise CheckpointError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if len(raw) < declared:
        raise CheckpointError(f"{path}: the file shrank while its header was read")
    header = parse_json(raw, path, error=CheckpointError, max_depth=4, unique_keys=True)
    if isinstance(header, dict) and len(header) > MAX_TENSORS + 1:
        raise CheckpointError(
            f"{path}: {len(header)} header entries, over the limit of {MAX_TENSORS} tensors"
        )
    if not isinstance(header, dict):
        raise CheckpointError(f"{path}: header is not a JSON object")
    data_start = 8 + declared
    data_bytes = size - data_start
    tensors: dict[str, TensorInfo] = {}
    for key, entry in header.items():
        if key == "__metadata__":
            if entry is not None and not (
                isinstance(entry, dict) and all(isinstance(v, str) for v in entry.values())
            ):
                raise CheckpointError(f"{path}: __metadata__ must map names to strings")
            continue
        tensors[key] = _entry(path, key, entry, data_bytes, data_start)
    spans = sorted((t.start, t.end, k) for k, t in tensors.items() if t.end > t.start)
    for (_, end_a, key_a), (start_b, _, key_b) in pairwise(spans):
        if start_b < end_a:
            raise CheckpointError(
                f"{path}: tensors {key_a!r} and {key_b!r} overlap at byte {start_b - data_start} "
                "of the data"
            )
    end = max((t.end for t in tensors.values()), default=data_start)
    if size > end:  # as the safetensors library: the data is the tensors' bytes, nothing more
        raise CheckpointError(
            f"{path}: {size - end} bytes after the last tensor's data (the file is {size} bytes, "
            f"its tensors end at byte {end}): not a safetensors file"
        )
    return tensors


def _entry(path: Path, key: str, entry: object, data_bytes: int, data_start: int) -> TensorInfo:
    where = f"{path}: tensor {key!r}"
    if not isinstance(entry, dict):
        raise CheckpointError(f"{where}: header entry is not a JSON object")
    dtype = entry.get("dtype")
    if not isinstance(dtype, str) or dtype not in DTYPE_BYTES:
        raise CheckpointError(f"{where}: unknown dtype {str(dtype)[:40]!r}")
    shape = entry.get("shape")
    if (
        not isinstance(shape, list)
        or len(shape) > MAX_DIMS
        or not all(_int(n) and n <= MAX_DIM for n in shape)
    ):
        raise CheckpointError(
            f"{where}: shape must be a list of at most {MAX_DIMS} integers in 0..{MAX_DIM}, "
            f"got {str(shape)[:80]}"
        )
    offsets = entry.get("data_offsets")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(_int(n) for n in offsets)):
        raise CheckpointError(
            f"{where}: data_offsets must be two non-negative integers, got {str(offsets)[:80]}"
        )
    start, end = offsets
    if not start <= end <= data_bytes:
        raise CheckpointError(
            f"{where}: data_offsets [{start}, {end}] lie outside the {data_bytes} bytes of data"
        )
    count = 1
    for n in shape:
        count *= n
    if count * DTYPE_BYTES[dtype] != end - start:
        raise CheckpointError(
            f"{where}: shape {tuple(shape)} of {dtype} takes {count * DTYPE_BYTES[dtype]} bytes, "
            f"but data_offsets [{start}, {end}] hold {end - start}"
        )
    return TensorInfo(dtype, tuple(shape), data_start + start, data_start + end)
