"""A mutation fuzzer of every parser of outside input (issue 46): ``.bin`` pickles and their zip
directory, safetensors headers, JSON configs, tokenizer files, SentencePiece models, store
segments, baseline CSVs and export sidecars.

Each case is ``(target, seed)``: the seed drives a ``random.Random`` that mutates one of the
target's valid files (tests/data only, or built here in code), so a case is replayed from its
two values. Cases run in batches in a worker subprocess (``python tests/fuzzing.py --worker``)
with a memory cap (``RLIMIT_AS``: the worker's size after its imports plus
:data:`MEMORY_CAP`) and a timeout per case; the worker reports one line per case, so a crash,
a hang or a case past the memory cap is pinned to the case that caused it.

Allowed outcomes: the target loads (and its result passes the target's own check), or it raises
a ``RustBertScoreError`` subclass. Anything else (another exception, ``MemoryError``, a signal,
no answer within the timeout) is a finding.

``python tests/fuzzing.py --seconds N`` (``make fuzz``) runs cases until N seconds have passed,
prints cases/s, and saves each finding's mutated file under ``tests/data/fuzz/`` (replayed by
``tests/test_fuzz.py``).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import resource
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
TINY = DATA / "reference" / "tiny"
TINY_BIN = DATA / "tiny_bin"
FINDINGS = DATA / "fuzz"

MEMORY_CAP = 1 << 30
"""Bytes of address space a worker may add to what it holds after its imports."""

PREFIX = "@@rbs-fuzz "
"""Marks a worker's answer lines."""

RESTART = 75
"""A worker's exit status after a case that poisoned it: the rest go to a fresh worker."""

CASE_TIMEOUT = 30.0
"""Seconds one case may take before it counts as a hang."""

TEXTS = ["a cup of coffee on the table", "", "Prices rose by 3% in May.", "naïve café 東京 🙂"]


# ---- mutations -------------------------------------------------------------------------------

INTERESTING = [0, 1, 2, 7, 8, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF,
               2**31, 2**32 + 1, 2**53, 2**63 - 1, 2**64 - 1, -1, -(2**31)]  # fmt: skip


def _int_bytes(rng: random.Random, width: int) -> bytes:
    value = rng.choice(INTERESTING) % (1 << (8 * width))
    return value.to_bytes(width, "little")


def mutate_bytes(rng: random.Random, data: bytes, start: int = 0, end: int | None = None) -> bytes:
    """One to four byte-level mutations inside ``data[start:end]``: bit flips, interesting
    integers, inserted or deleted runs, a copied chunk, truncation."""
    buf = bytearray(data)
    end = len(buf) if end is None else min(end, len(buf))
    for _ in range(rng.randint(1, 4)):
        if end <= start:
            break
        pos = rng.randrange(start, end)
        kind = rng.randrange(7)
        if kind == 0:
            buf[pos] ^= 1 << rng.randrange(8)
        elif kind == 1:
            buf[pos] = rng.choice((0, 0xFF, 0x7F, 0x80, rng.randrange(256)))
        elif kind == 2:
            width = rng.choice((1, 2, 4, 8))
            buf[pos : pos + width] = _int_bytes(rng, width)
        elif kind == 3:
            buf[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        elif kind == 4:
            del buf[pos : pos + rng.randint(1, 64)]
        elif kind == 5:
            other = rng.randrange(start, end)
            chunk = buf[other : other + rng.randint(1, 256)]
            buf[pos:pos] = chunk
        else:
            del buf[rng.randrange(start, len(buf)) :]
        end = min(end, len(buf))
    return bytes(buf)


BIG_INT = "@@big-int@@"
"""Written as an integer of 5,000 digits (past Python's int conversion limit)."""


def random_json_value(rng: random.Random, depth: int = 0) -> object:
    kind = rng.randrange(12)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice((True, False))
    if kind == 2:
        return rng.choice([*INTERESTING, 10**30, -(10**30)])
    if kind == 3:
        return rng.choice((0.5, -1.5, 1e308, -1e308, 1e-320))
    if kind == 4:
        return rng.choice(("", "bert", "[UNK]", "x" * 10000, "\ud800", "é", "../../etc/passwd"))
    if kind == 5:
        return float(rng.choice(("nan", "inf", "-inf")))
    if kind == 6 and depth < 3:
        return [random_json_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if kind == 7 and depth < 3:
        return {
            rng.choice(("a", "type", "vocab", "id", "content")): random_json_value(rng, depth + 1)
            for _ in range(rng.randint(0, 3))
        }
    if kind == 8:
        n = rng.choice((70, 200, 5000))
        return json.loads("[" * n + "]" * n) if n < 900 else {"deep": "placeholder"}
    if kind == 9:
        return list(range(rng.choice((0, 1, 1000))))
    if kind == 10:
        return rng.choice((-(2**63), 2**64, BIG_INT, 3))
    return rng.choice(("bert", "roberta", "albert", "t5", "deberta-v2", "xlnet"))


def _paths(value: object, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(value, list):
        for i, v in enumerate(value[:50]):
            out.extend(_paths(v, (*prefix, i)))
    return out


def mutate_json(rng: random.Random, data: bytes) -> bytes:
    """Structural mutations of a JSON document (a value replaced by one of another type, a key
    deleted or added, a list emptied or grown), or byte-level ones on its text."""
    if rng.random() < 0.25:
        return mutate_bytes(rng, data)
    doc = json.loads(data)
    for _ in range(rng.randint(1, 3)):
        paths = _paths(doc)
        path = rng.choice(paths)
        if not path:
            if rng.random() < 0.1:
                doc = random_json_value(rng)
            continue
        parent = doc
        for step in path[:-1]:
            parent = parent[step]  # type: ignore[index]
        last = path[-1]
        action = rng.randrange(4)
        if action == 0 and isinstance(parent, dict):
            del parent[last]
        elif action == 1 and isinstance(parent, dict):
            parent[rng.choice(("model_type", "vocab_size", "type", "added_tokens", "x"))] = (
                random_json_value(rng)
            )
        else:
            parent[last] = random_json_value(rng)  # type: ignore[index]
    text = json.dumps(doc, ensure_ascii=rng.random() < 0.5)
    if rng.random() < 0.05:  # very deep nesting, past the recursion limit
        text = '{"a": ' + "[" * 100000 + "]" * 100000 + "}"
    text = text.replace(f'"{BIG_INT}"', "9" * 5000)
    return text.encode("utf-8", "surrogatepass")


def mutate_text(rng: random.Random, data: bytes) -> bytes:
    """Line-level mutations of a text table (CSV, vocab, merges) or byte-level ones."""
    if rng.random() < 0.4:
        return mutate_bytes(rng, data)
    lines = data.split(b"\n")
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(lines))
        kind = rng.randrange(6)
        if kind == 0:
            del lines[i]
        elif kind == 1:
            lines.insert(i, lines[rng.randrange(len(lines))])
        elif kind == 2:
            lines[i] = rng.choice((b"", b",,,", b"0,nan,inf,-inf", b"1,1e400,0,0", b"\xff\xfe",
                                   b"a\tb", b"9" * 5000, b"0,0.1,0.2"))  # fmt: skip
        elif kind == 3:
            lines[i] = lines[i].replace(b",", b"\t")
        elif kind == 4:
            lines[i] = lines[i] * rng.randint(2, 50)
        else:
            lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)]
    return b"\n".join(lines)


# -- safetensors ---------------------------------------------------------------------------------


def mutate_safetensors(rng: random.Random, data: bytes) -> bytes:
    """Mutate a safetensors file's header: an entry's dtype, shape or offsets, the declared
    length, or bytes of the header; the data bytes stay."""
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    body = data[8 + n :]
    kind = rng.randrange(6)
    if kind == 0:
        return data[:8] + mutate_bytes(rng, data[8 : 8 + n]) + body
    if kind == 1:
        declared = rng.choice((0, 1, n - 1, n + 1, len(data), 2**63, 2**64 - 1, 100 << 20))
        return struct.pack("<Q", declared) + data[8:]
    keys = [k for k in header if k != "__metadata__"]
    key = rng.choice(keys)
    entry = header[key]
    if kind == 2:
        entry["dtype"] = rng.choice(("F16", "BF16", "I64", "U8", "BOOL", "F64", "F8_E4M3", "X", 3))
    elif kind == 3:
        shape = list(entry["shape"])
        choice = rng.randrange(5)
        if choice == 0 and shape:
            shape[rng.randrange(len(shape))] = rng.choice([*INTERESTING, 10**20])
        elif choice == 1:
            shape.append(rng.choice((0, 1, 2)))
        elif choice == 2:
            shape = []
        elif choice == 3:
            shape = [2**32, 2**32, 0]
        else:
            shape = rng.choice(("x", None, [1.5], [-3]))
        entry["shape"] = shape
    elif kind == 4:
        start, end = entry["data_offsets"]
        other = header[rng.choice(keys)]["data_offsets"]
        entry["data_offsets"] = rng.choice(
            (
                [start, end + 4],
                [start - 4, end - 4],
                [other[0], other[0] + end - start],  # overlaps another tensor
                [end, start],
                [start, 2**64],
                [len(body) - (end - start) + 4, len(body) + 4],
                [-8, end],
                [start],
                "x",
            )
        )
    else:
        header[key] = random_json_value(rng)
    raw = json.dumps(header).encode()
    declared = len(raw) if rng.random() < 0.9 else rng.choice((len(raw) - 1, len(raw) + 7))
    return struct.pack("<Q", declared) + raw + body


# -- .bin: pickle opcodes and zip directory fields ------------------------------------------------

_RISKY_OPS = [b"b", b"R", b"s", b"u", b"e", b"a", b"2", b"0", b"1", b"t", b"\x85", b"\x86",
              b"\x87", b"]", b"}", b")", b"(", b"\x94", b"h\x00", b"q\x00", b"N", b"K\x00",
              b"J\xff\xff\xff\x7f", b"ctorch\nFloatStorage\n", b"c__builtin__\nset\n",
              b"ccollections\nOrderedDict\n", b"ctorch._utils\n_rebuild_tensor_v2\n"]  # fmt: skip


def mutate_pickle(rng: random.Random, pkl: bytes) -> bytes:
    """Mutate a pickle at opcode level: an opcode swapped, an argument overwritten with an
    interesting integer or other bytes, an opcode deleted, duplicated or inserted."""
    import pickletools

    ops = [pos for _, _, pos in pickletools.genops(pkl)]
    bounds = [*ops, len(pkl)]
    buf = bytearray(pkl)
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(ops))
        pos = ops[i]
        nxt = bounds[i + 1]
        kind = rng.randrange(6)
        if kind == 0:  # another opcode in the same place
            buf[pos] = ord(rng.choice(_RISKY_OPS)[:1])
        elif kind == 1 and nxt - pos > 1:  # the argument
            width = nxt - pos - 1
            if width in (1, 2, 4, 8):
                buf[pos + 1 : nxt] = _int_bytes(rng, width)
            else:
                buf[pos + 1 : nxt] = mutate_bytes(rng, bytes(buf[pos + 1 : nxt]))
        elif kind == 2:
            del buf[pos:nxt]
        elif kind == 3:
            buf[pos:pos] = buf[pos:nxt]
        elif kind == 4:
            buf[pos:pos] = rng.choice(_RISKY_OPS)
        else:
            buf = bytearray(mutate_bytes(rng, bytes(buf), pos, nxt))
        # positions are stale after an edit: re-parse for the next one if possible
        try:
            ops = [p for _, _, p in pickletools.genops(bytes(buf))]
            bounds = [*ops, len(buf)]
        except Exception:
            break
    return bytes(buf)


def _rezip(members: list[tuple[zipfile.ZipInfo, bytes]], deflate: set[str]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for info, payload in members:
            info = zipfile.ZipInfo(info.filename, date_time=info.date_time)
            info.compress_type = zipfile.ZIP_DEFLATED if info.filename in deflate else 0
            archive.writestr(info, payload)
    return out.getvalue()


def mutate_zip_fields(rng: random.Random, data: bytes) -> bytes:
    """Overwrite a field of a central directory entry, a local header or the end record with
    an interesting value: compression method, flags, sizes, offsets, name length, counts."""
    buf = bytearray(data)
    eocd = data.rfind(b"PK\x05\x06")
    cd_offset = struct.unpack_from("<I", data, eocd + 16)[0]
    entries = []
    pos = cd_offset
    while data[pos : pos + 4] == b"PK\x01\x02":
        name_len, extra_len, comment_len = struct.unpack_from("<HHH", data, pos + 28)
        entries.append(pos)
        pos += 46 + name_len + extra_len + comment_len
    locals_ = [struct.unpack_from("<I", data, e + 42)[0] for e in entries]
    # (offset from the record's start, width)
    cd_fields = [(8, 2), (10, 2), (16, 4), (20, 4), (24, 4), (28, 2), (30, 2), (42, 4)]
    local_fields = [(6, 2), (8, 2), (14, 4), (18, 4), (22, 4), (26, 2), (28, 2)]
    eocd_fields = [(8, 2), (10, 2), (12, 4), (16, 4), (20, 2)]
    for _ in range(rng.randint(1, 2)):
        where = rng.randrange(3)
        if where == 0 and entries:
            base, (off, width) = rng.choice(entries), rng.choice(cd_fields)
        elif where == 1 and locals_:
            base, (off, width) = rng.choice(locals_), rng.choice(local_fields)
        else:
            base, (off, width) = eocd, rng.choice(eocd_fields)
        if off == 8 and width == 2 and where < 2 and rng.random() < 0.5:
            value = rng.choice((1, 6, 9, 12, 14, 93, 99)).to_bytes(2, "little")  # methods
        else:
            value = _int_bytes(rng, width)
        buf[base + off : base + off + width] = value
    return bytes(buf)


def _pickle_str(text: str) -> bytes:
    raw = text.encode()
    return b"X" + struct.pack("<I", len(raw)) + raw


def _pickle_value(rng: random.Random) -> bytes:
    """A small pickled value: an interesting integer, a tuple of them, or a dtype name."""
    kind = rng.randrange(4)
    if kind == 0:
        return b"J" + struct.pack("<i", rng.choice((0, 1, -1, 2**31 - 1, 4096, 40000)))
    if kind == 1:
        return _pickle_str(rng.choice(("f2", "f4", "bf16", "i8", "u1", "<f8")))
    items = [
        b"J" + struct.pack("<i", rng.choice((0, 1, -1, 3, 64, 10000, 40000, 2**31 - 1)))
        for _ in range(rng.randint(1, 2))
    ]
    return b"(" + b"".join(items) + b"t"


def build_attack(rng: random.Random, pkl: bytes) -> bytes:
    """Insert a BUILD that sets a slot of the object on the stack: a tensor record right after
    its ``_rebuild_tensor_v2`` REDUCE (stride, shape, offset, storage), or a ``torch.*Storage``
    class pushed, changed and popped at the start (its dtype): the state a loader must refuse
    or keep to one load."""
    import pickletools

    if rng.random() < 0.4:
        name = rng.choice(("FloatStorage", "HalfStorage", "BFloat16Storage", "LongStorage"))
        attr = rng.choice(("dtype", "name", "itemsize"))
        state = b"N}" + _pickle_str(attr) + _pickle_value(rng) + b"s\x86b0"
        insert_at = 2 if pkl[:1] == b"\x80" else 0
        patch = b"ctorch\n" + name.encode() + b"\n" + state
        return pkl[:insert_at] + patch + pkl[insert_at:]
    reduces = [pos for op, _, pos in pickletools.genops(pkl) if op.name == "REDUCE"]
    pos = rng.choice(reduces) + 1
    attr = rng.choice(("stride", "shape", "offset", "storage", "numel", "key", "base"))
    state = b"N}" + _pickle_str(attr) + _pickle_value(rng) + b"s\x86b"
    return pkl[:pos] + state + pkl[pos:]


def mutate_bin(rng: random.Random, data: bytes) -> bytes:
    """A ``.bin`` zip: its ``data.pkl`` mutated at opcode level (stored or deflated), a
    storage member cut or grown, or its zip directory fields."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        members = [(info, archive.read(info)) for info in archive.infolist()]
    kind = rng.randrange(12)
    if kind >= 10:  # BUILD aimed at a checked tensor record or a storage class
        members = [
            (info, build_attack(rng, payload) if info.filename.endswith("data.pkl") else payload)
            for info, payload in members
        ]
        return _rezip(members, set())
    if kind < 5:
        members = [
            (info, mutate_pickle(rng, payload) if info.filename.endswith("data.pkl") else payload)
            for info, payload in members
        ]
        deflate = {i.filename for i, _ in members if i.filename.endswith("data.pkl")}
        return _rezip(members, deflate if rng.random() < 0.3 else set())
    if kind < 7:
        storages = [i for i, (info, _) in enumerate(members) if "/data/" in info.filename]
        j = rng.choice(storages)
        info, payload = members[j]
        cut = rng.randrange(len(payload) + 1)
        members[j] = (info, payload[:cut] if rng.random() < 0.7 else payload + bytes(cut))
        return _rezip(members, set())
    if kind < 8:  # a highly compressible data.pkl: a bomb in small
        members = [
            (info, payload + b"\x00" * rng.choice((1 << 20, 64 << 20)))
            if info.filename.endswith("data.pkl")
            else (info, payload)
            for info, payload in members
        ]
        return _rezip(members, {i.filename for i, _ in members if i.filename.endswith("data.pkl")})
    return mutate_zip_fields(rng, data)


# -- sentencepiece -----------------------------------------------------------------------------


def mutate_protobuf(rng: random.Random, data: bytes) -> bytes:
    """A SentencePiece model (a protobuf): a length or varint near the start overwritten, the
    trainer/normalizer specs at the end mutated, or byte-level mutations anywhere."""
    kind = rng.randrange(3)
    if kind == 0:
        return mutate_bytes(rng, data, 0, 256)
    if kind == 1:
        return mutate_bytes(rng, data, max(0, len(data) - 4096))
    return mutate_bytes(rng, data)


# -- store segments ------------------------------------------------------------------------------


def build_store(directory: Path) -> list[bytes]:
    """A store with three entries written by the store itself; returns their keys."""
    import numpy as np

    from rust_bertscore.store.segments import EmbeddingStore

    store = EmbeddingStore(directory)
    keys = [bytes([i]) * 32 for i in range(3)]
    values = [np.full((2 + i, 4), i + 0.5, np.float32) for i in range(3)]
    values[2] = np.ones((2, 3, 4), np.float32)
    store.put_many(keys, values)
    store.close()
    return keys


def mutate_segment(rng: random.Random, data: bytes) -> bytes:
    """A segment: a header field overwritten with its CRCs made right again (so the scan gets
    past the CRC check), or raw byte mutations (CRCs wrong)."""
    from rust_bertscore.store import records

    if rng.random() < 0.3:
        return mutate_bytes(rng, data)
    buf = bytearray(data)
    starts = []
    pos = 0
    while pos + records.HEADER_BYTES <= len(buf):
        header = records.unpack_header(bytes(buf[pos : pos + records.HEADER_BYTES]))
        if header is None:
            break
        starts.append(pos)
        pos += records.HEADER_BYTES + header.nbytes
    start = rng.choice(starts)
    field = rng.choice([(4, 1), (5, 1), (6, 2), (40, 8), (48, 4), (52, 4), (56, 4), (60, 8)])
    off, width = field
    buf[start + off : start + off + width] = _int_bytes(rng, width)
    if rng.random() < 0.5:  # keep nbytes consistent with the shape, so only size checks remain
        ndim = buf[start + 5]
        dims = struct.unpack_from("<3I", buf, start + 48)[: max(0, min(ndim, 3))]
        nbytes = 4
        for d in dims:
            nbytes *= d
        struct.pack_into("<Q", buf, start + 60, nbytes % (1 << 64))
    head = bytes(buf[start : start + 72])
    struct.pack_into("<I", buf, start + 72, zlib.crc32(head))
    return bytes(buf)


# ---- targets -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """A family of inputs: where its valid files come from, which file each case mutates and
    how, and the load that must end in a typed error or a good result."""

    name: str
    base: Callable[[Path], None]  # fills a directory with the valid inputs
    files: tuple[str, ...]  # the files a case may mutate
    mutate: Callable[[random.Random, bytes], bytes]
    load: Callable[[Path], None]
    after: Callable[[Path], None] | None = None
    """Run on the valid inputs after every case, in the same process: a case must not change
    how a later, valid file loads (process-wide state a file could poison)."""


def _copy(src: Path, names: tuple[str, ...] | None = None) -> Callable[[Path], None]:
    def fill(dst: Path) -> None:
        for f in src.iterdir():
            if f.is_file() and (names is None or f.name in names) and f.suffix != ".npz":
                shutil.copy(f, dst / f.name)

    return fill


def _without(src: Path, *left_out: str) -> Callable[[Path], None]:
    def fill(dst: Path) -> None:
        for f in src.iterdir():
            if f.is_file() and f.name not in left_out and f.suffix != ".npz":
                shutil.copy(f, dst / f.name)

    return fill


def load_weights(directory: Path) -> None:
    """Every tensor of a checkpoint through ``WeightStore``; a loaded tensor must have the
    shape its header declares and be finite float32 (``get`` checks that)."""
    from rust_bertscore.convert.checkpoint import WeightStore, float32_bytes

    float32_bytes(directory)
    store = WeightStore(directory)
    for name in list(store.names()):
        _, shape = store.spec(name)
        array = store.get(name, shape)
        assert array.shape == tuple(shape) and str(array.dtype) == "float32"


_CLEAN: dict[str, dict[str, bytes]] = {}


def same_as_clean(directory: Path) -> None:
    """Every tensor of the valid checkpoint in ``directory`` has the bytes it had on the first
    load in this process."""
    from rust_bertscore.convert.checkpoint import WeightStore

    store = WeightStore(directory)
    now = {name: store.get(name, store.spec(name)[1]).tobytes() for name in store.names()}
    first = _CLEAN.setdefault(str(directory), now)
    changed = [name for name in first if now.get(name) != first[name]]
    assert not changed and now.keys() == first.keys(), (
        f"the valid file loads differently: {changed[:3]}"
    )


def load_config_and_build(directory: Path) -> None:
    """``config.json`` as the converter reads it: the family, the depth, then the whole ONNX
    graph built in memory from the (valid) weights."""
    from rust_bertscore.convert import build_model

    build_model(directory, 1)


def load_tokenizer(directory: Path) -> None:
    """The tokenizer files as the scorer reads them, and a few texts encoded: ids must be
    ints within the vocabulary."""
    from rust_bertscore.catalog.configs import load_config
    from rust_bertscore.stages.tokenization.tokenizer import TextTokenizer

    config = load_config(directory)
    tokenizer = TextTokenizer(directory, config)
    for ids in tokenizer.encode(TEXTS):
        assert all(isinstance(i, int) and i >= 0 for i in ids), ids


def load_store(directory: Path) -> None:
    """Every key of the store read, its size survey and a prune: a damaged entry is a miss,
    an intact one has the shape its header says."""
    from rust_bertscore.store.segments import EmbeddingStore

    store = EmbeddingStore(directory)
    keys = [bytes([i]) * 32 for i in range(3)] + [b"\x00" * 31 + b"\x01"]
    for value in store.get_many(keys):
        assert value is None or (value.dtype.str == "<f4" and value.ndim in (2, 3))
    store.info()
    store.prune(1 << 20)
    store.close()


REGEX_ATOMS = ["a", "b", "!", " ", r"\s", r"\S", ".", "[ab]", "[^a]", r"\p{L}", r"\d", r"\w"]
REGEX_QUANTIFIERS = ["", "", "*", "+", "?", "{2,}", "{1,3}", "*?", "++"]
RUN_TEXTS = [
    "a" * 3000 + "!",
    " " * 3000 + "x",
    "ab" * 1500 + "!",
    "a " * 1500 + "!",
    ("a" * 21 + "!") * 60,
    ("a " * 10 + "!") * 60,
]
"""Texts of long runs, where a backtracking pattern's cost shows: a cubic pattern takes minutes
on the long ones, and an exponential one, each attempt just under Oniguruma's retry limit, on
the repeated short ones."""
REGEX_SHAPES = [
    "(?:{x}+)+{y}",
    "(?:{x}|{x})*{y}",
    "(?:{x}*{x})*{y}",
    "{x}*{x}*{y}",
    "{x}+{x}*{x}+{y}",
    "{x}*(?={x}*{y})",
    "{x}+(?!{x}*{y}){x}",
]
"""The shapes of catastrophic backtracking, filled with atoms that match a run and one that
ends it."""


def backtracking_regex(rng: random.Random) -> str:
    """A pattern of one of :data:`REGEX_SHAPES`."""
    x = rng.choice(["a", r"\s", r"\w", ".", "[a ]", r"\p{L}", r"[^!]"])
    y = rng.choice(["!", "b", r"\S", "$", r"(?!a)", r"\d"])
    return rng.choice(REGEX_SHAPES).format(x=x, y=y)


def random_regex(rng: random.Random, depth: int = 0) -> str:
    """A random Oniguruma pattern: atoms, quantifiers, groups (plain, optional, repeated),
    alternatives, anchors and look-arounds; nested quantifiers included."""
    parts = []
    for _ in range(rng.randint(1, 4)):
        roll = rng.random()
        if roll < 0.25 and depth < 3:
            body = "|".join(random_regex(rng, depth + 1) for _ in range(rng.randint(1, 2)))
            parts.append(f"(?:{body}){rng.choice(REGEX_QUANTIFIERS)}")
        elif roll < 0.3:
            parts.append(rng.choice(["$", "^", r"\b", r"(?!\S)", r"(?=a)", r"\z"]))
        else:
            parts.append(rng.choice(REGEX_ATOMS) + rng.choice(REGEX_QUANTIFIERS))
    return "".join(parts)


def mutate_regex(rng: random.Random, data: bytes) -> bytes:
    """``tokenizer.json`` with a random pattern as a Split pre-tokenizer or a Replace
    normaliser, or with a Precompiled normaliser of random bytes (a random trie)."""
    import base64

    doc = json.loads(data)
    if rng.random() < 0.15:
        charsmap = base64.b64encode(rng.randbytes(rng.randint(4, 600))).decode()
        doc["normalizer"] = {"type": "Precompiled", "precompiled_charsmap": charsmap}
        return json.dumps(doc).encode()
    pattern = {"Regex": backtracking_regex(rng) if rng.random() < 0.4 else random_regex(rng)}
    if rng.random() < 0.5:
        behavior = rng.choice(["Isolated", "Removed", "MergedWithPrevious", "Contiguous"])
        split = {"type": "Split", "pattern": pattern, "behavior": behavior, "invert": False}
        doc["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [split, doc["pre_tokenizer"]]}
    else:
        replace = {"type": "Replace", "pattern": pattern, "content": " "}
        doc["normalizer"] = {"type": "Sequence", "normalizers": [replace, doc["normalizer"]]}
    return json.dumps(doc).encode()


def load_tokenizer_on_runs(directory: Path) -> None:
    """The tokenizer loaded and :data:`RUN_TEXTS` encoded: a pattern it accepts must finish
    well within the case's timeout."""
    from rust_bertscore.catalog.configs import load_config
    from rust_bertscore.stages.tokenization.tokenizer import TextTokenizer

    tokenizer = TextTokenizer(directory, load_config(directory))
    for ids in tokenizer.encode(RUN_TEXTS):
        assert all(isinstance(i, int) and i >= 0 for i in ids), ids


def tiny_scores(store: Path | None = None) -> object:
    """The tiny BERT's P, R, F on :data:`TEXTS`, loaded afresh (through ``store`` if given)."""
    import rust_bertscore as rb
    from rust_bertscore.models.caches import clear_cache

    clear_cache()
    scorer = rb.BERTScorer(model_type=str(TINY / "bert"), num_layers=2, cache_bytes=0,
                           store=None if store is None else str(store))  # fmt: skip
    return scorer.score(TEXTS, TEXTS[::-1])


def clean_scores() -> object:
    """:func:`tiny_scores` without a store, memoised per worker process."""
    if not _CLEAN_SCORES:
        _CLEAN_SCORES.append(tiny_scores())
    return _CLEAN_SCORES[0]


_CLEAN_SCORES: list[object] = []


def _same_scores(got: object, want: object) -> None:
    import numpy as np

    for g, w in zip(got, want, strict=True):  # type: ignore[call-overload]
        assert np.allclose(g, w, atol=1e-6), (g, w)


def _forged_store_base(dst: Path) -> None:
    """A store written by scoring :data:`TEXTS` with the tiny BERT (real keys), its one
    segment named ``a.seg``."""
    tiny_scores(dst / "store")
    (seg,) = (dst / "store" / "segments").glob("*.seg")
    seg.rename(seg.with_name("a.seg"))


def forge_record(rng: random.Random, data: bytes) -> bytes:
    """A segment with one vectors record rewritten for its real key, its CRCs right: rows,
    hidden size or rank changed, a NaN or an infinity, or its declared shape larger than the
    bytes that follow (the last record)."""
    import numpy as np

    from rust_bertscore.store import records

    spans, pos = [], 0
    while pos + records.HEADER_BYTES <= len(data):
        head = records.unpack_header(data[pos : pos + records.HEADER_BYTES])
        if head is None:
            break
        end = pos + records.HEADER_BYTES + head.nbytes
        if head.kind == records.KIND_VECTORS:
            spans.append((pos, end, head))
        pos = end
    start, end, head = rng.choice(spans)
    value = np.frombuffer(data[start + records.HEADER_BYTES : end], np.float32).reshape(head.shape)
    value = value.copy()
    how = rng.choice(["rows+", "rows-", "hidden", "rank", "nan", "inf", "short"])
    if how == "rows+":
        value = np.concatenate([value, value[..., -1:, :]], axis=-2)
    elif how == "rows-" and value.shape[-2] > 1:
        value = value[..., :-1, :]
    elif how == "hidden":
        value = value[..., : max(1, value.shape[-1] - rng.randint(1, 3))]
    elif how == "rank":
        value = value[None] if value.ndim == 2 else value[0]
    elif how in ("nan", "inf"):
        value.flat[rng.randrange(value.size)] = np.nan if how == "nan" else -np.inf
    payload = np.ascontiguousarray(value, np.float32).tobytes()
    record = records.pack_header(records.KIND_VECTORS, head.key, head.time, value.shape, payload)
    if how == "short":  # a header declaring more than the file holds, at the end
        big = (head.shape[0] * 1000, *head.shape[1:])
        record = records.pack_header(records.KIND_VECTORS, head.key, head.time, big, payload)
        return data[:start] + data[end:] + record + payload
    return data[:start] + record + payload + data[end:]


def score_with_forged_store(directory: Path) -> None:
    """Scores through the forged store equal the clean ones: a bad record is a miss."""
    _same_scores(tiny_scores(directory / "store"), clean_scores())


def _graph_cache_base(dst: Path) -> None:
    """A model cache holding the tiny BERT's converted graph, and a copy of that graph as
    ``graph`` (what a case replaces it with)."""
    os.environ["RUST_BERTSCORE_CACHE"] = str(dst / "cache")
    try:
        tiny_scores()
    finally:
        del os.environ["RUST_BERTSCORE_CACHE"]
    (cached,) = (dst / "cache").rglob("model.onnx")
    shutil.copy(cached, dst / "graph")


def score_with_replaced_graph(directory: Path) -> None:
    """The cached graph replaced by ``graph`` (mutated bytes, or a FIFO, a directory, a link,
    a sparse file), then the model scored from that cache: the scores are the clean ones (the
    replaced graph is not used) or a typed error."""
    (cached,) = [p for p in (directory / "cache").rglob("model.onnx*") if p.name == "model.onnx"]
    if cached.is_dir() and not cached.is_symlink():
        shutil.rmtree(cached)
    else:
        cached.unlink()
    os.rename(directory / "graph", cached)
    want = clean_scores()
    os.environ["RUST_BERTSCORE_CACHE"] = str(directory / "cache")
    try:
        _same_scores(tiny_scores(), want)
    finally:
        del os.environ["RUST_BERTSCORE_CACHE"]


def mutate_graph(rng: random.Random, data: bytes) -> bytes:
    """A replaced cached graph: bytes flipped in place (the same size), cut, another model's
    graph of the same size, or another kind of file."""
    roll = rng.random()
    if roll < 0.25:
        return mutate_kind(rng, data)
    if roll < 0.5:
        buf = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            buf[rng.randrange(len(buf))] = rng.randrange(256)
        return bytes(buf)
    if roll < 0.75:
        return data[: rng.randrange(len(data))]
    return mutate_bytes(rng, data)


KIND = b"@@rbs-kind:"
"""A case whose data starts with this plants a kind of file, not bytes (:func:`plant_kind`)."""

KINDS = (b"fifo", b"directory", b"socket", b"link-out", b"link-in", b"link-loop", b"sparse")
"""What stands where a file is expected: a FIFO (a reader that opens it waits for a writer), a
directory, a socket, a link to a file outside the folder, one to a file inside it, a link loop,
and a sparse file of 3 GiB of holes."""


def mutate_kind(rng: random.Random, data: bytes) -> bytes:
    """A file-kind case (any file of the folder: ``make_case`` picks which)."""
    return KIND + rng.choice(KINDS)


def plant_kind(path: Path, kind: bytes) -> None:
    """Put ``kind`` (one of :data:`KINDS`) at ``path`` in place of the file there."""
    import socket

    original = path.read_bytes() if path.is_file() else b""
    if path.is_file() or path.is_symlink():
        path.unlink()
    if kind == b"fifo":
        os.mkfifo(path)
    elif kind == b"directory":
        path.mkdir()
    elif kind == b"socket":
        sock = socket.socket(socket.AF_UNIX)
        try:
            sock.bind(str(path))
        finally:
            sock.close()
    elif kind == b"link-out":
        outside = path.parent.parent / f"outside-{path.name}"
        outside.write_bytes(original)
        os.symlink(outside, path)
    elif kind == b"link-in":
        inside = path.parent / f".real-{path.name}"
        inside.write_bytes(original)
        os.symlink(inside.name, path)
    elif kind == b"link-loop":
        os.symlink(path.name, path)
    else:
        with open(path, "wb") as handle:
            handle.truncate(3 << 30)


def load_and_score(directory: Path) -> None:
    """The whole folder as ``BERTScorer`` reads it, and a few pairs scored (the runtime cache
    emptied first: every case has the same path). A missing file is the documented
    ``FileNotFoundError``, counted as typed."""
    from rust_bertscore import BERTScorer
    from rust_bertscore.errors import CheckpointError
    from rust_bertscore.models.caches import clear_cache

    clear_cache()
    try:
        scorer = BERTScorer(model_type=str(directory), num_layers=2, cache_bytes=0)
    except FileNotFoundError as exc:
        raise CheckpointError(f"missing: {exc}") from exc
    F = scorer.score(TEXTS, TEXTS[::-1])[2]
    assert len(F) == len(TEXTS)


def load_baseline_csv(directory: Path) -> None:
    from rust_bertscore.stages.rescale import baseline_values

    table = baseline_values(directory / "baseline.csv", 0, True)
    assert table.ndim == 2 and table.shape[1] == 3


def load_export(directory: Path) -> None:
    """An exported graph and its ``.onnx.json`` sidecar, loaded as ``score(model_type=...)``
    loads them (the runtime cache emptied first: every case has the same path)."""
    from rust_bertscore.models.caches import clear_cache
    from rust_bertscore.models.runtime import load_runtime

    clear_cache()
    load_runtime(str(directory / "enc.onnx"), None, device="cpu")


def _export_base(dst: Path) -> None:
    from rust_bertscore.models.export import export_model

    export_model(str(TINY / "bert"), dst / "enc.onnx", num_layers=2)


def _bin_base(dst: Path) -> None:
    _copy(TINY / "bert", ("config.json",))(dst)
    shutil.copy(TINY_BIN / "bert" / "pytorch_model.bin", dst / "pytorch_model.bin")


def _store_base(dst: Path) -> None:
    build_store(dst)
    (seg,) = (dst / "segments").glob("*.seg")
    seg.rename(seg.with_name("a.seg"))


def _baseline_base(dst: Path) -> None:
    shutil.copy(DATA / "reference" / "baseline_minilm_l6.csv", dst / "baseline.csv")


def _mutate_store_file(rng: random.Random, data: bytes) -> bytes:
    return mutate_json(rng, data) if data.startswith(b"{") else mutate_segment(rng, data)


TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target("safetensors", _copy(TINY / "bert", ("model.safetensors",)), ("model.safetensors",),
               mutate_safetensors, load_weights),
        Target("bin", _bin_base, ("pytorch_model.bin",), mutate_bin, load_weights, same_as_clean),
        Target("config", _copy(TINY / "bert", ("config.json", "model.safetensors")),
               ("config.json",), mutate_json, load_config_and_build),
        Target("tokenizer-json", _without(TINY / "bert", "vocab.txt"),
               ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"),
               mutate_json, load_tokenizer),
        Target("wordpiece", _without(TINY / "bert", "tokenizer.json"), ("vocab.txt",),
               mutate_text, load_tokenizer),
        Target("vocab", _without(TINY / "roberta", "tokenizer.json"), ("vocab.json", "merges.txt"),
               lambda rng, d: mutate_json(rng, d) if d.startswith(b"{") else mutate_text(rng, d),
               load_tokenizer),
        Target("sentencepiece", _copy(TINY / "albert"), ("spiece.model",), mutate_protobuf,
               load_tokenizer),
        Target("store", _store_base, ("segments/a.seg", "store.json"), _mutate_store_file,
               load_store),
        Target("baseline", _baseline_base, ("baseline.csv",), mutate_text, load_baseline_csv),
        Target("file-kinds", _copy(TINY / "bert"),
               ("config.json", "tokenizer.json", "tokenizer_config.json",
                "special_tokens_map.json", "vocab.txt", "model.safetensors"),
               mutate_kind, load_and_score),
        Target("tokenizer-regex", _without(TINY / "bert", "vocab.txt"), ("tokenizer.json",),
               mutate_regex, load_tokenizer_on_runs),
        Target("store-forged", _forged_store_base, ("store/segments/a.seg",), forge_record,
               score_with_forged_store),
        Target("graph-cache", _graph_cache_base, ("graph",), mutate_graph,
               score_with_replaced_graph),
        Target("export", _export_base, ("enc.onnx.json", "enc.onnx"),
               lambda rng, d: mutate_json(rng, d) if d.startswith(b"{") else mutate_bytes(rng, d),
               load_export),
    )
}  # fmt: skip


def _one_byte(dst: Path) -> None:
    (dst / "x").write_bytes(b"x")


def _selftest(kind: str) -> Callable[[Path], None]:
    def load(directory: Path) -> None:
        from rust_bertscore.errors import CheckpointError

        if kind == "typed":
            raise CheckpointError(f"{directory}: a typed error")
        if kind == "foreign":
            raise KeyError("a foreign error")
        if kind == "crash":
            os.kill(os.getpid(), signal.SIGSEGV)
        if kind == "hang":
            time.sleep(3600)
        if kind == "memory":
            bytearray(2 * MEMORY_CAP)

    return load


SELF_TESTS: dict[str, Target] = {
    f"selftest-{kind}": Target(
        f"selftest-{kind}",
        _one_byte,
        ("x",),
        lambda rng, data: data,
        _selftest(kind),
    )
    for kind in ("typed", "foreign", "crash", "hang", "memory")
}
"""Targets that prove the harness: each case's outcome is its own, whatever the case before it
did."""


HEALING = frozenset({"store-forged", "graph-cache"})
"""Targets whose bad input is a miss that is rebuilt (a store record, a cached graph): their
cases load, with the clean scores, rather than raise."""


def target_named(name: str) -> Target:
    return TARGETS[name] if name in TARGETS else SELF_TESTS[name]


def make_case(target: Target, seed: int, base: Path) -> tuple[str, bytes]:
    """The file a case replaces and its mutated bytes (deterministic in ``seed``)."""
    rng = random.Random(f"{target.name}:{seed}")
    name = rng.choice(target.files)
    return name, target.mutate(rng, (base / name).read_bytes())


# ---- the worker --------------------------------------------------------------------------------


def _case_dir(base: Path, work: Path, name: str, data: bytes) -> Path:
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(base, work, symlinks=True)
    if data.startswith(KIND):
        plant_kind(work / name, data[len(KIND) :])
    else:
        (work / name).write_bytes(data)
    return work


def run_one(target: Target, directory: Path) -> tuple[str, str]:
    """``("ok" | "typed" | "bad", detail)`` of one load."""
    import traceback

    from rust_bertscore.errors import RustBertScoreError

    try:
        target.load(directory)
    except RustBertScoreError as exc:
        return "typed", f"{type(exc).__name__}: {str(exc)[:200]}"
    except BaseException as exc:
        frames = traceback.extract_tb(exc.__traceback__)[-3:]
        where = " < ".join(f"{Path(f.filename).name}:{f.lineno}" for f in reversed(frames))
        return "bad", f"{type(exc).__name__}: {str(exc)[:200]} at {where}"
    return "ok", ""


def _cap_memory() -> None:
    with open("/proc/self/status") as f:
        vm = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
    limit = vm + MEMORY_CAP
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def worker(cases: list[list]) -> None:
    """Run ``cases`` (``[target, seed]`` or ``[target, file, path of the bytes]``), one line
    of JSON per case on stdout."""
    import warnings

    import numpy  # noqa: F401 - imported before the cap, as the loaders do
    import onnx  # noqa: F401

    import rust_bertscore
    import rust_bertscore.convert
    import rust_bertscore.stages.tokenization.tokenizer  # noqa: F401

    warnings.simplefilter("ignore")
    # The answers go to the original stdout; whatever a library prints (C code included) goes
    # to stderr, which the driver keeps in a file.
    channel = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)

    def answer(i: int, status: str, detail: str) -> None:
        channel.write(PREFIX + json.dumps([i, status, detail]) + "\n")
        channel.flush()

    root = Path(tempfile.mkdtemp(prefix="rbs-fuzz-"))
    os.environ["RUST_BERTSCORE_CACHE"] = str(root / "cache")
    bases: dict[str, Path] = {}
    _cap_memory()
    try:
        for i, case in enumerate(cases):
            target = target_named(case[0])
            if target.name not in bases:
                bases[target.name] = root / f"base-{target.name}"
                bases[target.name].mkdir()
                target.base(bases[target.name])
            try:
                if len(case) == 2:
                    name, data = make_case(target, case[1], bases[target.name])
                else:
                    name, data = case[1], Path(case[2]).read_bytes()
            except Exception as exc:  # the mutator's own failure: no input to try
                answer(i, "skipped", f"mutator: {exc!r}"[:200])
                continue
            directory = _case_dir(bases[target.name], root / "case", name, data)
            status, detail = run_one(target, directory)
            if target.after is not None:
                try:
                    target.after(bases[target.name])
                except BaseException as exc:  # a changed later load
                    status, detail = "poisoned", f"{type(exc).__name__}: {str(exc)[:200]}"
            answer(i, status, detail)
            if status == "poisoned":  # later cases get a fresh process, not this one's state
                os._exit(RESTART)
    finally:
        shutil.rmtree(root, ignore_errors=True)


# ---- the driver --------------------------------------------------------------------------------


@dataclass
class Outcome:
    case: list
    status: str  # ok, typed, bad, crash, hang
    detail: str


def run_batch(cases: list[list], timeout: float = CASE_TIMEOUT) -> list[Outcome]:
    """Run ``cases`` in worker subprocesses; a worker that dies or stops answering is charged
    to the case it was on, and the rest go to a fresh worker."""
    outcomes: list[Outcome] = []
    pending = list(cases)
    while pending:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(pending, f)
        # A file, not a pipe: a chatty worker never blocks on it. Closed below.
        errors = tempfile.TemporaryFile()  # noqa: SIM115
        # The package the interpreter imports (the installed wheel under make test); or
        # RBS_FUZZ_PACKAGE: another copy to fuzz (an older commit, to show that a saved finding
        # failed there).
        paths = [os.environ.get("RBS_FUZZ_PACKAGE"), str(HERE), os.environ.get("PYTHONPATH")]
        paths = [p for p in paths if p]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
        proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker", f.name],
            stdout=subprocess.PIPE,
            stderr=errors,
            env=env,
            start_new_session=True,
        )
        assert proc.stdout is not None
        done = 0
        startup = 60.0  # imports
        deadline = time.monotonic() + startup + timeout
        buffer = b""
        failed: Outcome | None = None
        while done < len(pending):
            left = deadline - time.monotonic()
            ready, _, _ = select.select([proc.stdout], [], [], max(0.0, left))
            if not ready:
                os.killpg(proc.pid, signal.SIGKILL)
                failed = Outcome(pending[done], "hang", f"no answer within {timeout:.0f} s")
                break
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                rc = proc.wait()
                if rc == RESTART:
                    break
                errors.seek(0)
                err = errors.read().decode(errors="replace")[-500:]
                failed = Outcome(pending[done], "crash", f"worker exit {rc}: {err}")
                break
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                if not line.startswith(PREFIX.encode()):
                    continue
                i, status, detail = json.loads(line[len(PREFIX) :])
                outcomes.append(Outcome(pending[i], status, detail))
                done = i + 1
                deadline = time.monotonic() + timeout
        proc.kill()
        proc.wait()
        errors.close()
        proc.stdout.close()
        os.unlink(f.name)
        if failed is not None:
            outcomes.append(failed)
            done += 1
        pending = pending[done:]
    return outcomes


def is_finding(outcome: Outcome) -> bool:
    """Anything but a typed error or a good load (``ok``, ``typed``; ``skipped``: the mutator
    could not make the case): ``bad`` (another exception), ``crash``, ``hang``, ``poisoned``."""
    return outcome.status not in ("ok", "typed", "skipped")


def signature(outcome: Outcome) -> tuple[str, str, str, str]:
    """What makes two findings the same: target, outcome, exception type and where it was
    raised (not the message, which names offsets and bytes)."""
    exc = outcome.detail.split(":", 1)[0] if outcome.status == "bad" else ""
    where = outcome.detail.rsplit(" at ", 1)[-1] if outcome.status == "bad" else ""
    return outcome.case[0], outcome.status, exc, where


def save_finding(outcome: Outcome, base_cache: dict[str, Path]) -> Path:
    """Write a finding's mutated file under tests/data/fuzz/<target>-<seed>/ with a case.json
    naming its target and the file it replaces."""
    target_name, seed = outcome.case[0], outcome.case[1]
    target = TARGETS[target_name]
    if target_name not in base_cache:
        base_cache[target_name] = Path(tempfile.mkdtemp(prefix=f"rbs-fuzz-base-{target_name}-"))
        target.base(base_cache[target_name])
    name, data = make_case(target, seed, base_cache[target_name])
    out = FINDINGS / f"{target_name}-{seed}"
    out.mkdir(parents=True, exist_ok=True)
    (out / "input.bin").write_bytes(data)
    meta = {"target": target_name, "file": name, "seed": seed, "found": outcome.status,
            "detail": outcome.detail[:300]}  # fmt: skip
    (out / "case.json").write_text(json.dumps(meta, indent=1) + "\n")
    return out


def campaign(
    seconds: float,
    first_seed: int,
    batch: int,
    targets: list[str],
    save: bool = True,
    verbose: bool = False,
) -> int:
    """Run seeded cases over ``targets`` round-robin for ``seconds``; save the findings."""
    start = time.monotonic()
    seed = first_seed
    counts: dict[str, dict[str, int]] = {t: {} for t in targets}
    findings = 0
    kinds: set[tuple[str, str, str, str]] = set()  # one saved input per kind of finding
    bases: dict[str, Path] = {}
    while time.monotonic() - start < seconds:
        cases = [[t, seed + k] for k in range(batch) for t in targets]
        seed += batch
        for outcome in run_batch(cases):
            per = counts[outcome.case[0]]
            per[outcome.status] = per.get(outcome.status, 0) + 1
            if verbose:
                print(f"  {outcome.case} {outcome.status}: {outcome.detail}")
            if is_finding(outcome):
                findings += 1
                kind = signature(outcome)
                new = kind not in kinds
                kinds.add(kind)
                path = save_finding(outcome, bases) if save and new else "(not saved)"
                print(f"FOUND {outcome.case} {outcome.status}: {outcome.detail} -> {path}")
    elapsed = time.monotonic() - start
    total = sum(sum(c.values()) for c in counts.values())
    for t, c in counts.items():
        print(f"  {t:16s} {sum(c.values()):6d} cases  {c}")
    print(f"{total} cases in {elapsed:.0f} s: {total / elapsed:.1f} cases/s; {findings} findings "
          f"of {len(kinds)} kinds; seeds {first_seed}..{seed - 1}")  # fmt: skip
    for base in bases.values():
        shutil.rmtree(base, ignore_errors=True)
    return 1 if findings else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=None, help="first seed (default: from time)")
    parser.add_argument("--batch", type=int, default=25, help="cases per target per worker")
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--no-save", action="store_true", help="do not write findings")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every outcome")
    args = parser.parse_args(argv)
    if args.worker:
        worker(json.loads(Path(args.worker).read_text()))
        return 0
    seed = args.seed if args.seed is not None else int(time.time()) % 10**6 * 1000
    return campaign(
        args.seconds, seed, args.batch, args.targets.split(","), not args.no_save, args.verbose
    )


if __name__ == "__main__":
    sys.exit(main())
