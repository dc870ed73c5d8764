"""The fused-attention graph (one com.microsoft.Attention node per layer) computes what the
standard graph computes; the graph cache stores the fused graph under the converter's version."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from conftest import FAMILIES, TINY
from rust_bertscore import convert
from rust_bertscore.models import graph_cache as model_cache
from rust_bertscore.models.runtime import load_runtime


def _session(path: Path) -> ort.InferenceSession:
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def _feeds(pad_id: int, lengths: list[int], seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    mask = (np.arange(max(lengths)) < np.asarray(lengths)[:, None]).astype(np.int64)
    ids = np.where(mask == 1, rng.integers(5, 60, size=mask.shape), pad_id)
    return {"input_ids": ids.astype(np.int64), "attention_mask": mask}


# ---- the fused-attention graph ------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
def test_fused_attention_graph_matches_standard_graph(family: str, tmp_path: Path) -> None:
    plain = convert.export_onnx(TINY / family, tmp_path / "plain.onnx", None, all_layers=True)
    fused = convert.export_onnx(
        TINY / family, tmp_path / "fused.onnx", None, all_layers=True, fused=True
    )
    ops = {n.op_type for n in onnx.load(str(fused)).graph.node}
    assert "Attention" in ops and "Softmax" not in ops
    assert "Attention" not in {n.op_type for n in onnx.load(str(plain)).graph.node}
    pad = int(convert.load_config(TINY / family).get("pad_token_id") or 0)
    feeds = _feeds(pad, [9, 3, 6, 1])
    want = _session(plain).run(None, feeds)[0]
    got = _session(fused).run(None, feeds)[0]
    real = feeds["attention_mask"].astype(bool)
    assert np.max(np.abs(got[:, real] - want[:, real])) < 1e-5


def test_cached_graph_is_fused_and_keyed_by_version(minilm_dir: Path) -> None:
    runtime = load_runtime(str(minilm_dir), 6)
    graph = Path(runtime.encoder.session._model_path)
    manifest = json.loads((graph.parent / "manifest.json").read_text())
    assert manifest["converter_version"] == convert.CONVERTER_VERSION
    assert manifest["policy"] == model_cache.GRAPH_VARIANT
    assert "Attention" in {n.op_type for n in onnx.load(str(graph)).graph.node}
