"""rust_bertscore.integrations.lighteval against lighteval's own BERTScore metric, on its own
Doc and ModelResponse types, with the local MiniLM checkpoint on both sides (no download; skips
without lighteval: `make test-integrations` installs it)."""

from __future__ import annotations

import copy
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import REFERENCE, wmt_pairs
from rust_bertscore import InputValueError


def test_without_lighteval_the_import_error_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['lighteval'] = None\n"
        "try:\n"
        "    import rust_bertscore.integrations.lighteval\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert "pip install 'rust-bertscore[lighteval]'" in out.stdout, out


pytest.importorskip("lighteval")
pytest.importorskip("torch")

from lighteval.metrics.imports.bert_scorer import BERTScorer as LightevalScorer  # noqa: E402
from lighteval.metrics.metrics import Metrics  # noqa: E402
from lighteval.models.model_output import ModelResponse  # noqa: E402
from lighteval.tasks.requests import Doc  # noqa: E402

from rust_bertscore.integrations.lighteval import (  # noqa: E402
    LIGHTEVAL_SCORER,
    BertScore,
    bert_score_metric,
)

BASELINE = str(REFERENCE / "baseline_minilm_l6.csv")
CANDS, REFS = wmt_pairs()
# Braces and spaces that lighteval's normalisations take off.
DOCS = [Doc(query="q", choices=["{" + r + "}"], gold_index=0) for r in REFS[:12]]
RESPONSES = [ModelResponse(text=["  {" + c + "} "]) for c in CANDS[:12]]


@pytest.fixture(scope="module")
def model(minilm_dir) -> str:
    return str(minilm_dir)


def _lighteval_own(model: str, **options) -> object:
    metric = copy.deepcopy(Metrics.bert_score.value)
    # lighteval's scorer (its copy of bert_score on torch) on the local checkpoint in place of
    # microsoft/deberta-large-mnli, which would be downloaded.
    metric.sample_level_fn.bert_scorer = LightevalScorer(
        model_type=model, num_layers=6, lang="en", **options
    )
    return metric


# lighteval's scorer reads the baseline into a tensor from a read-only array, with a warning.
@pytest.mark.filterwarnings("ignore:The given NumPy array is not writable:UserWarning")
@pytest.mark.parametrize("rescale", [False, True])
def test_same_names_and_scores_as_lighteval_own_metric(model, rescale: bool) -> None:
    options = {"rescale_with_baseline": rescale, "baseline_path": BASELINE if rescale else None}
    own = _lighteval_own(model, **options)
    ours = bert_score_metric(model_type=model, num_layers=6, **options)
    assert ours.metric_name == own.metric_name
    assert ours.higher_is_better == own.higher_is_better
    assert ours.category == own.category
    got = [ours.compute_sample(doc=d, model_response=r) for d, r in zip(DOCS, RESPONSES)]
    want = [own.compute_sample(doc=d, model_response=r) for d, r in zip(DOCS, RESPONSES)]
    for name in own.metric_name:
        a = np.array([g[name] for g in got])
        b = np.array([w[name] for w in want])
        np.testing.assert_allclose(a, b, atol=2e-5)
        corpus = ours.get_corpus_aggregations()[name]
        assert corpus(list(a)) == pytest.approx(
            own.get_corpus_aggregations()[name](list(b)), abs=2e-5
        )
    # The normalisations are applied: without them the scores move.
    raw = BertScore(model_type=model, num_layers=6, **options)
    moved = raw.compute(doc=DOCS[0], model_response=RESPONSES[0])
    assert moved["BERTScore-F"] != pytest.approx(got[0]["BERTScore-F"], abs=1e-4)


def test_defaults_are_lighteval_scorer_and_pickles_without_the_model(model) -> None:
    assert BertScore().scorer_options == LIGHTEVAL_SCORER
    fn = BertScore(model_type=model, num_layers=6, rescale_with_baseline=False)
    fn.compute(doc=DOCS[0], model_response=RESPONSES[0])
    assert fn.bert_scorer is not None
    copied = pickle.loads(pickle.dumps(fn))
    assert copied.bert_scorer is None
    assert copied.compute(doc=DOCS[0], model_response=RESPONSES[0]) == fn.compute(
        doc=DOCS[0], model_response=RESPONSES[0]
    )
    two_golds = Doc(query="q", choices=["a", "b"], gold_index=[0, 1])
    with pytest.raises(InputValueError, match="2 golds"):
        fn.compute(doc=two_golds, model_response=RESPONSES[0])


def test_the_default_baseline_ships_with_this_package_not_with_lighteval() -> None:
    # lighteval 0.13's BERTScorer looks for rescale_baseline/<lang>/<model>.tsv beside its
    # module, which its wheel does not ship: its stock Metrics.bert_score (rescaled) needs a
    # baseline_path. This package ships bert_score's baselines, the default's included.
    import lighteval.metrics.imports.bert_scorer as lighteval_scorer

    from rust_bertscore.stages.rescale import packaged_baseline

    model = LIGHTEVAL_SCORER["model_type"]
    theirs = Path(lighteval_scorer.__file__).parent / "rescale_baseline" / "en" / f"{model}.tsv"
    assert not theirs.exists()
    assert packaged_baseline("en", model).is_file()
