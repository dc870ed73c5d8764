"""The Hugging Face ``evaluate`` metric shipped in the package: ``evaluate.load`` of
``rust_bertscore.evaluate_module()`` works offline and gives evaluate's ``bertscore`` output dict
with the numbers of ``rust_bertscore.score``."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

# Before evaluate (and huggingface_hub, datasets) are imported: offline, throw-away module cache.
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_MODULES_CACHE", tempfile.mkdtemp(prefix="rbs-test-hf-modules-"))

import numpy as np
import pytest

import rust_bertscore as rb
from conftest import REFERENCE, TINY
from rust_bertscore.integrations.hf_evaluate import EvaluateBackend

evaluate = pytest.importorskip("evaluate")

BERT = str(TINY / "bert")
ROBERTA = str(TINY / "roberta")
BASELINE = str(REFERENCE / "baseline_minilm_l6.csv")
PREDS = ["the coffee was cold", "She took the road north.", "a"]
REFS = ["the coffee is hot", "she would take the northern road", "a new customer came in"]
MULTI = [["the coffee is hot", "cold coffee"], ["the northern road"], ["b", "a customer", "c"]]


@pytest.fixture(scope="module")
def metric():
    return evaluate.load(rb.evaluate_module())


def _check(result: dict, want, hashcode: str) -> None:
    assert set(result) == {"precision", "recall", "f1", "hashcode"}
    for key, w in zip(("precision", "recall", "f1"), want):
        assert isinstance(result[key], list)
        np.testing.assert_array_equal(np.float32(result[key]), w)
    assert result["hashcode"] == hashcode


def test_module_is_a_file_in_the_package() -> None:
    path = Path(rb.evaluate_module())
    assert path.is_file() and path.suffix == ".py"
    assert Path(rb.__file__).resolve().parent in path.parents  # integrations/evaluate_metric/


def test_single_reference(metric) -> None:
    result = metric.compute(predictions=PREDS, references=REFS, model_type=BERT, num_layers=2)
    want, h = rb.score(PREDS, REFS, model_type=BERT, num_layers=2, return_hash=True)
    _check(result, want, h)
    assert metric.name == "bert_score"


def test_multi_reference_and_idf(metric) -> None:
    result = metric.compute(predictions=PREDS, references=MULTI, model_type=ROBERTA, idf=True)
    want, h = rb.score(PREDS, MULTI, model_type=ROBERTA, idf=True, return_hash=True)
    _check(result, want, h)
    # idf weights follow each call's references (evaluate's own keeps the first call's).
    again = metric.compute(
        predictions=PREDS[:2], references=MULTI[:2], model_type=ROBERTA, idf=True
    )
    want, h = rb.score(PREDS[:2], MULTI[:2], model_type=ROBERTA, idf=True, return_hash=True)
    _check(again, want, h)


def test_rescale_all_layers_batch_size(metric) -> None:
    kw = dict(
        model_type=BERT,
        lang="en",
        rescale_with_baseline=True,
        baseline_path=BASELINE,
        batch_size=2,
        nthreads=2,
        verbose=False,
        use_fast_tokenizer=False,
        device="cpu",
    )
    result = metric.compute(predictions=PREDS, references=REFS, **kw)
    kw.pop("use_fast_tokenizer")
    want, h = rb.score(PREDS, REFS, return_hash=True, **kw)
    _check(result, want, h)
    layers = metric.compute(predictions=PREDS, references=REFS, model_type=BERT, all_layers=True)
    want = rb.score(PREDS, REFS, model_type=BERT, all_layers=True)
    assert np.shape(layers["f1"]) == (4, 3)  # every hidden state of the 3-layer model
    np.testing.assert_array_equal(np.float32(layers["f1"]), want[2])


def test_needs_lang_or_model_type(metric) -> None:
    with pytest.raises(ValueError, match="Either 'lang'"):
        metric.compute(predictions=PREDS, references=REFS)


def test_backend_keeps_the_model_between_calls() -> None:
    backend = EvaluateBackend()
    backend.compute(PREDS, REFS, model_type=BERT)
    first = backend._scorer
    backend.compute(PREDS[:1], REFS[:1], model_type=BERT)
    assert backend._scorer is first
    backend.compute(PREDS, REFS, model_type=BERT, num_layers=1)
    assert backend._scorer is not first


def test_loads_offline_in_a_fresh_process(tmp_path: Path) -> None:
    """A clean process with the Hub and datasets offline, a fresh HF cache, and an endpoint
    that refuses connections: evaluate.load(path) must not need the network."""
    script = textwrap.dedent(
        f"""
        import evaluate, rust_bertscore
        m = evaluate.load(rust_bertscore.evaluate_module())
        r = m.compute(predictions=["a cat"], references=["the cat"], model_type={BERT!r})
        print(sorted(r), round(r["f1"][0], 6))
        """
    )
    env = dict(os.environ)
    env.update(
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        HF_HOME=str(tmp_path / "hf"),
        HF_MODULES_CACHE=str(tmp_path / "modules"),
        HF_ENDPOINT="http://127.0.0.1:9",
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    *_, F = rb.score(["a cat"], ["the cat"], model_type=BERT)
    assert (
        proc.stdout.strip() == f"['f1', 'hashcode', 'precision', 'recall'] {round(float(F[0]), 6)}"
    )
