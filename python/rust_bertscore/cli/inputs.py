"""Inputs of ``rust-bertscore score``: files of one text per line, a JSONL file, or texts given on
the command line, checked up front and then read in chunks so that memory stays flat.

Each input kind is a :class:`~rust_bertscore.cli.chunks.Source` (module :mod:`.chunks`, with
the :class:`~rust_bertscore.cli.chunks.Chunk` it yields); :func:`open_source` picks the kind.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from .chunks import Chunk, Source, chunked, chunked_with_errors, good_ref_chunks
from .common import CliError
from .text_files import (
    bad_text,
    count_lines,
    decoding,
    looks_like_path,
    not_a_file,
    open_text,
    strip_newline,
)


class LineFiles(Source):
    """A candidate file and one or more reference files, one text per line, in step.

    Several reference files give each candidate several references (bert_score's ``-r a b``).
    """

    def __init__(self, cand: Path, refs: Sequence[Path], on_error: str = "raise") -> None:
        self.cand = cand
        self.refs = list(refs)
        self.on_error = on_error
        self._errors = "surrogateescape" if on_error == "null" else "strict"
        self.num_cands = count_lines(cand, self._errors)
        if self.num_cands == 0:
            raise CliError(f"{cand}: empty file, no candidates to score")
        for ref in self.refs:
            n = count_lines(ref, self._errors)
            if n != self.num_cands:
                raise CliError(
                    f"{ref} has {n} lines but the candidate file {cand} has {self.num_cands}: "
                    "give one reference per line for every candidate"
                )
        self.num_refs = self.num_cands * len(self.refs)
        self.group_size = len(self.refs)
        names = ", ".join(str(r) for r in self.refs)
        self.description = f"{cand} against {names}"

    def chunks(self, size: int) -> Iterator[Chunk]:
        if self.on_error == "null":
            yield from chunked_with_errors(self._checked_lines(), size)
            return
        with contextlib.ExitStack() as stack:
            files = [stack.enter_context(open_text(p)) for p in [self.cand, *self.refs]]
            single = len(files) == 2
            pairs = (
                (
                    strip_newline(lines[0]),
                    strip_newline(lines[1])
                    if single
                    else [strip_newline(line) for line in lines[1:]],
                )
                for lines in zip(*files)
            )
            for chunk in chunked(pairs, size, first_line=1):
                self.report_empty(chunk)
                yield chunk

    def where(self, line: int | None, ref: int | None) -> str:
        path = self.cand if ref is None else self.refs[ref]
        return f"line {line} of {path}"

    def _checked_lines(self) -> Iterator[tuple[str, object, str | None]]:
        """(candidate, reference(s), problem) of every line; a bad line's texts are empty."""
        paths = [self.cand, *self.refs]
        with contextlib.ExitStack() as stack:
            files = [stack.enter_context(open_text(p, self._errors)) for p in paths]
            for number, lines in enumerate(zip(*files), start=1):
                texts = [strip_newline(line) for line in lines]
                problem = next(
                    (
                        bad
                        for path, text in zip(paths, texts)
                        if (bad := bad_text(text, f"{path}:{number}")) is not None
                    ),
                    None,
                )
                if problem is not None:
                    texts = [""] * len(texts)
                refs = texts[1] if len(texts) == 2 else texts[1:]
                yield texts[0], refs, problem

    def ref_chunks(self, size: int) -> Iterator[list[str]]:
        if self.on_error == "null":
            yield from good_ref_chunks(self, size)
            return
        for path in self.refs:
            with open_text(path) as f:
                chunk: list[str] = []
                for line in f:
                    chunk.append(strip_newline(line))
                    if len(chunk) == size:
                        yield chunk
                        chunk = []
                if chunk:
                    yield chunk


class TextPair(Source):
    """One candidate and its reference(s), given as texts on the command line."""

    idf_allowed = False

    def __init__(self, cand: str, refs: Sequence[str]) -> None:
        self.cand = cand
        self.refs = list(refs)
        self.num_cands = 1
        self.num_refs = len(self.refs)
        self.group_size = len(self.refs)
        self.description = "1 candidate text"

    def chunks(self, size: int) -> Iterator[Chunk]:
        chunk = Chunk([self.cand], [self.refs])
        self.report_empty(chunk)
        yield chunk

    def where(self, line: int | None, ref: int | None) -> str:
        return "-c" if ref is None else f"-r {ref + 1}" if len(self.refs) > 1 else "-r"

    def ref_chunks(self, size: int) -> Iterator[list[str]]:
        yield list(self.refs)


class JsonlFile(Source):
    """A JSON Lines file: one object per line, with a candidate field and a reference field
    (a string, or a non-empty list of strings for several references). Blank lines are skipped.
    """

    def __init__(
        self, path: Path, cand_field: str, ref_field: str, on_error: str = "raise"
    ) -> None:
        self.path = path
        self.cand_field = cand_field
        self.ref_field = ref_field
        self.on_error = on_error
        self.num_cands = 0
        self.num_refs = 0
        for _, refs, _problem in self._checked_records():
            self.num_cands += 1
            self.num_refs += len(refs)
        if self.num_cands == 0:
            raise CliError(f"{path}: no JSON objects, nothing to score")
        self.description = f"{path} (fields {cand_field!r} and {ref_field!r})"

    def _records(self) -> Iterator[tuple[str, list[str]]]:
        for _, record in self._numbered():
            yield record

    def _numbered(self) -> Iterator[tuple[int, tuple[str, list[str]]]]:
        with open_text(self.path) as f, decoding(self.path):
            for number, line in enumerate(f, start=1):
                if line.strip():
                    yield number, self._parse(line, number)

    def _checked_records(self) -> Iterator[tuple[str, list[str], str | None]]:
        """(candidate, references, problem) of every record; with ``on_error="null"`` a bad
        line (not JSON, fields missing or of the wrong type, text not encodable) gives empty
        texts and its problem instead of a ``CliError``."""
        errors = "surrogateescape" if self.on_error == "null" else "strict"
        with open_text(self.path, errors) as f, decoding(self.path):
            for number, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                if self.on_error != "null":
                    yield (*self._parse(line, number), None)
                    continue
                where = f"{self.path}:{number}"
                try:
                    bad = bad_text(line, where)
                    if bad is not None:
                        raise CliError(bad)
                    cand, refs = self._parse(line, number)
                    for what, text in [
                        (self.cand_field, cand),
                        *((self.ref_field, r) for r in refs),
                    ]:
                        bad = bad_text(text, f"{where}: field {what!r}")
                        if bad is not None:
                            raise CliError(bad)
                except CliError as e:
                    yield "", [""], str(e)
                    continue
                yield cand, refs, None

    def _parse(self, line: str, number: int) -> tuple[str, list[str]]:
        where = f"{self.path}:{number}"
        try:
            record = json.loads(line.strip())
        except json.JSONDecodeError as e:
            raise CliError(f"{where}: not valid JSON: {e.msg} (column {e.colno})") from None
        except (RecursionError, ValueError) as e:  # nesting past the stack, 5,000-digit ints
            raise CliError(f"{where}: not valid JSON ({str(e)[:120]})") from None
        if not isinstance(record, dict):
            raise CliError(f"{where}: expected a JSON object, got {type(record).__name__}")
        missing = [k for k in (self.cand_field, self.ref_field) if k not in record]
        if missing:
            have = ", ".join(repr(k) for k in list(record)[:8]) or "none"
            raise CliError(f"{where}: no field {missing[0]!r} (fields: {have})")
        cand = record[self.cand_field]
        if not isinstance(cand, str):
            raise CliError(
                f"{where}: field {self.cand_field!r} must be a string, got {_json_type(cand)}"
            )
        ref = record[self.ref_field]
        if isinstance(ref, str):
            return cand, [ref]
        if isinstance(ref, list) and ref and all(isinstance(r, str) for r in ref):
            return cand, ref
        what = "an empty list" if ref == [] else _json_type(ref)
        raise CliError(
            f"{where}: field {self.ref_field!r} must be a string or a non-empty list of "
            f"strings, got {what}"
        )

    def chunks(self, size: int) -> Iterator[Chunk]:
        if self.on_error == "null":
            yield from chunked_with_errors(self._checked_records(), size)
            return
        numbers: list[int] = []

        def records() -> Iterator[tuple[str, list[str]]]:
            for number, record in self._numbered():
                numbers.append(number)
                yield record

        for chunk in chunked(records(), size):
            chunk = Chunk(chunk.cands, chunk.refs, lines=numbers[-len(chunk.cands) :])
            numbers.clear()
            self.report_empty(chunk)
            yield chunk

    def where(self, line: int | None, ref: int | None) -> str:
        field = self.cand_field if ref is None else self.ref_field
        return f"line {line} of {self.path} (field {field!r})"

    def ref_chunks(self, size: int) -> Iterator[list[str]]:
        if self.on_error == "null":
            yield from good_ref_chunks(self, size)
            return
        chunk: list[str] = []
        for _, group in self._records():
            chunk.extend(group)
            if len(chunk) >= size:
                yield chunk
                chunk = []
        if chunk:
            yield chunk


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, list):
        return "a list with a non-string item"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def open_source(
    cand: str | None,
    refs: Sequence[str] | None,
    jsonl: str | None,
    cand_field: str,
    ref_field: str,
    on_error: str = "raise",
) -> Source:
    """Pick the input kind the way bert-score's CLI does.

    ``--jsonl`` reads a JSON Lines file. Otherwise, when ``-c`` names an existing file, every
    ``-r`` must name a file too (one text per line, equal line counts); when neither names a
    file, they are the texts themselves (one candidate; several ``-r`` texts are its references).
    """
    if jsonl is not None:
        if cand is not None or refs:
            raise CliError("give either --jsonl FILE or -c/-r, not both")
        return JsonlFile(Path(jsonl), cand_field, ref_field, on_error)
    if cand is None or not refs:
        raise CliError(
            "nothing to score: give -c/--cand and -r/--ref (files or texts), or --jsonl FILE"
        )
    if os.path.isfile(cand):
        for ref in refs:
            if not os.path.isfile(ref):
                raise CliError(not_a_file(ref, "reference"))
        return LineFiles(Path(cand), [Path(r) for r in refs], on_error)
    ref_files = [r for r in refs if os.path.isfile(r)]
    if ref_files:
        raise CliError(
            not_a_file(cand, "candidate")
            + f" (-r names the file {ref_files[0]}, so -c must name one too)"
        )
    for text, role in [(cand, "candidate"), *((r, "reference") for r in refs)]:
        if os.path.isdir(text) or looks_like_path(text):
            raise CliError(not_a_file(text, role))
    return TextPair(cand, refs)
