"""``rust-bertscore report``: ``compare``'s systems table and everything behind it (distributions,
buckets, every segment and its token alignment) as one self-contained HTML file that opens
offline."""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

from ..scoring.scorer import BERTScorer
from .common import (
    CliError,
    add_common_flags,
    check_baseline,
    check_baseline_path,
    debug,
    info,
    scorer_options,
)
from .compare import add_compare_flags, read_inputs, read_sources

EPILOG = """\
examples:
  rust-bertscore report -r refs.txt -c base.txt -c new.txt -o report.html
  rust-bertscore report -r refs.txt -c base.txt -c a.txt -c b.txt --paired-ar --title "WMT en-de"
  rust-bertscore report -s src.txt -r refs.txt -c base.txt -c new.txt -o report.html \
      --length-buckets 10,20,40 --score-buckets 0.8,0.9

The page holds the signature, the input files, compare's table (the same figures for the same
flags), histograms of F1 and of the difference from the baseline, buckets by reference length
and by the baseline's F1 with intervals, a sortable and searchable table of every segment, and
each segment's token alignment (align's tokens and cosines) with its best-match heatmap, and
per system the recall of reference tokens by frequency and the tokens most often matched
poorly. Buckets: --length-buckets / --score-buckets take ascending thresholds as compare-mt's
bucket_cutoffs (10,20,40: 0-9, 10-19, 20-39, 40+ tokens; 0.8,0.9: <0.8, 0.8-0.9, >=0.9); by
default 0-10, 11-20, 21-30, 31-40, 41-60, 61+ and the baseline's quintiles. It loads nothing
from the network: mail it, attach it, open it from disk. See docs/report.md.
"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``report`` and return its parser."""
    p = subparsers.add_parser(
        "report",
        help="an HTML comparison report: compare's table, buckets, segments and alignments",
        description="Score every candidate file against the same references, test each system "
        "against the first (the baseline) as compare does, and write one self-contained HTML "
        "page with the table, distributions, buckets, every segment and its token alignment.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_compare_flags(p)
    views = p.add_argument_group("buckets")
    views.add_argument(
        "--length-buckets",
        type=length_cutoffs,
        default=None,
        metavar="N,N,...",
        help="ascending reference-length thresholds in tokens, e.g. 10,20,40 "
        "(default: 11,21,31,41,61)",
    )
    views.add_argument(
        "--score-buckets",
        type=score_cutoffs,
        default=None,
        metavar="X,X,...",
        help="ascending thresholds of the baseline's F1, e.g. 0.8,0.9 (default: its quintiles)",
    )
    output = p.add_argument_group("output")
    output.add_argument(
        "-o", "--output", required=True, metavar="FILE", help="the HTML file to write"
    )
    output.add_argument(
        "--title", default="BERTScore comparison", help="the page's title (BERTScore comparison)"
    )
    add_common_flags(output)
    p.set_defaults(run=run, test="paired-bs")
    return p


def _cutoffs(text: str, convert: type[int] | type[float], what: str) -> list[float]:
    """argparse's work for a comma-separated list of ascending thresholds."""
    items = [t.strip() for t in text.split(",")]
    if not text.strip() or any(not t for t in items):
        raise argparse.ArgumentTypeError(f"expected comma-separated {what}, got {text!r}")
    values: list[float] = []
    for t in items:
        try:
            value = convert(t)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {t!r} in {text!r}") from None
        if not math.isfinite(value) or (convert is int and value < 1):
            raise argparse.ArgumentTypeError(f"expected {what}, got {t!r} in {text!r}")
        if values and not values[-1] < value:
            raise argparse.ArgumentTypeError(
                f"thresholds must be in ascending order, got {values[-1]:g} before {value:g} "
                f"in {text!r}"
            )
        values.append(value)
    return values


def length_cutoffs(text: str) -> list[int]:
    """argparse type of ``--length-buckets``: ascending whole numbers >= 1, comma-separated."""
    return [int(v) for v in _cutoffs(text, int, "whole numbers >= 1")]


def score_cutoffs(text: str) -> list[float]:
    """argparse type of ``--score-buckets``: ascending finite numbers, comma-separated."""
    return _cutoffs(text, float, "numbers")


def run(args: argparse.Namespace) -> int:
    """Score, test and align the systems, write the page; returns the exit code."""
    out = Path(args.output)
    if out.is_dir():
        raise CliError(f"--output {out} is a directory: give the HTML file to write")
    if not out.parent.is_dir():
        raise CliError(f"--output {out}: the folder {out.parent} does not exist")
    systems, refs = read_inputs(args.cand, args.ref)
    sources = read_sources(args.source, args.ref[0], len(refs))
    check_baseline_path(args)
    flat_refs = [r for group in refs for r in ([group] if isinstance(group, str) else group)]
    start = time.perf_counter()
    scorer = BERTScorer(
        **scorer_options(args),
        idf_sents=flat_refs if args.idf else None,
        batch_independent=args.batch_independent,
    )
    check_baseline(args, scorer)
    debug(args, f"model {scorer.model_type}, layer {scorer.num_layers}, {scorer.precision}")
    inputs = [("source", args.source, len(refs))] if args.source is not None else []
    inputs += [("references", r, len(refs)) for r in args.ref] + [
        ("baseline" if k == 0 else "system", c, len(refs)) for k, c in enumerate(args.cand)
    ]
    scorer.report(
        systems,
        refs,
        out,
        test=args.test,
        n_samples=args.n_samples,
        seed=args.seed,
        confidence=args.confidence,
        batch_size=args.batch_size,
        title=args.title,
        inputs=inputs,
        sources=sources,
        length_cutoffs=args.length_buckets,
        score_cutoffs=args.score_buckets,
    )
    debug(args, f"scored, tested and aligned in {time.perf_counter() - start:.2f} s")
    info(args, f"wrote {out} ({out.stat().st_size / 1e6:.2f} MB)")
    return 0


__all__ = ["add_parser", "length_cutoffs", "run", "score_cutoffs"]
