"""``rust-bertscore mbr``: minimum Bayes risk selection over lists of samples (JSONL).

Each input line is a JSON list of strings (the samples of one source), or an object whose
``--field`` (default ``samples``) is that list. Each output line is a JSON object: ``index``
(the chosen sample's position), ``sample`` (its text) and ``utilities`` (each sample's mean F
against the others; null for a lone sample), plus ``line`` (the input line number).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path

from .common import (
    CliError,
    add_common_flags,
    add_model_flags,
    add_store_flag,
    check_baseline,
    check_baseline_path,
    debug,
    positive_int,
    progress_bar,
)

SOURCES_PER_ROUND = 256
"""Input lines selected per call of ``BERTScorer.mbr_batch``."""

EPILOG = """\
examples:
  rust-bertscore mbr samples.jsonl > chosen.jsonl
  rust-bertscore mbr samples.jsonl --field hyps --store ~/.cache/mbr-store -m roberta-large

input: one JSON list of strings per line, or an object with the list in --field.
output: one JSON object per input line: {"line", "index", "sample", "utilities"}. The
  utility of a sample is its mean F1 against every other sample of its line; ties go to the
  lowest index; a lone sample is chosen with utility null.
"""


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register the ``mbr`` subcommand."""
    p = subparsers.add_parser(
        "mbr",
        help="pick the sample of highest expected BERTScore among a list (MBR), per line",
        description="Minimum Bayes risk selection: for each line of samples, the sample with "
        "the highest mean F1 against the others.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("input", metavar="FILE", help="JSONL file of sample lists ('-' for stdin)")
    p.add_argument(
        "--field", default="samples", metavar="NAME", help="list field of object lines (samples)"
    )
    model = p.add_argument_group("model")
    add_model_flags(model)
    model.add_argument(
        "-b", "--batch_size", type=positive_int, default=64, help="texts per encoder call (64)"
    )
    scoring = p.add_argument_group("scoring")
    scoring.add_argument(
        "--rescale_with_baseline",
        action="store_true",
        help="rescale F with the baseline of the model and --lang (does not change the choice)",
    )
    scoring.add_argument("--baseline_path", metavar="FILE", help="a custom baseline file")
    add_store_flag(scoring)
    add_common_flags(p)
    p.set_defaults(run=run)


def _samples(line: str, where: str, field: str) -> list[str]:
    try:
        value = json.loads(line)
    except (ValueError, RecursionError) as e:  # RecursionError: nesting past the stack
        raise CliError(f"{where}: not valid JSON ({str(e)[:120]})") from None
    if isinstance(value, dict):
        if field not in value:
            raise CliError(f"{where}: no field {field!r} (fields: {', '.join(value)})")
        value = value[field]
    if not isinstance(value, list) or not value:
        raise CliError(f"{where}: expected a non-empty list of strings")
    for k, item in enumerate(value):
        if not isinstance(item, str):
            raise CliError(f"{where}: sample {k} is {type(item).__name__}, not a string")
    return value


def read_lines(path: str, field: str) -> Iterator[tuple[int, list[str]]]:
    """``(line number, samples)`` of every non-blank line."""
    name = "<stdin>" if path == "-" else path
    try:
        # boundary-exempt: the user's text stream (a pipe is fine)
        stream = sys.stdin if path == "-" else open(Path(path), encoding="utf-8")  # noqa: SIM115
    except FileNotFoundError:
        raise CliError(f"input file {path}: no such file") from None
    except IsADirectoryError:
        raise CliError(f"input file {path}: is a directory") from None
    try:
        for number, line in enumerate(stream, start=1):
            if line.strip():
                yield number, _samples(line, f"{name}:{number}", field)
    except UnicodeDecodeError as e:
        raise CliError(f"input file {name}: not valid UTF-8 text ({e.reason})") from None
    finally:
        if stream is not sys.stdin:
            stream.close()


def run(args: argparse.Namespace) -> int:
    from ..scoring.scorer import BERTScorer

    check_baseline_path(args)
    scorer = BERTScorer(
        model_type=args.model,
        revision=args.revision,
        num_layers=args.num_layers,
        batch_size=args.batch_size,
        device=args.device,
        lang=args.lang,
        rescale_with_baseline=args.rescale_with_baseline,
        baseline_path=args.baseline_path,
        precision=args.precision,
        runtime=args.runtime,
        batch_independent=True,
        store=args.store,
    )
    check_baseline(args, scorer)
    debug(args, f"model {scorer.model_type}, layer {scorer.num_layers}, {scorer.precision}")
    pending: list[tuple[int, list[str]]] = []

    def flush() -> None:
        results = scorer.mbr_batch([samples for _, samples in pending])
        out = []
        for (number, _), result in zip(pending, results):
            out.append(json.dumps({"line": number, **result.as_dict()}, ensure_ascii=False))
        sys.stdout.write("\n".join(out) + "\n")
        sys.stdout.flush()
        bar.update(len(pending))
        pending.clear()

    with progress_bar(None, desc="mbr", unit="lines", quiet=args.quiet) as bar:
        for item in read_lines(args.input, args.field):
            pending.append(item)
            if len(pending) >= SOURCES_PER_ROUND:
                flush()
        if pending:
            flush()
    return 0
