"""The record format of the embedding store's segment files.

A segment is a run of records, each a fixed header followed by its payload:

======  =====  ===============================================================
offset  bytes  field
======  =====  ===============================================================
0       4      magic ``b"RBS1"``
4       1      kind: 1 = vectors, 2 = touch (a use, no payload)
5       1      ndim of the vectors (2: tokens x hidden, 3: layers x tokens x hidden)
6       2      reserved (0)
8       32     key (SHA-256 of the key space and the token ids)
40      8      time (float64, seconds since the epoch): written, or used
48      12     shape (3 x uint32; unused dimensions 0)
60      8      payload length in bytes (uint64)
68      4      CRC-32 of the payload
72      4      CRC-32 of bytes 0..72 (the header)
======  =====  ===============================================================

All little-endian; payloads are float32, C order. A torn or damaged header stops a scan of its
segment there (so does a vectors header whose shape's product times 4 is not its payload
length); a payload whose length or CRC does not match, or that holds NaN or infinity, is a
damaged entry (a miss).
"""

from __future__ import annotations

import math
import struct
import zlib
from dataclasses import dataclass

import numpy as np

from ..errors import InputValueError

MAGIC = b"RBS1"
KIND_VECTORS = 1
KIND_TOUCH = 2

_HEAD = struct.Struct("<4sBBH32sd3IQI")
HEADER = struct.Struct("<72sI")
"""The whole header: the fields above and the CRC-32 of their bytes."""
HEADER_BYTES = HEADER.size  # 76


@dataclass(frozen=True)
class Header:
    """One record's header (see the module docstring)."""

    kind: int
    key: bytes
    time: float
    shape: tuple[int, ...]
    nbytes: int
    crc: int


def pack_header(
    kind: int, key: bytes, time: float, shape: tuple[int, ...], payload: bytes
) -> bytes:
    """The header bytes of a record."""
    dims = (*shape, 0, 0, 0)[:3]
    head = _HEAD.pack(
        MAGIC, kind, len(shape), 0, key, time, *dims, len(payload), zlib.crc32(payload)
    )
    return HEADER.pack(head, zlib.crc32(head))


def vectors_record(key: bytes, time: float, vectors: np.ndarray) -> bytes:
    """A whole record holding ``vectors`` (float32, 2 or 3 dimensions)."""
    arr = np.ascontiguousarray(vectors, dtype=np.float32)
    if arr.ndim not in (2, 3):
        raise InputValueError(
            f"store records hold 2- or 3-dimensional vectors, got shape {arr.shape}"
        )
    payload = arr.tobytes()
    return pack_header(KIND_VECTORS, key, time, arr.shape, payload) + payload


def touch_record(key: bytes, time: float) -> bytes:
    """A header-only record saying ``key`` was used at ``time`` (for least-recently-used)."""
    return pack_header(KIND_TOUCH, key, time, (), b"")


def unpack_header(raw: bytes) -> Header | None:
    """The header in ``raw`` (at least :data:`HEADER_BYTES`), or None when it is torn or
    damaged (bad magic, kind, shape or header CRC)."""
    if len(raw) < HEADER_BYTES:
        return None
    head, crc = HEADER.unpack_from(raw)
    if zlib.crc32(head) != crc:
        return None
    magic, kind, ndim, _, key, time, d0, d1, d2, nbytes, payload_crc = _HEAD.unpack(head)
    if magic != MAGIC or kind not in (KIND_VECTORS, KIND_TOUCH):
        return None
    shape = (d0, d1, d2)[:ndim]
    # Python integers: a product of three uint32 may not wrap round to a small length.
    if kind == KIND_VECTORS and (ndim not in (2, 3) or 4 * math.prod(shape) != nbytes):
        return None
    return Header(kind, key, time, shape, nbytes, payload_crc)


def decode_payload(header: Header, payload: bytes | None) -> np.ndarray | None:
    """The vectors of a record, or None when the payload is missing or short, its CRC does
    not match, its length is not its shape's, or it holds a value that is not finite (NaN or
    infinity: no encoder output a scorer can use)."""
    if (
        payload is None
        or len(payload) != header.nbytes
        or 4 * math.prod(header.shape) != header.nbytes
        or zlib.crc32(payload) != header.crc
    ):
        return None
    value = np.frombuffer(payload, dtype="<f4").reshape(header.shape)
    if not np.isfinite(value).all():
        return None
    return value
