"""Reading text files for the command line: one text per line, UTF-8 errors that name the line,
problems named by file and line, and the one-pair reading of ``align`` and ``show`` (a value
that names a file is read, never scored as text)."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from ..stages.text import check_text
from .common import CliError

PATH_SUFFIX = re.compile(r"[^./\\]\.[A-Za-z0-9]{2,6}$")


def looks_like_path(text: str) -> bool:
    """True for a value that is surely meant as a file name (no spaces; a slash or a suffix)."""
    if not text or any(c.isspace() for c in text):
        return False
    return "/" in text or os.sep in text or bool(PATH_SUFFIX.search(text))


def open_text(path: Path, errors: str = "strict") -> TextIO:
    # errors="surrogateescape": invalid UTF-8 bytes become lone surrogates, which check_text
    # reports line by line (--on-error null).
    try:
        return open(
            path, encoding="utf-8", errors=errors
        )  # boundary-exempt: the user's text stream (a pipe is fine)
    except FileNotFoundError:
        raise CliError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise CliError(f"{path}: is a directory, expected a file of one text per line") from None
    except PermissionError:
        raise CliError(f"{path}: permission denied") from None
    except OSError as e:
        raise CliError(f"{path}: cannot read: {e.strerror or e}") from None


def first_bad_utf8_line(path: Path) -> int:
    with open(path, "rb") as f:  # boundary-exempt: the same file, to name its bad line
        for number, raw in enumerate(f, start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                return number
    return 0


@contextlib.contextmanager
def decoding(path: Path) -> Iterator[None]:
    """Turn a UTF-8 error while reading ``path`` into a message naming its line."""
    try:
        yield
    except UnicodeDecodeError as e:
        line = first_bad_utf8_line(path)
        where = f"{path}:{line}" if line else str(path)
        raise CliError(f"{where}: not valid UTF-8 text ({e.reason})") from None


def strip_newline(line: str) -> str:
    return line[:-1] if line.endswith("\n") else line


def count_lines(path: Path, errors: str = "strict") -> int:
    """Lines of a text file as Python iterates them (a last line without newline counts)."""
    with open_text(path, errors) as f, decoding(path):
        return sum(1 for _ in f)


def bad_text(text: str, where: str) -> str | None:
    """``where: problem`` when ``text`` cannot be encoded, else None."""
    try:
        check_text(text, "the text")
    except (TypeError, ValueError) as e:
        return f"{where}: {e}"
    return None


def not_a_file(path: str, role: str) -> str:
    if os.path.isdir(path):
        return f"{role} file {path}: is a directory"
    return f"{role} file {path}: no such file"


def read_lines(path: Path) -> list[str]:
    """Every line of a UTF-8 text file, without newlines (errors name the file and line)."""
    with open_text(path) as f, decoding(path):
        return [strip_newline(line) for line in f]


def text_or_line(value: str, role: str, flag: str, line: int | None) -> str:
    """One text for ``align``/``show``: ``value`` itself, or, when it names an existing file
    (one text per line, as ``score`` reads it), its only line or line ``line`` (``--line N``).

    A file of several lines without ``--line``, a line out of range, or a value that looks like
    a path but names no file are usage errors naming the file.
    """
    if os.path.isfile(value):
        lines = read_lines(Path(value))
        if not lines:
            raise CliError(f"{role} file {value}: empty file, no text to use")
        if line is not None:
            if not 1 <= line <= len(lines):
                raise CliError(f"--line {line}: {role} file {value} has lines 1..{len(lines)}")
            return lines[line - 1]
        if len(lines) > 1:
            raise CliError(
                f"{role} file {value} has {len(lines)} lines; this command takes one pair: pick "
                f"one with --line N (1..{len(lines)}), or score every line with "
                f"`rust-bertscore score -c FILE -r FILE`"
            )
        return lines[0]
    if os.path.isdir(value) or looks_like_path(value):
        raise CliError(not_a_file(value, role) + f" (given as {flag})")
    return value
