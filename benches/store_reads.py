"""Reading the embedding store: ``os.pread`` against ``os.lseek`` + ``os.read``.

``rust_bertscore.store.files.read_at`` uses ``os.pread`` where the OS has it (one system call)
and otherwise (Windows) seeks and reads (two). This writes ``--entries`` entries of
``--tokens`` x ``--dim`` float32 (default 1,000 of 32 x 384, all-MiniLM-L6-v2's width: 48 KiB
each) into a temporary store, then, with the segment in the page cache, reads them in a
shuffled order through each path:

* a record header (76 bytes: what indexing a segment reads, once per record);
* a payload (the vectors: what a hit reads);
* ``EmbeddingStore.get_many`` of every key (a hit end to end: the read, the CRC-32 check, the
  array), with ``os.pread`` there and taken away for the run.

Each figure is the best of ``--rounds`` rounds, in microseconds per read; the ratio is the
seek path's time over pread's.

Run: ``make bench-store`` or ``python -m benches.store_reads [--entries N] [--tokens T]
[--dim D] [--rounds R] [--json PATH]`` (a few seconds).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from benches.common import machine, print_table, write_json
from rust_bertscore.store import EmbeddingStore, files, key_space, text_key
from rust_bertscore.store.records import HEADER_BYTES
from rust_bertscore.store.survey import scan_headers


@contextlib.contextmanager
def without_pread() -> Iterator[None]:
    """``os.pread`` taken away for a while, as on Windows."""
    pread = os.pread
    del os.pread
    try:
        yield
    finally:
        os.pread = pread


def per_read(
    fast: Callable[[], object], slow: Callable[[], object], reads: int, rounds: int
) -> tuple[float, float]:
    """Best microseconds per read of ``fast`` and of ``slow`` (``reads`` reads a call), timed in
    alternate rounds so that a shared machine's drift falls on both alike."""
    fast(), slow()
    best = [float("inf"), float("inf")]
    for _ in range(rounds):
        for k, fn in enumerate((fast, slow)):
            t0 = time.perf_counter()
            fn()
            best[k] = min(best[k], time.perf_counter() - t0)
    return best[0] / reads * 1e6, best[1] / reads * 1e6


def measure(
    directory: Path, entries: int, tokens: int, dim: int, rounds: int
) -> list[dict[str, Any]]:
    space = key_space("bench", "fp32", "6", "CPUExecutionProvider", "bench")
    keys = [text_key(space, [101, i, 102]) for i in range(entries)]
    rng = np.random.default_rng(0)
    store = EmbeddingStore(directory)
    for start in range(0, entries, 100):
        chunk = keys[start : start + 100]
        store.put_many(chunk, [rng.standard_normal((tokens, dim), np.float32) for _ in chunk])
    store.close()
    (segment,) = (directory / "segments").glob("*.seg")
    fd = os.open(segment, os.O_RDONLY | files.O_BINARY)
    try:
        found, _ = scan_headers(fd, 0, os.fstat(fd).st_size)
        spots = [(pos, header.nbytes) for pos, header in found]
        random.Random(0).shuffle(spots)
        payload = spots[0][1]

        def headers(read: Callable[[int, int, int], bytes]) -> Callable[[], object]:
            def run() -> None:
                for pos, _ in spots:
                    read(fd, HEADER_BYTES, pos)

            return run

        def payloads(read: Callable[[int, int, int], bytes]) -> Callable[[], object]:
            def run() -> None:  # each payload dropped at once, as the store decodes it
                for pos, n in spots:
                    read(fd, n, pos + HEADER_BYTES)

            return run

        rows: list[dict[str, Any]] = []
        for what, size, make in (
            ("record header", HEADER_BYTES, headers),
            ("payload", payload, payloads),
        ):
            fast, slow = per_read(make(files.read_at), make(files.seek_read), entries, rounds)
            rows.append({"read": what, "bytes": size, "pread_us": fast, "seek_read_us": slow})
    finally:
        os.close(fd)
    shuffled = keys[:]
    random.Random(1).shuffle(shuffled)
    reader = EmbeddingStore(directory)

    def portable() -> object:
        with without_pread():
            return reader.get_many(shuffled)

    fast, slow = per_read(lambda: reader.get_many(shuffled), portable, entries, rounds)
    assert reader.misses == 0, "every key was stored"
    reader.close()
    rows.append(
        {"read": "get_many, per entry", "bytes": payload, "pread_us": fast, "seek_read_us": slow}
    )
    for row in rows:
        row["ratio"] = row["seek_read_us"] / row["pread_us"]
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    if not hasattr(os, "pread"):
        print("store_reads: skipped, this OS has no os.pread (the seek path is the only one)")
        return 0
    with tempfile.TemporaryDirectory(prefix="rbs-store-reads-") as tmp:
        rows = measure(Path(tmp), args.entries, args.tokens, args.dim, args.rounds)
    info = machine()
    print(
        f"store reads: {args.entries} entries of {args.tokens} x {args.dim} float32, best of "
        f"{args.rounds} rounds, page cache warm; {info.get('Model name', '?')}, "
        f"Python {info['python']}"
    )
    print_table(
        ("read", "bytes", "pread (us)", "lseek + read (us)", "ratio"),
        [
            (
                r["read"],
                f"{r['bytes']:,}",
                f"{r['pread_us']:.2f}",
                f"{r['seek_read_us']:.2f}",
                f"{r['ratio']:.2f}x",
            )
            for r in rows
        ],
        right=(1, 2, 3, 4),
    )
    write_json(args.json, {"machine": info, "args": vars(args) | {"json": None}, "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
