"""PyTorch ``.bin`` checkpoints read without torch (tests/data/tiny_bin, benches/torch_save.py):
the same weights and scores as their safetensors twins, the allow-list unpickler, views and
dtypes, truncated files, the preference for safetensors and the fingerprint."""

from __future__ import annotations

import fnmatch
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

import rust_bertscore as rb
from benches.torch_save import (
    Entry,
    PickleOps,
    plain_pickle,
    save_legacy,
    save_zip,
    state_pickle,
    write_legacy,
    write_zip,
)
from conftest import DATA, TINY, fake_hub_cache
from rust_bertscore.convert import CheckpointError, export_onnx, weight_files, weights_fingerprint
from rust_bertscore.convert.checkpoint import WeightStore, float32_bytes
from rust_bertscore.convert.torch_bin import BinFile
from rust_bertscore.models import graph_cache
from rust_bertscore.models.files import resolve_model

TINY_BIN = DATA / "tiny_bin"
MARKER = Path("/tmp/rust_bertscore_pickle_ran")
TWINS = ("bert", "roberta", "t5")
CANDS = ["a cup of coffee on the table", "the cat sat", "Prices rose by 3% in May."]
REFS = ["coffee in a cup", "a cat was sitting there", "In May, prices went up 3 percent."]
BERT_SAFETENSORS_DIGEST = "8bcf699b94e5804d74a897e1d90080d8159a75a7fcbff6ff059d872beb647f8a"
"""weights_fingerprint(tests/data/reference/tiny/bert) before .bin files were read."""


def bin_twin(family: str, dst: Path, source: str | None = None) -> Path:
    """``tiny/<family>``'s config and tokenizer with ``tiny_bin/<source or family>``'s .bin
    weights, and no safetensors."""
    shutil.copytree(TINY / family, dst, ignore=shutil.ignore_patterns("*.safetensors", "*.npz"))
    for f in (TINY_BIN / (source or family)).iterdir():
        shutil.copy(f, dst / f.name)
    assert not list(dst.glob("*.safetensors"))
    return dst


# ---- the reference checkpoints, saved by torch ---------------------------------------------------


@pytest.mark.parametrize("family", TWINS)
def test_scores_equal_the_safetensors_twin(family: str, tmp_path: Path) -> None:
    model_dir = bin_twin(family, tmp_path / family)
    assert all(p.suffix == ".bin" for p in weight_files(model_dir))
    got = rb.BERTScorer(model_type=str(model_dir), num_layers=3).score(CANDS, REFS)
    want = rb.BERTScorer(model_type=str(TINY / family), num_layers=3).score(CANDS, REFS)
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=1e-7)


@pytest.mark.parametrize("family", TWINS)
def test_weights_equal_the_safetensors_twin(family: str, tmp_path: Path) -> None:
    """Every tensor the twin has, under its canonical name (prefixes stripped, gamma/beta
    renamed), bit for bit; the heads (cls.*, lm_head.*) are there too, unused."""
    bin_store = WeightStore(bin_twin(family, tmp_path / family))
    twin = WeightStore(TINY / family)
    weights = load_file(str(TINY / family / "model.safetensors"))
    assert set(weights) == set(twin.names()) and set(weights) <= set(bin_store.names())
    for name, want in weights.items():
        assert np.array_equal(twin.get(name, want.shape), want)
        got = bin_store.get(name, want.shape)
        assert got.dtype == want.dtype and np.array_equal(got, want), name
    if family == "t5":
        assert float32_bytes(tmp_path / family) == float32_bytes(TINY / family)


# ---- refusing pickles that would run code --------------------------------------------------------

EVIL_CHILD = """
import sys
from rust_bertscore.convert.torch_bin import BinFile
from rust_bertscore.errors import RustBertScoreError
events = []
sys.addaudithook(lambda event, args: events.append((event, repr(args)[:80])))
try:
    BinFile(sys.argv[1])
except RustBertScoreError as exc:
    print("refused:", exc)
print("events:", sorted({e for e, _ in events if e.split('.')[0] in
      ('import', 'os', 'subprocess', 'exec', 'compile', 'builtins', 'pickle')}))
"""


def test_evil_pickle_is_refused_and_runs_nothing(tmp_path: Path) -> None:
    MARKER.unlink(missing_ok=True)
    model_dir = bin_twin("bert", tmp_path / "evil", source="evil")
    path = model_dir / "pytorch_model.bin"
    with pytest.raises(rb.RustBertScoreError, match=r"pytorch_model\.bin.*posix\.system"):
        export_onnx(model_dir, tmp_path / "enc.onnx", 1)
    with pytest.raises(CheckpointError, match=r"refused.*posix\.system"):
        rb.BERTScorer(model_type=str(model_dir), num_layers=1).score(["a"], ["b"])
    assert not MARKER.exists()
    # In a fresh interpreter: no import, no os.system, no exec while the file is read.
    out = subprocess.run(
        [sys.executable, "-c", EVIL_CHILD, str(path)], capture_output=True, text=True, check=True
    ).stdout
    assert "refused:" in out and "posix.system" in out
    assert "events: []" in out, out
    assert not MARKER.exists()


def zip_with(tmp_path: Path, pkl: bytes) -> Path:
    path = tmp_path / "pytorch_model.bin"
    write_zip(path, pkl, [("0", np.zeros(4, np.float32).tobytes())])
    return path


EVAL = "__import__('pathlib').Path('/tmp/rust_bertscore_pickle_ran').touch()"


@pytest.mark.parametrize(
    ("pkl", "refused"),
    [
        (PickleOps().global_("builtins", "eval").text(EVAL).op(b"\x85R").done(), "builtins.eval"),
        # protocol 4's STACK_GLOBAL and the INST opcode go through find_class as well
        (b"\x80\x04" + PickleOps().text("builtins").text("eval").out[2:] + b"\x93", "eval"),
        (b"(" + PickleOps().text(EVAL).out[2:] + b"ibuiltins\neval\n.", "builtins.eval"),
        (
            PickleOps().global_("torch.storage", "_load_from_bytes").text("x").op(b"\x85R").done(),
            "torch.storage._load_from_bytes",
        ),
        (PickleOps().global_("torch", "load").text("x").op(b"\x85R").done(), "torch.load"),
    ],
    ids=["eval", "stack-global", "inst", "load-from-bytes", "torch-load"],
)
def test_other_globals_are_refused(tmp_path: Path, pkl: bytes, refused: str) -> None:
    MARKER.unlink(missing_ok=True)
    with pytest.raises(CheckpointError, match=rf"pytorch_model\.bin: refused .*{refused}"):
        BinFile(zip_with(tmp_path, pkl))
    assert not MARKER.exists()


def test_legacy_format_refuses_too(tmp_path: Path) -> None:
    evil = PickleOps().global_("builtins", "eval").text(EVAL).op(b"\x85R").done()
    for position in range(4):  # the magic number, version, system facts or the dict itself
        heads = [plain_pickle(head) for head in (0x1950A86A20F9469CFC6C, 1001, {})]
        heads.append(state_pickle({}, legacy=True))
        heads[position] = evil
        path = tmp_path / f"{position}.bin"
        path.write_bytes(b"".join(heads) + plain_pickle([]))
        with pytest.raises(CheckpointError, match=r"refused .*builtins\.eval"):
            BinFile(path)
    assert not MARKER.exists()


# ---- formats, views, dtypes ----------------------------------------------------------------------


def test_views_offsets_and_dtypes(tmp_path: Path) -> None:
    base = np.arange(24, dtype=np.float32)
    half = np.linspace(-2, 2, 6).astype(np.float16)
    bf16 = np.array([1.0, -0.5, 3.25, 1e-3], np.float32)  # bfloat16 = the top 16 bits
    bf16 = (bf16.view(np.uint32) >> 16 << 16).view(np.float32)
    entries = {
        "t": Entry("FloatStorage", "0", 24, 2, (3, 4), (1, 3)),  # a transposed view at offset 2
        "tail": Entry("FloatStorage", "0", 24, 12, (2, 6), (6, 1)),  # the same storage
        "scalar": Entry("FloatStorage", "0", 24, 5, (), ()),
        "empty": Entry("FloatStorage", "0", 24, 0, (0, 4), (4, 1)),
        "half": Entry("HalfStorage", "1", 6, 0, (2, 3), (3, 1)),
        "bf16": Entry("BFloat16Storage", "2", 4, 0, (4,), (1,)),
        "ids": Entry("LongStorage", "3", 3, 0, (1, 3), (3, 1)),
    }
    want = {
        "t": np.lib.stride_tricks.as_strided(base[2:], (3, 4), (4, 12)),
        "tail": base[12:].reshape(2, 6),
        "scalar": np.float32(5.0),
        "empty": np.zeros((0, 4), np.float32),
        "half": half.reshape(2, 3),
        "bf16": bf16,
        "ids": np.array([[0, 1, 2]], np.int64),
    }
    for order in ("little", "big"):
        code = "<" if order == "little" else ">"
        raws = [
            base.astype(f"{code}f4").tobytes(),
            half.astype(f"{code}f2").tobytes(),
            (bf16.view(np.uint32) >> 16).astype(f"{code}u2").tobytes(),
            np.arange(3).astype(f"{code}i8").tobytes(),
        ]
        path = tmp_path / f"{order}.bin"
        write_zip(path, state_pickle(entries), enumerate_keys(raws), byteorder=order)
        checkpoint = BinFile(path)
        for name, array in want.items():
            got = checkpoint.load(name)
            assert got.shape == array.shape and np.array_equal(got, array), (order, name)
            assert got.dtype.newbyteorder("=") == np.asarray(array).dtype


def enumerate_keys(raws: list[bytes]) -> list[tuple[str, bytes]]:
    return [(str(i), raw) for i, raw in enumerate(raws)]


def test_legacy_views(tmp_path: Path) -> None:
    """Legacy files may point a tensor at a view of a storage (``view_metadata``)."""
    root = np.arange(20, dtype=np.float32)
    entries = {
        "whole": Entry("FloatStorage", "r", 20, 0, (4, 5), (5, 1)),
        "view": Entry("FloatStorage", "r", 20, 1, (3,), (2,), view=("v", 5, 10)),
    }
    path = tmp_path / "legacy.bin"
    write_legacy(path, state_pickle(entries, legacy=True), [("r", 20, root.tobytes())])
    checkpoint = BinFile(path)
    assert np.array_equal(checkpoint.load("whole"), root.reshape(4, 5))
    assert np.array_equal(checkpoint.load("view"), root[[6, 8, 10]])


def test_compressed_members(tmp_path: Path) -> None:
    """torch stores its members uncompressed; a zip tool that deflated them is read too."""
    views = tmp_path / "views.bin"  # a tensor at an offset, a transposed one
    entries = {
        "tail": Entry("FloatStorage", "0", 24, 12, (2, 6), (6, 1)),
        "t": Entry("FloatStorage", "0", 24, 2, (3, 4), (1, 3)),
    }
    write_zip(views, state_pickle(entries), [("0", np.arange(24, dtype="<f4").tobytes())])
    for source in (TINY_BIN / "bert" / "pytorch_model.bin", views):
        path = tmp_path / f"deflated-{source.name}"
        with (
            zipfile.ZipFile(source) as src,
            zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out,
        ):
            for info in src.infolist():
                out.writestr(info.filename, src.read(info))
        with zipfile.ZipFile(path) as check:
            assert {i.compress_type for i in check.infolist()} == {zipfile.ZIP_DEFLATED}
        stored, deflated = BinFile(source), BinFile(path)
        assert list(stored.tensors) == list(deflated.tensors)
        for key in stored.tensors:
            assert np.array_equal(stored.load(key), deflated.load(key)), key


def test_out_of_bounds_views_are_refused(tmp_path: Path) -> None:
    entries = {"x": Entry("FloatStorage", "0", 4, 2, (2, 2), (2, 1))}
    with pytest.raises(CheckpointError, match="reads past its storage"):
        BinFile(zip_with(tmp_path, state_pickle(entries)))
    entries = {"x": Entry("FloatStorage", "0", 9, 0, (3, 3), (3, 1))}  # the record has 4
    with pytest.raises(CheckpointError, match="fewer than 9 elements"):
        BinFile(zip_with(tmp_path, state_pickle(entries)))


@pytest.mark.parametrize("save", [save_zip, save_legacy])
def test_half_precision_bin_matches_safetensors(save, tmp_path: Path) -> None:
    weights = load_file(str(TINY / "bert" / "model.safetensors"))
    half = {k: v.astype(np.float16) for k, v in weights.items()}
    st_dir = shutil.copytree(TINY / "bert", tmp_path / "st", ignore=shutil.ignore_patterns("*.npz"))
    save_file(half, str(st_dir / "model.safetensors"))
    bin_dir = shutil.copytree(st_dir, tmp_path / "bin")
    (bin_dir / "model.safetensors").unlink()
    save(bin_dir / "pytorch_model.bin", half)
    a, b = WeightStore(st_dir), WeightStore(bin_dir)
    for name, value in weights.items():
        assert np.array_equal(a.get(name, value.shape), b.get(name, value.shape))


# ---- damaged files, both formats present, the fingerprint ----------------------------------------


@pytest.mark.parametrize(
    ("family", "name"),
    [
        ("bert", "pytorch_model.bin"),
        ("roberta", "pytorch_model.bin"),
        ("t5", "pytorch_model-00002-of-00002.bin"),
    ],
)
@pytest.mark.parametrize("keep", [0.0, 0.001, 0.01, 0.5, 0.999, -1])
def test_truncated_bin_is_a_checkpoint_error(
    family: str, name: str, keep: float, tmp_path: Path
) -> None:
    model_dir = bin_twin(family, tmp_path / family)
    path = model_dir / name
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) - 1 if keep == -1 else int(len(raw) * keep)])
    with pytest.raises(CheckpointError, match=rf"{name}: "):
        export_onnx(model_dir, tmp_path / "enc.onnx", 3)


def test_safetensors_are_preferred(tmp_path: Path) -> None:
    """Beside model.safetensors a .bin is not read (here it would be refused) and the
    fingerprint is the safetensors one, as before .bin files were read."""
    model_dir = shutil.copytree(TINY / "bert", tmp_path / "both")
    shutil.copy(TINY_BIN / "evil" / "pytorch_model.bin", model_dir)
    assert [p.name for p in weight_files(model_dir)] == ["model.safetensors"]
    assert weights_fingerprint(model_dir) == BERT_SAFETENSORS_DIGEST
    export_onnx(model_dir, tmp_path / "enc.onnx", 1)


def test_fingerprint_covers_bin_files(tmp_path: Path) -> None:
    model_dir = bin_twin("t5", tmp_path / "t5")
    first = weights_fingerprint(model_dir)
    assert graph_cache.weights_fingerprint(model_dir) == first
    index = json.loads((model_dir / "pytorch_model.bin.index.json").read_text())
    shard = model_dir / sorted(set(index["weight_map"].values()))[1]
    raw = bytearray(shard.read_bytes())
    raw[len(raw) // 2] ^= 1  # a byte of a storage
    shard.write_bytes(bytes(raw))
    assert weights_fingerprint(model_dir) != first
    assert graph_cache.weights_fingerprint(model_dir) != first


def test_a_hub_snapshot_of_bin_files_counts_as_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What ``hf download`` leaves of a repository without safetensors is a complete snapshot;
    one missing a shard is not."""
    twin = bin_twin("t5", tmp_path / "t5")
    snapshot = fake_hub_cache(tmp_path / "hub", "acme/tiny-t5-bin", twin)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    files = resolve_model("acme/tiny-t5-bin")
    assert files.source == "hf-cache" and files.model_dir == snapshot
    (snapshot / "pytorch_model-00001-of-00002.bin").unlink()
    with pytest.raises(rb.ModelNotFoundError, match="acme/tiny-t5-bin"):
        resolve_model("acme/tiny-t5-bin")


def test_fingerprint_memo_follows_config_json(tmp_path: Path) -> None:
    """The memoised digest covers config.json as the digest does (it was keyed by the
    safetensors files alone)."""
    model_dir = shutil.copytree(TINY / "bert", tmp_path / "bert")
    first = graph_cache.weights_fingerprint(model_dir)
    config = json.loads((model_dir / "config.json").read_text())
    (model_dir / "config.json").write_text(json.dumps(dict(config, layer_norm_eps=1e-5)))
    assert graph_cache.weights_fingerprint(model_dir) == weights_fingerprint(model_dir) != first


@pytest.mark.parametrize("family", TWINS)
def test_weights_digest_equals_the_safetensors_twins(family: str, tmp_path: Path) -> None:
    """The signature's digest is of the encoder's values: the .bin twin (other file format,
    ``bert.``/``roberta.`` prefixes, gamma/beta names, heads beside the encoder) gives the
    safetensors twin's digest, and a changed weight another one."""
    from rust_bertscore.convert.values import weights_digest

    model_dir = bin_twin(family, tmp_path / family)
    store = WeightStore(model_dir)
    name = "embeddings.word_embeddings.weight" if family != "t5" else "shared.weight"
    assert store.spec(name) == WeightStore(TINY / family).spec(name)
    assert weights_digest(model_dir) == weights_digest(TINY / family)
    weights = load_file(str(TINY / family / "model.safetensors"))
    weights[name] = weights[name] + np.float32(1e-3)
    changed = tmp_path / "changed"
    shutil.copytree(TINY / family, changed, ignore=shutil.ignore_patterns("*.npz"))
    save_file(weights, str(changed / "model.safetensors"))
    assert weights_digest(changed) != weights_digest(model_dir)


def test_a_hub_repository_without_safetensors_downloads_its_bin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The download asks for the safetensors layout first, and for ``pytorch_model.bin`` only
    when the repository has no safetensors weights (a repository with both is fetched once)."""
    import huggingface_hub

    from rust_bertscore.models.files import HUB_BIN_PATTERNS

    repos = {"acme/old-bert": bin_twin("bert", tmp_path / "old"), "acme/new-bert": TINY / "bert"}
    calls: list[tuple[str, list[str]]] = []

    def fake_snapshot_download(repo_id: str, **kwargs):
        if kwargs["local_files_only"]:
            raise huggingface_hub.errors.LocalEntryNotFoundError("not cached")
        patterns = kwargs["allow_patterns"]
        calls.append((repo_id, patterns))
        snapshot = Path(kwargs["cache_dir"]) / repo_id.replace("/", "--")
        snapshot.mkdir(parents=True, exist_ok=True)
        for f in repos[repo_id].iterdir():  # what the Hub serves for these patterns
            if f.suffix != ".npz" and any(fnmatch.fnmatch(f.name, p) for p in patterns):
                shutil.copy(f, snapshot / f.name)
        return str(snapshot)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot_download)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    old = resolve_model("acme/old-bert")
    assert old.source == "download" and [p for _, p in calls][-1] == HUB_BIN_PATTERNS
    assert [f.name for f in weight_files(old.model_dir)] == ["pytorch_model.bin"]
    calls.clear()
    new = resolve_model("acme/new-bert")
    assert len(calls) == 1 and "pytorch_model.bin" not in calls[0][1]
    assert [f.name for f in weight_files(new.model_dir)] == ["model.safetensors"]
