"""What ``report`` costs on top of ``compare``, on the same input, in one process.

Three systems over the first ``N`` WMT segments (``hyps_long.txt`` / ``refs_long.txt``): the
WMT output, the same with the last word of every third line cut, and the same with every second
line lower-cased (docs/report.md's example). ``compare`` and ``report`` take turns, each with a
fresh ``BERTScorer`` (its model loaded before the clock starts, its vector cache empty), so both
encode the same distinct texts. CPU seconds (user + system, all threads) are the process's:
steadier than wall time on a loaded machine. Each side's best of the turns is reported.

Run: ``python -m benches.report_cost [N] [TURNS]`` (default 300 segments, 3 turns).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from benches.common import load_average, machine, print_table, wmt_pairs
from rust_bertscore import BERTScorer


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
    best = {"compare": (float("inf"), float("inf")), "report": (float("inf"), float("inf"))}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report.html"
        runs = {
            "compare": lambda s: s.compare(by_system, refs),
            "report": lambda s: s.report(by_system, refs, out),
        }
        for _ in range(turns):
            for name, run in runs.items():
                scorer = BERTScorer()
                scorer.score(["warm up"], ["warm up"])  # the model loads outside the clock
                w0, c0 = time.perf_counter(), time.process_time()
                run(scorer)
                wall, cpu = time.perf_counter() - w0, time.process_time() - c0
                best[name] = (min(best[name][0], cpu), min(best[name][1], wall))
        size = out.stat().st_size
    host = machine()
    print(f"{n} segments x 3 systems, {turns} turns; load {load_average()}; {host}")
    base = best["compare"][0]
    print_table(
        ["command", "CPU s (best)", "wall s (best)", "CPU vs compare"],
        [
            [k, f"{c:.2f}", f"{w:.2f}", f"{(c / base - 1) * 100:+.0f}%"]
            for k, (c, w) in best.items()
        ],
        right=(1, 2, 3),
    )
    print(f"report file: {size:,} bytes")


if __name__ == "__main__":
    main()
