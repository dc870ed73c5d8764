"""lighteval (0.13): a sample-level BERTScore for custom tasks, doing what lighteval's bundled
``Metrics.bert_score`` does (its copy of bert_score's scorer on torch) with rust-bertscore's
scorer (needs ``pip install 'rust-bertscore[lighteval]'``).

* :class:`BertScore`: the sample-level computation, as ``lighteval.metrics.metrics_sample.
  BertScore``: golds normalised by ``remove_braces``, predictions by
  ``remove_braces_and_strip``, ``score(predictions, golds)`` and the first pair's P, R and F as
  ``BERTScore-P``, ``BERTScore-R``, ``BERTScore-F``. lighteval's scorer settings
  (microsoft/deberta-large-mnli, layer 9, ``lang="en"``, rescaled) are the defaults; any
  :class:`~rust_bertscore.BERTScorer` option replaces them.
* :func:`bert_score_metric`: the ``SampleLevelMetricGrouping`` to put in a task's ``metrics``,
  with the metric names and corpus means of ``Metrics.bert_score``.

docs/integrations.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

try:
    from lighteval.metrics.metrics_sample import SampleLevelComputation
    from lighteval.metrics.normalizations import remove_braces, remove_braces_and_strip
    from lighteval.metrics.utils.metric_utils import SampleLevelMetricGrouping
    from lighteval.tasks.requests import SamplingMethod
except ImportError as e:  # pragma: no cover - tested where lighteval is absent
    raise ImportError(
        "rust_bertscore.integrations.lighteval needs lighteval: "
        "pip install 'rust-bertscore[lighteval]'"
    ) from e

from ..errors import InputValueError
from ..scoring.scorer import BERTScorer

# The scorer of lighteval's BertScore (lighteval/metrics/metrics_sample.py).
LIGHTEVAL_SCORER = {
    "model_type": "microsoft/deberta-large-mnli",
    "lang": "en",
    "rescale_with_baseline": True,
    "num_layers": 9,
}
METRIC_NAMES = ["BERTScore-P", "BERTScore-R", "BERTScore-F"]


class BertScore(SampleLevelComputation):  # type: ignore[misc]
    """lighteval's sample-level BERTScore on rust-bertscore.

    Parameters
    ----------
    normalize_gold, normalize_pred : callable, optional
        Applied to each gold and each prediction before scoring (as lighteval's).
    **scorer_options
        :class:`~rust_bertscore.BERTScorer` options; those not given are lighteval's
        (``LIGHTEVAL_SCORER``). The scorer is built on first use and kept.

    Examples
    --------
    >>> from lighteval.models.model_output import ModelResponse
    >>> from lighteval.tasks.requests import Doc
    >>> from rust_bertscore.integrations.lighteval import BertScore
    >>> fn = BertScore(model_type="sentence-transformers/all-MiniLM-L6-v2", num_layers=6,
    ...                rescale_with_baseline=False)
    >>> doc = Doc(query="", choices=["A cat was sitting on the mat."], gold_index=0)
    >>> out = fn.compute(doc=doc, model_response=ModelResponse(text=["The cat sat on the mat."]))
    >>> {k: round(v, 3) for k, v in out.items()}
    {'BERTScore-P': 0.919, 'BERTScore-R': 0.896, 'BERTScore-F': 0.907}
    """

    def __init__(
        self,
        normalize_gold: Callable[[str], str] | None = None,
        normalize_pred: Callable[[str], str] | None = None,
        **scorer_options: Any,
    ) -> None:
        self.normalize_gold = normalize_gold
        self.normalize_pred = normalize_pred
        self.scorer_options = {**LIGHTEVAL_SCORER, **scorer_options}
        self.bert_scorer: BERTScorer | None = None

    def compute(self, doc: Any, model_response: Any, **kwargs: Any) -> dict[str, float]:
        """``{"BERTScore-P", "BERTScore-R", "BERTScore-F"}`` of the first prediction and gold
        (``score(predictions, golds)``, as lighteval's)."""
        golds = _as_list(doc.get_golds())
        predictions = _as_list(model_response.final_text)
        if self.normalize_gold:
            golds = [self.normalize_gold(g) for g in golds]
        if self.normalize_pred:
            predictions = [self.normalize_pred(p) for p in predictions]
        if len(golds) != len(predictions):
            raise InputValueError(
                f"BertScore scores predictions against golds pair by pair, as lighteval's: got "
                f"{len(predictions)} predictions and {len(golds)} golds"
            )
        if self.bert_scorer is None:
            self.bert_scorer = BERTScorer(**self.scorer_options)
        p, r, f = self.bert_scorer.score(predictions, golds)
        return {name: float(s[0]) for name, s in zip(METRIC_NAMES, (p, r, f))}

    def __getstate__(self) -> dict[str, Any]:
        # The scorer is rebuilt where the metric is unpickled (lighteval copies metrics).
        return {**self.__dict__, "bert_scorer": None}


def bert_score_metric(
    normalize_gold: Callable[[str], str] | None = remove_braces,
    normalize_pred: Callable[[str], str] | None = remove_braces_and_strip,
    **scorer_options: Any,
) -> Any:
    """A ``SampleLevelMetricGrouping`` like lighteval's ``Metrics.bert_score`` (same names,
    normalisations and corpus means) that scores with rust-bertscore.

    Put it in a custom task's ``LightevalTaskConfig(metrics=[...])``.

    >>> from rust_bertscore.integrations.lighteval import bert_score_metric
    >>> metric = bert_score_metric(model_type="sentence-transformers/all-MiniLM-L6-v2",
    ...                            num_layers=6, rescale_with_baseline=False)
    >>> metric.metric_name
    ['BERTScore-P', 'BERTScore-R', 'BERTScore-F']
    """
    return SampleLevelMetricGrouping(
        metric_name=list(METRIC_NAMES),
        sample_level_fn=BertScore(normalize_gold, normalize_pred, **scorer_options),
        category=SamplingMethod.GENERATIVE,
        corpus_level_fn=dict.fromkeys(METRIC_NAMES, np.mean),
        higher_is_better=dict.fromkeys(METRIC_NAMES, True),
    )


def _as_list(items: Any) -> list:
    if isinstance(items, list):
        return items
    if isinstance(items, (tuple, set)):
        return list(items)
    return [items]
