"""Integrations: code above the scorer that ties it to other tools.

* ``plot``: bert_score's ``plot_example`` and ``similarity_matrix`` from model settings
  (matplotlib, imported when a figure is drawn);
* ``hf_evaluate`` and ``evaluate_metric/``: the Hugging Face ``evaluate`` module;
* ``baseline_estimation``: a rescale baseline computed with the scorer.
* ``torchmetrics``, ``lighteval``, ``lm_eval``: the evaluation-harness adapters on
  :class:`~rust_bertscore.BERTScoreMetric` (extras ``[torchmetrics]``, ``[lighteval]``,
  ``[lm-eval]``; each imports its harness, and raises ``ImportError`` naming the extra
  without it).

``rust_bertscore.cli`` and ``rust_bertscore.distributed`` (Ray, Spark) are integrations too,
packages of their own. Integrations import the scorer; nothing below them imports an
integration (``tests/test_layout.py``). This ``__init__`` imports nothing.
"""
