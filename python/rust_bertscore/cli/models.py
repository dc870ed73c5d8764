"""``rust-bertscore models``: bert_score's model table, with what this version converts."""

from __future__ import annotations

import argparse
import json
import sys

from ..catalog.listing import BERT_SCORE_MODEL_COUNT, ModelInfo, model_info, supported_models
from ..catalog.registry import DEFAULT_MODEL
from ..models.files import offline_source
from .common import add_common_flags, info

DEFAULT_ROW = model_info(DEFAULT_MODEL)
"""The package's default model, listed first (it is not in bert_score's table)."""


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register the ``models`` subcommand."""
    p = subparsers.add_parser(
        "models",
        help="list bert_score's models: family, default layer, whether this version converts it",
        description="List the default model, then the 140 models of bert_score's tuned-layer "
        "table (model2layers), with their family (config.json model_type), bert_score's default "
        "layer, whether this version converts them, and whether their files are here without a "
        "download (offline: the default model's package or the Hugging Face cache). The last "
        "line counts the convertible ones.",
    )
    p.add_argument(
        "--format",
        choices=("text", "json", "tsv"),
        default="text",
        help="output format (default: text, an aligned table)",
    )
    p.add_argument(
        "--convertible", action="store_true", help="list only the models this version converts"
    )
    p.add_argument(
        "--beyond-table",
        action="store_true",
        help="also list the models this version converts beyond bert_score's table "
        "(ModernBERT, Qwen3-Embedding, EmbeddingGemma, nomic-embed-text)",
    )
    explain = p.add_argument_group("the fast path (precision='fast')")
    explain.add_argument(
        "--explain",
        action="store_true",
        help="instead of the listing: the CPU's deciding flags and, for --model, the path "
        "precision='fast' runs on this host with each path's measured speed against fp32 and "
        "mean |dF| (measured now unless cached: seconds)",
    )
    explain.add_argument(
        "-m", "--model", default=None, help="the model for --explain (default: the default model)"
    )
    explain.add_argument(
        "--num_layers", type=int, default=None, help="its layer (default: its tuned layer)"
    )
    add_common_flags(p)
    p.set_defaults(run=run)


def explain(args: argparse.Namespace) -> int:
    """Print the host's deciding flags and the fast path of ``args.model``."""
    from ..models.fast_path import DECIDING_FLAGS, read_host, slowdown_warning
    from ..scoring.fast_measure import choose_fast_path
    from ..scoring.scorer import BERTScorer

    host = read_host()
    out = sys.stdout
    out.write(f"CPU: {host.model}, {host.cpus} CPUs\n")
    for precision, flags in DECIDING_FLAGS.items():
        has = ", ".join(f"{f} {'yes' if f in host.flags else 'no'}" for f in flags)
        note = slowdown_warning(precision, host)
        out.write(f"{precision}: {has}{'' if note is None else ' (likely slower than fp32)'}\n")
    model = args.model or DEFAULT_MODEL
    choice = choose_fast_path(model, args.num_layers, BERTScorer)
    out.write(f"precision='fast' for {model} (layer {args.num_layers or 'tuned'}):\n")
    for line in choice.explain():
        out.write(f"  {line}\n")
    return 0


def _count_line(models: list[ModelInfo]) -> str:
    n = sum(m.convertible for m in models if m.in_bert_score)
    beyond = sum(m.convertible for m in models if not m.in_bert_score)
    extra = f", and {beyond} beyond bert_score's table" if beyond else ""
    return f"{n} of {BERT_SCORE_MODEL_COUNT} convertible{extra}"


def run(args: argparse.Namespace) -> int:
    """Print the listing in ``args.format`` (or, with ``--explain``, the fast path)."""
    if args.explain:
        return explain(args)
    models = supported_models(beyond_table=args.beyond_table)
    shown = [DEFAULT_ROW, *(m for m in models if m.convertible or not args.convertible)]
    offline = {m.name: offline_source(m.name) is not None for m in shown}
    out = sys.stdout
    if args.format == "json":
        payload = {
            "default": DEFAULT_MODEL,
            "models": [{**m.to_dict(), "offline": offline[m.name]} for m in shown],
            "convertible": sum(m.convertible for m in models if m.in_bert_score),
            "total": BERT_SCORE_MODEL_COUNT,
        }
        json.dump(payload, out, indent=2)
        out.write("\n")
        return 0
    if args.format == "tsv":
        out.write("name\tmodel_type\tdefault_layer\tconvertible\toffline\tnote\n")
        for m in shown:
            out.write(
                f"{m.name}\t{m.model_type}\t{m.default_layer}\t{str(m.convertible).lower()}\t"
                f"{str(offline[m.name]).lower()}\t{m.note}\n"
            )
        info(args, _count_line(models))
        return 0
    width = max([len("model"), *(len(m.name) for m in shown)])
    family = max([len("family"), *(len(str(m.model_type)) for m in shown)])
    out.write(f"{'model':<{width}}  {'family':<{family}}  layer  offline  converts\n")
    for m in shown:
        mark = "yes" if m.convertible else f"no: {m.note}"
        if m.convertible and not m.in_bert_score:
            mark = f"yes ({m.note})"
        here = "yes" if offline[m.name] else "-"
        out.write(
            f"{m.name:<{width}}  {m.model_type!s:<{family}}  {m.default_layer!s:>5}  {here:<7}  "
            f"{mark}\n"
        )
    out.write(_count_line(models) + "\n")
    if not args.beyond_table:
        beyond = [m.name for m in supported_models(beyond_table=True) if not m.in_bert_score]
        if beyond:
            out.write(f"also convertible beyond the table: {', '.join(beyond)} (--beyond-table)\n")
    return 0
