"""``make bench-op-shares`` (``benches.op_shares``) on a few short texts: the operator profiles
are read from the runtimes' own profilers and add up to the encoder, and the bound follows from
the GEMM FLOPs and the ceiling it is given. Speed itself is not measured here."""

from __future__ import annotations

import importlib.util

import pytest

from benches import op_shares
from rust_bertscore import BERTScorer

TEXTS = [
    "The cat sat on the mat.",
    "A quick brown fox jumps over the lazy dog near the river bank.",
    "Rain.",
    "Scores are computed from token embeddings of both sentences.",
]


def test_onnx_runtime_profile_names_every_operator_and_sums_to_the_encoder() -> None:
    r = op_shares.measure_path("ort-fp32", TEXTS, TEXTS[::-1], 1, {"numpy-f32": 1e9})
    assert isinstance(r, dict)
    assert "MatMul" in r["ops"] and "LayerNormalization" in r["ops"]
    assert all(seconds >= 0 for seconds in r["ops"].values())
    assert r["encoder_s"] == pytest.approx(sum(r["ops"].values()))
    assert 0 < r["gemm_s"] < r["encoder_s"]
    # The fused Attention operator holds Q, K and V: the GEMM rate counts MatMul's FLOPs only.
    assert r["qkv_in_attention"] == ("Attention" in r["ops"])
    # A ceiling of 1e9 GFLOP/s makes the GEMMs free: the bound is the time outside operators.
    assert r["bound_s"] == pytest.approx(max(0.0, r["pass_s"] - r["encoder_s"]), abs=1e-6)


def test_gemm_flops_count_every_padded_token_of_every_layer() -> None:
    scorer = BERTScorer(cache_bytes=0)
    feeds = op_shares.record_feeds(scorer, TEXTS, TEXTS)[0]
    tokens = sum(feed["input_ids"].size for feed in feeds)
    h, f = 384, 1536  # all-MiniLM-L6-v2
    assert op_shares.gemm_flops(scorer, feeds) == 6 * 2 * (4 * h * h + 2 * h * f) * tokens
    # Both texts of each pair are encoded once: every text is in some batch.
    assert sum(feed["input_ids"].shape[0] for feed in feeds) >= len(set(TEXTS))


def test_without_a_ceiling_there_is_no_bound() -> None:
    r = op_shares.measure_path("ort-fp32", TEXTS, TEXTS, 1, {})
    assert isinstance(r, dict) and "bound_s" not in r and r["ceiling_gflops"] is None


@pytest.mark.skipif(importlib.util.find_spec("openvino") is None, reason="needs openvino")
def test_openvino_profile_names_the_kernel_of_each_operator() -> None:
    r = op_shares.measure_path("ov-fp32", TEXTS, TEXTS[::-1], 1, {})
    assert isinstance(r, dict)
    assert any(op.startswith("FullyConnected / ") for op in r["ops"])
    assert r["gemm_s"] > 0 and not r["qkv_in_attention"]


def test_unknown_path_is_refused_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        op_shares.main(["--paths", "ort-fp64", "--no-gemm", "--pairs", "2"])
    err = capsys.readouterr().err
    assert "ort-fp64" in err and "ort-fp32" in err
