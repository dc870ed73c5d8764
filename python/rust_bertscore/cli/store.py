"""``rust-bertscore store``: show and prune a persistent embedding store.

``store show DIR`` prints its entries, bytes, segments and the range of last uses;
``store prune DIR --max-bytes N`` evicts the least recently used entries down to ``N`` bytes
and compacts the segments no live process writes to.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from .common import CliError, add_common_flags, checked_number, info


def byte_size(text: str) -> int:
    """argparse type: bytes, with an optional K, M, G or T suffix (powers of 1024)."""
    units = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}
    raw = text.strip().upper().removesuffix("IB").removesuffix("B")
    unit = raw[-1:] if raw[-1:] in units and raw[-1:] else ""
    number = raw[: len(raw) - len(unit)]
    return checked_number(
        number,
        lambda s: int(float(s) * units[unit]),
        lambda v: v >= 0,
        "a size in bytes (e.g. 500000000, 2G, 512M)",
        "a size >= 0",
    )


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``store`` with its ``show`` and ``prune`` actions."""
    p = subparsers.add_parser(
        "store",
        help="show or prune an embedding store: store show|prune DIR (or --store DIR)",
        description="Show or prune an embedding store made by --store DIR (or "
        "BERTScorer(store=DIR)): store show DIR, store prune DIR --max-bytes N (the folder "
        "positional or as --store DIR). Entries are token vectors keyed by model graph, "
        "precision, layer and token ids.",
    )
    actions = p.add_subparsers(dest="action", metavar="{show,prune}", required=True)
    show = actions.add_parser(
        "show",
        help="entries, bytes, segments and last uses",
        description="Show a store: store show DIR (or store show --store DIR).",
    )
    _add_directory(show)
    show.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format (default: text)"
    )
    add_common_flags(show)
    show.set_defaults(run=run_show)
    prune = actions.add_parser(
        "prune",
        help="evict least recently used entries down to a size, and compact",
        description="Evict the least recently used entries until the store takes at most "
        "--max-bytes, and rewrite the segments no live process writes to without "
        "duplicates, use records or damaged entries.",
    )
    _add_directory(prune)
    prune.add_argument(
        "--max-bytes",
        type=byte_size,
        default=None,
        metavar="N",
        help="size to prune down to: bytes, or with K/M/G/T (default: compact only)",
    )
    prune.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format (default: text)"
    )
    add_common_flags(prune)
    prune.set_defaults(run=run_prune)


def _add_directory(parser: argparse.ArgumentParser) -> None:
    """The store's folder: positional ``DIR`` or ``--store DIR`` (as the scoring commands)."""
    parser.add_argument("directory", metavar="DIR", nargs="?", help="the store's directory")
    parser.add_argument(
        "--store", dest="store_dir", metavar="DIR", help="the store's directory (same as DIR)"
    )


def _directory(args: argparse.Namespace) -> str:
    given = [d for d in (args.directory, args.store_dir) if d is not None]
    if not given:
        raise CliError(f"store {args.action}: give the store's folder (DIR or --store DIR)")
    if len(given) == 2 and given[0] != given[1]:
        raise CliError(
            f"store {args.action}: two folders given ({given[0]} and --store {given[1]}); give one"
        )
    return given[0]


def _open(directory: str):  # type: ignore[no-untyped-def]
    from ..store import EmbeddingStore

    path = Path(directory)
    if not path.exists():
        raise CliError(f"{directory}: does not exist")
    if not path.is_dir():
        raise CliError(f"{directory}: not a folder (an embedding store is a folder)")
    if not (path / "segments").is_dir():
        raise CliError(f"{directory}: not an embedding store (no segments/ folder)")
    return EmbeddingStore(path)


def _when(stamp: float | None) -> str:
    return "-" if stamp is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))


def _write(args: argparse.Namespace, report: dict, title: str) -> None:
    if args.format == "json":
        json.dump(report, sys.stdout)
        sys.stdout.write("\n")
        return
    mb = 1024**2
    lines = [
        f"{title} {report['directory']}",
        f"entries      {report['entries']}",
        f"entry bytes  {report['entry_bytes']} ({report['entry_bytes'] / mb:.1f} MiB)",
        f"file bytes   {report['file_bytes']} ({report['file_bytes'] / mb:.1f} MiB)",
        f"segments     {report['segments']} ({report['active_segments']} being written)",
        f"damaged      {report['damaged']}",
        f"last used    {_when(report['oldest_use'])} .. {_when(report['newest_use'])}",
    ]
    sys.stdout.write("\n".join(lines) + "\n")


def run_show(args: argparse.Namespace) -> int:
    store = _open(_directory(args))
    _write(args, store.info().as_dict(), "store")
    return 0


def run_prune(args: argparse.Namespace) -> int:
    directory = _directory(args)
    store = _open(directory)
    before = store.info()
    target = before.file_bytes if args.max_bytes is None else args.max_bytes
    after = store.prune(target)
    if after is None:
        raise CliError(f"{directory}: cannot prune (the store is not writable)", 1)
    _write(args, after.as_dict(), "pruned")
    info(
        args,
        f"{before.entries - after.entries} entries evicted, "
        f"{before.file_bytes - after.file_bytes} bytes freed",
    )
    return 0
