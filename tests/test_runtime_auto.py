"""runtime="auto" (the default): ONNX Runtime for fp32 and on CUDA, OpenVINO for int8 and bf16
on the CPU where it is installed and capable, ONNX Runtime's int8 where it is not, and a clear
error for bf16 without it; the hash and signature name the runtime that ran."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import rust_bertscore as rb
from conftest import TINY_BERT
from rust_bertscore.errors import InputValueError
from rust_bertscore.models import choices
from rust_bertscore.models.choices import auto_backend, check_backend
from rust_bertscore.models.export import export_model
from rust_bertscore.scoring.signature import parse_signature

CPU_ONLY = ["CPUExecutionProvider"]


@pytest.fixture
def cpu_onnxruntime(monkeypatch: pytest.MonkeyPatch) -> None:
    """ONNX Runtime offers the CPU alone (device=None then means the CPU)."""
    from rust_bertscore.stages import devices

    class FakeOrt:
        @staticmethod
        def get_available_providers() -> list[str]:
            return CPU_ONLY

    monkeypatch.setattr(devices, "onnxruntime", lambda: FakeOrt)


@pytest.mark.parametrize("precision", ["fp32", "tf32", "fp16"])
def test_auto_keeps_onnxruntime_for_bert_score_precisions(precision: str) -> None:
    assert auto_backend(precision, "cpu", openvino_problem=None) == "onnxruntime"
    assert auto_backend(precision, "cuda", openvino_problem=None) == "onnxruntime"


@pytest.mark.parametrize("precision", ["int8", "bf16"])
@pytest.mark.usefixtures("cpu_onnxruntime")
def test_auto_picks_openvino_for_speed_on_the_cpu(precision: str) -> None:
    assert auto_backend(precision, "cpu", openvino_problem=None) == "openvino"
    assert auto_backend(precision, None, openvino_problem=None) == "openvino"


def test_auto_stays_on_cuda_when_onnxruntime_offers_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from rust_bertscore.stages import devices

    class CudaOrt:
        @staticmethod
        def get_available_providers() -> list[str]:
            return ["CUDAExecutionProvider", *CPU_ONLY]

    monkeypatch.setattr(devices, "onnxruntime", lambda: CudaOrt)
    assert auto_backend("int8", None, openvino_problem=None) == "onnxruntime"
    assert auto_backend("int8", "cuda:0", openvino_problem=None) == "onnxruntime"


def test_auto_int8_without_openvino_is_onnxruntime() -> None:
    missing = "OpenVINO is not installed (pip install 'rust-bertscore[openvino]')"
    assert auto_backend("int8", "cpu", openvino_problem=missing) == "onnxruntime"


def test_auto_bf16_without_openvino_says_what_is_missing() -> None:
    missing = "OpenVINO's CPU plugin reports no BF16 on this CPU (it has ['FP32', 'INT8'])"
    with pytest.raises(InputValueError, match=r"bf16.*reports no BF16"):
        auto_backend("bf16", "cpu", openvino_problem=missing)


def test_explicit_runtimes_are_unchanged() -> None:
    assert check_backend("onnxruntime", "int8") == "onnxruntime"
    with pytest.raises(InputValueError, match="'auto', 'onnxruntime', 'openvino'"):
        check_backend("tensorrt", "fp32")
    assert choices.RUNTIME_CHOICES == ("auto", "onnxruntime", "openvino")


def test_default_fp32_scorer_is_onnxruntime() -> None:
    scorer = rb.BERTScorer(model_type=TINY_BERT, num_layers=2)
    assert scorer.runtime.backend == "onnxruntime"
    assert parse_signature(scorer.signature)["runtime"].startswith("onnxruntime")
    assert not scorer.hash.endswith("_openvino")


def test_auto_int8_runs_openvino_and_says_so() -> None:
    pytest.importorskip("openvino")
    pytest.importorskip("nncf")
    from rust_bertscore.stages.openvino_encoder import openvino_problem

    if openvino_problem("int8") is not None:
        pytest.skip(openvino_problem("int8") or "")
    auto = rb.BERTScorer(model_type=TINY_BERT, num_layers=2, precision="int8")
    explicit = rb.BERTScorer(
        model_type=TINY_BERT, num_layers=2, precision="int8", runtime="openvino"
    )
    assert auto.runtime.backend == "openvino"
    assert auto.hash == explicit.hash and auto.hash.endswith("_openvino")
    assert parse_signature(auto.signature)["runtime"].startswith("openvino")
    cands, refs = ["the cat sat on the mat", "a dog"], ["a cat sat on a mat", "the dog barked"]
    assert (auto.score(cands, refs)[2] == explicit.score(cands, refs)[2]).all()


def test_auto_int8_on_an_exported_graph_is_onnxruntime(tmp_path: Path) -> None:
    graph = tmp_path / "bert.onnx"
    export_model(TINY_BERT, graph, 2, precision="int8")
    scorer = rb.BERTScorer(model_type=str(graph), precision="int8")
    assert scorer.runtime.backend == "onnxruntime"


def test_auto_without_openvino_installed_scores_on_onnxruntime() -> None:
    """In a process where ``import openvino`` fails: int8 falls back to ONNX Runtime's, bf16
    gets the error naming the extra, fp32 is untouched."""
    code = textwrap.dedent(
        f"""
        import sys
        sys.modules["openvino"] = None  # import openvino raises ImportError
        sys.modules["nncf"] = None
        import rust_bertscore as rb
        from rust_bertscore.errors import InputValueError
        int8 = rb.BERTScorer(model_type={TINY_BERT!r}, num_layers=2, precision="int8")
        print(int8.runtime.backend, int8.hash.endswith("_openvino"))
        try:
            rb.BERTScorer(model_type={TINY_BERT!r}, num_layers=2, precision="bf16")
        except InputValueError as e:
            print("bf16:", e)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    assert lines[0] == "onnxruntime False"
    assert lines[1].startswith("bf16:") and "OpenVINO is not installed" in lines[1]
    assert "rust-bertscore[openvino]" in lines[1]


def test_cli_runtime_defaults_to_auto() -> None:
    from rust_bertscore.cli.app import build_parser

    args = build_parser().parse_args(["score", "-r", "r.txt", "-c", "c.txt"])
    assert args.runtime == "auto"
