"""The GPU path without a GPU: CUDA provider options as passed to ONNX Runtime (TF32 off unless
precision="tf32"), NVIDIA_TF32_OVERRIDE set only for graphs with convolutions, device token
budgets, IO binding on the CPU provider, the out-of-memory split, the GPU install's checks, and
the device in the hash. GPU-only checks skip without CUDA."""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path
from typing import ClassVar

import numpy as np
import onnxruntime
import pytest

import rust_bertscore as rb
from conftest import MORE, REFERENCE, TINY, TINY_BERT, assert_scores_match, load_cases, wmt_pairs
from rust_bertscore.catalog.configs import has_convolutions
from rust_bertscore.engine.settings import make_hash
from rust_bertscore.errors import DeviceNotAvailableError, RustBertScoreWarning
from rust_bertscore.models.runtime import load_runtime
from rust_bertscore.stages import devices
from rust_bertscore.stages import encoder as encoder_module

CANDS, REFS = wmt_pairs()
CUDA, CPU = devices.CUDA_PROVIDER, devices.CPU_PROVIDER
HAS_CUDA = CUDA in onnxruntime.get_available_providers()


# ---- provider options -----------------------------------------------------------------------


def test_cuda_provider_options_turn_tf32_off_unless_asked() -> None:
    both = [CUDA, CPU]
    assert devices.select_providers(None, available=both) == [(CUDA, {"use_tf32": "0"}), CPU]
    assert devices.select_providers("cuda", available=both) == [(CUDA, {"use_tf32": "0"}), CPU]
    assert devices.select_providers("cuda:2", tf32=True, available=both) == [
        (CUDA, {"device_id": "2", "use_tf32": "1"}),
        CPU,
    ]
    assert devices.select_providers(None, available=[CPU]) == [CPU]
    assert devices.select_providers("cpu", tf32=True, available=both) == [CPU]
    with pytest.raises(ValueError, match="cuda:N"):
        devices.select_providers("cuda:x", available=both)
    with pytest.raises(DeviceNotAvailableError, match="pip install rust-bertscore-gpu"):
        devices.select_providers("cuda", available=[CPU])


class SessionSpy:
    """Stands in for ``onnxruntime.InferenceSession``: records what it is given, runs on the
    CPU provider."""

    calls: ClassVar[list[dict]] = []

    def __init__(self, graph, options, providers, disabled_optimizers=()):
        SessionSpy.calls.append(
            {
                "providers": providers,
                "disabled": list(disabled_optimizers),
                "tf32_env": os.environ.get(devices.TF32_OVERRIDE_ENV),
            }
        )
        self.inner = REAL_SESSION(
            graph, options, providers=[CPU], disabled_optimizers=disabled_optimizers
        )

    def __getattr__(self, name: str):
        return getattr(self.inner, name)


REAL_SESSION = onnxruntime.InferenceSession


@pytest.fixture
def fake_cuda(monkeypatch: pytest.MonkeyPatch):
    """onnxruntime that offers CUDA and records the sessions asked for; NVIDIA_TF32_OVERRIDE
    unset (and restored after)."""
    monkeypatch.setattr(onnxruntime, "get_available_providers", lambda: [CUDA, CPU])
    monkeypatch.setattr(onnxruntime, "InferenceSession", SessionSpy)
    monkeypatch.setenv(devices.TF32_OVERRIDE_ENV, "unset")
    monkeypatch.delenv(devices.TF32_OVERRIDE_ENV)
    SessionSpy.calls = []
    yield SessionSpy.calls
    rb.clear_cache()


@pytest.mark.parametrize(("precision", "tf32"), [("fp32", "0"), ("tf32", "1"), ("fp16", "0")])
def test_scorer_passes_the_cuda_options(fake_cuda, precision: str, tf32: str) -> None:
    before = dict(os.environ)
    scorer = rb.BERTScorer(model_type=TINY_BERT, device="cuda", precision=precision)
    (call,) = fake_cuda
    assert call["providers"] == [(CUDA, {"use_tf32": tf32}), CPU]
    # A BERT graph has no convolutions: TF32 stays off through the session's own option, and
    # the process environment (a trainer's CUDA libraries read it) is left as it was.
    assert call["tf32_env"] is None
    assert dict(os.environ) == before
    assert ("NchwcTransformer" in call["disabled"]) == (precision == "fp16")
    assert scorer.precision == precision
    assert scorer.hash.endswith("" if precision == "fp32" else f"_{precision}")


@pytest.mark.parametrize("family", ["convbert", "deberta-v2"])
def test_convolution_families_set_the_override_and_warn(fake_cuda, family: str) -> None:
    env = devices.TF32_OVERRIDE_ENV
    warning = rf"{env}=0 was set .* convolutions.* set {env} yourself"
    with pytest.warns(RustBertScoreWarning, match=warning):
        rb.BERTScorer(model_type=str(TINY / family), device="cuda")
    (call,) = fake_cuda
    assert call["providers"] == [(CUDA, {"use_tf32": "0"}), CPU]
    assert call["tf32_env"] == "0"  # before the session (its cuBLAS and cuDNN) starts
    assert os.environ[devices.TF32_OVERRIDE_ENV] == "0"


def test_convolutions_with_tf32_leave_the_environment(fake_cuda) -> None:
    before = dict(os.environ)
    rb.BERTScorer(model_type=str(TINY / "convbert"), device="cuda", precision="tf32")
    assert fake_cuda[0]["tf32_env"] is None
    assert dict(os.environ) == before


def test_tf32_override_left_alone_when_set(fake_cuda, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(devices.TF32_OVERRIDE_ENV, "1")
    rb.BERTScorer(model_type=str(TINY / "convbert"), device="cuda")  # no warning either
    assert fake_cuda[0]["tf32_env"] == "1"
    assert os.environ[devices.TF32_OVERRIDE_ENV] == "1"
    assert not devices.prepare_tf32([(CUDA, {})], convolutions=True)


@pytest.mark.parametrize(
    "model",
    [
        TINY / "bert",
        TINY / "convbert",
        TINY / "deberta-v2",
        TINY / "deberta-v3",
        MORE / "squeezebert",
    ],
    ids=lambda p: p.name,
)
def test_the_convolution_rule_matches_the_graphs(model: Path) -> None:
    import onnx

    runtime = load_runtime(str(model), None, device="cpu")
    assert isinstance(runtime.encoder.graph, Path)
    graph = onnx.load(str(runtime.encoder.graph), load_external_data=False)
    has_conv = any(node.op_type == "Conv" for node in graph.graph.node)
    assert has_conv == has_convolutions(runtime.config)
    assert has_conv == (model.name in ("convbert", "deberta-v2"))


def test_precision_is_checked_and_named() -> None:
    with pytest.raises(ValueError, match="'fp32', 'tf32', 'fp16', 'int8', 'bf16'"):
        rb.BERTScorer(model_type=TINY_BERT, precision="fp8")
    with pytest.raises(ValueError, match="precision='bf16' needs runtime='openvino'"):
        rb.BERTScorer(model_type=TINY_BERT, precision="bf16", runtime="onnxruntime")
    fp32 = rb.BERTScorer(model_type=TINY_BERT, device="cpu", cache_bytes=0)
    tf32 = rb.BERTScorer(model_type=TINY_BERT, device="cpu", cache_bytes=0, precision="tf32")
    assert fp32.device == tf32.device == "cpu"
    assert tf32.hash == fp32.hash + "_tf32"
    # The CPU has no TF32: the same graph, the same numbers.
    for a, b in zip(fp32.score(CANDS[:20], REFS[:20]), tf32.score(CANDS[:20], REFS[:20])):
        np.testing.assert_array_equal(a, b)


def test_device_is_named_in_the_hash() -> None:
    cpu = make_hash("m", 3, False, False, False)
    assert make_hash("m", 3, False, False, False, device="cuda") == cpu + "_cuda"
    assert make_hash("m", 3, False, False, False, "fp16", device="cuda").endswith("_fp16_cuda")
    scorer = rb.BERTScorer(model_type=TINY_BERT)  # device=None: CUDA only where ORT offers it
    assert scorer.device == ("cuda" if HAS_CUDA else "cpu")
    assert scorer.hash.endswith("_cuda") == HAS_CUDA


# ---- the GPU install --------------------------------------------------------------------------


def test_gpu_extra_and_install_checks() -> None:
    if sys.version_info < (3, 11):
        pytest.skip("tomllib")
    import tomllib

    root = Path(__file__).resolve().parents[1]
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert any(r.startswith("onnxruntime-gpu") for r in project["optional-dependencies"]["gpu"])
    assert devices.GPU_INSTALL == "pip install rust-bertscore-gpu"
    docs = (root / "docs" / "gpu.md").read_text(encoding="utf-8")
    assert devices.GPU_INSTALL in docs and devices.GPU_REINSTALL in docs
    assert devices.GPU_INSTALL in (root / "README.md").read_text(encoding="utf-8")
    assert devices.install_problem(["onnxruntime-gpu"], ["rust-bertscore-gpu"]) is None
    problem = devices.install_problem(["onnxruntime", "onnxruntime-gpu"], ["rust-bertscore"])
    assert problem is not None and devices.GPU_REINSTALL in problem
    both = devices.install_problem(["onnxruntime-gpu"], ["rust-bertscore", "rust-bertscore-gpu"])
    assert both is not None and "rust-bertscore and rust-bertscore-gpu" in both
    # This venv has the CPU builds alone.
    assert devices.onnxruntime_distributions() == ["onnxruntime"]
    assert devices.package_distributions() == ["rust-bertscore"]


def test_mixed_install_warns_once_naming_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    import warnings

    monkeypatch.setattr(devices, "_INSTALL_CHECKED", [])
    monkeypatch.setattr(
        devices, "onnxruntime_distributions", lambda: ["onnxruntime", "onnxruntime-gpu"]
    )
    with pytest.warns(rb.RustBertScoreWarning, match="pip install rust-bertscore-gpu"):
        devices.onnxruntime()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        devices.onnxruntime()  # once per process


def test_gpu_wheel_metadata(tmp_path: Path) -> None:
    """packaging/gpu_wheel.py on a built wheel: the same files, the GPU requirement, no CPU one."""
    import importlib.util
    import zipfile

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("gpu_wheel", root / "packaging" / "gpu_wheel.py")
    assert spec is not None and spec.loader is not None
    gpu_wheel = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpu_wheel)
    wheels = sorted((root / "target" / "wheels").glob("rust_bertscore-*.whl"))
    if not wheels:
        pytest.skip("no wheel in target/wheels (make build)")
    out = gpu_wheel.make_gpu_wheel(wheels[0], tmp_path)
    assert out.name == wheels[0].name.replace("rust_bertscore-", "rust_bertscore_gpu-", 1)
    with zipfile.ZipFile(wheels[0]) as cpu, zipfile.ZipFile(out) as gpu:
        cpu_files = {n: cpu.read(n) for n in cpu.namelist() if ".dist-info/" not in n}
        gpu_files = {n: gpu.read(n) for n in gpu.namelist() if ".dist-info/" not in n}
        assert cpu_files == gpu_files  # byte for byte, the extension included
        info = [n for n in gpu.namelist() if n.endswith(".dist-info/METADATA")]
        assert info == [info[0]] and info[0].startswith("rust_bertscore_gpu-")
        meta = gpu.read(info[0]).decode()
        record = gpu.read(info[0].replace("METADATA", "RECORD")).decode()
        all_names = set(gpu.namelist())
    requires = [
        line.split(": ", 1)[1] for line in meta.splitlines() if line.startswith("Requires-Dist: ")
    ]
    base = [r for r in requires if ";" not in r]
    assert "Name: rust-bertscore-gpu" in meta.splitlines()
    assert any(r.startswith("onnxruntime-gpu>=") for r in base)
    assert not any(r.split(">")[0].split("=")[0] == "onnxruntime" for r in requires)
    assert "Provides-Extra: gpu" not in meta.splitlines()
    listed = {line.split(",")[0] for line in record.splitlines() if line}
    assert listed == all_names
    with pytest.raises(gpu_wheel.WheelError, match="not a rust-bertscore wheel"):
        gpu_wheel.make_gpu_wheel(out, tmp_path / "again")


# ---- token budgets ----------------------------------------------------------------------------


def test_token_budget_by_device(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(devices.MAX_TOKENS_ENV, raising=False)
    assert devices.default_max_tokens([CPU]) == devices.DEFAULT_MAX_TOKENS == 4096
    assert devices.default_max_tokens([(CUDA, {}), CPU]) == devices.CUDA_MAX_TOKENS
    assert devices.CUDA_MAX_TOKENS >= 8 * devices.DEFAULT_MAX_TOKENS
    monkeypatch.setenv(devices.MAX_TOKENS_ENV, "1000")
    assert devices.default_max_tokens([(CUDA, {}), CPU]) == 1000
    monkeypatch.setenv(devices.MAX_TOKENS_ENV, "lots")
    with pytest.raises(ValueError, match=devices.MAX_TOKENS_ENV):
        devices.default_max_tokens([CPU])


def test_cuda_session_gets_the_cuda_budget(fake_cuda, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(devices.MAX_TOKENS_ENV, raising=False)
    scorer = rb.BERTScorer(model_type=TINY_BERT, device="cuda")
    # The budget follows the providers asked for (the spy's session then runs on the CPU).
    assert scorer.runtime.encoder.max_tokens == devices.CUDA_MAX_TOKENS
    assert scorer.runtime.encoder.provider_options[0] == (CUDA, {"use_tf32": "0"})


# ---- IO binding and the out-of-memory split, on the CPU provider ------------------------------


@pytest.mark.parametrize("all_layers", [False, True])
def test_io_binding_gives_the_same_vectors(all_layers: bool) -> None:
    runtime = load_runtime(TINY_BERT, None, all_layers=all_layers)
    graph = runtime.encoder.graph
    plain = encoder_module.Encoder(graph, device="cpu", io_binding=False, max_tokens=64)
    bound = encoder_module.Encoder(graph, device="cpu", io_binding=True, max_tokens=64)
    assert bound.io_binding and not plain.io_binding
    ids = runtime.tokenizer.encode(CANDS[:30])
    a, b = plain.embed_packed(ids, 8, extra_rows=3), bound.embed_packed(ids, 8, extra_rows=3)
    rows = int(a.offsets[-1])
    np.testing.assert_array_equal(a.offsets, b.offsets)
    np.testing.assert_array_equal(a.data[..., :rows, :], b.data[..., :rows, :])
    # run() hands back its own array, not the reused buffer.
    first = bound.run(ids[:2])
    kept = first.copy()
    bound.run(ids[2:4])
    np.testing.assert_array_equal(first, kept)


def test_cuda_out_of_memory_splits_the_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    runtime = load_runtime(TINY_BERT, None)
    enc = encoder_module.Encoder(runtime.encoder.graph, device="cpu", max_tokens=4096)
    ids = runtime.tokenizer.encode(CANDS[:40])
    want = enc.embed_packed(ids, 64)
    session = enc.session
    limit = 300  # padded tokens the "device" holds

    class SmallDevice:
        def __getattr__(self, name):
            return getattr(session, name)

        def run(self, names, feeds):
            if feeds["input_ids"].size > limit:
                raise RuntimeError("[ONNXRuntimeError] : 6 : CUDA failure 2: out of memory")
            return session.run(names, feeds)

    monkeypatch.setattr(enc, "session", SmallDevice())
    with pytest.raises(MemoryError, match="batch of"):  # the CPU does not split
        enc.embed_packed(ids, 64)
    monkeypatch.setattr(enc, "providers", [CUDA, CPU])
    got = enc.embed_packed(ids, 64)
    assert enc.max_tokens <= limit
    np.testing.assert_array_equal(got.order, want.order)
    np.testing.assert_allclose(got.data, want.data, atol=2e-5)


# ---- GPU only -----------------------------------------------------------------------------------


@pytest.mark.skipif(not HAS_CUDA, reason="needs onnxruntime-gpu and a CUDA device")
@pytest.mark.filterwarnings("ignore:NVIDIA_TF32_OVERRIDE=0 was set")  # ConvBERT's convolutions
@pytest.mark.parametrize("family", ["bert", "t5", "convbert"])
def test_cuda_fp32_matches_the_cpu(family: str) -> None:
    model = str(TINY / family)
    cpu = rb.BERTScorer(model_type=model, device="cpu", cache_bytes=0)
    cuda = rb.BERTScorer(model_type=model, device="cuda", cache_bytes=0)
    for a, b in zip(cpu.score(CANDS, REFS), cuda.score(CANDS, REFS)):
        np.testing.assert_allclose(a, b, atol=1e-5)  # TF32 would be ~1e-2 off (issue 28)


def reference_cases() -> list[tuple[str, dict]]:
    """Every bert_score 0.3.13 case on a checkpoint of tests/data/reference (the tiny families,
    ConvBERT, the further families with SqueezeBERT, GTE, nomic-bert, jina-v3 with its tasks),
    each with the model_type it is scored with; the cases bert_score itself failed are left out.
    """
    out: list[tuple[str, dict]] = []
    for name in ("cases.json", "cases2.json", "cases3.json", "cases4.json", "convbert_cases.json"):
        out += [(str(TINY / c["model_dir"]), c) for c in load_cases(TINY / name)]
    out += [
        (str(MORE / c["model_dir"]), c)
        for c in load_cases(MORE / "cases.json")
        if "bert_score_error" not in c
    ]
    for family in ("gte", "nomic"):
        root = REFERENCE / family
        out += [(str(root / c["model_dir"]), c) for c in load_cases(root / "cases.json")]
    jina = REFERENCE / "jina" / "jina"
    out += [
        (str(jina) if c["task"] == "base" else f"{jina}@{c['task']}", c)
        for c in load_cases(REFERENCE / "jina" / "cases.json")
    ]
    return out


CASES_ON_CUDA = reference_cases()


def test_the_cuda_parity_covers_every_reference_checkpoint() -> None:
    """Runs everywhere: the CUDA parity test below is not vacuous. Every checkpoint folder of
    the reference data (a config.json) has cases in it, ConvBERT and SqueezeBERT included."""
    checkpoints = {
        str(p.parent)
        for root in (TINY, MORE, REFERENCE / "gte", REFERENCE / "nomic", REFERENCE / "jina")
        for p in root.glob("*/config.json")
    }
    scored = {model.split("@")[0] for model, _ in CASES_ON_CUDA}
    assert scored == checkpoints
    assert {str(TINY / "convbert"), str(MORE / "squeezebert")} <= scored
    assert len(CASES_ON_CUDA) >= 100


@pytest.mark.skipif(not HAS_CUDA, reason="needs onnxruntime-gpu and a CUDA device")
@pytest.mark.parametrize("model, case", CASES_ON_CUDA, ids=[c["name"] for _, c in CASES_ON_CUDA])
def test_cuda_fp32_matches_bert_score(model: str, case: dict) -> None:
    """fp32 on CUDA (TF32 off, the overlapped order on) within 1e-5 of bert_score's CPU
    numbers, P, R and F, on every reference case."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RustBertScoreWarning)  # empty texts, TF32 override
        scorer_kwargs = dict(case["kwargs"])
        got = rb.score(
            case["cands"], case["refs"], model_type=model, device="cuda", **scorer_kwargs
        )
    assert_scores_match(got, case["expected"], 1e-5)
