"""lm-evaluation-harness: BERTScore metrics and aggregations a task YAML can name (needs
``pip install 'rust-bertscore[lm-eval]'``).

Each metric passes its (reference, prediction) pair through, as lm_eval's ``bleu`` does, and its
aggregation scores all the pairs of the task in one call of
:class:`~rust_bertscore.BERTScoreMetric` and returns the mean: the numbers of one
:func:`~rust_bertscore.score` call over the task's pairs in document order (with ``idf: true``,
IDF over the task's references). The other keys of a ``metric_list`` entry are
:class:`~rust_bertscore.BERTScorer` options (``model_type``, ``num_layers``, ``idf``, ``lang``,
``rescale_with_baseline``, ...); one scorer is built per set of options and kept.

Two ways to name them in a task YAML (docs/integrations.md):

* the registry: ``metric: rust_bertscore_f1`` (also ``_precision``, ``_recall``), once this
  module is imported (``import rust_bertscore.integrations.lm_eval`` before
  ``lm_eval.simple_evaluate``, or from the task's ``utils.py``);
* ``!function``: ``metric: !function utils.bertscore_f1`` and
  ``aggregation: !function utils.bertscore_f1_mean``, with a ``utils.py`` beside the YAML that
  imports them from here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

try:
    import lm_eval.api.metrics  # noqa: F401  (lm_eval's own metrics: its registry loads them lazily)
    from lm_eval.api.registry import register_aggregation, register_metric
except ImportError as e:  # pragma: no cover - tested where lm_eval is absent
    raise ImportError(
        "rust_bertscore.integrations.lm_eval needs lm-eval: pip install 'rust-bertscore[lm-eval]'"
    ) from e

from ..errors import InputTypeError, InputValueError
from ..scoring.metric import BERTScoreMetric

_METRICS: dict[str, BERTScoreMetric] = {}  # one metric (and scorer) per set of options


def _item(
    references: Sequence[Any] | None, predictions: Sequence[Any] | None, options: dict[str, Any]
) -> tuple[Any, str, str]:
    """The pair lm_eval passes (``references=[gold], predictions=[result]``), with the options
    as a JSON string: an item of the task's list, picklable across ranks."""
    if references is None or predictions is None or len(references) != 1 or len(predictions) != 1:
        raise InputValueError(
            "a BERTScore metric takes references=[gold] and predictions=[result] (one document), "
            f"as lm_eval passes them; got references={references!r}, predictions={predictions!r}"
        )
    gold, pred = references[0], predictions[0]
    if not isinstance(pred, str):
        raise InputTypeError(f"the prediction must be a str, got {type(pred).__name__}")
    try:
        key = json.dumps(options, sort_keys=True)
    except TypeError as e:
        raise InputTypeError(f"BERTScore options must be plain YAML values: {e}") from e
    return (list(gold) if not isinstance(gold, str) else gold, pred, key)


def _scores(items: Sequence[Any]) -> dict[str, np.ndarray]:
    """P, R, F of every item, in one scoring call."""
    if not items:
        raise InputValueError("no items to aggregate")
    keys = {item[2] for item in items}
    if len(keys) != 1:
        raise InputValueError(
            f"the items of one BERTScore metric carry different options: {sorted(keys)}"
        )
    (key,) = keys
    metric = _METRICS.get(key)
    if metric is None:
        metric = _METRICS[key] = BERTScoreMetric(**json.loads(key))
    metric.reset()
    try:
        metric.update([item[1] for item in items], [_group(item[0]) for item in items])
        return metric.compute()
    finally:
        metric.reset()


def _group(gold: Any) -> list[str]:
    return [gold] if isinstance(gold, str) else list(gold)


def bertscore_precision(
    references: Sequence[Any] | None = None,
    predictions: Sequence[Any] | None = None,
    **options: Any,
) -> tuple[Any, str, str]:
    """Per-document item of BERTScore precision (scored by :func:`bertscore_precision_mean`)."""
    return _item(references, predictions, options)


def bertscore_recall(
    references: Sequence[Any] | None = None,
    predictions: Sequence[Any] | None = None,
    **options: Any,
) -> tuple[Any, str, str]:
    """Per-document item of BERTScore recall (scored by :func:`bertscore_recall_mean`)."""
    return _item(references, predictions, options)


def bertscore_f1(
    references: Sequence[Any] | None = None,
    predictions: Sequence[Any] | None = None,
    **options: Any,
) -> tuple[Any, str, str]:
    """Per-document item of BERTScore F1 (scored by :func:`bertscore_f1_mean`).

    >>> from rust_bertscore.integrations.lm_eval import bertscore_f1, bertscore_f1_mean
    >>> items = [bertscore_f1(references=["A cat was sitting on the mat."],
    ...                       predictions=["The cat sat on the mat."])]
    >>> round(bertscore_f1_mean(items), 3)
    0.907
    """
    return _item(references, predictions, options)


def bertscore_precision_mean(items: Sequence[Any]) -> float:
    """Mean BERTScore precision over the task's items (one scoring call)."""
    return float(np.mean(_scores(items)["precision"]))


def bertscore_recall_mean(items: Sequence[Any]) -> float:
    """Mean BERTScore recall over the task's items (one scoring call)."""
    return float(np.mean(_scores(items)["recall"]))


def bertscore_f1_mean(items: Sequence[Any]) -> float:
    """Mean BERTScore F1 over the task's items (one scoring call)."""
    return float(np.mean(_scores(items)["f1"]))


for _name, _metric, _mean in (
    ("rust_bertscore_precision", bertscore_precision, bertscore_precision_mean),
    ("rust_bertscore_recall", bertscore_recall, bertscore_recall_mean),
    ("rust_bertscore_f1", bertscore_f1, bertscore_f1_mean),
):
    register_aggregation(_name)(_mean)
    register_metric(
        metric=_name, higher_is_better=True, output_type="generate_until", aggregation=_name
    )(_metric)
