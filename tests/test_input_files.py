"""Every parser of outside input but the ``.bin`` pickle reader (issue 46, docs/inputs.md): one
test per class of bad input, each ending in the parser's ``RustBertScoreError`` subclass naming
the file and the key, offset or line; never a foreign exception, a crash or unbounded memory.

Over-limit files are sparse (``truncate``): they cost no disk and show that the size is checked
before anything is read."""

from __future__ import annotations

import json
import os
import shutil
import struct
import warnings
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

import rust_bertscore as rb
from conftest import DATA, TINY
from rust_bertscore.catalog.configs import load_config
from rust_bertscore.convert.checkpoint import WeightStore, float32_bytes
from rust_bertscore.convert.safetensors_header import MAX_HEADER_BYTES, read_header
from rust_bertscore.errors import (
    CheckpointError,
    InputValueError,
    ModelLoadError,
    RustBertScoreError,
    RustBertScoreWarning,
)
from rust_bertscore.models.export import export_model
from rust_bertscore.models.files import resolve_model
from rust_bertscore.stages.rescale import read_baseline
from rust_bertscore.stages.tokenization.tokenizer import TextTokenizer
from rust_bertscore.store.records import HEADER_BYTES
from rust_bertscore.store.segments import EmbeddingStore
from rust_bertscore.support.inputs import (
    MAX_CONFIG_BYTES,
    MAX_TEXT_BYTES,
    MAX_TOKENIZER_BYTES,
    read_json,
)


def sparse(path: Path, size: int, head: bytes = b"") -> Path:
    path.write_bytes(head)
    os.truncate(path, size)
    return path


# ---- safetensors headers -------------------------------------------------------------------------


def safetensors_with(
    path: Path, header: dict | bytes, body: bytes, declared: int | None = None
) -> Path:
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    n = len(raw) if declared is None else declared
    path.write_bytes(struct.pack("<Q", n) + raw + body)
    return path


BODY = np.arange(6, dtype=np.float32).tobytes() + np.ones(4, np.float32).tobytes()


def with_a(**changes: object) -> dict:
    return {**GOOD, "a": {**GOOD["a"], **changes}}


def with_b(**changes: object) -> dict:
    return {**GOOD, "b": {**GOOD["b"], **changes}}


GOOD = {
    "a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
    "b": {"dtype": "F32", "shape": [4], "data_offsets": [24, 40]},
}


def test_a_checked_header_reads_what_safetensors_reads(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    save_file(
        {"w": np.arange(12, dtype=np.float32).reshape(3, 4), "h": np.ones(5, np.float16)}, path
    )
    header = read_header(path)
    assert header["w"].shape == (3, 4) and header["h"].dtype == "F16"
    store = WeightStore(tmp_path)
    want = load_file(path)
    np.testing.assert_array_equal(store.get("w", (3, 4)), want["w"])
    np.testing.assert_array_equal(store.get("h", (5,)), want["h"].astype(np.float32))
    assert float32_bytes(tmp_path) == 4 * (12 + 5)


def test_bf16_is_widened(tmp_path: Path) -> None:
    values = np.array([1.5, -2.0, 0.25], np.float32)
    bits = (values.view(np.uint32) >> 16).astype("<u2").tobytes()
    safetensors_with(
        tmp_path / "model.safetensors",
        {"x": {"dtype": "BF16", "shape": [3], "data_offsets": [0, 6]}},
        bits,
    )
    np.testing.assert_array_equal(WeightStore(tmp_path).get("x", (3,)), values)


@pytest.mark.parametrize(
    ("header", "declared", "match"),
    [
        (GOOD, 10**6, r"header length 1000000 at offset 0 runs past the end"),
        (GOOD, MAX_HEADER_BYTES + 1, r"over the limit of 104857600 bytes"),
        (GOOD, 2**64 - 1, r"over the limit"),
        (b"{not json", None, r"not valid JSON at line 1, column 2"),
        (b'{"a": \xff}', None, r"not UTF-8 text \(byte 0xff at offset 6\)"),
        (b"[1, 2]", None, r"header is not a JSON object"),
        (b"[" * 5000 + b"]" * 5000, None, r"nested deeper than 4 levels"),
        ({**GOOD, "a": [1]}, None, r"tensor 'a': header entry is not a JSON object"),
        (with_a(dtype="F8_E9M9"), None, r"tensor 'a': unknown dtype 'F8_E9M9'"),
        (with_a(shape=[2, -3]), None, r"tensor 'a': shape must be a list"),
        (with_a(shape=[2, 3.0]), None, r"tensor 'a': shape must be"),
        (with_a(shape=[1] * 9), None, r"at most 8"),
        (with_a(shape=[2**40, 2**40]), None, r"'a': shape must be a list of at most 8 integers"),
        (with_a(data_offsets=[0, 28]), None, r"takes 24 bytes, but data_offsets \[0, 28\] hold 28"),
        (with_b(data_offsets=[24, 44]), None, r"data_offsets \[24, 44\] lie outside the 40 bytes"),
        (with_b(data_offsets=[8, 24], shape=[4]), None, r"tensors 'a' and 'b' overlap at byte 8"),
        (with_a(data_offsets=[-8, 16]), None, r"data_offsets must be two non-negative"),
        (with_a(data_offsets=[24, 0]), None, r"lie outside"),
        ({**GOOD, "__metadata__": {"format": 3}}, None, r"__metadata__ must map names to strings"),
    ],
    ids=[
        "past-eof", "over-cap", "u64-max", "not-json", "not-utf8", "not-object", "deep",
        "entry-type", "dtype", "negative-dim", "float-dim", "many-dims", "overflowing-shape",
        "size-mismatch", "out-of-range", "overlap", "negative-offset", "reversed", "metadata",
    ],
)  # fmt: skip
def test_bad_safetensors_headers(
    tmp_path: Path, header: object, declared: int | None, match: str
) -> None:
    path = safetensors_with(tmp_path / "model.safetensors", header, BODY, declared)
    with pytest.raises(CheckpointError, match=match) as caught:
        WeightStore(tmp_path)
    assert str(path) in str(caught.value)


def test_a_short_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"\x01\x00")
    with pytest.raises(CheckpointError, match="too short for a safetensors file"):
        WeightStore(tmp_path)


def test_an_integer_tensor_is_refused_by_name(tmp_path: Path) -> None:
    save_file({"ids": np.arange(4, dtype=np.int64)}, tmp_path / "model.safetensors")
    with pytest.raises(CheckpointError, match=r"tensor 'ids' has dtype int64, expected floats"):
        WeightStore(tmp_path).get("ids", (4,))


def test_bad_shard_index(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors.index.json").write_text(
        '{"weight_map": {"a": "../x.safetensors"}}'
    )
    with pytest.raises(
        CheckpointError, match=r"key 'a': bad shard file name '\.\./x\.safetensors'"
    ):
        WeightStore(tmp_path)
    (tmp_path / "model.safetensors.index.json").write_text('{"weight_map": [1]}')
    with pytest.raises(CheckpointError, match=r"'weight_map' object"):
        WeightStore(tmp_path)


# ---- config.json ---------------------------------------------------------------------------------


def model_copy(tmp_path: Path, family: str = "bert") -> Path:
    dst = tmp_path / family
    shutil.copytree(TINY / family, dst, ignore=shutil.ignore_patterns("*.npz"))
    return dst


def with_config(model: Path, **fields: object) -> Path:
    config = json.loads((model / "config.json").read_text())
    config.update(fields)
    (model / "config.json").write_text(json.dumps(config))
    return model


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        (
            {"hidden_size": [64]},
            r"config field 'hidden_size' must be an integer in 0\.\.16777216, got \[64\]",
        ),
        ({"num_hidden_layers": 10**9}, r"'num_hidden_layers' must be an integer in 0\.\.1024"),
        ({"vocab_size": True}, r"'vocab_size' must be an integer"),
        ({"pad_token_id": -5}, r"'pad_token_id' must be an integer in -1\.\."),
        ({"layer_norm_eps": "1e-12"}, r"'layer_norm_eps' must be a number finite in float32"),
        ({"layer_norm_eps": 1e300}, r"'layer_norm_eps' must be a number finite in float32"),
        ({"rope_theta": -1e39}, r"'rope_theta' must be a number finite in float32"),
        ({"layer_norm_eps": 5.0}, r"'layer_norm_eps' must be a number in 0\.\.1"),
        ({"model_type": ["bert"]}, r"'model_type' must be a string"),
        ({"hidden_act": {"x": 1}}, r"'hidden_act' must be a string"),
    ],
)
def test_config_fields_of_the_wrong_kind(tmp_path: Path, fields: dict, match: str) -> None:
    model = with_config(model_copy(tmp_path), **fields)
    with pytest.raises(CheckpointError, match=match) as caught:
        load_config(model)
    assert str(model / "config.json") in str(caught.value)
    with pytest.raises(RustBertScoreError, match=match):
        rb.score(["a"], ["b"], model_type=str(model), num_layers=1)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (b"\xff{}", r"not UTF-8 text \(byte 0xff at offset 0\)"),
        (b'{"a": ' + b"[" * 100000 + b"]" * 100000 + b"}", r"nested deeper than 64 levels"),
        (b'{"a": ' + b"[" * 70 + b"]" * 70 + b"}", r"nested deeper than 64 levels"),
        (b'{"vocab_size": ' + b"9" * 5000 + b"}", r"not valid JSON \(Exceeds the limit"),
        (b'{"a": 1,}', r"not valid JSON at line 1, column 9"),
        (b"[]", r"expected a JSON object, got list"),
    ],
    ids=["utf8", "recursion", "depth", "long-int", "syntax", "list"],
)
def test_unreadable_config_json(tmp_path: Path, text: bytes, match: str) -> None:
    model = model_copy(tmp_path)
    (model / "config.json").write_bytes(text)
    with pytest.raises(CheckpointError, match=match):
        load_config(model)
    with pytest.raises(InputValueError, match=match):
        resolve_model(str(model)).config()


def test_an_oversized_config_is_refused_before_reading(tmp_path: Path) -> None:
    model = model_copy(tmp_path)
    sparse(model / "config.json", MAX_CONFIG_BYTES + 1, b"{")
    with pytest.raises(CheckpointError, match=r"16777217 bytes, over the limit of 16777216"):
        load_config(model)


def test_a_config_that_is_a_directory(tmp_path: Path) -> None:
    (tmp_path / "x.json").mkdir()
    with pytest.raises(InputValueError, match=r"x\.json: a directory, expected a regular file"):
        read_json(tmp_path / "x.json", error=InputValueError)


def test_a_builder_failure_names_config_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A builder that trips over a field no check knows (here: a KeyError raised for it) gives a
    CheckpointError naming config.json, not the builder's own exception."""
    from rust_bertscore.convert import registry

    real = registry.converter_for

    class Tripping:
        def __init__(self, config: dict) -> None:
            self.inner = real(config)

        def build(self, request: object) -> None:
            raise KeyError("attention_window")

    monkeypatch.setattr(registry, "converter_for", Tripping)
    model = model_copy(tmp_path)
    with pytest.raises(
        CheckpointError, match=r"config\.json: cannot build .*KeyError: 'attention_window'"
    ):
        registry.build_model(model, 1)


# ---- tokenizer files -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["tokenizer_config.json", "special_tokens_map.json"])
@pytest.mark.parametrize(
    ("text", "match"),
    [
        (b"\xc3\x28", r"not UTF-8 text \(byte 0xc3 at offset 0\)"),
        (b"[" * 3000 + b"]" * 3000, r"nested deeper than 64"),
        (b'"a string"', r"expected a JSON object, got str"),
        (b"{", r"not valid JSON at line 1, column 2"),
        (b'{"unk_token": "\\ud800"}', r"a lone UTF-16 surrogate \(\\u escape\) in key 'unk_token'"),
    ],
    ids=["utf8", "depth", "string", "syntax", "surrogate"],
)
def test_bad_tokenizer_json_files(tmp_path: Path, name: str, text: bytes, match: str) -> None:
    model = model_copy(tmp_path)
    if name == "special_tokens_map.json":  # read only in the legacy layout, as transformers
        config = json.loads((model / "tokenizer_config.json").read_text())
        del config["added_tokens_decoder"]
        (model / "tokenizer_config.json").write_text(json.dumps(config))
    (model / name).write_bytes(text)
    with pytest.raises(InputValueError, match=match) as caught:
        TextTokenizer(model, load_config(model))
    assert name in str(caught.value)


def test_oversized_tokenizer_json_is_refused_before_reading(tmp_path: Path) -> None:
    model = model_copy(tmp_path)
    sparse(model / "tokenizer.json", MAX_TOKENIZER_BYTES + 1, b"{")
    with pytest.raises(InputValueError, match=r"tokenizer\.json: .*over the limit"):
        TextTokenizer(model, load_config(model), fast=True)


@pytest.mark.parametrize(
    ("family", "drop", "name", "text", "match"),
    [
        ("bert", "tokenizer.json", "vocab.txt", b"[PAD]\n\xff\xfe\n", r"vocab\.txt"),
        ("roberta", "tokenizer.json", "vocab.json", b'{"a": \xff}', r"vocab\.json"),
        ("roberta", "tokenizer.json", "merges.txt", b"#version\nx y z w\n\xff\n", r"merges\.txt"),
        ("albert", "tokenizer.json", "spiece.model", b"\x0a\xff\xff\xff\xff\x0f", r"spiece\.model"),
    ],
    ids=["wordpiece", "bpe-vocab", "bpe-merges", "sentencepiece"],
)
def test_bad_vocabulary_files(
    tmp_path: Path, family: str, drop: str, name: str, text: bytes, match: str
) -> None:
    model = model_copy(tmp_path, family)
    (model / drop).unlink()
    (model / name).write_bytes(text)
    with pytest.raises(InputValueError, match=match):
        TextTokenizer(model, load_config(model)).encode(["a test"])


def test_oversized_sentencepiece_model(tmp_path: Path) -> None:
    model = model_copy(tmp_path, "albert")
    sparse(model / "spiece.model", MAX_TOKENIZER_BYTES + 1)
    with pytest.raises(InputValueError, match=r"spiece\.model: .*over the limit"):
        TextTokenizer(model, load_config(model))


# ---- an exported graph and its sidecar -----------------------------------------------------------


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("export")
    export_model(str(TINY / "bert"), out / "enc.onnx", num_layers=2)
    return out


def exported_copy(export_dir: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "exp"
    shutil.copytree(export_dir, dst)
    return dst


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (b'{"num_layers": "2"}', r"enc\.onnx\.json: key 'num_layers' must be an integer, got '2'"),
        (b'{"num_layers": 2, "precision": "fp8"}', r"key 'precision' must be one of"),
        (b'{"num_layers": 2', r"enc\.onnx\.json: not valid JSON at line 1"),
        (b"\xff", r"enc\.onnx\.json: not UTF-8"),
        (b"[" * 2000 + b"]" * 2000, r"nested deeper"),
        (b"[2]", r"expected a JSON object"),
    ],
    ids=["layers-type", "precision", "syntax", "utf8", "depth", "list"],
)
def test_bad_export_sidecar(export_dir: Path, tmp_path: Path, text: bytes, match: str) -> None:
    model = exported_copy(export_dir, tmp_path)
    (model / "enc.onnx.json").write_bytes(text)
    rb.clear_cache()
    with pytest.raises(InputValueError, match=match):
        rb.score(["a"], ["b"], model_type=str(model / "enc.onnx"))


def test_corrupt_exported_graph(export_dir: Path, tmp_path: Path) -> None:
    model = exported_copy(export_dir, tmp_path)
    data = bytearray((model / "enc.onnx").read_bytes())
    (model / "enc.onnx").write_bytes(bytes(data[: len(data) // 3]))
    rb.clear_cache()
    with pytest.raises(ModelLoadError, match=r"enc\.onnx"):
        rb.score(["a"], ["b"], model_type=str(model / "enc.onnx"))


# ---- the embedding store -------------------------------------------------------------------------


def stored(tmp_path: Path) -> tuple[Path, bytes, np.ndarray]:
    store = EmbeddingStore(tmp_path / "store")
    key, value = b"k" * 32, np.arange(8, dtype=np.float32).reshape(2, 4)
    store.put_many([key], [value])
    store.close()
    return tmp_path / "store", key, value


def test_damaged_store_json_is_ignored(tmp_path: Path) -> None:
    directory, key, value = stored(tmp_path)
    for text in (
        b"\xff\xfe",
        b"[" * 5000 + b"]" * 5000,
        b"[1]",
        b'{"format": ' + b"9" * 5000 + b"}",
    ):
        (directory / "store.json").write_bytes(text)
        np.testing.assert_array_equal(EmbeddingStore(directory).get(key), value)


def test_a_header_declaring_terabytes_is_a_miss(tmp_path: Path) -> None:
    """A record whose header (CRC made right) declares a 2^44-byte payload: the scan stops at
    the file's end, nothing that size is allocated, the key is a miss."""
    import zlib

    directory, key, _ = stored(tmp_path)
    (seg,) = (directory / "segments").glob("*.seg")
    buf = bytearray(seg.read_bytes())
    struct.pack_into("<3I", buf, 48, 65536, 65536, 1024)
    struct.pack_into("<Q", buf, 60, 4 * 65536 * 65536 * 1024)
    struct.pack_into("<I", buf, 72, zlib.crc32(bytes(buf[:72])))
    seg.write_bytes(bytes(buf))
    store = EmbeddingStore(directory)
    assert store.get(key) is None
    assert store.info().entries == 0
    assert len(buf) > HEADER_BYTES


# ---- baseline CSVs -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (
            b"LAYER,P,R,F\n0,0.1,0.2,0.3\n\xff\n",
            r"b\.csv: not UTF-8 text \(byte 0xff at offset 26\)",
        ),
        (b"LAYER,P,R,F\r0,0.1,0.2\r", r"b\.csv:2: expected 4 fields"),
    ],
    ids=["utf8", "cr-lines"],
)
def test_bad_baseline_files(tmp_path: Path, text: bytes, match: str) -> None:
    (tmp_path / "b.csv").write_bytes(text)
    with pytest.raises(InputValueError, match=match):
        read_baseline(tmp_path / "b.csv")


def test_baseline_limits(tmp_path: Path) -> None:
    sparse(tmp_path / "big.csv", MAX_TEXT_BYTES + 1, b"LAYER,P,R,F\n")
    with pytest.raises(InputValueError, match=r"big\.csv: .*over the limit"):
        read_baseline(tmp_path / "big.csv")
    (tmp_path / "dir.csv").mkdir()
    with pytest.raises(InputValueError, match=r"dir\.csv: a directory"):
        read_baseline(tmp_path / "dir.csv")
    with pytest.raises(FileNotFoundError):
        read_baseline(tmp_path / "missing.csv")


def test_the_reference_baseline_still_reads() -> None:
    table = read_baseline(DATA / "reference" / "baseline_minilm_l6.csv")
    assert table.shape[1] == 3 and np.isfinite(table).all()


# ---- the cache directory -------------------------------------------------------------------------


def test_a_cache_path_under_a_regular_file_converts_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RUST_BERTSCORE_CACHE", str(tmp_path / "cache"))
    rb.clear_cache()
    want = rb.score(["the cat sat"], ["a cat sat"], model_type=str(TINY / "bert"), num_layers=2)
    (tmp_path / "file").write_text("not a directory")
    monkeypatch.setenv("RUST_BERTSCORE_CACHE", str(tmp_path / "file" / "cache"))
    rb.clear_cache()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = rb.score(["the cat sat"], ["a cat sat"], model_type=str(TINY / "bert"), num_layers=2)
    rb.clear_cache()
    messages = [str(w.message) for w in caught if issubclass(w.category, RustBertScoreWarning)]
    assert any("in memory" in m and "RUST_BERTSCORE_CACHE" in m for m in messages), messages
    assert [a.tolist() for a in got] == [a.tolist() for a in want]


def test_a_graph_whose_weights_point_outside_its_directory(tmp_path: Path) -> None:
    """External data at an absolute path or above the graph's directory: ONNX Runtime refuses
    to load the graph, and the weights digest (signature hashes) refuses to read it."""
    from onnx import TensorProto, helper, numpy_helper

    from rust_bertscore.convert.values import graph_digest
    from rust_bertscore.stages.encoder import Encoder

    (tmp_path / "secret.bin").write_bytes(np.arange(4, dtype=np.float32).tobytes())
    (tmp_path / "sub").mkdir()
    for location in (str(tmp_path / "secret.bin"), "../secret.bin"):
        w = numpy_helper.from_array(np.zeros(4, np.float32), "w")
        w.ClearField("raw_data")
        w.data_location = TensorProto.EXTERNAL
        for key, value in (("location", location), ("offset", "0"), ("length", "16")):
            entry = w.external_data.add()
            entry.key, entry.value = key, value
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])
        graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g", [x], [y], [w])
        path = tmp_path / "sub" / "m.onnx"
        path.write_bytes(helper.make_model(graph).SerializeToString())
        with pytest.raises(ModelLoadError, match=r"m\.onnx: cannot read the graph's weights"):
            graph_digest(path)
        with pytest.raises(ModelLoadError, match=r"m\.onnx"):
            Encoder(path)
