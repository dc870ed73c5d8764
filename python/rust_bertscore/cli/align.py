"""``rust-bertscore align``: the token alignment of candidate/reference pairs, as a text table or
JSON (the data behind ``rust-bertscore show``'s heatmap)."""

from __future__ import annotations

import argparse
import json
import sys
import unicodedata
from collections.abc import Sequence
from typing import TextIO

from ..analyses.align import Alignment, SideAlignment
from ..scoring.scorer import BERTScorer
from .common import (
    CliError,
    add_common_flags,
    add_line_flag,
    add_model_flags,
    check_baseline,
    check_baseline_path,
    debug,
    positive_int,
    scorer_options,
    scorer_settings,
)
from .text_files import text_or_line

EPILOG = """\
examples:
  rust-bertscore align -c "The cat sat on the mat." -r "A cat was sitting on the mat."
  rust-bertscore align -c "cand one" -r "ref one" -c "cand two" -r "ref two" --idf
  rust-bertscore align -c "..." -r "..." --format json -m bert-base-uncased -l 9
  rust-bertscore align -c hyps.txt -r refs.txt --line 3     # line 3 of each file

output (text): for each pair its P, R and F1 (as `score` gives them for the same pairs and
  --batch_size), then a table per side: each token, its weight, its best match on the other
  side (position and token) and the cosine. Special tokens weigh 0 but stay match targets.
  With several pairs, a side marked "padding floor" counts a negative best cosine as 0, as
  bert_score does when the other side of the pair is shorter than the longest text on that
  side of its batch: its table adds the value scored.
json: {"hash", "model", "num_layers", "idf", "rescale_with_baseline", "pairs": [record, ...]}
  with records as Alignment.to_dict() gives them.
"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``align`` and return its parser."""
    p = subparsers.add_parser(
        "align",
        help="token alignment of candidate/reference pairs (table or JSON)",
        description="Show which reference token each candidate token matches (precision) and "
        "which candidate token each reference token matches (recall), with weights, cosines and "
        "the pair's P, R and F1. Repeat -c and -r to align several pairs.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "-c",
        "--cand",
        required=True,
        action="append",
        metavar="TEXT_OR_FILE",
        help="candidate sentence, or a file of one per line (see --line)",
    )
    p.add_argument(
        "-r",
        "--ref",
        required=True,
        action="append",
        metavar="TEXT_OR_FILE",
        help="reference sentence, or a file of one per line (see --line)",
    )
    add_line_flag(p)
    add_model_flags(p)
    p.add_argument(
        "-b", "--batch_size", type=positive_int, default=64, help="pairs per batch, as score (64)"
    )
    p.add_argument(
        "--idf",
        action="store_true",
        help="weight tokens by IDF over the given references (needs at least 2 pairs)",
    )
    p.add_argument(
        "--rescale_with_baseline",
        action="store_true",
        help="rescale P, R and F1 with the baseline of the model and --lang (cosines stay raw)",
    )
    p.add_argument("--baseline_path", metavar="FILE", help="a custom baseline file (LAYER,P,R,F)")
    p.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format (text)"
    )
    add_common_flags(p)
    p.set_defaults(run=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Align the pairs and write them; returns the exit code."""
    cands = [text_or_line(c, "candidate", "-c", args.line) for c in args.cand]
    refs = [text_or_line(r, "reference", "-r", args.line) for r in args.ref]
    if len(cands) != len(refs):
        raise CliError(
            f"give one -r per -c: got {len(cands)} candidate(s) and {len(refs)} reference(s)"
        )
    if args.idf and len(refs) < 2:
        raise CliError(
            "--idf needs at least 2 pairs: over a single reference every reference token "
            "weighs ln(2/2) = 0"
        )
    check_baseline_path(args)
    scorer = BERTScorer(**scorer_options(args), idf_sents=refs if args.idf else None)
    check_baseline(args, scorer)
    debug(args, f"model {scorer.model_type}, layer {scorer.num_layers}, {scorer.precision}")
    records = scorer.align_batch(cands, refs)
    if args.format == "json":
        write_json(sys.stdout, scorer, records)
    else:
        write_text(sys.stdout, scorer, records)
    return 0


def write_json(out: TextIO, scorer: BERTScorer, records: Sequence[Alignment]) -> None:
    doc = {**scorer_settings(scorer), "pairs": [r.to_dict() for r in records]}
    out.write(json.dumps(doc, ensure_ascii=False, indent=1) + "\n")


def _width(text: str) -> int:
    """Terminal columns of ``text`` (wide East Asian characters take two)."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _pad(text: str, width: int) -> str:
    return text + " " * max(0, width - _width(text))


def _clip(text: str, limit: int = 24) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _table(side: SideAlignment, other: SideAlignment, title: str, other_name: str) -> list[str]:
    tokens = [_clip(t.token) for t in side.tokens]
    matches = [
        "excluded"
        if t.excluded
        else "none"  # the other side has no token left to match
        if t.match < 0
        else f"{t.match} {_clip(other.tokens[t.match].token)}"
        for t in side.tokens
    ]
    w_tok = max([_width(title), *(_width(t) for t in tokens)])
    w_match = max([_width(f"best {other_name} token"), *(_width(m) for m in matches)])
    best = _pad(f"best {other_name} token", w_match)
    head = f"{'#':>4}  {_pad(title, w_tok)}  {'weight':>7}  {best}"
    head += f"  {'cosine':>7}" + (f"  {'scored':>7}" if side.floored else "")
    lines = [head]
    for t, tok, match in zip(side.tokens, tokens, matches):
        line = f"{t.position:>4}  {_pad(tok, w_tok)}  {t.weight:>7.3f}  {_pad(match, w_match)}"
        line += f"  {t.cosine:>7.4f}" + (f"  {t.scored:>7.4f}" if side.floored else "")
        lines.append(line.rstrip())
    return lines


def write_text(out: TextIO, scorer: BERTScorer, records: Sequence[Alignment]) -> None:
    blocks = []
    for r in records:
        name = f"pair {r.index}" if len(records) > 1 else "pair"
        lines = [
            f"{name}: P: {r.P:.6f} R: {r.R:.6f} F1: {r.F:.6f}"
            + (" (rescaled)" if r.rescaled else ""),
            f"candidate: {r.candidate.text}",
            f"reference: {r.reference.text}",
            "",
            "candidate tokens -> reference (P)"
            + (": padding floor applied" if r.candidate.floored else ""),
            *_table(r.candidate, r.reference, "candidate token", "reference"),
            "",
            "reference tokens -> candidate (R)"
            + (": padding floor applied" if r.reference.floored else ""),
            *_table(r.reference, r.candidate, "reference token", "candidate"),
        ]
        blocks.append("\n".join(lines))
    out.write("\n\n".join(blocks) + f"\n\n{scorer.hash}\n")
