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

Several references per document (``doc_to_target`` a list): lm_eval's multiple-target path calls
a metric once per reference and keeps ``1.0 if any(scores) else 0.0``, which cannot carry a
score. :func:`multi_reference_results` builds the task's ``process_results`` instead, which
passes each document's list through: each candidate gets its best reference, as bert_score.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
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
    bad = next((i for i, item in enumerate(items) if not _is_item(item)), None)
    if bad is not None:
        raise InputValueError(
            f"item {bad} is {items[bad]!r}, not a BERTScore item (reference, prediction, "
            "options): with a list of references per document (doc_to_target a list), lm_eval's "
            "multiple-target path keeps 1.0 if any reference scores else 0.0 in place of the "
            "item; give the task process_results: !function utils.process_results, made by "
            "rust_bertscore.integrations.lm_eval.multi_reference_results (docs/integrations.md)"
        )
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


def _is_item(item: Any) -> bool:
    return isinstance(item, (tuple, list)) and len(item) == 3 and isinstance(item[2], str)


_NAMES = {
    "precision": "rust_bertscore_precision",
    "recall": "rust_bertscore_recall",
    "f1": "rust_bertscore_f1",
}


def multi_reference_results(
    references: str | Callable[[Mapping[str, Any]], Any],
    metrics: Sequence[str] = ("precision", "recall", "f1"),
    **options: Any,
) -> Callable[[Mapping[str, Any], Sequence[Any]], dict[str, Any]]:
    """A task's ``process_results`` that scores each generation against all of its document's
    references (the best one counts, as in bert_score), for the metrics ``rust_bertscore_*``.

    lm_eval calls a task's ``process_results`` in place of its own per-metric calls, so the
    BERTScorer options go here (lm_eval drops a ``metric_list`` entry's other keys when a task
    has ``process_results``), and the task's ``metric_list`` names the same metrics, with no
    options: ``- metric: rust_bertscore_f1``, ... (their aggregations are registered here).

    Parameters
    ----------
    references : str or callable
        The document's field holding its references (a list of str, or one str), or a function
        of the document that returns them.
    metrics : sequence of str
        Which of ``"precision"``, ``"recall"``, ``"f1"`` the task's ``metric_list`` names.
    **options
        :class:`~rust_bertscore.BERTScorer` options (``model_type``, ``idf``, ...).

    Examples
    --------
    >>> from rust_bertscore.integrations.lm_eval import bertscore_f1_mean, multi_reference_results
    >>> process_results = multi_reference_results("refs", metrics=["f1"])
    >>> doc = {"refs": ["A cat was sitting on the mat.", "Dogs run."]}
    >>> out = process_results(doc, ["The cat sat on the mat."])
    >>> list(out), round(bertscore_f1_mean([out["rust_bertscore_f1"]]), 3)
    (['rust_bertscore_f1'], 0.907)
    """
    unknown = [m for m in metrics if m not in _NAMES]
    if unknown or not metrics:
        raise InputValueError(f"metrics={list(metrics)!r}: name one or more of {sorted(_NAMES)}")
    if not (isinstance(references, str) or callable(references)):
        raise InputTypeError(
            "references must be the document's field name or a function of the document, got "
            f"{type(references).__name__}"
        )
    _item(["x"], ["x"], options)  # the options are plain YAML values (raises here if not)
    return functools.partial(_multi_reference_item, references, tuple(metrics), options)


def _multi_reference_item(
    references: str | Callable[[Mapping[str, Any]], Any],
    metrics: tuple[str, ...],
    options: dict[str, Any],
    doc: Mapping[str, Any],
    results: Sequence[Any],
) -> dict[str, Any]:
    if isinstance(references, str):
        if references not in doc:
            raise InputValueError(
                f"the document has no field {references!r} (its fields: {sorted(doc)})"
            )
        gold = doc[references]
    else:
        gold = references(doc)
    group = _group(gold)
    if not group:
        raise InputValueError("a document with no reference: each needs one")
    item = _item([group], list(results[:1]), options)
    return {_NAMES[m]: item for m in metrics}


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
