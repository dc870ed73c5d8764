"""Every graph file from outside is hostile (issue 57).

- The converted-graph cache (``models.graph_cache``) and OpenVINO's (``models.openvino_graphs``)
  use an entry only when the SHA-256 its manifest records matches the file: a ``model.onnx``
  replaced by another graph of the same size is rebuilt, by a new process too, and a manifest
  written before digests were recorded is rebuilt once.
- A foreign ``.onnx`` passed as ``model_type`` is checked before ONNX Runtime opens it
  (``models.graph_check``): control flow, custom operators, and inputs or outputs of another
  type or rank are a ``ModelLoadError`` naming the file, never a hang or an untyped error; the
  graphs ``rust-bertscore export`` writes still load.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import rust_bertscore as rb
from conftest import MORE, REFERENCE, TINY
from rust_bertscore import ModelLoadError, convert
from rust_bertscore.errors import InputValueError
from rust_bertscore.models.export import export_model
from rust_bertscore.models.graph_check import CONVERTER_OPS, check_graph
from rust_bertscore.support import digests
from rust_bertscore.support.digests import file_sha256, sha256s_match

CANDS = ["the coffee was cold", "she took the road"]
REFS = ["the coffee is hot", "she would take the road"]

SCORE = """
import json, sys
import rust_bertscore as rb
P, R, F = rb.score(
    json.loads(sys.argv[2]), json.loads(sys.argv[3]), model_type=sys.argv[1], num_layers=3,
    runtime="onnxruntime",
)
print(json.dumps([P.tolist(), R.tolist(), F.tolist()]))
"""


@pytest.fixture
def model(tiny_bert_copy: Path) -> Path:
    return tiny_bert_copy


def score_in_new_process(model: Path, cache: Path) -> list:
    """P, R, F of ``model`` at layer 3, scored by a new Python process sharing ``cache``."""
    env = dict(os.environ, RUST_BERTSCORE_CACHE=str(cache))
    done = subprocess.run(
        [sys.executable, "-c", SCORE, str(model), json.dumps(CANDS), json.dumps(REFS)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def score_here(model: Path, **kwargs: object) -> list:
    rb.clear_cache()
    out = rb.score(CANDS, REFS, model_type=str(model), num_layers=3, **kwargs)
    return [a.tolist() for a in out]


def padded_to(model: onnx.ModelProto, size: int) -> bytes:
    """``model`` serialised to exactly ``size`` bytes (its ``doc_string`` padded), still a valid
    graph: what an attacker puts where a cache checks the size only."""
    for _ in range(16):
        data = model.SerializeToString()
        gap = size - len(data)
        if gap == 0:
            return data
        model.doc_string = "x" * max(0, len(model.doc_string) + gap)
    raise AssertionError(f"could not pad the graph to {size} bytes")


def swap_graph(graph: Path, replacement: onnx.ModelProto) -> bytes:
    """Replace ``graph`` by ``replacement`` padded to its size (a new file: os.replace)."""
    data = padded_to(replacement, graph.stat().st_size)
    assert len(data) == graph.stat().st_size
    fake = graph.with_name("fake.onnx")
    fake.write_bytes(data)
    os.replace(fake, graph)
    return data


def only(pattern: str, cache: Path) -> Path:
    found = sorted(cache.glob(pattern))
    assert len(found) == 1, found
    return found[0]


# -- the converted-graph cache ----------------------------------------------------------------


def test_same_size_graph_swapped_in_cache_is_rebuilt_by_a_new_process(
    model: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    want = score_in_new_process(model, cache)
    graph = only("onnx/*/model.onnx", cache)
    # The graph of layer 1 of the same model, padded to the size of the cached layer-3 graph:
    # what a size check lets through, with other numbers.
    other = convert.build_model(model, 1, fused=True)
    swapped = swap_graph(graph, other)
    assert score_in_new_process(model, tmp_path / "clean-cache") == want  # a clean run
    layer1 = rb.score(CANDS, REFS, model_type=str(model), num_layers=1, runtime="onnxruntime")
    assert not np.allclose(layer1[2].tolist(), want[2])  # the swapped graph scores otherwise

    assert score_in_new_process(model, cache) == want
    rebuilt = graph.read_bytes()
    assert rebuilt != swapped
    manifest = json.loads((graph.parent / "manifest.json").read_text())
    assert manifest["sha256"]["model.onnx"] == hashlib.sha256(rebuilt).hexdigest()


def test_graph_swapped_in_this_process_is_rebuilt(model: Path, tmp_path: Path) -> None:
    want = score_here(model, runtime="onnxruntime")
    graph = only("onnx/*/model.onnx", tmp_path / "cache")
    swap_graph(graph, convert.build_model(model, 2, fused=True))
    assert score_here(model, runtime="onnxruntime") == want


def test_manifest_without_digest_is_rebuilt_once(model: Path, tmp_path: Path) -> None:
    want = score_here(model, runtime="onnxruntime")
    graph = only("onnx/*/model.onnx", tmp_path / "cache")
    manifest = graph.parent / "manifest.json"
    old = json.loads(manifest.read_text())
    del old["sha256"]  # as written before digests were recorded
    manifest.write_text(json.dumps(old))
    before = graph.stat()
    assert score_in_new_process(model, tmp_path / "cache") == want
    after = graph.stat()
    assert (after.st_ino, after.st_mtime_ns) != (before.st_ino, before.st_mtime_ns)  # rebuilt
    new = json.loads(manifest.read_text())
    assert new["sha256"] == {"model.onnx": hashlib.sha256(graph.read_bytes()).hexdigest()}
    assert score_in_new_process(model, tmp_path / "cache") == want
    assert graph.stat().st_ino == after.st_ino  # used as it is: rebuilt once


def test_file_sha256_hashes_once_per_file_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []
    real = hashlib.sha256

    def counting(*args: bytes) -> object:
        calls.append(1)
        return real(*args)

    path = tmp_path / "model.onnx"
    path.write_bytes(b"a" * 1000)
    monkeypatch.setattr(digests.hashlib, "sha256", counting)
    first = file_sha256(path)
    assert file_sha256(path) == first and len(calls) == 1  # memoised in this process
    replacement = tmp_path / "new.onnx"
    replacement.write_bytes(b"b" * 1000)  # the same size
    os.replace(replacement, path)
    assert file_sha256(path) == real(b"b" * 1000).hexdigest() and len(calls) == 2


def test_fifo_in_place_of_a_cached_graph_is_a_miss(tmp_path: Path) -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    fifo = tmp_path / "model.onnx"
    os.mkfifo(fifo)
    with pytest.raises(InputValueError, match="a FIFO"):
        file_sha256(fifo)  # refused at once, not waited on
    assert not sha256s_match([fifo], {"model.onnx": "0" * 64})


def test_openvino_graph_swapped_in_cache_is_rebuilt(model: Path, tmp_path: Path) -> None:
    pytest.importorskip("openvino")
    want = score_here(model, runtime="openvino")
    graph = only("openvino/*/model.onnx", tmp_path / "cache")
    swapped = swap_graph(graph, convert.build_model(model, 1, fused=False))
    assert score_here(model, runtime="openvino") == want
    assert graph.read_bytes() != swapped
    manifest = json.loads((graph.parent / "manifest.json").read_text())
    assert manifest["sha256"] == {"model.onnx": hashlib.sha256(graph.read_bytes()).hexdigest()}
    del manifest["sha256"]  # a manifest written before digests were recorded: rebuilt
    (graph.parent / "manifest.json").write_text(json.dumps(manifest))
    before = graph.stat().st_ino
    assert score_here(model, runtime="openvino") == want
    assert graph.stat().st_ino != before


# -- foreign graphs ---------------------------------------------------------------------------


def _io(ids_type: int = TensorProto.INT64) -> list:
    return [
        helper.make_tensor_value_info("input_ids", ids_type, ["batch", "seq"]),
        helper.make_tensor_value_info("attention_mask", ids_type, ["batch", "seq"]),
    ]


def _hidden(out: str = "h", to: int = TensorProto.FLOAT) -> list:
    """Nodes that make a (batch, seq, 1) tensor ``out`` of the token ids."""
    return [
        helper.make_node("Unsqueeze", ["input_ids", "axis2"], ["u"]),
        helper.make_node("Cast", ["u"], [out], to=to),
    ]


AXIS2 = helper.make_tensor("axis2", TensorProto.INT64, [1], [2])


def _model(
    nodes: list,
    output: onnx.ValueInfoProto,
    inits: list,
    ids_type: int = TensorProto.INT64,
    domains: tuple[str, ...] = (),
) -> bytes:
    graph = helper.make_graph(nodes, "hostile", _io(ids_type), [output], [AXIS2, *inits])
    opsets = [helper.make_opsetid(domain, 17 if not domain else 1) for domain in ("", *domains)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=8).SerializeToString()


def _out(rank: int, kind: int = TensorProto.FLOAT, name: str = "hidden_state") -> Any:
    return helper.make_tensor_value_info(name, kind, ["batch", "seq", 1][:rank])


def hostile_graphs() -> dict[str, tuple[bytes, str]]:
    """Each hostile graph and what its error says. Each would load in ONNX Runtime (or fail
    there only later) without the check."""
    true = helper.make_tensor("yes", TensorProto.BOOL, [], [True])
    trips = helper.make_tensor("trips", TensorProto.INT64, [], [2**62])
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Identity", ["v_in"], ["v_out"]),
        ],
        "forever",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_in", TensorProto.FLOAT, None),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_out", TensorProto.FLOAT, None),
        ],
    )
    loop = helper.make_node("Loop", ["trips", "yes", "h"], ["hidden_state"], body=body)

    def branch(name: str) -> onnx.GraphProto:
        node = helper.make_node("Identity", ["h"], [name])
        return helper.make_graph(
            [node], name, [], [helper.make_tensor_value_info(name, TensorProto.FLOAT, None)]
        )

    if_node = helper.make_node(
        "If", ["yes"], ["hidden_state"], then_branch=branch("a"), else_branch=branch("b")
    )
    evil = helper.make_node("Evil", ["h"], ["hidden_state"], domain="evil.ops")
    identity = helper.make_node("Identity", ["h"], ["hidden_state"])
    far = helper.make_tensor("w", TensorProto.FLOAT, [1], [0.0])
    far.ClearField("float_data")
    far.data_location = TensorProto.EXTERNAL
    far.external_data.add(key="location", value="../../../../etc/passwd")
    add = helper.make_node("Add", ["h", "w"], ["hidden_state"])
    flat = helper.make_node("Cast", ["input_ids"], ["hidden_state"], to=TensorProto.FLOAT)
    return {
        "if": (_model([*_hidden(), if_node], _out(3), [true]), "subgraph"),
        "custom-domain": (
            _model([*_hidden(), evil], _out(3), [], domains=("evil.ops",)),
            "evil.ops",
        ),
        "output-rank-2": (_model([flat], _out(2), []), "rank 2"),
        "output-float64": (
            _model(_hidden("hidden_state", TensorProto.DOUBLE), _out(3, TensorProto.DOUBLE), []),
            "double",
        ),
        "inputs-int32": (
            _model([*_hidden(), identity], _out(3), [], ids_type=TensorProto.INT32),
            "int32",
        ),
        "clean-identity": (_model([*_hidden(), identity], _out(3), []), ""),  # passes the check
        "external-data-elsewhere": (_model([*_hidden(), add], _out(3), [far]), "beside"),
        "loop": (_model([*_hidden(), loop], _out(3), [true, trips]), "Loop"),  # last: hangs
    }


CASES = [name for name in hostile_graphs() if name != "clean-identity"]

RUN_ALL = """
import json, sys
import rust_bertscore as rb
from rust_bertscore import ModelLoadError
for path in sys.argv[1:]:
    try:
        rb.score(["the cat sat"], ["a cat sat"], model_type=path, num_layers=3,
                 runtime="onnxruntime")
        out = {"path": path, "error": None}
    except Exception as e:
        out = {"path": path, "error": type(e).__name__, "message": str(e),
               "load_error": isinstance(e, ModelLoadError)}
    print(json.dumps(out), flush=True)
"""


@pytest.fixture(scope="module")
def hostile_results() -> Iterator[dict[str, dict]]:
    """What scoring each hostile graph gives, in one new process guarded by a timeout (a graph
    that hangs is reported missing)."""
    with tempfile.TemporaryDirectory(prefix="rbs-hostile-") as tmp:
        folder = Path(tmp) / "graphs"
        shutil.copytree(
            TINY / "bert", folder, ignore=shutil.ignore_patterns("*.npz", "*.safetensors")
        )
        paths = []
        for name in CASES:
            path = folder / f"{name}.onnx"
            path.write_bytes(hostile_graphs()[name][0])
            paths.append(str(path))
        env = dict(os.environ, RUST_BERTSCORE_CACHE=str(Path(tmp) / "cache"))
        try:
            done = subprocess.run(
                [sys.executable, "-c", RUN_ALL, *paths],
                capture_output=True,
                text=True,
                env=env,
                timeout=180,
            )
            stdout = done.stdout
        except subprocess.TimeoutExpired as hung:
            out = hung.stdout or b""
            stdout = out.decode() if isinstance(out, bytes) else out
        results = {}
        for line in stdout.splitlines():
            if line.startswith("{"):
                found = json.loads(line)
                results[Path(found["path"]).stem] = found
        yield results


@pytest.mark.parametrize("case", CASES)
def test_hostile_graph_is_refused_naming_the_file(
    hostile_results: dict[str, dict], case: str
) -> None:
    assert case in hostile_results, f"scoring the {case} graph did not end within the timeout"
    result = hostile_results[case]
    assert result["error"] is not None, f"the {case} graph was run"
    assert result["load_error"], result
    assert f"{case}.onnx" in result["message"]
    assert hostile_graphs()[case][1] in result["message"], result["message"]


def test_check_graph_refuses_what_is_not_the_converters(tmp_path: Path) -> None:
    for name, (data, why) in hostile_graphs().items():
        path = tmp_path / f"{name}.onnx"
        path.write_bytes(data)
        if name == "clean-identity":
            check_graph(path)  # a plain Identity graph: what the converter could write
            continue
        with pytest.raises(ModelLoadError, match=why) as caught:
            check_graph(path)
        assert str(path) in str(caught.value)
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\xff" * 100)
    with pytest.raises(ModelLoadError, match="not an ONNX model"):
        check_graph(garbage)
    with pytest.raises(ModelLoadError, match="directory"):
        check_graph(tmp_path)


def test_exported_graphs_still_load(model: Path, tmp_path: Path) -> None:
    want = [a.tolist() for a in rb.score(CANDS, REFS, model_type=str(model), num_layers=2)]
    out = tmp_path / "export" / "model.onnx"
    export_model(str(model), out, 2)
    check_graph(out)
    rb.clear_cache()
    got = rb.score(CANDS, REFS, model_type=str(out), runtime="onnxruntime")
    np.testing.assert_allclose([a.tolist() for a in got], want, atol=1e-6)
    for precision in ("fp16", "int8"):
        other = tmp_path / precision / "model.onnx"
        export_model(str(model), other, 2, precision=precision)
        check_graph(other)
        rb.clear_cache()
        rb.score(CANDS, REFS, model_type=str(other), runtime="onnxruntime")


def _checkpoints() -> list[Path]:
    folders = [TINY, MORE, REFERENCE / "gte", REFERENCE / "jina", REFERENCE / "nomic"]
    return [p for f in folders for p in sorted(f.iterdir()) if (p / "config.json").is_file()]


def test_converter_ops_cover_every_graph_the_converter_writes(tmp_path: Path) -> None:
    """CONVERTER_OPS is what converting the tiny checkpoints writes (tiny/*, more_families/*,
    gte, jina, nomic; fp32 standard and fused, fp16, int8; one layer and all layers): a converter
    that adds an operator fails here."""
    seen: set[tuple[str, str]] = set()
    for checkpoint in _checkpoints():
        depth = convert.model_depth(json.loads((checkpoint / "config.json").read_text()))
        for all_layers in (False, True):
            fused = tmp_path / "fused.onnx"
            convert.export_onnx(checkpoint, fused, depth, all_layers=all_layers, fused=True)
            standard = convert.build_model(checkpoint, depth, all_layers=all_layers)
            if checkpoint.name == "jina":  # with a LoRA task's adapters merged in
                task = convert.build_model(
                    checkpoint, depth, all_layers=all_layers, task="text-matching"
                )
                seen |= {(node.domain, node.op_type) for node in task.graph.node}
            convert.convert_fp16(fused, tmp_path / "fp16.onnx")
            convert.quantize_int8(
                fused, tmp_path / "int8.onnx", activations=convert.INT8_ACTIVATIONS
            )
            for graph in (
                standard,
                onnx.load(str(fused)),
                onnx.load(str(tmp_path / "fp16.onnx")),
                onnx.load(str(tmp_path / "int8.onnx")),
            ):
                seen |= {(node.domain, node.op_type) for node in graph.graph.node}
    assert seen <= CONVERTER_OPS, sorted(seen - CONVERTER_OPS)
    assert seen == CONVERTER_OPS, sorted(CONVERTER_OPS - seen)  # no operator left over
