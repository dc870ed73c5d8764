"""rust_bertscore.integrations.lm_eval through lm_eval's own API: a task YAML that names the
metrics by registry and by ``!function``, run by ``lm_eval.simple_evaluate`` on given
predictions (a model that returns them), against one score() call (skips without lm-eval:
`make test-integrations` installs it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import rust_bertscore as rb
from conftest import wmt_pairs
from rust_bertscore import InputValueError


def test_without_lm_eval_the_import_error_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['lm_eval'] = None\n"
        "try:\n"
        "    import rust_bertscore.integrations.lm_eval\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert "pip install 'rust-bertscore[lm-eval]'" in out.stdout, out


pytest.importorskip("lm_eval")

import lm_eval  # noqa: E402
from lm_eval.api.model import LM  # noqa: E402
from lm_eval.api.registry import get_aggregation, get_metric  # noqa: E402
from lm_eval.tasks import TaskManager  # noqa: E402

from rust_bertscore.integrations import lm_eval as adapter  # noqa: E402

CANDS, REFS = wmt_pairs()
N = 80  # more than one batch of 64: bert_score's padding floor sees the task's order


class GivenPredictions(LM):  # type: ignore[misc]
    """A model whose generations are given: the prediction of the document whose prompt it is."""

    def __init__(self, by_prompt: dict[str, str]) -> None:
        super().__init__()
        self.by_prompt = by_prompt

    def generate_until(self, requests):
        return [self.by_prompt[r.args[0]] for r in requests]

    def loglikelihood(self, requests):
        raise NotImplementedError

    def loglikelihood_rolling(self, requests):
        raise NotImplementedError


UTILS = "from rust_bertscore.integrations.lm_eval import bertscore_f1, bertscore_f1_mean\n"
YAML = """task: rbs_bertscore_test
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: generate_until
doc_to_text: "{{{{prompt}}}}"
doc_to_target: "{{{{reference}}}}"
generation_kwargs:
  until: ["\\n"]
metric_list:
  - metric: rust_bertscore_f1
    model_type: {model}
    idf: true
  - metric: rust_bertscore_precision
    model_type: {model}
  - metric: !function utils.bertscore_f1
    aggregation: !function utils.bertscore_f1_mean
    higher_is_better: true
    model_type: {model}
"""


@pytest.fixture(scope="module")
def model(minilm_dir) -> str:
    return str(minilm_dir)


def test_a_task_yaml_names_the_metrics_and_lm_eval_scores_them(model, tmp_path: Path) -> None:
    data = tmp_path / "docs.jsonl"
    with open(data, "w", encoding="utf-8") as f:
        for i in range(N):
            f.write(json.dumps({"prompt": f"Document {i}:", "reference": REFS[i]}) + "\n")
    (tmp_path / "utils.py").write_text(UTILS, encoding="utf-8")
    (tmp_path / "task.yaml").write_text(YAML.format(data=data, model=model), encoding="utf-8")
    lm = GivenPredictions({f"Document {i}:": CANDS[i] for i in range(N)})

    out = lm_eval.simple_evaluate(
        model=lm,
        tasks=["rbs_bertscore_test"],
        task_manager=TaskManager(include_path=str(tmp_path)),
        bootstrap_iters=0,
        log_samples=False,
    )
    got = out["results"]["rbs_bertscore_test"]

    plain = rb.score(CANDS[:N], REFS[:N], model_type=model)
    with_idf = rb.score(CANDS[:N], REFS[:N], model_type=model, idf=True)
    # One score() call over the task's pairs, in document order (IDF over its references):
    assert got["rust_bertscore_f1,none"] == pytest.approx(float(np.mean(with_idf[2])), abs=1e-7)
    assert got["rust_bertscore_precision,none"] == pytest.approx(float(np.mean(plain[0])), abs=1e-7)
    assert got["bertscore_f1,none"] == pytest.approx(float(np.mean(plain[2])), abs=1e-7)
    assert got["rust_bertscore_f1,none"] != pytest.approx(got["bertscore_f1,none"], abs=1e-6)


MULTI_UTILS = """from rust_bertscore.integrations.lm_eval import multi_reference_results

process_results = multi_reference_results(
    "references", metrics=["f1", "precision"], model_type={model!r}, idf=True
)
"""
MULTI_YAML = """task: {task}
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: generate_until
doc_to_text: "{{{{prompt}}}}"
doc_to_target: references
generation_kwargs:
  until: ["\\n"]
{process_results}metric_list:
  - metric: rust_bertscore_f1
  - metric: rust_bertscore_precision
"""
# One to three references per document, the candidate's own among them (not always first).
GROUPS = [[REFS[(i + k) % N] for k in range(i % 3 + 1)][:: 1 if i % 2 else -1] for i in range(N)]


def _multi_task(tmp_path: Path, model: str, task: str, process_results: bool) -> dict:
    data = tmp_path / "docs.jsonl"
    with open(data, "w", encoding="utf-8") as f:
        for i in range(N):
            f.write(json.dumps({"prompt": f"Document {i}:", "references": GROUPS[i]}) + "\n")
    (tmp_path / "utils.py").write_text(MULTI_UTILS.format(model=model), encoding="utf-8")
    line = "process_results: !function utils.process_results\n" if process_results else ""
    (tmp_path / f"{task}.yaml").write_text(
        MULTI_YAML.format(task=task, data=data, process_results=line), encoding="utf-8"
    )
    out = lm_eval.simple_evaluate(
        model=GivenPredictions({f"Document {i}:": CANDS[i] for i in range(N)}),
        tasks=[task],
        task_manager=TaskManager(include_path=str(tmp_path)),
        bootstrap_iters=0,
        log_samples=False,
    )
    return out["results"][task]


def test_a_task_with_lists_of_references_scores_each_candidate_best_reference(
    model, tmp_path: Path
) -> None:
    got = _multi_task(tmp_path, model, "rbs_bertscore_multi", process_results=True)
    # bert_score's multi-reference scores: one score() call, the best reference per candidate.
    best = rb.score(CANDS[:N], GROUPS, model_type=model, idf=True)
    assert got["rust_bertscore_f1,none"] == pytest.approx(float(np.mean(best[2])), abs=1e-7)
    assert got["rust_bertscore_precision,none"] == pytest.approx(float(np.mean(best[0])), abs=1e-7)
    first = rb.score(CANDS[:N], [g[0] for g in GROUPS], model_type=model, idf=True)
    assert float(np.mean(best[2])) > float(np.mean(first[2])) + 1e-3  # the lists count


def test_lm_eval_multiple_target_path_raises_an_error_that_says_why(model, tmp_path) -> None:
    # No process_results: lm_eval calls the metric per reference and keeps 1.0 if any.
    with pytest.raises(InputValueError, match=r"multiple-target path .* process_results"):
        _multi_task(tmp_path, model, "rbs_bertscore_multi_plain", process_results=False)


def test_registry_entries_and_bad_items() -> None:
    for name in ("rust_bertscore_precision", "rust_bertscore_recall", "rust_bertscore_f1"):
        assert get_metric(name) is not None
        assert get_aggregation(name) is not None
    assert get_metric("bleu") is not None  # lm_eval's own metrics are still there
    item = adapter.bertscore_recall(references=["a cat sat"], predictions=["the cat sat"])
    assert adapter.bertscore_recall_mean([item]) == pytest.approx(
        float(rb.score(["the cat sat"], ["a cat sat"])[1][0]), abs=1e-7
    )
    with pytest.raises(InputValueError, match="one document"):
        adapter.bertscore_f1(references=["a", "b"], predictions=["c"])
    other = adapter.bertscore_f1(references=["a"], predictions=["b"], idf=True)
    with pytest.raises(InputValueError, match="different options"):
        adapter.bertscore_f1_mean([item, other])
    with pytest.raises(InputValueError, match="metrics="):
        adapter.multi_reference_results("refs", metrics=["f2"])
    with pytest.raises(InputValueError, match="no field 'refs'"):
        adapter.multi_reference_results("refs")({"references": ["a"]}, ["b"])
    by_function = adapter.multi_reference_results(lambda doc: doc["r"], metrics=["recall"])
    assert by_function({"r": ["a cat sat", "x"]}, ["the cat sat"]) == {
        "rust_bertscore_recall": (["a cat sat", "x"], "the cat sat", "{}")
    }
