"""``rust-bertscore score`` (the default subcommand): bert-score's command line, streamed.

Inputs are read and scored in chunks of lines with one :class:`BERTScorer`; per-pair output is
written as it comes and the corpus means are accumulated, so memory stays flat in the number of
lines. With ``--idf`` a first pass over the references counts document frequencies, giving the
same weights as ``score(..., idf=True)`` over the whole reference list.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
from typing import Any, TextIO

import numpy as np

from ..analyses.corpus import document_frequencies, idf_dict
from ..scoring.scorer import BERTScorer
from . import ray_cluster as cli_ray
from .batches import scored_chunks, scored_chunks_keeping_bad_lines
from .chunks import Source
from .common import (
    CliError,
    add_common_flags,
    add_model_and_scoring_groups,
    check_baseline,
    check_baseline_path,
    debug,
    info,
    positive_int,
    progress_bar,
    scorer_options,
    scorer_settings,
    warning_line,
)
from .inputs import open_source

DEFAULT_CHUNK_LINES = 1024
"""Candidates read and scored per round."""

IDF_CHUNK = 4096
"""References tokenized per round of the IDF pass."""

EPILOG = """\
examples:
  rust-bertscore -c hyps.txt -r refs.txt
  rust-bertscore -c hyps.txt -r refs1.txt refs2.txt --idf -s
  rust-bertscore -c hyps.txt -r refs.txt --lang en --rescale_with_baseline --format json
  rust-bertscore --jsonl outputs.jsonl --cand-field hyp --ref-field refs --format tsv
  rust-bertscore -c "The cat sat on the mat." -r "A cat was sitting on the mat."

output (text): with -s, one "P<TAB>R<TAB>F1" line per candidate, then the summary line
  <hash> P: <mean> R: <mean> F1: <mean>
json: one document {"hash", "model", ..., "signature", "pairs": [{"index", "P", "R", "F1"},
  ...], "summary": {"P", "R", "F1", "count"}}; tsv: a "P<TAB>R<TAB>F1" header and a row per
  candidate (the summary line goes to stderr). With several references per candidate, each
  of P, R and F1 is the best over its references, as in bert_score.
--signature: the scorer's citable signature (model, weights digest, layer, ..., version; see
  docs/reproducibility.md) on stderr after the scores, even with -q.
"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``score`` and return its parser."""
    p = subparsers.add_parser(
        "score",
        help="score candidates against references (the default subcommand)",
        description="BERTScore of candidates against references, with bert-score's flags.\n"
        "Files hold one text per line; values that are not files are the texts themselves.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    inputs = p.add_argument_group("input")
    inputs.add_argument("-c", "--cand", metavar="FILE_OR_TEXT", help="candidate file or text")
    inputs.add_argument(
        "-r",
        "--ref",
        nargs="+",
        action="extend",
        metavar="FILE_OR_TEXT",
        help="reference file(s) or text(s); several (-r a b, or -r a -r b) give each "
        "candidate several references",
    )
    inputs.add_argument("--jsonl", metavar="FILE", help="read candidates and references from JSONL")
    inputs.add_argument(
        "--cand-field", default="cand", metavar="NAME", help="JSONL candidate field (cand)"
    )
    inputs.add_argument(
        "--ref-field",
        default="ref",
        metavar="NAME",
        help="JSONL reference field: a string or a list of strings (ref)",
    )
    add_model_and_scoring_groups(
        p,
        batch_size_help="pairs per scoring batch (bert_score's padding floor) and texts per "
        "encoder call (64)",
        batch_independent_help="score every pair on its own (the paper's definition), without "
        "bert_score's batch padding floor",
    )
    output = p.add_argument_group("output")
    output.add_argument(
        "-s", "--seg_level", action="store_true", help="print the scores of every candidate"
    )
    output.add_argument(
        "--format",
        choices=("text", "json", "tsv"),
        default="text",
        help="output format (default: text, as bert-score)",
    )
    output.add_argument(
        "--chunk-size",
        type=positive_int,
        default=DEFAULT_CHUNK_LINES,
        metavar="N",
        help=f"candidates read and scored at a time ({DEFAULT_CHUNK_LINES})",
    )
    output.add_argument(
        "--on-error",
        choices=("raise", "null"),
        default="raise",
        help="a bad line (JSONL not parsed, a field missing or not a string, text not valid "
        "UTF-8): stop with an error naming it (raise, the default), or leave its scores empty "
        "(null, a message on stderr names its line) and score the other lines as if it were "
        "absent (IDF and the padding floor over the good lines)",
    )
    output.add_argument(
        "--signature",
        action="store_true",
        help="print the citable signature of the settings (model, weights digest, layer, idf, "
        "rescaling, padding floor, precision, device, version) on stderr after the scores",
    )
    add_common_flags(output)
    cli_ray.add_flags(p.add_argument_group("cluster"))
    # Accepted for bert-score compatibility; they change nothing here.
    p.add_argument("--nthreads", type=positive_int, default=4, help=argparse.SUPPRESS)
    p.set_defaults(run=run)
    return p


# BERTScorer has no public way (bert_score's has none either) to reach its tokenizer or to take a
# ready idf dict; these two helpers are the only places that reach inside it.
# -- output ------------------------------------------------------------------------------------


class Writer:
    """Writes per-pair scores as they come and the summary at the end."""

    def __init__(
        self, out: TextIO, args: argparse.Namespace, scorer: BERTScorer, signature: str = ""
    ) -> None:
        self.out = out
        self.args = args
        self.scorer = scorer
        self.hash = scorer.hash
        self.signature = signature

    def begin(self) -> None:
        pass

    def pairs(
        self,
        start: int,
        P: np.ndarray,
        R: np.ndarray,
        F: np.ndarray,
        errors: list[str | None] | None = None,
    ) -> None:
        pass

    def end(self, means: np.ndarray, count: int) -> None:
        raise NotImplementedError

    def summary_line(self, means: np.ndarray) -> str:
        p, r, f = (float(x) for x in means)
        return f"{self.hash} P: {p:.6f} R: {r:.6f} F1: {f:.6f}"


def _lines(P: np.ndarray, R: np.ndarray, F: np.ndarray) -> str:
    """``P\\tR\\tF`` lines, fields empty where the scores are NaN (a bad line kept)."""
    return "".join(
        "\t\t\n" if f != f else f"{p:.6f}\t{r:.6f}\t{f:.6f}\n" for p, r, f in zip(P, R, F)
    )


class TextWriter(Writer):
    """bert-score's output: ``P\\tR\\tF`` lines with ``-s``, then the summary line."""

    def pairs(
        self,
        start: int,
        P: np.ndarray,
        R: np.ndarray,
        F: np.ndarray,
        errors: list[str | None] | None = None,
    ) -> None:
        if self.args.seg_level:
            self.out.write(_lines(P, R, F))
            self.out.flush()

    def end(self, means: np.ndarray, count: int) -> None:
        self.out.write(self.summary_line(means) + "\n")


class TsvWriter(Writer):
    """A header and one row per candidate; the summary line goes to stderr."""

    def begin(self) -> None:
        self.out.write("P\tR\tF1\n")

    def pairs(
        self,
        start: int,
        P: np.ndarray,
        R: np.ndarray,
        F: np.ndarray,
        errors: list[str | None] | None = None,
    ) -> None:
        self.out.write(_lines(P, R, F))
        self.out.flush()

    def end(self, means: np.ndarray, count: int) -> None:
        info(self.args, self.summary_line(means))


class JsonWriter(Writer):
    """One JSON document, written as it goes: settings, ``pairs`` and ``summary``."""

    def begin(self) -> None:
        head = {
            **scorer_settings(self.scorer),
            "precision": self.scorer.precision,
            "signature": self.signature,
        }
        self.out.write(json.dumps(head)[:-1] + ', "pairs": [')
        self._first = True

    def pairs(
        self,
        start: int,
        P: np.ndarray,
        R: np.ndarray,
        F: np.ndarray,
        errors: list[str | None] | None = None,
    ) -> None:
        parts = []
        for i, (p, r, f) in enumerate(zip(P, R, F), start=start):
            sep = "\n" if self._first else ",\n"
            self._first = False
            if f != f:  # a bad line kept (--on-error null)
                error = json.dumps(errors[i - start] if errors else None)
                parts.append(
                    f'{sep}{{"index": {i}, "P": null, "R": null, "F1": null, "error": {error}}}'
                )
                continue
            # str() of a float32 is its shortest round-trip form, a valid JSON number.
            parts.append(f'{sep}{{"index": {i}, "P": {p!s}, "R": {r!s}, "F1": {f!s}}}')
        self.out.write("".join(parts))
        self.out.flush()

    def end(self, means: np.ndarray, count: int) -> None:
        p, r, f = (float(x) for x in means)
        summary = {"P": p, "R": r, "F1": f, "count": count}
        self.out.write(f'\n], "summary": {json.dumps(summary)}}}\n')


WRITERS = {"text": TextWriter, "tsv": TsvWriter, "json": JsonWriter}


class BatchProgress:
    """Moves a progress bar of candidates after every encoder batch, not only after every
    chunk of ``chunk`` candidates: a batch of ``k`` texts counts ``k / texts_per_pair``
    candidates (an estimate, never past the chunk being scored); each scored chunk sets the bar
    to the exact count.

    >>> class Bar:
    ...     n = 0
    ...     def update(self, k): self.n += k
    >>> bar = Bar()
    >>> moving = BatchProgress(bar, total=600, chunk=1024, texts_per_pair=2)
    >>> moving.encoded(64); bar.n
    32
    >>> moving.scored(600); bar.n
    600
    """

    def __init__(self, bar: Any, total: int, chunk: int, texts_per_pair: int) -> None:
        self.bar = bar
        self.total = total
        self.chunk = chunk
        self.texts_per_pair = max(texts_per_pair, 1)
        self.done = 0  # candidates scored (exact)
        self.position = 0.0  # shown, with the estimate of the chunk in progress
        self.shown = 0

    def _move_to(self, position: float) -> None:
        self.position = position
        step = int(position) - self.shown
        if step > 0:
            self.bar.update(step)
            self.shown += step

    def encoded(self, texts: int) -> None:
        """An encoder batch of ``texts`` texts is done."""
        limit = min(self.done + self.chunk, self.total) - 1  # the chunk is not scored yet
        self._move_to(min(self.position + texts / self.texts_per_pair, max(limit, self.done)))

    def scored(self, candidates: int) -> None:
        """A chunk of ``candidates`` candidates is scored."""
        self.done += candidates
        self._move_to(max(float(self.done), self.position))


# -- the subcommand ------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    """Score, write the output, return the exit code."""
    source: Source = open_source(
        args.cand, args.ref, args.jsonl, args.cand_field, args.ref_field, args.on_error
    )
    source.warn = lambda message: print(warning_line(message), file=sys.stderr, flush=True)
    args.empty_by_line = True  # the library's generic empty-text warnings are not repeated
    if args.idf and not source.idf_allowed:
        raise CliError(
            "--idf needs reference files: IDF over a single pair of sentences is not supported "
            "(as in bert-score)"
        )
    check_baseline_path(args)
    start = time.perf_counter()
    scorer = BERTScorer(
        **scorer_options(args), cache_bytes=0, batch_independent=args.batch_independent
    )
    check_baseline(
        args, scorer, "pass --baseline_path FILE (make one with `rust-bertscore baseline`)"
    )
    debug(
        args,
        f"model {scorer.model_type}, layer {scorer.num_layers}, {scorer.precision} on "
        f"{scorer.device} (loaded in {time.perf_counter() - start:.2f} s)",
    )
    debug(args, f"scoring {source.num_cands} candidates: {source.description}")
    use_ray = args.ray or args.ray_address is not None
    if args.idf and not use_ray:  # on Ray the engine counts document frequencies itself
        with progress_bar(source.num_refs, desc="idf", quiet=args.quiet) as bar:
            df, m = document_frequencies(scorer.scored_tokens, source.ref_chunks(IDF_CHUNK), bar)
        scorer.set_idf_dict(idf_dict(df, m))
        debug(args, f"idf over {m} references")

    # The padding floor of --batch_size; the weights digest is computed before any scoring.
    wanted = args.signature or args.format == "json"
    signature = scorer.signature_for(args.batch_size) if wanted else ""
    writer = WRITERS[args.format](sys.stdout, args, scorer, signature)
    writer.begin()
    sums = np.zeros(3, dtype=np.float64)
    count = lines = bad = 0
    start = time.perf_counter()
    encoder = scorer.runtime.encoder
    with progress_bar(source.num_cands, desc="scoring", quiet=args.quiet) as bar:
        moving = BatchProgress(bar, source.num_cands, args.chunk_size, 1 + (source.group_size or 1))
        encoder.on_batch = moving.encoded
        try:
            for P, R, F, errors in _chunks(args, scorer, source, use_ray):
                writer.pairs(lines, P, R, F, errors)
                for message in errors or ():
                    if message is not None:
                        info(args, f"{message} (scores left empty)")
                        bad += 1
                good = ~np.isnan(F)
                sums += [x[good].sum(dtype=np.float64) for x in (P, R, F)]
                count += int(good.sum())
                lines += len(P)
                moving.scored(len(P))
        finally:
            encoder.on_batch = None
    if bad:
        info(args, f"{bad} of {lines} lines left unscored (--on-error null)")
    writer.end(sums / count if count else np.full(3, np.nan), count)
    sys.stdout.flush()
    if args.signature:
        print(signature, file=sys.stderr, flush=True)
    elapsed = max(time.perf_counter() - start, 1e-9)
    debug(args, f"scored {count} candidates in {elapsed:.2f} s ({count / elapsed:.1f} texts/s)")
    return 0


def _chunks(
    args: argparse.Namespace, scorer: BERTScorer, source: Source, use_ray: bool
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, list[str | None] | None]]:
    """P, R, F and the lines' problems (None: no bad lines possible) of each chunk."""
    if use_ray:
        yield from cli_ray.ray_scored_chunks(args, source)
    elif args.on_error == "null":
        yield from scored_chunks_keeping_bad_lines(scorer, source, args.chunk_size, args.batch_size)
    else:
        for P, R, F in scored_chunks(scorer, source, args.chunk_size, args.batch_size):
            yield P, R, F, None
