"""The converted-graph cache's key against hostile checkpoints and memos (issue 61's attack).

- The fingerprint memo keys on each file's device, inode, size, modification and change times:
  weights replaced by others of the same size with the old mtime put back are hashed again.
- Weights rewritten while they are hashed or converted are refused (``CheckpointError``), and
  no entry is kept: a later process never scores one checkpoint with another's graph.
- A memo's digest that is not 64 hex digits is a miss: never split on ``|``, never a path.
- Only the files the fingerprint hashes are stamped: an unrelated dangling ``*.index.json`` or
  a symlink loop beside the weights changes nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

import rust_bertscore as rb
from conftest import TINY
from rust_bertscore import convert
from rust_bertscore.errors import CheckpointError
from rust_bertscore.models import graph_cache, openvino_graphs
from rust_bertscore.models.runtime import RUNTIMES

CANDS = ["the coffee was cold", "she took the road"]
REFS = ["the coffee was hot", "he took the train"]
QUERY = "encoder.layer.0.attention.self.query.weight"


def f1(model: Path) -> list[float]:
    """F of the pairs on ``model``, loaded afresh (as a new process would: this process's
    loaded runtimes are dropped first)."""
    RUNTIMES.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no cache warning either
        return [float(x) for x in rb.score(CANDS, REFS, model_type=str(model), num_layers=2)[2]]


@pytest.fixture
def model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RUST_BERTSCORE_CACHE", str(tmp_path / "cache"))
    target = tmp_path / "bert"
    shutil.copytree(TINY / "bert", target)
    return target


def scaled(model: Path, factor: float) -> bytes:
    """The bytes of ``model``'s safetensors file with layer 0's query weight times ``factor``,
    rewritten in place (same header, same size)."""
    raw = bytearray((model / "model.safetensors").read_bytes())
    size = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + size])
    key = next(k for k in header if k.endswith(QUERY))
    start, end = (8 + size + o for o in header[key]["data_offsets"])
    values = np.frombuffer(bytes(raw[start:end]), dtype="<f4") * np.float32(factor)
    raw[start:end] = values.astype("<f4").tobytes()
    return bytes(raw)


def test_weights_swapped_with_the_old_mtime_are_hashed_again(model: Path) -> None:
    weights = model / "model.safetensors"
    before = f1(model)
    other = scaled(model, 3.0)
    assert len(other) == weights.stat().st_size
    info = weights.stat()
    weights.write_bytes(other)
    os.utime(weights, ns=(info.st_atime_ns, info.st_mtime_ns))  # size and mtime as they were
    after = f1(model)
    assert after != before
    shutil.rmtree(Path(os.environ["RUST_BERTSCORE_CACHE"]))
    assert f1(model) == after  # what a clean cache gives


def test_weights_rewritten_while_converting_are_refused(
    model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    weights = model / "model.safetensors"
    original, other = weights.read_bytes(), scaled(model, 3.0)
    real_export = convert.export_onnx

    def swapped(model_dir: Path, *args: object, **kwargs: object) -> Path:
        weights.write_bytes(other)  # the write lands after the key was taken ...
        try:
            return real_export(model_dir, *args, **kwargs)  # type: ignore[arg-type]
        finally:
            weights.write_bytes(original)  # ... and the old bytes are put back

    monkeypatch.setattr(convert, "export_onnx", swapped)
    changed = r"model\.safetensors changed while the checkpoint was being converted"
    with pytest.raises(CheckpointError, match=changed):
        f1(model)
    cache = Path(os.environ["RUST_BERTSCORE_CACHE"])
    assert not list(cache.glob("onnx/*/model.onnx"))
    monkeypatch.setattr(convert, "export_onnx", real_export)
    fresh = f1(model)
    shutil.rmtree(cache)
    assert f1(model) == fresh


@pytest.mark.parametrize(
    "digest",
    ["a" * 63 + "|", "ab\0cd", "/tmp/escaped", "../" * 20, "A" * 64, 7, None],
)
@pytest.mark.parametrize("memo", ["fingerprints", "digests"])
def test_a_memo_s_digest_that_is_not_hex_is_a_miss(
    model: Path, tmp_path: Path, memo: str, digest: object
) -> None:
    clean = f1(model)
    cache = Path(os.environ["RUST_BERTSCORE_CACHE"])
    for path in (cache / memo).iterdir():
        record = json.loads(path.read_text())
        record["digest"] = digest
        path.write_text(json.dumps(record))
    assert f1(model) == clean
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bert", "cache"]  # nothing escaped
    assert graph_cache.weights_key(model).count("|") == 1


@pytest.mark.parametrize("kind", ["dangling", "loop"])
def test_an_unrelated_index_beside_the_weights_changes_nothing(model: Path, kind: str) -> None:
    clean = f1(model)
    link = model / "other.safetensors.index.json"
    link.symlink_to(model / "missing.json" if kind == "dangling" else link)
    assert f1(model) == clean  # no error, no "cannot write the cache" warning


def test_an_exported_graph_rewritten_with_its_old_mtime_is_hashed_again(
    model: Path, tmp_path: Path
) -> None:
    from rust_bertscore.models.graph_record import graph_file_digest

    graph = tmp_path / "g.onnx"
    graph.write_bytes(b"graph A, exported")
    first = graph_file_digest(graph)
    info = graph.stat()
    graph.write_bytes(b"graph B, exported")  # same size
    os.utime(graph, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert graph_file_digest(graph) != first


def other_checkpoint(model: Path) -> Path:
    """A copy of ``model`` with layer 0's query weight tripled, beside it."""
    other = model.parent / "other"
    shutil.copytree(model, other)
    (other / "model.safetensors").write_bytes(scaled(model, 3.0))
    return other


def test_a_folder_swapped_during_the_conversion_and_back_is_refused(
    model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = other_checkpoint(model)
    aside = model.parent / "aside"
    real_export = convert.export_onnx

    def swapped(model_dir: Path, *args: object, **kwargs: object) -> Path:
        model.rename(aside)  # the other folder under the model's name while it is read ...
        other.rename(model)
        try:
            return real_export(model_dir, *args, **kwargs)  # type: ignore[arg-type]
        finally:
            model.rename(other)  # ... and the folders put back: every stamp is as it was
            aside.rename(model)

    monkeypatch.setattr(convert, "export_onnx", swapped)
    with pytest.raises(CheckpointError, match=r"model\.safetensors.*changed while"):
        f1(model)
    assert not list(Path(os.environ["RUST_BERTSCORE_CACHE"]).glob("onnx/*/model.onnx"))


@pytest.mark.parametrize("runtime", ["onnxruntime", "openvino"])
def test_int8_is_made_from_the_fp32_graph_of_its_own_key(
    model: Path, monkeypatch: pytest.MonkeyPatch, runtime: str
) -> None:
    """The other checkpoint's fp32 graph is cached; between the int8 entry's key and the fp32
    graph's, the folders are swapped and put back: the int8 graph must not be made from it."""
    if runtime == "openvino":
        pytest.importorskip("openvino")
        pytest.importorskip("nncf")
    other = other_checkpoint(model)
    aside = model.parent / "aside"
    kwargs = {"runtime": runtime, "precision": "int8", "num_layers": 2}
    rb.score(CANDS, REFS, model_type=str(other), runtime=runtime, num_layers=2)  # fp32 cached
    module = graph_cache if runtime == "onnxruntime" else openvino_graphs
    real_key = module.weights_key_and_stamp
    calls: list[int] = []

    def swap_for_the_second(model_dir: Path) -> tuple[str, list[list]]:
        calls.append(1)
        if len(calls) != 2:
            return real_key(model_dir)
        model.rename(aside)
        other.rename(model)
        try:
            return real_key(model_dir)
        finally:
            model.rename(other)
            aside.rename(model)

    monkeypatch.setattr(module, "weights_key_and_stamp", swap_for_the_second)
    RUNTIMES.clear()
    with pytest.raises(CheckpointError, match=r"changed while|fp32 graph is another's"):
        rb.score(CANDS, REFS, model_type=str(model), **kwargs)
