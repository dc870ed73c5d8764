"""Pieces shared by the ``rust-bertscore`` subcommands: the usage error, argument types, flags
every subcommand takes, and the progress bar.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from ..scoring.scorer import BERTScorer

from ..stages.options import LONG_TEXT_MODES, OPTION_NAMES

PROG = "rust-bertscore"

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2


class CliError(Exception):
    """A failure to report as one line on stderr, with the exit code to end with.

    Parameters
    ----------
    message : str
        What went wrong, naming the file, line or value.
    code : int
        :data:`EXIT_USAGE` (2) for bad arguments and inputs, :data:`EXIT_FAILURE` (1) for the rest.
    """

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


class ArgumentParser(argparse.ArgumentParser):
    """An argparse parser whose errors are one line on stderr (exit code 2), not usage + error."""

    def error(self, message: str) -> Any:  # argparse declares NoReturn
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


_N = TypeVar("_N", int, float)


def checked_number(
    text: str,
    convert: Callable[[str], _N],
    valid: Callable[[_N], bool],
    unparsed: str,
    invalid: str,
    *,
    echo_text: bool = False,
) -> _N:
    """An argparse type's work: ``convert(text)``, else "expected {unparsed}, got 'text'"; a
    value not ``valid`` gives "expected {invalid}, got value" (the text with ``echo_text``)."""
    try:
        value = convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {unparsed}, got {text!r}") from None
    if not valid(value):
        raise argparse.ArgumentTypeError(f"expected {invalid}, got {text if echo_text else value}")
    return value


def positive_int(text: str) -> int:
    """argparse type: an int >= 1."""
    return checked_number(text, int, lambda v: v >= 1, "a positive integer", "a positive integer")


def layer_int(text: str) -> int:
    """argparse type: an int >= 0 (0 = the embeddings)."""
    return checked_number(text, int, lambda v: v >= 0, "a layer number", "a layer number >= 0")


def add_line_flag(parser: argparse._ActionsContainer) -> None:
    """``--line N``: which line of a ``-c``/``-r`` file ``align`` and ``show`` take."""
    parser.add_argument(
        "--line",
        type=positive_int,
        default=None,
        metavar="N",
        help="when -c/-r name files (one text per line), take line N of each (1-based; "
        "needed when a file has several lines)",
    )


def add_common_flags(parser: argparse._ActionsContainer) -> None:
    """``-v/--verbose`` and ``-q/--quiet``, taken by every subcommand."""
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="say more on stderr (model, layer, timing) and show a traceback on errors",
    )
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress bar or messages on stderr (errors and warnings still show)",
    )


def add_revision_flag(parser: argparse._ActionsContainer) -> None:
    """``--revision REV``: the Hub branch, tag or commit of the model."""
    parser.add_argument(
        "--revision",
        default=None,
        metavar="REV",
        help="Hugging Face Hub branch, tag or commit hash of the model (default: main); not "
        "for a local directory or .onnx file",
    )


def add_model_flags(parser: argparse._ActionsContainer, *, precision: bool = True) -> None:
    """``--lang``, ``-m/--model``, ``--revision``, ``-l/--num_layers``, ``--device``,
    ``--precision`` and ``--runtime``."""
    parser.add_argument(
        "--lang",
        default=None,
        help="language code (e.g. en, zh): picks bert_score's model and rescale baseline",
    )
    parser.add_argument(
        "-m",
        "--model",
        default=None,
        help="Hugging Face model id, checkpoint directory or exported .onnx file "
        "(default: the --lang model, else sentence-transformers/all-MiniLM-L6-v2)",
    )
    add_revision_flag(parser)
    parser.add_argument(
        "-l",
        "--num_layers",
        type=layer_int,
        default=None,
        help="layer whose output is used (default: bert_score's tuned layer, else the last)",
    )
    parser.add_argument(
        "--device", default=None, help="cpu, cuda or cuda:N (default: CUDA when available)"
    )
    parser.add_argument(
        "--use_fast_tokenizer",
        action="store_true",
        help="tokenise with the model's fast tokenizer (tokenizer.json), as bert-score's flag",
    )
    if precision:
        parser.add_argument(
            "--precision",
            choices=("fp32", "tf32", "fp16", "int8", "bf16", "fast"),
            default="fp32",
            help="encoder precision: fp32 (on CUDA without TF32), tf32 (CUDA's TF32 GEMMs), "
            "fp16 (float16 graph, float32 norms), int8 (projections per token), bf16 "
            "(openvino, on a CPU with BF16), fast (the fastest CPU path of this host within "
            "mean |dF| 0.002 of fp32, measured once and cached: rust-bertscore models "
            "--explain shows it); default fp32",
        )
        parser.add_argument(
            "--runtime",
            choices=("auto", "onnxruntime", "openvino"),
            default="auto",
            help="what runs the encoder: auto (default: onnxruntime, and openvino for int8 and "
            "bf16 on a CPU where it is installed and capable), onnxruntime (bert_score's "
            "numbers) or openvino (CPU only: fp32, bf16, int8; pip install "
            "'rust-bertscore[openvino]')",
        )


def add_scoring_flags(parser: argparse._ActionsContainer, *, batch_independent_help: str) -> None:
    """``--idf``, ``--batch-independent``, ``--rescale_with_baseline`` and ``--baseline_path``."""
    parser.add_argument(
        "--idf", action="store_true", help="weight tokens by IDF over the references"
    )
    parser.add_argument("--batch-independent", action="store_true", help=batch_independent_help)
    parser.add_argument(
        "--rescale_with_baseline",
        action="store_true",
        help="rescale scores with the baseline of the model and --lang (or --baseline_path)",
    )
    parser.add_argument(
        "--baseline_path", metavar="FILE", help="a custom baseline file (LAYER,P,R,F)"
    )
    add_store_flag(parser)


def add_store_flag(parser: argparse._ActionsContainer) -> None:
    """``--store DIR``: the persistent embedding store."""
    parser.add_argument(
        "--store",
        metavar="DIR",
        default=None,
        help="keep token vectors in DIR across runs and processes: texts found there are not "
        "encoded again (same numbers; see `rust-bertscore store`)",
    )


def add_model_and_scoring_groups(
    parser: argparse.ArgumentParser, *, batch_size_help: str, batch_independent_help: str
) -> None:
    """The "model" group (:func:`add_model_flags` and ``-b/--batch_size``, default 64) and the
    "scoring" group (:func:`add_scoring_flags`) of the subcommands that score files."""
    model = parser.add_argument_group("model")
    add_model_flags(model)
    model.add_argument("-b", "--batch_size", type=positive_int, default=64, help=batch_size_help)
    scoring = parser.add_argument_group("scoring")
    add_scoring_flags(scoring, batch_independent_help=batch_independent_help)
    add_option_flags(parser.add_argument_group("long texts and metric options"))


def positive_float(text: str) -> float:
    """argparse type: a finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not (value > 0 and value != float("inf")):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def add_option_flags(parser: argparse._ActionsContainer) -> None:
    """``--long-texts``, ``--window-stride``, ``--exclude-punctuation``,
    ``--exclude-special-tokens`` and ``--beta``
    (``rust_bertscore.stages.options.ScoringOptions``)."""
    parser.add_argument(
        "--long-texts",
        choices=LONG_TEXT_MODES,
        default="truncate",
        help="texts longer than the model takes: cut them (truncate, bert_score's numbers) or "
        "score every token with sliding windows (window)",
    )
    parser.add_argument(
        "--window-stride",
        type=positive_int,
        default=None,
        metavar="N",
        help="with --long-texts window: content tokens between window starts (half a window)",
    )
    parser.add_argument(
        "--exclude-punctuation",
        action="store_true",
        help="leave tokens made only of punctuation out of matching",
    )
    parser.add_argument(
        "--exclude-special-tokens",
        action="store_true",
        help="leave the special tokens ([CLS], [SEP], </s>, ...) out of matching",
    )
    parser.add_argument(
        "--beta",
        type=positive_float,
        default=1.0,
        metavar="B",
        help="F is (1 + B^2) P R / (B^2 P + R) (default 1: F1)",
    )


def check_baseline_path(args: argparse.Namespace) -> None:
    """A usage error unless ``--baseline_path`` (when given) is a file."""
    if args.baseline_path is not None and not os.path.isfile(args.baseline_path):
        raise CliError(f"baseline file {args.baseline_path}: no such file")


def scorer_options(args: argparse.Namespace) -> dict[str, Any]:
    """The ``BERTScorer`` arguments the model and scoring flags give."""
    return {
        "model_type": args.model,
        "revision": args.revision,
        "num_layers": args.num_layers,
        "batch_size": args.batch_size,
        "idf": args.idf,
        "device": args.device,
        "lang": args.lang,
        "rescale_with_baseline": args.rescale_with_baseline,
        "baseline_path": args.baseline_path,
        "precision": args.precision,
        "runtime": getattr(args, "runtime", "auto"),
        "use_fast_tokenizer": getattr(args, "use_fast_tokenizer", False),
        **{name: getattr(args, name) for name in OPTION_NAMES if hasattr(args, name)},
        "store": getattr(args, "store", None),
    }


def scorer_settings(scorer: BERTScorer) -> dict[str, Any]:
    """The scorer's settings that head every JSON output: ``hash``, ``model``, ``num_layers``,
    ``idf`` and ``rescale_with_baseline``."""
    return {
        "hash": scorer.hash,
        "model": scorer.model_type,
        "num_layers": scorer.num_layers,
        "idf": scorer.idf,
        "rescale_with_baseline": scorer.rescale_with_baseline,
    }


def check_baseline(
    args: argparse.Namespace, scorer: Any, hint: str = "pass --baseline_path FILE"
) -> None:
    """With ``--rescale_with_baseline``, read the scorer's baseline now: a bad one is a usage
    error ending with ``hint``."""
    if not args.rescale_with_baseline:
        return
    try:
        scorer.baseline_vals  # noqa: B018 - reads and checks the baseline file now
    except ValueError as e:
        raise CliError(f"{e}; {hint}") from None


# Python keyword -> the flag that sets it: messages of the library name keywords (``lang='en'``,
# ``device='cpu'``); the command line shows them as flags (``--lang en``, ``--device cpu``).
KEYWORD_FLAGS = {
    "lang": "--lang",
    "model_type": "-m",
    "revision": "--revision",
    "num_layers": "--num_layers",
    "batch_size": "--batch_size",
    "baseline_path": "--baseline_path",
    "rescale_with_baseline": "--rescale_with_baseline",
    "use_fast_tokenizer": "--use_fast_tokenizer",
    "device": "--device",
    "precision": "--precision",
    "runtime": "--runtime",
    "long_texts": "--long-texts",
    "window_stride": "--window-stride",
    "exclude_punctuation": "--exclude-punctuation",
    "exclude_special_tokens": "--exclude-special-tokens",
    "batch_independent": "--batch-independent",
    "idf": "--idf",
    "beta": "--beta",
    "store": "--store",
}
# Keywords also replaced where they stand alone ("pass lang", "num_layers should be"): names
# no English sentence uses.
_BARE = ("lang", *(k for k in KEYWORD_FLAGS if "_" in k))
_ASSIGNED = re.compile(
    r"(?<![\w.-])(" + "|".join(KEYWORD_FLAGS) + r")=('[^']*'|\"[^\"]*\"|<[^>]*>|[^\s,;)]+)"
)
_STANDALONE = re.compile(r"(?<![\w.'\"-])(" + "|".join(_BARE) + r")(?![\w'\"=])")


def flag_words(text: str) -> str:
    """``text`` with Python keywords written as the flags that set them.

    >>> flag_words("pass lang with your model (e.g. lang='en', model_type='x') or baseline_path")
    'pass --lang with your model (e.g. --lang en, -m x) or --baseline_path'
    >>> flag_words("use device='cpu'; long_texts='window' scores them whole")
    'use --device cpu; --long-texts window scores them whole'
    """

    def assigned(m: re.Match[str]) -> str:
        flag, value = KEYWORD_FLAGS[m.group(1)], m.group(2)
        if value in ("True", "False"):
            return flag if value == "True" else f"no {flag}"
        return f"{flag} {value.strip(chr(39) + chr(34))}"

    text = _ASSIGNED.sub(assigned, text)
    return _STANDALONE.sub(lambda m: KEYWORD_FLAGS[m.group(1)], text)


def one_line(text: str) -> str:
    """``text``'s non-blank lines joined by spaces."""
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


def warning_line(message: str) -> str:
    """A warning as the command line prints it: ``rust-bertscore: warning: ...`` on one line,
    keywords as flags, without bert_score's own ``Warning:`` prefix.

    >>> warning_line("Warning: line 3 of hyps.txt: empty candidate")
    'rust-bertscore: warning: line 3 of hyps.txt: empty candidate'
    """
    text = one_line(message)
    if text.lower().startswith("warning:"):
        text = text[len("warning:") :].strip()
    return f"{PROG}: warning: {flag_words(text)}"


def info(args: argparse.Namespace, message: str) -> None:
    """A message on stderr, unless ``-q``."""
    if not getattr(args, "quiet", False):
        print(message, file=sys.stderr, flush=True)


def debug(args: argparse.Namespace, message: str) -> None:
    """A message on stderr with ``-v`` only (and not with ``-q``)."""
    if getattr(args, "verbose", False) and not getattr(args, "quiet", False):
        print(message, file=sys.stderr, flush=True)


def progress_bar(
    total: int | None,
    *,
    desc: str,
    unit: str = "texts",
    quiet: bool = False,
    file: IO[str] | None = None,
    delay: float = 0.5,
) -> Any:
    """A tqdm bar on stderr with a rate and an ETA; disabled by ``quiet``.

    The bar appears only after ``delay`` seconds, so quick runs print nothing; when stderr is
    not a terminal it is redrawn at most every 10 s, to keep logs short.
    """
    from tqdm import tqdm

    stream = sys.stderr if file is None else file
    is_tty = bool(getattr(stream, "isatty", lambda: False)())
    return tqdm(
        total=total,
        desc=desc,
        unit=f" {unit}",
        file=stream,
        disable=quiet,
        delay=delay,
        mininterval=0.2 if is_tty else 10.0,
        dynamic_ncols=is_tty,
    )
