"""``precision="fast"`` and the slowdown warning (issue 61): fixed figures in, the choice out;
the candidates of a host from its flags (a CPU without VNNI gets no int8, whatever OpenVINO's
plugin reports); the warning for int8 there and ``runtime="auto"`` keeping ONNX Runtime; a real
measurement in a process without OpenVINO, cached per host and model and verified by content."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from conftest import TINY
from rust_bertscore import BERTScorer
from rust_bertscore.errors import RustBertScoreWarning
from rust_bertscore.models import choices, fast_path
from rust_bertscore.models.fast_path import (
    FastChoice,
    Host,
    PathFigure,
    candidate_paths,
    choose_fast,
    fast_choice,
    parse_cpuinfo,
)
from rust_bertscore.scoring import fast_measure, scorer

BERT = str(TINY / "bert")
ZEN3 = Host("AMD EPYC 7B13 64-Core Processor", frozenset({"avx2", "fma", "avx"}), 2)
"""Issue 61's AVX2 host: no VNNI, AVX-512 or BF16."""
XEON = Host("Intel(R) Xeon(R) Processor", frozenset({"avx512_vnni", "amx_int8", "amx_bf16"}), 2)


def figure(path: str, rate: float, dF: float) -> PathFigure:
    runtime, precision = path.split("/")
    return PathFigure(runtime, precision, rate, dF)


FP32 = figure("onnxruntime/fp32", 100.0, 0.0)


@pytest.mark.parametrize(
    ("figures", "chosen"),
    [
        # Zen 3: int8 measured slower than fp32 on both runtimes -> fp32
        ([FP32, figure("onnxruntime/int8", 76.0, 0.0021), figure("openvino/int8", 79.0, 0.0016)],
         "onnxruntime/fp32"),
        # VNNI host: ONNX Runtime's int8 too far, OpenVINO's close and fast
        ([FP32, figure("onnxruntime/int8", 210.0, 0.0027), figure("openvino/int8", 360.0, 0.0016)],
         "openvino/int8"),
        # AMX: bf16 faster and closer than int8
        ([FP32, figure("openvino/int8", 360.0, 0.0016), figure("openvino/bf16", 530.0, 2.4e-4)],
         "openvino/bf16"),
        # within the noise margin: fp32 (bert_score's numbers) stays
        ([FP32, figure("openvino/bf16", 105.0, 1e-4)], "onnxruntime/fp32"),
        # at the bound, just past the margin: chosen
        ([FP32, figure("onnxruntime/int8", 110.5, 0.002)], "onnxruntime/int8"),
    ],
)  # fmt: skip
def test_the_choice_from_fixed_figures(figures: list[PathFigure], chosen: str) -> None:
    choice = choose_fast(figures, host="h")
    assert f"{choice.runtime}/{choice.precision}" == chosen
    assert choice.explain()[-1].startswith(f"chosen: {chosen} (")


def test_the_choice_needs_fp32_first() -> None:
    with pytest.raises(ValueError, match="fp32 figure first"):
        choose_fast([figure("openvino/bf16", 500.0, 0.0)])


def test_the_candidates_follow_the_flags_not_the_plugin() -> None:
    # OpenVINO's plugin reported INT8 on the Zen 3 host and auto picked its int8 (0.79x fp32)
    assert candidate_paths(ZEN3, ["FP32", "INT8"]) == [("onnxruntime", "fp32")]
    assert candidate_paths(XEON, None) == [("onnxruntime", "fp32"), ("onnxruntime", "int8")]
    assert ("openvino", "bf16") in candidate_paths(XEON, ["FP32", "INT8", "BF16"])
    no_bf16 = Host("x", frozenset({"avx512_vnni"}), 2)
    assert ("openvino", "bf16") not in candidate_paths(no_bf16, ["FP32", "INT8", "BF16"])


def test_the_host_from_cpuinfo() -> None:
    text = (
        "processor\t: 0\nmodel name\t: AMD EPYC 7B13\nflags\t\t: fpu avx2 fma\n\nprocessor\t: 1\n"
    )
    host = parse_cpuinfo(text, 2)
    assert host == Host("AMD EPYC 7B13", frozenset({"fpu", "avx2", "fma"}), 2)
    assert host.key() == "AMD EPYC 7B13||2"
    assert parse_cpuinfo("", 1).missing("bf16") == ("amx_bf16", "avx512_bf16")


@pytest.fixture
def on_zen3(monkeypatch: pytest.MonkeyPatch) -> None:
    for module in (fast_path, choices, scorer):
        monkeypatch.setattr(module, "read_host", lambda: ZEN3)


@pytest.mark.usefixtures("on_zen3")
def test_int8_without_vnni_warns_and_auto_keeps_onnxruntime() -> None:
    assert choices.auto_backend("int8", "cpu", openvino_problem=None) == "onnxruntime"
    with pytest.warns(RustBertScoreWarning, match=r"int8.*avx512_vnni.*0\.76x of fp32"):
        s = BERTScorer(model_type=BERT, num_layers=2, precision="int8")
    assert s.runtime.backend == "onnxruntime"
    with warnings.catch_warnings():
        warnings.simplefilter("error", RustBertScoreWarning)
        BERTScorer(model_type=BERT, num_layers=2)  # fp32: nothing to say


def test_auto_still_picks_openvino_int8_where_vnni_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(choices, "read_host", lambda: XEON)
    assert choices.auto_backend("int8", "cpu", openvino_problem=None) == "openvino"


def test_the_cache_is_verified_by_content(tmp_path: Path) -> None:
    calls: list[int] = []

    def measure(paths):
        calls.append(1)
        return [FP32, figure("onnxruntime/int8", 150.0, 0.001)]

    key = {"host": "h", "model": "m"}
    first = fast_choice(key, [], measure, tmp_path)
    assert (first.precision, len(calls)) == ("int8", 1)
    assert fast_choice(key, [], measure, tmp_path) == first and len(calls) == 1
    (record,) = tmp_path.iterdir()
    data = json.loads(record.read_text())
    data["choice"]["precision"] = "bf16"  # edited: the digest no longer matches
    record.write_text(json.dumps(data))
    assert fast_choice(key, [], measure, tmp_path).precision == "int8" and len(calls) == 2
    record.write_text("{not json")
    assert fast_choice(key, [], measure, tmp_path).precision == "int8" and len(calls) == 3
    other = fast_choice({"host": "other", "model": "m"}, [], measure, tmp_path)
    assert other.precision == "int8" and len(calls) == 4  # another host measures again
    assert FastChoice.from_dict(first.to_dict()) == first


def test_fast_in_a_process_without_openvino(tmp_path: Path) -> None:
    """A real measurement on the tiny BERT with OpenVINO blocked: ONNX Runtime's paths only,
    the choice cached (a second process measures nothing), the signature naming what ran."""
    program = f"""
import sys, json
sys.modules["openvino"] = None  # not installed, as far as this process can tell
from rust_bertscore import BERTScorer
from rust_bertscore.scoring import fast_measure
if sys.argv[1] == "again":
    def refuse(*a, **k):
        raise AssertionError("measured again")
    fast_measure.measure_paths = refuse
s = BERTScorer(model_type={BERT!r}, num_layers=2, precision="fast")
print(json.dumps({{"choice": s.fast_choice.to_dict(), "signature": s.signature}}))
"""
    env = {**os.environ, "RUST_BERTSCORE_CACHE": str(tmp_path)}
    runs = []
    for arg in ("first", "again"):
        done = subprocess.run(
            [sys.executable, "-c", program, arg], env=env, capture_output=True, text=True,
            timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    choice = FastChoice.from_dict(runs[0]["choice"])
    assert {f.runtime for f in choice.figures} == {"onnxruntime"}
    assert choice.figures[0].precision == "fp32" and choice.figures[0].mean_dF == 0.0
    assert runs[1]["choice"] == runs[0]["choice"]
    assert f"prec:{choice.precision}|" in runs[0]["signature"]
    assert list((tmp_path / "fast-path").glob("*.json"))


def test_fast_on_cuda_is_refused() -> None:
    from rust_bertscore.errors import InputValueError

    with pytest.raises(InputValueError, match="precision='fast' chooses among the CPU"):
        fast_measure.choose_fast_path(BERT, 2, BERTScorer, device="cuda")


def test_models_explain_prints_the_flags_and_the_choice(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rust_bertscore.cli.app import main

    monkeypatch.setenv("RUST_BERTSCORE_CACHE", str(tmp_path))
    monkeypatch.setattr(fast_measure, "_openvino_capabilities", lambda: None)
    assert main(["models", "--explain", "-m", BERT, "--num_layers", "2"]) == 0
    out = capsys.readouterr().out
    assert "int8: amx_int8 " in out and "bf16: amx_bf16 " in out
    assert "  onnxruntime/fp32: 1.00x fp32, mean |dF| 0.0e+00" in out
    assert "  chosen: onnxruntime/" in out


def test_fast_on_an_exported_graph_is_refused(tmp_path: Path) -> None:
    """An exported .onnx has no checkpoint to convert into other paths (it failed on its
    missing weights file)."""
    from rust_bertscore.errors import InputValueError
    from rust_bertscore.models.export import export_model

    out = tmp_path / "model.onnx"
    export_model(BERT, out, num_layers=2)
    with pytest.raises(InputValueError, match="is an exported graph"):
        BERTScorer(model_type=str(out), precision="fast")
