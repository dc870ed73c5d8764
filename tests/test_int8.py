"""int8: its accuracy bound against fp32 and which nodes its policy keeps in fp32."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx

import rust_bertscore as rb
from conftest import TINY, TINY_BERT, wmt_pairs
from rust_bertscore import convert
from rust_bertscore.models.loading import load_runtime

BERT = TINY_BERT
CANDS, REFS = wmt_pairs()


# ---- int8 ---------------------------------------------------------------------------------------


def test_int8_within_bound_of_fp32(minilm_dir: Path) -> None:
    fp32 = rb.BERTScorer(model_type=str(minilm_dir), cache_bytes=0)
    int8 = rb.BERTScorer(model_type=str(minilm_dir), cache_bytes=0, precision="int8")
    F32 = fp32.score(CANDS, REFS)[2].astype(np.float64)
    F8 = int8.score(CANDS, REFS)[2].astype(np.float64)
    # Seen on these 200 pairs: mean 0.0077, max 0.030, r 0.9987 (3,003 WMT pairs: 0.0076).
    assert np.mean(np.abs(F8 - F32)) <= 0.01
    assert np.corrcoef(F8, F32)[0, 1] > 0.995
    assert int8.precision == "int8" and int8.hash.endswith("_int8")


def test_int8_graph_keeps_policy_nodes_in_fp32(minilm_dir: Path) -> None:
    int8 = load_runtime(str(minilm_dir), 6, precision="int8")
    fp32 = load_runtime(str(minilm_dir), 6)
    path8 = Path(int8.encoder.session._model_path)
    assert path8.parent != Path(fp32.encoder.session._model_path).parent  # its own cache entry
    manifest = json.loads((path8.parent / "manifest.json").read_text())
    assert manifest["precision"] == "int8"
    assert convert.INT8_POLICY in manifest["policy"]
    nodes = {n.name: n.op_type for n in onnx.load(str(path8)).graph.node}
    keep = ["encoder.layer.0.output.dense/MatMul", "encoder.layer.1.output.dense/MatMul"]
    assert all(nodes[name] == "MatMul" for name in keep)
    assert "encoder.layer.2.output.dense/MatMul" not in nodes  # quantised
    assert "QAttention" in nodes.values()


def test_int8_fp32_nodes_per_family(tmp_path: Path) -> None:
    for family, name in (
        ("bert", "encoder.layer.{i}.output.dense/MatMul"),
        ("distilbert", "transformer.layer.{i}.ffn.lin2/MatMul"),
    ):
        model = convert.build_model(TINY / family, 3, fused=True)
        assert convert.int8_fp32_nodes(model) == [name.format(i=0), name.format(i=1)]
        assert convert.int8_fp32_nodes(model, layers=0) == []
