"""The recommendation ``make bench-cpu-precisions`` prints for its host
(``benches.cpu_precisions.recommend``), on fixed figures: the hosts of docs/performance.md and
the cases it must tell apart (issue 48). The bench itself is not run here."""

from __future__ import annotations

from benches.cpu_precisions import recommend

ZEN5 = {"avx2": True, "avx512f": True, "avx512_vnni": True, "avx512_bf16": True}
"""The AMD EPYC (Zen 5) of issue 48: AVX512-BF16 and VNNI, no AMX."""
XEON_207 = {**ZEN5, "avx_vnni": True}
"""docs/performance.md's Xeon (model 207) as its guest exposed it: no AMX either."""


def line(lines: list[str], precision: str) -> str:
    (found,) = [text for text in lines if text.startswith(f"{precision}:")]
    return found


def test_bf16_is_recommended_where_it_measured_faster() -> None:
    # Issue 48's EPYC: bf16 about 1.8x ONNX Runtime fp32.
    rates = {"ort-fp32": 100.0, "ov-fp32": 104.0, "ov-bf16": 180.0, "ov-int8": 260.0}
    dF = {"ov-bf16": {"mean": 1.7e-4}, "ov-int8": {"mean": 0.0025}, "ov-fp32": {"mean": 4e-8}}
    lines = recommend(rates, dF, ZEN5)
    bf16 = line(lines, "bf16")
    assert bf16.startswith("bf16: recommended") and "1.80x" in bf16
    assert "amx_bf16 no, avx512_bf16 yes" in bf16 and 'runtime="openvino"' in bf16
    assert line(lines, "int8").startswith("int8: recommended") and "2.60x" in line(lines, "int8")
    assert lines[0].startswith("fp32:")


def test_bf16_is_not_recommended_where_it_measured_slower() -> None:
    # docs/performance.md's Xeon (model 207): bf16 0.68x ONNX Runtime fp32 on MiniLM.
    rates = {"ort-fp32": 187.0, "ort-int8": 283.2, "ov-bf16": 126.6, "ov-int8": 507.8}
    dF = {"ort-int8": {"mean": 0.0027}, "ov-bf16": {"mean": 1.7e-4}, "ov-int8": {"mean": 0.0025}}
    lines = recommend(rates, dF, XEON_207)
    assert line(lines, "bf16").startswith("bf16: not recommended (slower than fp32 here)")
    assert "0.68x" in line(lines, "bf16")
    int8 = line(lines, "int8")  # the faster of the two int8 paths: OpenVINO's
    assert int8.startswith("int8: recommended") and "2.72x" in int8 and "openvino" in int8


def test_accuracy_and_missing_paths() -> None:
    rates = {"ort-fp32": 100.0, "ort-int8": 300.0}
    lines = recommend(rates, {"ort-int8": {"mean": 0.01}}, {})
    assert line(lines, "int8").startswith("int8: not recommended (mean |dF| above 0.003)")
    assert (
        line(lines, "bf16")
        == "bf16: no instruction for it on this CPU (amx_bf16 no, avx512_bf16 no)"
    )
    assert line(recommend(rates, {}, {"amx_bf16": True}), "bf16").startswith("bf16: not measured")
    assert recommend({"ov-int8": 5.0}, {}, ZEN5)[-1].startswith("no ONNX Runtime fp32 figure")
