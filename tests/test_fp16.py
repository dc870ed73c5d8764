"""precision="fp16": the float16 graph's structure, its numerics on the CPU provider against
fp32, its cache entry, export, and every tiny family running finite."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

import rust_bertscore as rb
from conftest import MORE, TINY, wmt_pairs
from rust_bertscore import convert
from rust_bertscore.models import graph_cache
from rust_bertscore.models.runtime import load_runtime

CANDS, REFS = wmt_pairs()

FP16_MAX_DF = 1e-3
"""Issue 28's bound on fp16 against fp32 (all-MiniLM-L6-v2, CPU provider): max |dF| <= 1e-3,
mean <= 1e-4. Measured on the 3,003 WMT pairs: mean 1.4e-5, max 1.1e-4 (docs/performance.md);
the test's 200 pairs are a subset, so the issue's bound holds for them with the measured maximum
nine times inside it."""

FP16_MEAN_DF = 1e-4


def test_fp16_close_to_fp32_on_the_default_model(minilm_dir: Path) -> None:
    fp32 = rb.BERTScorer(model_type=str(minilm_dir), cache_bytes=0, device="cpu")
    fp16 = rb.BERTScorer(model_type=str(minilm_dir), cache_bytes=0, precision="fp16")
    F32 = fp32.score(CANDS, REFS)[2].astype(np.float64)
    F16 = fp16.score(CANDS, REFS)[2].astype(np.float64)
    d = np.abs(F16 - F32)
    assert d.max() <= FP16_MAX_DF and d.mean() <= FP16_MEAN_DF
    assert d.max() > 0  # it is another graph, not the fp32 one under another name
    assert fp16.precision == "fp16" and fp16.hash == fp32.hash + "_fp16"


def test_fp16_graph_keeps_norms_and_softmax_in_float32(minilm_dir: Path) -> None:
    model = convert.to_fp16(convert.build_model(minilm_dir, 2, fused=True))
    graph = model.graph
    kinds = {t.name: t.data_type for t in graph.initializer}
    made = {o: n for n in graph.node for o in n.output}
    half, single = onnx.TensorProto.FLOAT16, onnx.TensorProto.FLOAT
    matmuls = [n for n in graph.node if n.op_type == "MatMul"]
    assert matmuls and all(kinds[n.input[1]] == half for n in matmuls)
    attention = [n for n in graph.node if n.op_type == "Attention"]
    assert attention and all(kinds[n.input[1]] == half for n in attention)
    for norm in (n for n in graph.node if n.op_type == "LayerNormalization"):
        assert kinds[norm.input[1]] == kinds[norm.input[2]] == single
        source = made.get(norm.input[0])
        # Fed by a float32 residual sum (an Add of the float32 stream and a Cast-up projection)
        # or the embeddings' float32 sum.
        assert source is not None and source.op_type == "Add"
        assert any(made.get(x) is not None and made[x].op_type == "Cast" for x in source.input)
    assert [i.type.tensor_type.elem_type for i in graph.input] == [onnx.TensorProto.INT64] * 2
    assert graph.output[0].type.tensor_type.elem_type == single


def test_decomposed_norm_and_softmax_stay_float32() -> None:
    from onnx import helper

    # x -> MatMul(w) -> Softmax -> ReduceMean/Pow/Sqrt/Div norm -> MatMul -> out
    w = onnx.numpy_helper.from_array(np.eye(4, dtype=np.float32), "w")
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"]),
        helper.make_node("Softmax", ["h"], ["p"], axis=-1),
        helper.make_node("ReduceMean", ["p"], ["mu"], axes=[-1]),
        helper.make_node("Sub", ["p", "mu"], ["c"]),
        helper.make_node("Pow", ["c", "two"], ["sq"]),
        helper.make_node("ReduceMean", ["sq"], ["var"], axes=[-1]),
        helper.make_node("Sqrt", ["var"], ["sd"]),
        helper.make_node("Div", ["c", "sd"], ["n"]),
        helper.make_node("MatMul", ["n", "w"], ["y"]),
    ]
    two = onnx.numpy_helper.from_array(np.array(2.0, np.float32), "two")
    vi = helper.make_tensor_value_info
    graph = helper.make_graph(
        nodes,
        "g",
        [vi("x", onnx.TensorProto.FLOAT, [2, 4])],
        [vi("y", onnx.TensorProto.FLOAT, [2, 4])],
        [w, two],
    )
    model = convert.to_fp16(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    made = {o: n for n in model.graph.node for o in n.output}
    # The Softmax and the norm's statistics read float32: a Cast up from the first MatMul.
    softmax = next(n for n in model.graph.node if n.op_type == "Softmax")
    assert made[softmax.input[0]].op_type == "Cast"
    assert made[softmax.input[0]].attribute[0].i == onnx.TensorProto.FLOAT
    for op in ("Sub", "Pow", "Sqrt", "Div"):
        node = next(n for n in model.graph.node if n.op_type == op)
        assert all(made.get(x) is None or made[x].op_type != "Cast" for x in node.input), op
    assert {t.name: t.data_type for t in model.graph.initializer}["two"] == onnx.TensorProto.FLOAT
    import onnxruntime as ort

    x = np.random.default_rng(0).normal(size=(2, 4)).astype(np.float32)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (y,) = session.run(None, {"x": x})
    p = np.exp(x) / np.exp(x).sum(-1, keepdims=True)
    c = p - p.mean(-1, keepdims=True)
    want = c / np.sqrt((c**2).mean(-1, keepdims=True))
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, want, atol=5e-3)  # float16 inputs to the MatMuls: ~1e-3


def test_fp16_graph_is_cached_under_its_own_key() -> None:
    bert = str(TINY / "bert")
    runtime = load_runtime(bert, None, precision="fp16")
    fp32 = load_runtime(bert, None)
    graph = runtime.encoder.graph
    assert graph is not None and graph != fp32.encoder.graph
    meta = json.loads((graph.parent / "manifest.json").read_text(encoding="utf-8"))
    assert meta["precision"] == "fp16" and convert.FP16_POLICY in meta["policy"]
    assert graph_cache.precision_policy("fp16") != graph_cache.precision_policy("int8")
    assert graph.stat().st_size < 0.7 * fp32.encoder.graph.stat().st_size
    # tf32 is no graph of its own: the fp32 entry.
    assert load_runtime(bert, None, precision="tf32").encoder.graph == fp32.encoder.graph
    # In memory (a cache that cannot be written): the same graph's bytes.
    files = runtime.files
    held = graph_cache.graph_in_memory(files, runtime.num_layers, precision="fp16")
    assert onnx.load_from_string(held).graph.output[0].name == "hidden_state"


FAMILIES = sorted(p.name for p in TINY.iterdir() if (p / "config.json").is_file())


@pytest.mark.parametrize(
    "model",
    [*(str(TINY / f) for f in FAMILIES), str(MORE / "squeezebert"), str(MORE / "longformer")],
)
def test_fp16_runs_every_family(model: str) -> None:
    fp16 = rb.BERTScorer(model_type=model, precision="fp16", cache_bytes=0)
    fp32 = rb.BERTScorer(model_type=model, cache_bytes=0)
    F16 = fp16.score(CANDS[:24], REFS[:24])[2]
    F32 = fp32.score(CANDS[:24], REFS[:24])[2]
    assert np.isfinite(F16).all()
    # Tiny random checkpoints (weights drawn with std up to 0.4) are far from trained ones:
    # this says the graph is right, not how close fp16 is (the test above does that).
    assert np.abs(F16 - F32).max() < 0.05


def test_export_fp16(tmp_path: Path) -> None:
    from rust_bertscore.models.export import export_model

    out = tmp_path / "bert" / "model.onnx"
    info = export_model(str(TINY / "bert"), out)
    assert info.precision == "fp32"
    info16 = export_model(str(TINY / "bert"), tmp_path / "bert16" / "model.onnx", precision="fp16")
    assert info16.precision == "fp16"
    scorer = rb.BERTScorer(model_type=str(tmp_path / "bert16" / "model.onnx"), cache_bytes=0)
    assert scorer.precision == "fp16" and scorer.hash.endswith("_fp16")
    tf32 = rb.BERTScorer(model_type=str(out), precision="tf32", cache_bytes=0)
    assert tf32.precision == "tf32"  # an fp32 export may run with TF32
