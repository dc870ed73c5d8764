"""Hostile ``.bin`` checkpoints (issue 46), built here opcode by opcode from the tiny BERT's
``tests/data/tiny_bin/bert`` and loaded as a user would (``score(..., model_type=dir)``), each in a
subprocess under an address-space cap and a 30 s timeout: every one is refused with a
``CheckpointError`` that names the file and the key (or zip member), in under 1 GB of peak RSS;
a hostile file loaded first changes neither a later legitimate load nor the disk cache."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import struct
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file

from benches.torch_save import Entry, PickleOps, plain_pickle, tensor_ops, write_legacy, write_zip
from conftest import DATA, TINY
from rust_bertscore.convert.torch_bin import BinFile
from rust_bertscore.errors import CheckpointError

SOURCE = DATA / "tiny_bin" / "bert" / "pytorch_model.bin"
ROOT = Path(__file__).resolve().parents[1]
CANDS = ["a cup of coffee on the table", "the cat sat"]
REFS = ["coffee in a cup", "a cat was sitting there"]
WORDS = "bert.embeddings.word_embeddings.weight"
AS_CAP = 4 << 30
"""The child's address space: a bomb fails there rather than taking the machine's memory."""
RSS_BOUND_KB = 1 << 20
"""1 GB: the most a refused file may make the child hold."""

CHILD = r"""
import json, resource, sys, warnings
cap = int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
out = {}
try:
    import rust_bertscore as rb
    from rust_bertscore.errors import CheckpointError
    dirs = sys.argv[3:]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for model_dir in dirs:
            entry = out.setdefault(model_dir, {})
            try:
                scores = rb.score(CANDS, REFS, model_type=model_dir, num_layers=2)
                entry["scores"] = [[float(v) for v in x] for x in scores]
            except rb.RustBertScoreError as exc:
                entry["error"] = type(exc).__name__
                entry["checkpoint"] = isinstance(exc, CheckpointError)
                entry["message"] = str(exc)[:4000]
    out["warnings"] = [str(w.message)[:500] for w in caught]
except BaseException as exc:
    out["foreign"] = f"{type(exc).__name__}: {str(exc)[:1000]}"
out["maxrss_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps(out))
"""


def run_child(cache: Path, *dirs: Path, timeout: float = 30) -> dict:
    """Score each of ``dirs`` in order, in one fresh interpreter with its own model cache."""
    script = CHILD.replace("CANDS", repr(CANDS)).replace("REFS", repr(REFS))
    env = dict(os.environ, RUST_BERTSCORE_CACHE=str(cache), HF_HUB_OFFLINE="1")
    # few threads and malloc arenas, so the address space a legitimate load needs does not grow
    # with the host's cores
    env.update(RUST_BERTSCORE_NUM_THREADS="2", MALLOC_ARENA_MAX="2")
    try:
        done = subprocess.run(
            [sys.executable, "-c", script, "-", str(AS_CAP), *map(str, dirs)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            cwd=ROOT,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"loading {[d.name for d in dirs]} took more than {timeout} s")
    assert done.returncode == 0, f"the child died ({done.returncode}): {done.stderr[-2000:]}"
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert "foreign" not in out, out["foreign"]
    assert out["maxrss_kb"] < RSS_BOUND_KB, f"peak RSS {out['maxrss_kb']} kB"
    return out


# ---- the pieces of the tiny BERT's checkpoint ----------------------------------------------------


def source_parts() -> tuple[list[tuple[str, Entry]], dict[str, bytes]]:
    """The tiny BERT's tensors as :class:`Entry` (in file order) and its storages' bytes."""
    checkpoint = BinFile(SOURCE)
    entries = []
    for key, record in checkpoint.tensors.items():
        storage = record.storage
        entries.append(
            (
                key,
                Entry(
                    storage.kind.name,
                    storage.key,
                    storage.numel,
                    record.offset,
                    record.shape,
                    record.stride,
                ),
            )
        )
    with zipfile.ZipFile(SOURCE) as archive:
        prefix = archive.namelist()[0].split("/")[0]
        raws = {e.key: archive.read(f"{prefix}/data/{e.key}") for _, e in entries}
    return entries, raws


ENTRIES, RAWS = source_parts()


def ops() -> PickleOps:
    """A fragment of opcodes (no protocol header) to splice into a pickle."""
    fragment = PickleOps()
    fragment.out.clear()
    return fragment


def slot_state(**values: bytes) -> bytes:
    """``(None, {name: value})``: BUILD's state that sets attributes of a slotted object; each
    value is the opcodes that push it."""
    out = ops().op(b"N}")
    for name, value in values.items():
        out.text(name).op(value).op(b"s")
    return bytes(out.op(b"\x86").out)


def state_pickle(
    entries: list[tuple[str, Entry]] = ENTRIES,
    *,
    before: bytes = b"",
    after: dict[str, bytes] | None = None,
    key_ops: dict[str, bytes] | None = None,
    legacy: bool = False,
) -> bytes:
    """The state dict's pickle as torch writes it, with ``before`` spliced in front of the dict,
    ``after[key]`` right after that tensor is built, and ``key_ops[key]`` pushing its key."""
    out = PickleOps().op(before)
    out.global_("collections", "OrderedDict").op(b")R(")
    for key, entry in entries:
        if key_ops and key in key_ops:
            out.op(key_ops[key])
        else:
            out.text(key)
        tensor_ops(out, entry, legacy=legacy)
        out.op((after or {}).get(key, b""))
    return out.op(b"u").done()


def checkpoint_dir(tmp_path: Path, name: str) -> Path:
    """The tiny BERT's config and tokenizer, no weights."""
    return Path(
        shutil.copytree(
            TINY / "bert", tmp_path / name, ignore=shutil.ignore_patterns("*.safetensors", "*.npz")
        )
    )


def write_bin(model_dir: Path, pkl: bytes, raws: dict[str, bytes] | None = None) -> Path:
    path = model_dir / "pytorch_model.bin"
    write_zip(path, pkl, sorted((raws or RAWS).items()))
    return path


def write_legacy_bin(
    model_dir: Path, pkl: bytes, keys: list | None = None, raws: dict[str, bytes] | None = None
) -> Path:
    """torch's legacy format (before 1.6): the tiny BERT's storages after ``pkl``; ``keys``:
    the list of storage keys as written (any objects)."""
    raws = raws or RAWS
    numels = {e.key: e.numel for _, e in ENTRIES}
    path = model_dir / "pytorch_model.bin"
    write_legacy(path, pkl, [(k, numels[k], raws[k]) for k in sorted(raws)])
    if keys is not None:  # rewrite the key list in place of the one write_legacy wrote
        raw = path.read_bytes()
        listed = plain_pickle(sorted(raws))
        at = raw.index(listed, len(pkl))
        path.write_bytes(raw[:at] + pickle.dumps(keys, 3) + raw[at + len(listed) :])
    return path


def patch_sizes(path: Path, member: str, size: int, method: int | None = None) -> None:
    """Rewrite a member's sizes (and compression method) in its local header and the central
    directory, as a hostile zip declares them."""
    raw = bytearray(path.read_bytes())
    name = member.encode()
    for signature, method_at, sizes_at, name_at in (
        (b"PK\x03\x04", 8, 18, 30),
        (b"PK\x01\x02", 10, 20, 46),
    ):
        start = 0
        while (start := raw.find(signature, start)) >= 0:
            if raw[start + name_at : start + name_at + len(name)] == name:
                raw[start + sizes_at : start + sizes_at + 8] = struct.pack("<II", size, size)
                if method is not None:
                    raw[start + method_at : start + method_at + 2] = struct.pack("<H", method)
            start += 4
    path.write_bytes(bytes(raw))


def entry_of(key: str) -> Entry:
    return dict(ENTRIES)[key]


def replace(key: str, **changes: object) -> list[tuple[str, Entry]]:
    fields = dict(entry_of(key).__dict__, **changes)
    return [(k, Entry(**fields) if k == key else e) for k, e in ENTRIES]


def nested_lists(depth: int) -> bytes:
    """Lists that hold the one before twice: 2**depth nodes to expand, a few bytes each."""
    out = ops().op(b"]q\x000")
    for i in range(depth):
        out.op(b"(h" + bytes([i]) + b"h" + bytes([i]) + b"lq" + bytes([i + 1]) + b"0")
    return bytes(out.op(b"h" + bytes([depth])).out)


# ---- the attacks ---------------------------------------------------------------------------------

_WORDS_STORAGE = f"archive/data/{entry_of(WORDS).key}"


def _build_on_tensor(d: Path) -> None:  # strides that read far past the storage
    state = slot_state(stride=bytes(ops().ints((1, 100_000_000)).out))
    write_bin(d, state_pickle(after={WORDS: state + b"b"}))


def _build_numel(d: Path) -> None:  # a storage's element count, after it was checked
    write_bin(d, state_pickle(after={WORDS: slot_state(offset=b"J\x00\x00\x00\x01") + b"b"}))


def _build_storage_type(d: Path) -> None:  # the bf16 stand-in, process-wide before
    poison = ops().global_("torch", "BFloat16Storage").op(slot_state(dtype=b"X\x02\x00\x00\x00f2"))
    write_bin(d, state_pickle(before=bytes(poison.op(b"b0").out)))


def _build_function(d: Path) -> None:  # a module function's defaults
    poison = ops().global_("torch._utils", "_rebuild_tensor_v2")
    poison.op(slot_state(__defaults__=b"(\x88}Nt"))
    write_bin(d, state_pickle(before=bytes(poison.op(b"b0").out)))


def _zip_bomb(d: Path) -> None:  # a deflated data.pkl that inflates 1000-fold
    path = d / "pytorch_model.bin"
    with zipfile.ZipFile(path, "w") as out:
        out.writestr("archive/data.pkl", state_pickle() + bytes(64 << 20), zipfile.ZIP_DEFLATED)
        for key, raw in sorted(RAWS.items()):
            out.writestr(f"archive/data/{key}", raw)


def _declares_more(d: Path) -> None:  # a stored member that says 3.9 GB and holds 1.5 MB
    numel = 0xF0000000 // 4
    path = write_bin(d, state_pickle(replace(WORDS, numel=numel)))
    patch_sizes(path, _WORDS_STORAGE, 0xF0000000)


def _deflated_short(d: Path) -> None:  # a deflated member that says 3.9 GB and holds half a tensor
    path = d / "pytorch_model.bin"
    words = entry_of(WORDS)
    with zipfile.ZipFile(path, "w") as out:
        out.writestr("archive/data.pkl", state_pickle(replace(WORDS, numel=0xF0000000 // 4)))
        for key, raw in sorted(RAWS.items()):
            cut = raw[: len(raw) // 2] if key == words.key else raw
            out.writestr(f"archive/data/{key}", cut, zipfile.ZIP_DEFLATED)
    patch_sizes(path, _WORDS_STORAGE, 0xF0000000)


def _zero_stride(d: Path) -> None:  # a (40000, 10000) tensor from one row
    write_bin(d, state_pickle(replace(WORDS, shape=(40000, 10000), stride=(0, 1))))


def _repr_bomb(d: Path) -> None:  # an error message would expand 2**40 list nodes
    pkl = state_pickle()
    evil = PickleOps().global_("collections", "OrderedDict").op(b")R(").text(WORDS)
    evil.global_("torch._utils", "_rebuild_tensor_v2").op(b"(")
    evil.op(b"(").text("storage").global_("torch", "FloatStorage").text("0").text("cpu")
    evil.int_(16).op(b"tQ").int_(0).op(nested_lists(40)).ints((16,)).op(b"\x89")
    evil.global_("collections", "OrderedDict").op(b")R")
    write_bin(d, evil.op(b"tRu").done())
    assert len(evil.out) < 1000 and pkl


def _hash_bomb(d: Path) -> None:  # a dict key of tuples that hold each other: 2**40 to hash
    key = ops().op(b")q\x000")
    for i in range(40):
        key.op(b"h" + bytes([i]) + b"h" + bytes([i]) + b"\x86q" + bytes([i + 1]) + b"0")
    key.op(b"h" + bytes([40]))
    write_bin(d, state_pickle(before=bytes(ops().op(b"}").op(bytes(key.out)).op(b"Ns0").out)))


def _overflowing_shape(d: Path) -> None:
    write_bin(d, state_pickle(replace(WORDS, shape=(2**62, 2**62), stride=(0, 0))))


def _overflowing_int(d: Path) -> None:  # past int64 (NumPy's OverflowError before)
    write_bin(d, state_pickle(replace(WORDS, shape=(2**70, 1), stride=(1, 1))))


def _empty_overflow(d: Path) -> None:  # an empty tensor NumPy cannot even allocate
    write_bin(d, state_pickle(replace(WORDS, shape=(0, 2**62, 2**62), stride=(1, 1, 1))))


def _unknown_compression(d: Path) -> None:
    path = write_bin(d, state_pickle())
    patch_sizes(path, "archive/data.pkl", len(state_pickle()), method=99)


def _bzip2_storage(d: Path) -> None:
    path = d / "pytorch_model.bin"
    with zipfile.ZipFile(path, "w") as out:
        out.writestr("archive/data.pkl", state_pickle())
        for key, raw in sorted(RAWS.items()):
            out.writestr(f"archive/data/{key}", raw, zipfile.ZIP_BZIP2)


def _non_ascii_key(d: Path) -> None:  # a Python 2 str key that is not ASCII
    write_bin(d, state_pickle(key_ops={WORDS: b"C\x04\xff\xfeab"}))


def _non_utf8_key(d: Path) -> None:
    write_bin(d, state_pickle(key_ops={WORDS: b"X\x04\x00\x00\x00\xff\xfeab"}))


def _inst_of_allowed(d: Path) -> None:  # INST calls a class: refused even for OrderedDict
    write_bin(d, state_pickle(before=b"(icollections\nOrderedDict\n0"))


def _huge_string(d: Path) -> None:  # BINUNICODE8 declaring 2**60 bytes
    write_bin(d, state_pickle(before=b"\x8d" + struct.pack("<Q", 2**60)))


def _string_past_the_end(d: Path) -> None:  # BINUNICODE declaring 1 MB in a 60 kB pickle
    write_bin(d, state_pickle(before=b"X" + struct.pack("<I", 1 << 20)))


def _legacy_build(d: Path) -> None:  # the legacy format runs the same pickle machine
    state = slot_state(stride=bytes(ops().ints((1, 100_000_000)).out))
    write_legacy_bin(d, state_pickle(after={WORDS: state + b"b"}, legacy=True))


def _legacy_view_past(d: Path) -> None:  # a storage view past its root storage
    words = entry_of(WORDS)
    view = ("v", words.numel - 10, 20)
    write_legacy_bin(
        d, state_pickle(replace(WORDS, view=view, shape=(20,), stride=(1,)), legacy=True)
    )


def _legacy_non_ascii_storage_key(d: Path) -> None:
    keys: list = [k.encode() for k in sorted(RAWS)]
    keys[0] = b"\xff"
    write_legacy_bin(d, state_pickle(legacy=True), keys=keys)


ATTACKS: dict[str, tuple[Callable[[Path], None], str]] = {
    "legacy-build-on-tensor": (_legacy_build, rf"the state dict, opcode .*tensor '{WORDS}'.*BUILD"),
    "legacy-view-past-storage": (_legacy_view_past, r"view 'v' reads past storage"),
    "legacy-non-ascii-storage-key": (
        _legacy_non_ascii_storage_key,
        r"a key that is not ASCII text: b'\\xff'",
    ),
    # name: (writer, what the message must name besides the file)
    "build-on-tensor": (_build_on_tensor, rf"tensor '{WORDS}'.*BUILD"),
    "build-storage-numel": (_build_numel, rf"tensor '{WORDS}'.*BUILD"),
    "build-storage-type": (
        _build_storage_type,
        r"data\.pkl, opcode at byte \d+: BUILD .*StorageType",
    ),
    "build-module-function": (_build_function, r"data\.pkl, opcode at byte \d+: BUILD .*Rebuilder"),
    "zip-bomb-data-pkl": (_zip_bomb, r"archive/data\.pkl' inflates to more than"),
    "member-declares-more": (_declares_more, rf"tensor '{WORDS}'.*'{_WORDS_STORAGE}' declares"),
    "deflated-member-short": (_deflated_short, r"storage '\d+' is truncated"),
    "zero-stride-huge-tensor": (_zero_stride, rf"tensor '{WORDS}'.*more than its storage"),
    "repr-bomb": (_repr_bomb, rf"tensor '{WORDS}'.*size should be a tuple"),
    "hash-bomb-key": (_hash_bomb, r"data\.pkl, opcode at byte \d+: a dict key of type tuple"),
    "overflowing-shape": (_overflowing_shape, rf"tensor '{WORDS}'.*no array is that large"),
    "overflowing-int": (_overflowing_int, rf"tensor '{WORDS}'.*size should be an int"),
    "empty-overflowing-shape": (_empty_overflow, rf"tensor '{WORDS}'.*no array is that large"),
    "unknown-compression": (_unknown_compression, r"'archive/data\.pkl' is compression 99"),
    "bzip2-storage": (_bzip2_storage, r"'archive/data/\d+' is compression 12"),
    "non-ascii-key": (_non_ascii_key, r"a key that is not ASCII text: b'\\xff\\xfeab'"),
    "non-utf8-key": (_non_utf8_key, r"a string that is not utf-8: b'\\xff\\xfeab'"),
    "inst-of-allowed-class": (_inst_of_allowed, r"opcode INST .* is refused"),
    "huge-string": (_huge_string, r"more than \d+ bytes of strings"),
    "string-past-the-end": (_string_past_the_end, r"runs past the end of the data"),
}


HARMLESS: dict[str, bytes] = {
    # C's unpickler grows its memo to the index: LONG_BINPUT 2**32 - 1 asked for 32 GB
    "huge-memo-index": b"Nr\xff\xff\xff\xff0",
    # a self-referencing list, built and dropped
    "self-referencing-list": b"]q\x00h\x00a0",
    # 100,000 nested lists (no recursion builds or drops them)
    "deep-nesting": b"(" * 100_000 + b"]" + b"l" * 100_000 + b"0",
}
"""Pickles spliced in front of the state dict that are odd but run nothing: the file scores as
the original."""


def test_the_rebuilt_checkpoint_scores_as_the_original(tmp_path: Path) -> None:
    """The attacks splice into this pickle: as written here, untouched, it is the original;
    the harmless oddities of :data:`HARMLESS` score as it too, within the same bounds."""
    original = checkpoint_dir(tmp_path, "original")
    shutil.copy(SOURCE, original)
    dirs = []
    for name, before in {"rebuilt": b"", **HARMLESS}.items():
        dirs.append(checkpoint_dir(tmp_path, name))
        write_bin(dirs[-1], state_pickle(before=before))
    out = run_child(tmp_path / "cache", original, *dirs, timeout=120)
    for model_dir in dirs:
        assert out[str(model_dir)].get("scores") == out[str(original)]["scores"], model_dir.name


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_hostile_bin_is_a_checkpoint_error(attack: str, tmp_path: Path) -> None:
    write, names = ATTACKS[attack]
    model_dir = checkpoint_dir(tmp_path, attack)
    write(model_dir)
    out = run_child(tmp_path / "cache", model_dir)[str(model_dir)]
    assert "scores" not in out, f"{attack} scored: {out}"
    assert out["checkpoint"], out
    message = out["message"]
    assert message.startswith(str(model_dir / "pytorch_model.bin")), message
    assert __import__("re").search(names, message), message
    assert len(message) < 2000


# ---- one file cannot change the next, nor the disk cache -----------------------------------------


def bf16_twin(model_dir: Path) -> Path:
    """The tiny BERT's weights in bfloat16 storages (their top 16 bits): a legitimate bf16
    ``.bin``, the kind the poisoned stand-in misread."""
    weights = load_file(str(TINY / "bert" / "model.safetensors"))
    entries, raws = [], {}
    for i, (key, value) in enumerate(sorted(weights.items())):
        value = np.ascontiguousarray(value)
        stride = tuple(s // value.itemsize for s in value.strides)
        if value.dtype == np.float32:
            raws[str(i)] = (value.view(np.uint32) >> 16).astype("<u2").tobytes()
            kind = "BFloat16Storage"
        else:
            raws[str(i)] = value.astype("<i8").tobytes()
            kind = "LongStorage"
        entries.append((key, Entry(kind, str(i), value.size, 0, value.shape, stride)))
    write_bin(model_dir, state_pickle(entries), raws)
    return model_dir


def cache_entries(cache: Path, model_dir: Path) -> dict[str, tuple[bytes, dict]]:
    """The graphs the cache holds for ``model_dir``: key -> (graph bytes, manifest)."""
    found = {}
    for manifest in sorted((cache / "onnx").glob("*/manifest.json")):
        meta = json.loads(manifest.read_text())
        if meta["model"] == str(model_dir):
            found[manifest.parent.name] = ((manifest.parent / "model.onnx").read_bytes(), meta)
    return found


def test_a_hostile_file_changes_neither_the_next_load_nor_the_cache(tmp_path: Path) -> None:
    legit = bf16_twin(checkpoint_dir(tmp_path, "legit-bf16"))
    hostile = []
    for attack in ("build-storage-type", "build-module-function", "build-on-tensor"):
        model_dir = checkpoint_dir(tmp_path, attack)
        ATTACKS[attack][0](model_dir)
        hostile.append(model_dir)
    # the bf16 stand-in poisoned by a file that is otherwise a plain fp32 state dict
    clean = run_child(tmp_path / "clean-cache", legit, timeout=120)
    after = run_child(tmp_path / "shared-cache", *hostile, legit, timeout=120)
    for model_dir in hostile:
        assert after[str(model_dir)]["checkpoint"], after[str(model_dir)]
    assert after[str(legit)]["scores"] == clean[str(legit)]["scores"]
    want = cache_entries(tmp_path / "clean-cache", legit)
    got = cache_entries(tmp_path / "shared-cache", legit)
    assert want and set(got) == set(want)
    for key, (graph, meta) in want.items():
        assert got[key][0] == graph and got[key][1] == meta
    # and a new process reading that cache scores as the clean one
    again = run_child(tmp_path / "shared-cache", legit, timeout=120)
    assert again[str(legit)]["scores"] == clean[str(legit)]["scores"]


def test_the_cache_key_names_the_weight_values(tmp_path: Path) -> None:
    """Two checkpoints whose files differ but whose values are equal (the fp32 .bin and its
    safetensors twin) name the same value digest in their entries' keys and manifests."""
    from rust_bertscore.models import graph_cache

    bin_dir = checkpoint_dir(tmp_path, "bin")
    shutil.copy(SOURCE, bin_dir)
    a = graph_cache.weights_key(bin_dir).split("|")
    b = graph_cache.weights_key(TINY / "bert").split("|")
    assert a[0] != b[0] and a[1] == b[1]
    legit = bf16_twin(checkpoint_dir(tmp_path, "bf16"))
    assert graph_cache.weights_key(legit).split("|")[1] != a[1]


def test_no_process_wide_stand_in(tmp_path: Path) -> None:
    """Two loads get different stand-ins, and a stand-in cannot be changed."""
    import dataclasses

    first, second = BinFile(SOURCE), BinFile(SOURCE)
    kinds = {id(r.storage.kind) for c in (first, second) for r in c.tensors.values()}
    assert len(kinds) >= 2
    record = first.tensors[WORDS]
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.stride = (0, 0)  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.storage.kind.dtype = "f2"  # type: ignore[misc]


def test_a_cache_path_under_a_regular_file_is_a_cache_that_cannot_be_written(
    tmp_path: Path,
) -> None:
    """Not a raw ``NotADirectoryError``: the graph is converted in memory, with the warning of a
    cache that cannot be written, and the scores are the same."""
    model_dir = checkpoint_dir(tmp_path, "bert")
    shutil.copy(SOURCE, model_dir)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    want = run_child(tmp_path / "cache", model_dir)
    got = run_child(blocker / "cache", model_dir)
    assert got[str(model_dir)].get("scores") == want[str(model_dir)]["scores"], got
    assert any("RUST_BERTSCORE_CACHE" in w for w in got["warnings"]), got["warnings"]


def test_data_pkl_is_capped_even_when_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The absolute cap on ``data.pkl`` holds for a stored (uncompressed) member too."""
    from rust_bertscore.convert import torch_bin

    model_dir = checkpoint_dir(tmp_path, "big-pickle")
    pkl = state_pickle()
    write_bin(model_dir, pkl + bytes(4096))
    BinFile(model_dir / "pytorch_model.bin")  # the padding after STOP is never run
    monkeypatch.setattr(torch_bin, "MAX_PICKLE_BYTES", len(pkl) + 1024)
    with pytest.raises(CheckpointError, match=r"pytorch_model\.bin: 'archive/data\.pkl' inflates"):
        BinFile(model_dir / "pytorch_model.bin")


def test_the_shape_is_checked_against_the_config_before_a_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tensor whose shape is not config.json's is refused with no byte of it read."""
    from rust_bertscore.convert import torch_bin
    from rust_bertscore.convert.checkpoint import WeightStore

    words = entry_of(WORDS)
    rows, cols = words.shape
    model_dir = checkpoint_dir(tmp_path, "reshaped")
    write_bin(model_dir, state_pickle(replace(WORDS, shape=(cols, rows), stride=(rows, 1))))
    store = WeightStore(model_dir)
    reads: list[str] = []
    monkeypatch.setattr(torch_bin.BinFile, "_read", lambda *args: reads.append("read"))
    with pytest.raises(CheckpointError, match=r"has shape \(\d+, \d+\), expected .*config\.json"):
        store.get("embeddings.word_embeddings.weight", (rows, cols))
    assert reads == []
