"""``rust-bertscore report``: ``compare``'s systems table and everything behind it (distributions,
buckets, every segment and its token alignment) as one self-contained HTML file that opens
offline."""

from __future__ import annotations

import argparse
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
from .compare import add_compare_flags, read_inputs

EPILOG = """\
examples:
  rust-bertscore report -r refs.txt -c base.txt -c new.txt -o report.html
  rust-bertscore report -r refs.txt -c base.txt -c a.txt -c b.txt --paired-ar --title "WMT en-de"

The page holds the signature, the input files, compare's table (the same figures for the same
flags), histograms of F1 and of the difference from the baseline, buckets by reference length
and by the baseline's F1 with intervals, a sortable and searchable table of every segment, and
each segment's token alignment (align's tokens and cosines) with its best-match heatmap. It
loads nothing from the network: mail it, attach it, open it from disk. See docs/report.md.
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


def run(args: argparse.Namespace) -> int:
    """Score, test and align the systems, write the page; returns the exit code."""
    out = Path(args.output)
    if out.is_dir():
        raise CliError(f"--output {out} is a directory: give the HTML file to write")
    if not out.parent.is_dir():
        raise CliError(f"--output {out}: the folder {out.parent} does not exist")
    systems, refs = read_inputs(args.cand, args.ref)
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
    inputs = [("references", r, len(refs)) for r in args.ref] + [
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
    )
    debug(args, f"scored, tested and aligned in {time.perf_counter() - start:.2f} s")
    info(args, f"wrote {out} ({out.stat().st_size / 1e6:.2f} MB)")
    return 0


__all__ = ["add_parser", "run"]
