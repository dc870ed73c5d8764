"""docs/cli.md against the command line's parser: the flag reference lists every flag of every
subcommand (and no other), with argparse's choices, and every flag or choice list the rest of
the page names exists as written."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from rust_bertscore.cli.app import build_parser

DOC = Path(__file__).resolve().parents[1] / "docs" / "cli.md"
REFERENCE_HEADING = "### Flag reference"
FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")
FLAG_WITH_CHOICES = re.compile(r"(--?[A-Za-z][\w-]*)(?:/--?[A-Za-z][\w-]*)* \{([^}]*)\}")


def subcommands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """``("score", parser)``, ``("store show", parser)``, ...: every leaf and inner subcommand."""
    if path:
        yield " ".join(path), parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from subcommands(sub, (*path, name))


def documented_options(parser: argparse.ArgumentParser) -> dict[str, tuple[str, ...] | None]:
    """Each visible option string (not -h/--help) and its choices (None: free value)."""
    found: dict[str, tuple[str, ...] | None] = {}
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        if action.help == argparse.SUPPRESS or not action.option_strings:
            continue
        choices = tuple(str(c) for c in action.choices) if action.choices else None
        for option in action.option_strings:
            found[option] = choices
    return found


def all_options(parser: argparse.ArgumentParser) -> dict[str, set[tuple[str, ...] | None]]:
    """Every option string of every subcommand (hidden ones too) and its choices in each
    subcommand (``--format`` has other choices in ``models`` than in ``score``)."""
    found: dict[str, set[tuple[str, ...] | None]] = {}
    for sub in [parser, *(s for _, s in subcommands(parser))]:
        for action in sub._actions:
            if isinstance(action, argparse._SubParsersAction):
                continue
            choices = tuple(str(c) for c in action.choices) if action.choices else None
            for option in action.option_strings:
                found.setdefault(option, set()).add(choices)
    return found


def stale_choice_lists(text: str) -> list[str]:
    """``--flag {a,b}`` on the page where no subcommand's ``--flag`` has exactly those choices
    (flags whose value is free, such as ``--device {cpu,cuda,cuda:N}``, are not checked)."""
    known = all_options(PARSER)
    stale = []
    for match in FLAG_WITH_CHOICES.finditer(text):
        option, listed = match.group(1), tuple(match.group(2).split(","))
        forms = known.get(option, set()) - {None}
        if forms and listed not in forms:
            stale.append(f"{option} {{{match.group(2)}}} (the parser: {sorted(forms)})")
    return stale


def reference_tables(text: str) -> dict[str, list[str]]:
    """The flag reference: subcommand -> the first cells of its table's rows."""
    assert REFERENCE_HEADING in text, f"docs/cli.md has no {REFERENCE_HEADING!r} section"
    section = text.split(REFERENCE_HEADING, 1)[1]
    tables: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in section.splitlines():
        heading = re.match(r"#### `rust-bertscore ([a-z ]+)`", line)
        if heading:
            current = tables.setdefault(heading.group(1), [])
        elif line.startswith("### "):
            break
        elif current is not None and line.startswith("| `"):
            current.append(line.split("|")[1].strip().strip("`"))
    return tables


def parse_cell(cell: str) -> tuple[list[str], tuple[str, ...] | None]:
    """``-m/--model MODEL`` -> (["-m", "--model"], None); ``--x {a,b}`` -> (["--x"], ("a", "b"))."""
    head, _, rest = cell.partition(" ")
    options = head.split("/")
    braces = re.search(r"\{([^}]*)\}", rest)
    return options, tuple(braces.group(1).split(",")) if braces else None


PARSER = build_parser()
TEXT = DOC.read_text(encoding="utf-8")
TABLES = reference_tables(TEXT)
SUBCOMMANDS = dict(subcommands(PARSER))


def test_every_subcommand_with_flags_has_a_reference_table() -> None:
    with_flags = {name for name, sub in SUBCOMMANDS.items() if documented_options(sub)}
    assert set(TABLES) == with_flags


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_reference_table_matches_the_parser(name: str) -> None:
    expected = documented_options(SUBCOMMANDS[name])
    if not expected:
        return
    documented: dict[str, tuple[str, ...] | None] = {}
    for cell in TABLES[name]:
        if not cell.startswith("-"):
            continue  # a positional argument
        options, choices = parse_cell(cell)
        for option in options:
            assert option not in documented, f"{name}: {option} listed twice"
            documented[option] = choices
    missing = sorted(set(expected) - set(documented))
    extra = sorted(set(documented) - set(expected))
    assert not missing, f"docs/cli.md's `rust-bertscore {name}` table lacks {missing}"
    assert not extra, f"docs/cli.md's `rust-bertscore {name}` table lists {extra}: not flags"
    for option, choices in expected.items():
        assert documented[option] == choices, (
            f"{name} {option}: docs/cli.md says {documented[option]}, the parser {choices}"
        )


def unknown_flags(text: str) -> list[str]:
    """Flags the prose names (in a code span that starts with a flag or with
    ``rust-bertscore``) that no subcommand has."""
    known = all_options(PARSER)
    others = {"--no-deps"}  # pip's, named on purpose
    prose = text.split(REFERENCE_HEADING, 1)[0]
    named = set()
    for span in re.findall(r"`([^`\n]+)`", prose):
        if span.lstrip().startswith("-") or span.startswith("rust-bertscore"):
            named |= set(FLAG.findall(span))
    return sorted(f for f in named - others if f not in known)


def test_every_flag_the_page_names_exists() -> None:
    assert unknown_flags(TEXT) == []


def test_the_checks_catch_a_misspelt_flag_and_a_missing_row() -> None:
    assert unknown_flags(TEXT.replace("`--idf`", "`--idfs`", 1)) == ["--idfs"]
    row = next(line for line in TEXT.splitlines() if line.startswith("| `--beta B` |"))
    tables = reference_tables(TEXT.replace(row + "\n", "", 1))
    assert "--beta B" not in tables["score"]
    assert "--beta B" in TABLES["score"]


def test_choice_lists_on_the_page_are_the_parsers() -> None:
    assert stale_choice_lists(TEXT) == []


def test_the_checks_catch_a_stale_choice_list() -> None:
    stale = TEXT.replace(
        "`--precision {fp32,tf32,fp16,int8,bf16,fast}`", "`--precision {fp32,int8}`", 1
    )
    assert stale != TEXT
    assert [s.split(" ")[0] for s in stale_choice_lists(stale)] == ["--precision"]
