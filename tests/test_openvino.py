"""runtime="openvino": fp32 parity with bert_score on every tiny family, bf16 and int8 deviation
bounds against fp32 on the default model, the errors, the cache entries, hash and signature.

Skipped where OpenVINO (the ``[openvino]`` extra) is not installed.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

ov = pytest.importorskip("openvino", reason="runtime='openvino' needs the [openvino] extra")

import rust_bertscore as rb  # noqa: E402
from conftest import MORE, REFERENCE, TINY, assert_scores_match, load_cases, wmt_pairs  # noqa: E402
from rust_bertscore.cli import main as cli_main  # noqa: E402
from rust_bertscore.convert import load_config, model_family  # noqa: E402
from rust_bertscore.errors import InputValueError  # noqa: E402
from rust_bertscore.models import openvino_graphs  # noqa: E402
from rust_bertscore.models.graph_cache import cache_root  # noqa: E402
from rust_bertscore.scoring.signature import parse_signature  # noqa: E402
from rust_bertscore.stages import openvino_encoder  # noqa: E402
from rust_bertscore.store import text_keys  # noqa: E402

TOLERANCE = 1e-5
TINY_CASES = [
    (TINY, case)
    for name in ("cases.json", "cases2.json", "cases3.json", "cases4.json")
    for case in load_cases(TINY / name)
]
MORE_CASES = [(MORE, c) for c in load_cases(MORE / "cases.json") if "bert_score_error" not in c]
CASES = TINY_CASES + MORE_CASES
CANDS, REFS = wmt_pairs()


def _kwargs(case: dict) -> dict:
    kw = dict(case["kwargs"])
    if "baseline_path" in kw:
        kw["baseline_path"] = str(REFERENCE / "baseline_minilm_l6.csv")
    return kw


@pytest.mark.parametrize(("root", "case"), CASES, ids=[f"{r.name}-{c['name']}" for r, c in CASES])
def test_openvino_fp32_matches_bert_score(root: Path, case: dict) -> None:
    scorer = rb.BERTScorer(model_type=str(root / case["model_dir"]), runtime="openvino")
    assert scorer.runtime.backend == "openvino"
    got = rb.score(
        case["cands"],
        case["refs"],
        model_type=str(root / case["model_dir"]),
        runtime="openvino",
        **_kwargs(case),
    )
    tolerance = TOLERANCE
    family = model_family(load_config(root / case["model_dir"]))
    if family in openvino_graphs.LOOSER_FAMILIES:
        # T5's bound on OpenVINO (t5, mT5, ByT5): 3.5e-5 measured, on t5 idf and all layers.
        tolerance = openvino_graphs.LOOSER_FAMILIES[family]
    assert_scores_match(got, case["expected"], tolerance)


def test_t5_on_openvino_warns_of_its_bound() -> None:
    rb.clear_cache()
    with pytest.warns(rb.RustBertScoreWarning, match="t5 encoders on OpenVINO"):
        rb.BERTScorer(model_type=str(TINY / "t5"), num_layers=3, runtime="openvino")


def test_the_parity_check_catches_another_graph() -> None:
    """The parity test fails when OpenVINO runs something else: the int8 model of tiny BERT is
    off bert_score by more than the tolerance."""
    root, case = next((r, c) for r, c in TINY_CASES if c["model_dir"] == "bert")
    got = rb.score(
        case["cands"],
        case["refs"],
        model_type=str(root / case["model_dir"]),
        runtime="openvino",
        precision="int8",
        **_kwargs(case),
    )
    with pytest.raises(AssertionError):
        assert_scores_match(got, case["expected"], TOLERANCE)


@pytest.fixture(scope="module")
def fp32_f() -> np.ndarray:
    return rb.score(CANDS, REFS)[2].astype(np.float64)


def test_bf16_within_bound_of_fp32(fp32_f: np.ndarray) -> None:
    if "BF16" not in openvino_encoder.cpu_capabilities():
        pytest.skip("this CPU has no BF16 (OpenVINO's OPTIMIZATION_CAPABILITIES)")
    (_, _, f), settings = rb.score(
        CANDS, REFS, runtime="openvino", precision="bf16", return_hash=True
    )
    deviation = np.abs(f.astype(np.float64) - fp32_f)
    # Issue 41's bound: mean |dF| <= 1e-3 (Xeon with AVX512-BF16, no AMX: these 200 pairs mean
    # 1.8e-4, max 9.8e-4; 500 WMT pairs mean 1.7e-4, max 9.8e-4).
    assert deviation.mean() <= 1e-3
    assert deviation.max() > 0  # it did compute in bf16
    assert settings.endswith("_bf16_openvino")


def test_int8_within_bound_of_fp32(fp32_f: np.ndarray) -> None:
    scorer = rb.BERTScorer(runtime="openvino", precision="int8", cache_bytes=0)
    f = scorer.score(CANDS, REFS)[2].astype(np.float64)
    deviation = np.abs(f - fp32_f)
    # Issue 41's bound for int8: mean |dF| <= 0.003 against fp32 (1,000 WMT pairs: int8 weights
    # with activations quantised per token in groups of 128, mean 0.0016, max 0.008; NNCF's
    # static quantisation, the former policy, 0.0024 here and 0.0066 on all-mpnet-base-v2).
    assert deviation.mean() <= 0.003
    assert deviation.mean() > 1e-5  # int8, not the fp32 graph
    assert np.corrcoef(f, fp32_f)[0, 1] > 0.999
    assert scorer.hash.endswith("_int8_openvino")
    # The IR entry: model.xml and model.bin beside a manifest naming the policy, compiled with
    # the policy's dynamic quantisation group.
    encoder = scorer.runtime.encoder
    graph = encoder.graph
    assert graph is not None and graph.name == "model.xml"
    meta = json.loads((graph.parent / "manifest.json").read_text())
    assert (graph.parent / "model.bin").stat().st_size == meta["sizes"][1]
    assert openvino_graphs.NNCF_POLICY in meta["policy"]
    assert "compress-weights|int8_asym" in meta["policy"]
    group = encoder.session.compiled.get_property("DYNAMIC_QUANTIZATION_GROUP_SIZE")
    assert group == openvino_encoder.DYNAMIC_QUANTIZATION_GROUP == 128


def test_int8_weights_are_int8_in_the_ir() -> None:
    """The int8 IR holds the projections' weights as int8 constants (weight compression), not
    float ones: it is about a quarter of the fp32 graph's size."""
    scorer = rb.BERTScorer(runtime="openvino", precision="int8", cache_bytes=0)
    graph = scorer.runtime.encoder.graph
    assert graph is not None
    fp32 = rb.BERTScorer(runtime="openvino", cache_bytes=0).runtime.encoder.graph
    assert fp32 is not None
    ratio = (graph.parent / "model.bin").stat().st_size / fp32.stat().st_size
    assert 0.2 < ratio < 0.35, ratio
    xml = graph.read_text()
    assert 'element_type="u8"' in xml or 'element_type="i8"' in xml


def test_openvino_fp32_default_model_agrees_with_onnxruntime(fp32_f: np.ndarray) -> None:
    f = rb.score(CANDS, REFS, runtime="openvino")[2].astype(np.float64)
    assert np.max(np.abs(f - fp32_f)) <= 1e-5


def test_unknown_runtime_names_the_choices() -> None:
    with pytest.raises(InputValueError, match=r"'onnxruntime', 'openvino'.*'tensorrt'"):
        rb.BERTScorer(runtime="tensorrt")


def test_bf16_on_onnxruntime_is_refused() -> None:
    with pytest.raises(InputValueError, match="no bf16 GEMM on x86"):
        rb.score(["a"], ["a"], precision="bf16", runtime="onnxruntime")


@pytest.mark.parametrize("device", ["cuda", "cuda:0"])
def test_openvino_on_cuda_is_refused(device: str) -> None:
    with pytest.raises(InputValueError, match="CPU only"):
        rb.BERTScorer(runtime="openvino", device=device)


@pytest.mark.parametrize("precision", ["fp16", "tf32"])
def test_openvino_refuses_gpu_precisions(precision: str) -> None:
    with pytest.raises(InputValueError, match="runtime='openvino' runs precision"):
        rb.BERTScorer(runtime="openvino", precision=precision)


def test_bf16_without_bf16_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(openvino_encoder, "cpu_capabilities", lambda: ["FP32", "INT8"])
    with pytest.raises(InputValueError, match="this CPU has no bf16"):
        rb.BERTScorer(runtime="openvino", precision="bf16", model_type=str(TINY / "bert"))


def test_an_exported_graph_is_refused(tmp_path: Path) -> None:
    graph = tmp_path / "bert.onnx"
    cli_main(["export", str(TINY / "bert"), "-l", "2", "-o", str(graph), "-q"])
    with pytest.raises(InputValueError, match=r"cannot run .*com\.microsoft\.Attention"):
        rb.BERTScorer(model_type=str(graph), runtime="openvino")


def test_missing_openvino_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "openvino", None)  # import openvino raises ImportError
    rb.clear_cache()
    with pytest.raises(ImportError, match=r"rust-bertscore\[openvino\]"):
        rb.BERTScorer(runtime="openvino", model_type=str(TINY / "bert"), num_layers=1)


def test_cache_entry_is_reused() -> None:
    """The fp32 graph is built once into ``<cache>/openvino/<key>/`` (manifest last) and found
    there by a new scorer after the process's runtimes are dropped."""
    rb.clear_cache()
    first = rb.BERTScorer(model_type=str(TINY / "roberta"), num_layers=1, runtime="openvino")
    graph = first.runtime.encoder.graph
    assert graph is not None and graph.parent.parent == cache_root() / "openvino"
    manifest = json.loads((graph.parent / "manifest.json").read_text())
    assert manifest["policy"] == "standard-ops" and manifest["runtime"] == "openvino"
    stamp = graph.stat().st_mtime_ns
    rb.clear_cache()
    second = rb.BERTScorer(model_type=str(TINY / "roberta"), num_layers=1, runtime="openvino")
    assert second.runtime.encoder.graph == graph and graph.stat().st_mtime_ns == stamp
    # Not ONNX Runtime's fused graph: OpenVINO gets its own entry.
    ort = rb.BERTScorer(model_type=str(TINY / "roberta"), num_layers=1)
    assert ort.runtime.encoder.graph != graph


def test_runtimes_are_cached_apart() -> None:
    a = rb.BERTScorer(model_type=str(TINY / "bert"), num_layers=2)
    b = rb.BERTScorer(model_type=str(TINY / "bert"), num_layers=2, runtime="openvino")
    assert a.runtime is not b.runtime
    assert type(b.runtime.encoder).__name__ == "OpenVINOEncoder"


def test_hash_and_signature_name_the_runtime() -> None:
    ort = rb.BERTScorer(model_type=str(TINY / "bert"), num_layers=2)
    ov_scorer = rb.BERTScorer(model_type=str(TINY / "bert"), num_layers=2, runtime="openvino")
    assert not ort.hash.endswith("_openvino")
    assert ov_scorer.hash == ort.hash + "_openvino"
    assert parse_signature(ort.signature)["runtime"] == "onnxruntime"
    fields = parse_signature(ov_scorer.signature)
    assert fields["runtime"] == "openvino" and fields["prec"] == "fp32"
    assert fields["device"] == "cpu"


def test_store_keeps_runtimes_apart(tmp_path: Path) -> None:
    """Vectors stored by ONNX Runtime are not read back by OpenVINO (nor by its bf16/int8)."""
    from rust_bertscore.engine.vectors import runtime_key_space

    model = str(TINY / "bert")
    spaces = {
        runtime_key_space(rb.BERTScorer(model_type=model, num_layers=2, **kw).runtime)
        for kw in (
            {},
            {"runtime": "openvino"},
            {"runtime": "openvino", "precision": "int8"},
        )
    }
    assert len(spaces) == 3
    store = tmp_path / "store"
    rb.score(["a cat"], ["a dog"], model_type=model, num_layers=2, store=str(store))
    ort_store = rb.EmbeddingStore(str(store))
    ov_scorer = rb.BERTScorer(model_type=model, num_layers=2, runtime="openvino", store=ort_store)
    ids = ov_scorer.runtime.tokenizer.encode(["a cat"])
    ort_space = runtime_key_space(rb.BERTScorer(model_type=model, num_layers=2).runtime)
    assert ort_store.get_many(text_keys(ort_space, ids))[0] is not None
    assert ort_store.get_many(text_keys(runtime_key_space(ov_scorer.runtime), ids)) == [None]


def test_cli_runtime_flag(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cands, refs = tmp_path / "c.txt", tmp_path / "r.txt"
    cands.write_text("a cat sat\n")
    refs.write_text("a cat was sitting\n")
    args = ["score", "-c", str(cands), "-r", str(refs), "-m", str(TINY / "bert"), "-l", "2"]
    assert cli_main([*args, "--runtime", "openvino", "-q"]) == 0
    assert "_openvino" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli_main([*args, "--runtime", "tensorrt", "-q"])


def test_int8_build_keeps_stdout_for_the_scores(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """NNCF's progress bars go to stderr: ``--format json`` on stdout stays one JSON document
    while the int8 model is built (layer 1 of tiny ELECTRA: built by this test alone)."""
    cands, refs = tmp_path / "c.txt", tmp_path / "r.txt"
    cands.write_text("a cat sat\n")
    refs.write_text("a cat was sitting\n")
    model = ["-m", str(TINY / "electra"), "-l", "1", "--runtime", "openvino"]
    args = ["score", "-c", str(cands), "-r", str(refs), *model, "--precision", "int8"]
    assert cli_main([*args, "--format", "json", "-q"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["hash"].endswith("_int8_openvino") and len(out["pairs"]) == 1


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_full_disk_builds_in_memory(
    precision: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cache that cannot be written: one warning, the graph built in memory, same scores."""
    import errno
    import os
    import warnings

    from rust_bertscore.convert import writer

    model, cands, refs = str(TINY / "distilbert"), ["a cat sat"], ["a cat was sitting"]
    kw = {"model_type": model, "num_layers": 2, "runtime": "openvino", "precision": precision}
    monkeypatch.setenv("RUST_BERTSCORE_CACHE", str(tmp_path / "writable"))
    rb.clear_cache()
    want = rb.score(cands, refs, **kw)

    def no_space(proto: object, path: Path, external: bool, *held: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(writer, "save_model", no_space)
    monkeypatch.setenv("RUST_BERTSCORE_CACHE", str(tmp_path / "full"))
    rb.clear_cache()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = rb.score(cands, refs, **kw)
    messages = [str(w.message) for w in caught if "model cache" in str(w.message)]
    assert len(messages) == 1 and "in memory" in messages[0], messages
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, atol=1e-6)
    assert not list((tmp_path / "full").glob("openvino/*/model.*"))
