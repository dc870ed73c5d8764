"""Writes the table of ``docs/reproducibility.md`` that lists the files each tokenizer reads,
from the record the signature uses (``TextTokenizer.files_read``, recorded at load by
``rust_bertscore.support.read_record``), not from a list kept by hand.

Usage (``make docs`` runs it; ``tests/test_identity_files.py`` checks the page is current)::

    python docs/gen_reads.py [--check]

Each row is a family's tiny test checkpoint (``tests/data/reference/...``: the files the
published checkpoints of that family have), loaded as ``score()`` loads it (slow) and with
``use_fast_tokenizer=True``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "reproducibility.md"
REFERENCE = ROOT / "tests" / "data" / "reference"
BEGIN = "<!-- files-read: begin (docs/gen_reads.py) -->"
END = "<!-- files-read: end -->"


def families() -> list[Path]:
    folders = [REFERENCE / "tiny", REFERENCE / "more_families"]
    found = [p for f in folders for p in f.iterdir() if (p / "config.json").is_file()]
    return sorted(found, key=lambda p: p.name)


def table() -> str:
    from rust_bertscore.errors import RustBertScoreError
    from rust_bertscore.stages.tokenization.tokenizer import TextTokenizer

    lines = [
        "| family (test checkpoint) | tokenizer class | files read, slow (`score()`) | "
        "files read, `use_fast_tokenizer=True` |",
        "|---|---|---|---|",
    ]
    for folder in families():
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        cells, name = [], ""
        for fast in (False, True):
            try:
                tokenizer = TextTokenizer(folder, config, fast=fast)
            except RustBertScoreError:
                cells.append("(no such tokenizer)")
                continue
            name = tokenizer.tokenizer_class.name
            cells.append(", ".join(f"`{n}`" for n in tokenizer.files_read))
        lines.append(f"| {folder.name} | {name} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines)


def render(page: str) -> str:
    start, stop = page.index(BEGIN) + len(BEGIN), page.index(END)
    return page[:start] + "\n" + table() + "\n" + page[stop:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the page is not current")
    args = parser.parse_args(argv)
    page = PAGE.read_text(encoding="utf-8")
    new = render(page)
    if args.check:
        if new != page:
            print(f"{PAGE} is not current: run python docs/gen_reads.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
