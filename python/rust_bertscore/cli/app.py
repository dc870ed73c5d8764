"""The ``rust-bertscore`` command (also ``python -m rust_bertscore``).

Subcommands: ``score`` (the default: ``rust-bertscore -c hyps.txt -r refs.txt`` as with
bert-score), ``show`` (heatmap of one pair), ``align`` (token alignment table of pairs),
``compare`` (systems against a baseline, with significance tests), ``report`` (the
same as an offline HTML page with buckets, segments and alignments), ``mbr`` (minimum Bayes risk
selection over lists of samples), ``serve`` (an HTTP scoring server), ``export`` (a checkpoint
as the scorer's ONNX graph), ``baseline`` (a rescale baseline from a corpus), ``models``
(bert_score's model table) and ``store`` (show or prune an embedding store).

Errors are one line on stderr: exit code 2 for bad arguments and inputs (a missing file, unequal
line counts, an unknown model, a layer out of range), 1 for other failures; ``-v`` adds the
traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import traceback
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from .._version import __version__
from . import align as cli_align
from . import compare as cli_compare
from . import mbr as cli_mbr
from . import models as cli_models
from . import report as cli_report
from . import score as cli_score
from . import serve as cli_serve
from . import store as cli_store
from .common import (
    EXIT_FAILURE,
    EXIT_USAGE,
    PROG,
    ArgumentParser,
    CliError,
    add_common_flags,
    add_line_flag,
    add_model_flags,
    add_revision_flag,
    debug,
    flag_words,
    info,
    one_line,
    positive_int,
    progress_bar,
    warning_line,
)
from .text_files import text_or_line

SUBCOMMANDS = (
    "score",
    "show",
    "align",
    "compare",
    "report",
    "mbr",
    "serve",
    "export",
    "baseline",
    "models",
    "store",
)

DESCRIPTION = """\
BERTScore from the shell, with bert-score's flags: a Rust kernel and an ONNX Runtime encoder,
no PyTorch. `score` is the default subcommand:

  rust-bertscore -c hyps.txt -r refs.txt            # = rust-bertscore score -c ... -r ...
"""

EPILOG = f"""\
Run `{PROG} SUBCOMMAND --help` for a subcommand's flags.
Exit codes: 0 ok, 1 failure, 2 bad arguments or inputs."""


# -- show -----------------------------------------------------------------------------------------


def _add_show(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "show",
        help="heatmap of the token similarities of one candidate/reference pair",
        description="Plot the similarity matrix of one candidate/reference pair as a heatmap "
        "(tokens on both axes, greedy matches marked, P/R/F1 in the title), as bert-score-show. "
        "Needs matplotlib: pip install rust-bertscore[plot].",
    )
    p.add_argument(
        "-c",
        "--cand",
        required=True,
        metavar="TEXT_OR_FILE",
        help="candidate sentence, or a file of one per line (see --line)",
    )
    p.add_argument(
        "-r",
        "--ref",
        required=True,
        metavar="TEXT_OR_FILE",
        help="reference sentence, or a file of one per line (see --line)",
    )
    add_line_flag(p)
    p.add_argument(
        "-f",
        "--file",
        "-o",
        "--output",
        dest="file",
        default="visualize.png",
        metavar="FILE",
        help="image to write (default: visualize.png)",
    )
    add_model_flags(p)
    p.add_argument("--rescale_with_baseline", action="store_true", help="rescale the matrix")
    p.add_argument("--baseline_path", metavar="FILE", help="a custom baseline file")
    add_common_flags(p)
    p.set_defaults(run=_run_show)


def _run_show(args: argparse.Namespace) -> int:
    from ..integrations.plot import plot_similarity, require_matplotlib, similarity_matrix

    try:
        require_matplotlib()
    except ImportError as e:
        raise CliError(str(e), EXIT_FAILURE) from None
    if args.baseline_path is not None and not os.path.isfile(args.baseline_path):
        raise CliError(f"baseline file {args.baseline_path}: no such file")
    cand = text_or_line(args.cand, "candidate", "-c", args.line)
    ref = text_or_line(args.ref, "reference", "-r", args.line)
    sim = similarity_matrix(
        cand,
        ref,
        model_type=args.model,
        revision=args.revision,
        num_layers=args.num_layers,
        lang=args.lang,
        rescale_with_baseline=args.rescale_with_baseline,
        baseline_path=args.baseline_path,
        device=args.device,
        precision=args.precision,
        runtime=args.runtime,
        use_fast_tokenizer=args.use_fast_tokenizer,
    )
    out = plot_similarity(sim, args.file)
    print(f"{sim.hash} P: {sim.P:.6f} R: {sim.R:.6f} F1: {sim.F:.6f}")
    info(args, f"Saved figure to file: {out}")
    return 0


# -- export ---------------------------------------------------------------------------------------


def _add_export(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "export",
        help="convert a checkpoint to the ONNX graph the scorer uses",
        description="Convert a checkpoint (Hugging Face id or directory) to the scorer's ONNX "
        "graph truncated at layer N, with its tokenizer files, config.json and <out>.json beside "
        "it. Then score with -m OUT (or model_type=OUT in Python).",
    )
    p.add_argument("model", metavar="MODEL", help="Hugging Face model id or checkpoint directory")
    add_revision_flag(p)
    p.add_argument(
        "-l",
        "--num_layers",
        type=int,
        default=None,
        help="layer whose output the graph returns (default: bert_score's tuned layer, else the "
        "last)",
    )
    p.add_argument("-o", "--output", required=True, metavar="OUT.onnx", help="graph to write")
    p.add_argument(
        "--precision",
        choices=("fp32", "fp16", "int8"),
        default="fp32",
        help="fp16 or int8 write the scorer's float16 or int8 graph (default: fp32)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="write into a directory that holds another model's config.json",
    )
    add_common_flags(p)
    p.set_defaults(run=_run_export)


def _run_export(args: argparse.Namespace) -> int:
    from ..models.export import export_model

    out = Path(args.output)
    debug(args, f"exporting {args.model} to {out} ...")
    result = export_model(
        args.model,
        out,
        args.num_layers,
        precision=args.precision,
        force=args.force,
        revision=args.revision,
    )
    size = out.stat().st_size / 1e6
    info(
        args,
        f"wrote {out} ({size:.1f} MB): layer {result.num_layers} of {result.depth}, "
        f"{result.precision}, with tokenizer and config.json in {out.parent}",
    )
    return 0


# -- baseline -------------------------------------------------------------------------------------


def _add_baseline(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "baseline",
        help="compute a rescale baseline from a corpus",
        description="Compute a rescale baseline with bert_score's recipe: the mean P, R and F of "
        "every layer over random pairs of corpus lines. Writes bert_score's LAYER,P,R,F file, "
        "ready for --baseline_path. The same corpus, --pairs and --seed give the same file.",
    )
    p.add_argument(
        "--corpus", required=True, metavar="FILE", help="one sentence per line (blank lines skip)"
    )
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="baseline file to write")
    p.add_argument("-m", "--model", default=None, help="model id, directory (default as score)")
    add_revision_flag(p)
    p.add_argument("--lang", default=None, help="language code: picks the model if no -m")
    p.add_argument(
        "--pairs", type=positive_int, default=20_000, help="random pairs to average (20000)"
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the pair sampler (0)")
    p.add_argument(
        "-b", "--batch_size", type=positive_int, default=64, help="texts per encoder call (64)"
    )
    p.add_argument("--device", default=None, help="cpu, cuda or cuda:N")
    add_common_flags(p)
    p.set_defaults(run=_run_baseline)


def _run_baseline(args: argparse.Namespace) -> int:
    from ..integrations.baseline_estimation import compute_baseline, corpus_lines
    from ..stages.rescale import write_baseline

    path = Path(args.corpus)
    try:
        with open(
            path, encoding="utf-8"
        ) as f:  # boundary-exempt: the user's corpus named on the command line (a pipe is fine)
            lines = corpus_lines(f)
    except FileNotFoundError:
        raise CliError(f"corpus file {path}: no such file") from None
    except IsADirectoryError:
        raise CliError(f"corpus file {path}: is a directory") from None
    except UnicodeDecodeError as e:
        raise CliError(f"corpus file {path}: not valid UTF-8 text ({e.reason})") from None
    if len(lines) < 2:
        raise CliError(f"corpus file {path}: needs at least 2 non-blank lines, has {len(lines)}")
    with progress_bar(args.pairs, desc="baseline", unit="pairs", quiet=args.quiet) as bar:
        table = compute_baseline(
            args.model,
            lines,
            pairs=args.pairs,
            seed=args.seed,
            batch_size=args.batch_size,
            device=args.device,
            lang=args.lang,
            progress=bar.update,
            revision=args.revision,
        )
    write_baseline(args.output, table)
    info(
        args,
        f"wrote {args.output}: layers 0..{len(table) - 1}, {args.pairs} pairs of "
        f"{len(lines)} lines, seed {args.seed}",
    )
    return 0


# -- entry point ----------------------------------------------------------------------------------


def build_parser() -> ArgumentParser:
    """The ``rust-bertscore`` parser with every subcommand."""
    parser = ArgumentParser(
        prog=PROG,
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(
        dest="command",
        metavar="{" + ",".join(SUBCOMMANDS) + "}",
        parser_class=ArgumentParser,
    )
    cli_score.add_parser(subparsers)
    _add_show(subparsers)
    cli_align.add_parser(subparsers)
    cli_compare.add_parser(subparsers)
    cli_report.add_parser(subparsers)
    cli_mbr.add_parser(subparsers)
    cli_serve.add_parser(subparsers)
    _add_export(subparsers)
    _add_baseline(subparsers)
    cli_models.add_parser(subparsers)
    cli_store.add_parser(subparsers)
    return parser


def _exit_code(error: BaseException) -> int:
    """2 for errors in what the user gave (arguments, files, model names), 1 for the rest."""
    if isinstance(error, CliError):
        return error.code
    if isinstance(error, (FileNotFoundError, IsADirectoryError, NotADirectoryError)):
        return EXIT_USAGE
    if isinstance(error, (ValueError, TypeError)):  # incl. unknown device, bad checkpoint
        return EXIT_USAGE
    return EXIT_FAILURE


def _message(error: BaseException) -> str:
    if isinstance(error, OSError) and error.filename and error.strerror:
        text = f"{error.filename}: {error.strerror}"
    else:
        text = str(error) or type(error).__name__
    if not isinstance(error, (CliError, ValueError, TypeError, OSError)):
        text = f"{type(error).__name__}: {text}"
    return flag_words(one_line(text))


# bert_score's generic empty-text warnings, said by line instead (Source.report_empty).
_EMPTY_TEXT = ("Warning: Empty candidate sentence", "Warning: Empty reference sentence")


def _warning_printer(args: argparse.Namespace) -> Callable[..., None]:
    """``warnings.showwarning`` for the command line: one line, no source line; bert_score's
    empty-text warnings are dropped where the subcommand names the empty lines itself
    (``args.empty_by_line``, set by ``score``)."""

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        text = str(message)
        if getattr(args, "empty_by_line", False) and text.startswith(_EMPTY_TEXT):
            return
        print(warning_line(text), file=sys.stderr if file is None else file, flush=True)

    return show


def _silence_stdout() -> None:
    """After a broken pipe (e.g. ``| head``), stop Python's own flush at exit from failing."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)  # boundary-exempt: opens os.devnull for writing
        os.dup2(devnull, sys.stdout.fileno())


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (0 ok, 1 failure, 2 bad usage or input)."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if not args_list:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    if args_list[0] not in SUBCOMMANDS and args_list[0] not in ("-h", "--help", "--version"):
        args_list.insert(0, "score")
    args, extra = parser.parse_known_args(args_list)
    if extra:
        prog = f"{PROG} {args.command}" if args.command else PROG
        print(
            f"{prog}: error: unrecognized arguments: {' '.join(extra)} (see {prog} --help)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    shown = warnings.showwarning
    warnings.showwarning = _warning_printer(args)
    try:
        return int(args.run(args))
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_FAILURE
    except Exception as error:
        if args.verbose:
            traceback.print_exc()
        print(f"{PROG}: error: {_message(error)}", file=sys.stderr)
        return _exit_code(error)
    finally:
        warnings.showwarning = shown


if __name__ == "__main__":
    raise SystemExit(main())
