"""``rust_bertscore.hf_evaluate``: the names of :mod:`rust_bertscore.integrations.hf_evaluate`,
where the Hugging Face ``evaluate`` integration lives."""

from __future__ import annotations

from .integrations.hf_evaluate import METRIC_SCRIPT, EvaluateBackend, evaluate_module

__all__ = ["METRIC_SCRIPT", "EvaluateBackend", "evaluate_module"]
