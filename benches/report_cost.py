"""What ``report`` costs on top of ``compare``, on the same input, in one process.

Three systems over the first ``N`` WMT segments (``hyps_long.txt`` / ``refs_long.txt``): the
WMT output, the same with the last word of every third line cut, and the same with every second
line lower-cased (docs/report.md's example). ``compare`` and ``report`` take turns, each with a
fresh ``BERTScorer`` (its model loaded before the clock starts, its vector cache empty), so both
encode the same distinct texts. CPU seconds (user + system, all threads) are the process's:
steadier than wall time on a loaded machine. Each side's best of the turns is reported.

Rows: ``compare``; ``build_report``, the report's data alone (scores, alignments in chunks of
:data:`~rust_bertscore.analyses.report.CHUNK_PAIRS` pairs, statistics, buckets, words), the part
issue 60 bounds to 10% over ``compare``; ``report``, that and the HTML page. Skipped, with a
line saying why, when the WMT files are not there. The order of the runs alternates from turn
to turn; "same turn" is the median over turns of each run's CPU time over ``compare``'s in the
same turn (steadier than the ratio of the bests on a shared host).

Run: ``python -m benches.report_cost [N] [TURNS]`` (default 300 segments, 3 turns).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from benches.common import load_average, machine, print_table, wmt_pairs
from rust_bertscore import BERTScorer
from rust_bertscore.analyses.report import build_report


def systems(cands: list[str]) -> dict[str, list[str]]:
    """The three systems of docs/report.md's example."""
    cut = [" ".join(c.split()[:-1]) if i % 3 == 0 else c for i, c in enumerate(cands)]
    lower = [c.lower() if i % 2 == 0 else c for i, c in enumerate(cands)]
    return {"base": cands, "sysA": cut, "sysB": lower}


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    turns = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    pairs = wmt_pairs("report_cost", n)
    if pairs is None:
        return
    cands, refs = pairs
    by_system = systems(cands)
    inf = (float("inf"), float("inf"))
    best = {"compare": inf, "build_report": inf, "report": inf}
    ratios: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report.html"
        runs = {
            "compare": lambda s: s.compare(by_system, refs),
            "build_report": lambda s: build_report(s, by_system, refs),
            "report": lambda s: s.report(by_system, refs, out),
        }
        ratios = {k: [] for k in runs}
        for turn in range(turns):
            order = list(runs) if turn % 2 == 0 else list(runs)[::-1]  # no side always first
            cpu_of: dict[str, float] = {}
            for name in order:
                scorer = BERTScorer()
                scorer.score(["warm up"], ["warm up"])  # the model loads outside the clock
                w0, c0 = time.perf_counter(), time.process_time()
                runs[name](scorer)
                wall, cpu = time.perf_counter() - w0, time.process_time() - c0
                best[name] = (min(best[name][0], cpu), min(best[name][1], wall))
                cpu_of[name] = cpu
            for name in runs:
                ratios[name].append(cpu_of[name] / cpu_of["compare"])
        size = out.stat().st_size
    host = machine()
    print(f"{n} segments x 3 systems, {turns} turns; load {load_average()}; {host}")
    base = best["compare"][0]
    print_table(
        ["command", "CPU s (best)", "wall s (best)", "CPU vs compare", "same turn (median)"],
        [
            [
                k,
                f"{c:.2f}",
                f"{w:.2f}",
                f"{(c / base - 1) * 100:+.0f}%",
                f"{(statistics.median(ratios[k]) - 1) * 100:+.0f}%",
            ]
            for k, (c, w) in best.items()
        ],
        right=(1, 2, 3, 4),
    )
    print(f"report file: {size:,} bytes")


if __name__ == "__main__":
    main()
