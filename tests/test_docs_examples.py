"""The shell examples of README.md and docs/cli.md run, and print what the docs show.

Each ```console block is a shell session: ``$ command`` lines (a trailing ``\\`` continues a
command) followed by the output the docs show. Every block runs in one bash process in a fresh
folder holding the repository's ``examples/``, with the installed ``rust-bertscore`` first on the
PATH, stdout and stderr together (as a terminal shows them; progress bars off), and each command's
output must equal the documented lines. A line ``...`` stands for any number of lines (as in
doctest's ELLIPSIS); an output that differs only in spacing passes (``ls`` prints columns on a
terminal only). ``$ cat FILE`` of a file the folder lacks writes the shown text to FILE: that is
how a block sets up its input files.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ("README.md", "docs/cli.md")
MARK = "@@rust-bertscore-docs-example@@"


@dataclass
class Command:
    doc: str
    line: int
    text: str
    expected: list[str]


def console_blocks(doc: str) -> list[list[Command]]:
    """The ```console blocks of ``doc``, each a list of commands with their shown output."""
    lines = (ROOT / doc).read_text(encoding="utf-8").splitlines()
    blocks: list[list[Command]] = []
    i = 0
    while i < len(lines):
        if lines[i].strip() != "```console":
            i += 1
            continue
        block: list[Command] = []
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            line = lines[i]
            if line.startswith("$ "):
                start, text = i + 1, line[2:]
                while text.endswith("\\"):
                    i += 1
                    text = text[:-1].rstrip() + " " + lines[i].strip()
                block.append(Command(doc, start, text, []))
            elif block:
                block[-1].expected.append(line)
            i += 1
        for command in block:  # a blank line between two commands is not output
            while command.expected and not command.expected[-1].strip():
                command.expected.pop()
        blocks.append(block)
        i += 1
    return blocks


NUMBER = re.compile(r"-?\d+\.(\d+)")
TOLERANCE = 5e-6
"""Scores may differ in their last printed digit from one CPU to another (the kernel's and
ONNX Runtime's SIMD paths round differently, well within the 1e-5 of parity): numbers with 4
or more decimals are compared within this; other text, and numbers with fewer decimals (sizes,
counts), exactly."""


INT8_TOLERANCE = 2e-3
"""An int8 encoder's scores depend on the CPU's integer instructions (VNNI or not)."""


def same_line(expected: str, actual: str, tolerance: float = TOLERANCE) -> bool:
    """``actual`` is ``expected``, scores within ``tolerance``."""
    if expected == actual:
        return True
    if NUMBER.sub("#", expected) != NUMBER.sub("#", actual):
        return False
    pairs = zip(NUMBER.finditer(expected), NUMBER.finditer(actual))
    return all(
        a.group(0) == b.group(0)
        or (
            min(len(a.group(1)), len(b.group(1))) >= 4
            and abs(float(a.group(0)) - float(b.group(0))) <= tolerance
        )
        for a, b in pairs
    )


def matches(expected: list[str], actual: list[str], tolerance: float = TOLERANCE) -> bool:
    """``actual`` equals ``expected`` line by line (:func:`same_line`), a ``...`` line standing
    for any run of lines."""
    if not expected:
        return not actual
    if expected[0] == "...":
        return any(matches(expected[1:], actual[k:], tolerance) for k in range(len(actual) + 1))
    return (
        bool(actual)
        and same_line(expected[0], actual[0], tolerance)
        and matches(expected[1:], actual[1:], tolerance)
    )


def test_the_comparison_can_fail() -> None:
    assert same_line("F1: 0.907128", "F1: 0.907127")  # a last digit, as another CPU rounds
    assert not same_line("F1: 0.907128", "F1: 0.907028")
    assert not same_line("(58.6 MB)", "(66.5 MB)")
    assert not same_line("error: lang='en'", "error: --lang en")
    assert matches(["a", "...", "z"], ["a", "b", "c", "z"]) and not matches(["a", "z"], ["a"])


def run_block(block: list[Command], cwd: Path) -> list[list[str]]:
    """Run a block's commands in one bash process; the output lines of each command."""
    script = ["exec 2>&1", "__rc=0"]
    for command in block:
        cat = re.fullmatch(r"cat (\S+)", command.text)
        if cat and not (cwd / cat.group(1)).exists():  # the block's input file, as shown
            (cwd / cat.group(1)).write_text("\n".join(command.expected) + "\n", encoding="utf-8")
        script += [f"(exit $__rc); {command.text}", "__rc=$?", f"echo {MARK}"]
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "TQDM_DISABLE": "1",
        "COLUMNS": "200",
        "PYTHONWARNINGS": "default",
    }
    proc = subprocess.run(
        ["bash", "-c", "\n".join(script)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    parts = proc.stdout.split(MARK + "\n")
    assert len(parts) == len(block) + 1, proc.stdout[-2000:]
    return [[line.rstrip() for line in part.splitlines()] for part in parts[:-1]]


BLOCKS = [(doc, n, block) for doc in DOCS for n, block in enumerate(console_blocks(doc)) if block]


def test_the_docs_have_shell_examples() -> None:
    counts = {doc: sum(len(b) for d, _, b in BLOCKS if d == doc) for doc in DOCS}
    assert counts["README.md"] >= 3 and counts["docs/cli.md"] >= 20, counts


@pytest.mark.parametrize(
    ("doc", "index", "block"),
    BLOCKS,
    ids=[f"{doc}:{block[0].line}" for doc, _, block in BLOCKS],
)
def test_shell_example_prints_what_the_docs_show(
    doc: str, index: int, block: list[Command], tmp_path: Path
) -> None:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    outputs = run_block(block, tmp_path)
    for command, actual in zip(block, outputs):
        expected = [line.rstrip() for line in command.expected]
        same_words = " ".join(expected).split() == " ".join(actual).split()
        tolerance = INT8_TOLERANCE if "int8" in command.text else TOLERANCE
        assert matches(expected, actual, tolerance) or same_words, (
            f"{command.doc}:{command.line}: $ {command.text}\n"
            + "--- the docs show:\n"
            + "\n".join(expected)
            + "\n--- it prints:\n"
            + "\n".join(actual)
        )
