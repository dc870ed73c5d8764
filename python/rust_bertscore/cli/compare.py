"""``rust-bertscore compare``: BERTScore of several systems over the same references, each
tested against the first (the baseline) by paired bootstrap resampling or paired approximate
randomisation, as sacrebleu's ``--paired-bs`` / ``--paired-ar`` tables."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from ..analyses.compare import DEFAULT_SEED, Comparison
from ..scoring.scorer import BERTScorer
from .common import (
    CliError,
    add_common_flags,
    add_model_and_scoring_groups,
    check_baseline,
    check_baseline_path,
    checked_number,
    debug,
    positive_int,
    scorer_options,
    scorer_settings,
)
from .text_files import read_lines

EPILOG = """\
examples:
  rust-bertscore compare -r refs.txt -c base.txt -c sysA.txt -c sysB.txt
  rust-bertscore compare -r refs.txt -c base.txt -c new.txt --paired-ar --lang en
  rust-bertscore compare -r refs.txt -c base.txt -c new.txt -n 10000 --format json

output (text): the test and its settings, the scorer's hash, then a row per system with the
  mean P, R and F1 and their bootstrap intervals; under every system but the first, its
  difference from the first (the baseline) and the two-sided p-value of "scores the same as
  the baseline", marked * when the system is significantly better (p < 0.05, delta > 0) and
  ! when it is significantly worse (p < 0.05, delta < 0); no mark: no significant difference.
  --paired-bs (default): paired bootstrap resampling (Koehn 2004), p twice the smaller tail;
  --paired-ar: paired approximate randomisation.
json: {"hash", "model", ..., "test", "seed", "baseline", "systems": [{"name", "P": {"mean",
  "ci_low", "ci_high", "delta", "delta_ci_low", "delta_ci_high", "p_value", "verdict"}, "R",
  "F1"}]}; verdict: "better", "worse" or "same";
tsv: a header and a row per system (the baseline's delta, p and verdict cells are empty).
"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``compare`` and return its parser."""
    p = subparsers.add_parser(
        "compare",
        help="compare systems against a baseline: intervals and paired significance tests",
        description="Score every candidate file against the same references and test each "
        "system against the first (the baseline): mean P/R/F1 with bootstrap intervals and "
        "paired p-values. Files hold one text per line, in step with the references.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_compare_flags(p)
    output = p.add_argument_group("output")
    output.add_argument(
        "--format",
        choices=("text", "json", "tsv"),
        default="text",
        help="output format (default: text, laid out as sacrebleu's paired tables)",
    )
    add_common_flags(output)
    p.set_defaults(run=run, test="paired-bs")
    return p


def add_compare_flags(p: argparse.ArgumentParser) -> None:
    """The input, test, model and scoring flags of ``compare`` (``report`` takes them too)."""
    inputs = p.add_argument_group("input")
    inputs.add_argument(
        "-r",
        "--ref",
        required=True,
        nargs="+",
        action="extend",
        metavar="FILE",
        help="reference file(s); several give each candidate several references",
    )
    inputs.add_argument(
        "-s",
        "--source",
        metavar="FILE",
        default=None,
        help="the source file, one line per segment (checked against the references; report "
        "shows each segment's source)",
    )
    inputs.add_argument(
        "-c",
        "--cand",
        required=True,
        action="append",
        metavar="FILE",
        help="a system's candidate file; repeat for every system, the baseline first",
    )
    tests = p.add_argument_group("test")
    which = tests.add_mutually_exclusive_group()
    which.add_argument(
        "--paired-bs",
        dest="test",
        action="store_const",
        const="paired-bs",
        help="paired bootstrap resampling (the default)",
    )
    which.add_argument(
        "--paired-ar",
        dest="test",
        action="store_const",
        const="paired-ar",
        help="paired approximate randomisation",
    )
    tests.add_argument(
        "-n",
        "--n-samples",
        type=positive_int,
        default=None,
        metavar="N",
        help="bootstrap resamples (paired-bs, 1000) or randomisation trials (paired-ar, 10000)",
    )
    tests.add_argument(
        "--seed",
        type=_seed,
        default=DEFAULT_SEED,
        help=f"seed of the resamples and trials ({DEFAULT_SEED}); the same seed gives the same "
        "table",
    )
    tests.add_argument(
        "--confidence",
        type=_confidence,
        default=0.95,
        help="coverage of the intervals, in (0, 1) (0.95)",
    )
    add_model_and_scoring_groups(
        p,
        batch_size_help="pairs per batch, as score (64)",
        batch_independent_help="score every pair on its own, without bert_score's batch "
        "padding floor",
    )


def _seed(text: str) -> int:
    return checked_number(
        text, int, lambda v: 0 <= v < 2**64, "an integer seed", "a seed in [0, 2**64)"
    )


def _confidence(text: str) -> float:
    return checked_number(
        text,
        float,
        lambda v: 0.0 < v < 1.0,
        "a number in (0, 1)",
        "a number strictly between 0 and 1",
        echo_text=True,
    )


def read_inputs(
    cand_files: list[str], ref_files: list[str]
) -> tuple[dict[str, list[str]], list[str] | list[list[str]]]:
    """The systems' candidates (keyed by file name, as given) and the references, checked: at
    least two distinct systems, every file as long as the first reference file."""
    if len(cand_files) < 2:
        raise CliError(
            f"compare needs at least 2 systems (a baseline and one more): give -c at least "
            f"twice, got {len(cand_files)}"
        )
    seen: set[str] = set()
    for name in cand_files:
        if name in seen:
            raise CliError(f"candidate file {name} given twice: every system needs its own -c")
        seen.add(name)
    ref_lists = [read_lines(Path(r)) for r in ref_files]
    n = len(ref_lists[0])
    if n < 2:
        raise CliError(f"{ref_files[0]}: {n} line(s), the tests need at least 2 segments")
    for path, lines in zip(ref_files[1:], ref_lists[1:]):
        if len(lines) != n:
            raise CliError(
                f"{path} has {len(lines)} lines but {ref_files[0]} has {n}: every reference "
                "file needs one line per segment"
            )
    systems: dict[str, list[str]] = {}
    for path in cand_files:
        lines = read_lines(Path(path))
        if len(lines) != n:
            raise CliError(
                f"{path} has {len(lines)} lines but the references ({ref_files[0]}) have {n}: "
                "every system needs one candidate per reference line"
            )
        systems[path] = lines
    refs: list[str] | list[list[str]] = (
        ref_lists[0] if len(ref_lists) == 1 else [list(group) for group in zip(*ref_lists)]
    )
    return systems, refs


def read_sources(path: str | None, ref_file: str, n: int) -> list[str] | None:
    """The source file's lines (None when not given), checked: one per reference line."""
    if path is None:
        return None
    lines = read_lines(Path(path))
    if len(lines) != n:
        raise CliError(
            f"--source {path} has {len(lines)} lines but the references ({ref_file}) have {n}: "
            "the source file needs one line per segment"
        )
    return lines


def run(args: argparse.Namespace) -> int:
    """Score the systems, run the test, write the table; returns the exit code."""
    systems, refs = read_inputs(args.cand, args.ref)
    read_sources(args.source, args.ref[0], len(refs))
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
    table = scorer.compare(
        systems,
        refs,
        test=args.test,
        n_samples=args.n_samples,
        seed=args.seed,
        confidence=args.confidence,
        batch_size=args.batch_size,
    )
    debug(args, f"scored and tested {len(systems)} systems in {time.perf_counter() - start:.2f} s")
    if args.format == "json":
        doc = {**scorer_settings(scorer), **table.to_dict()}
        sys.stdout.write(json.dumps(doc, ensure_ascii=False, indent=1) + "\n")
    elif args.format == "tsv":
        sys.stdout.write(table.format_tsv())
    else:
        sys.stdout.write(table.format_text())
    return 0


__all__ = ["Comparison", "add_compare_flags", "add_parser", "read_inputs", "read_sources", "run"]
