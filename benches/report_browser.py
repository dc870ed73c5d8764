"""The HTML report in headless Chromium: time to ready and JavaScript heap, by size.

Pages: the 3,004 WMT segments x 3 systems of docs/report.md (``hyps_long.txt`` /
``refs_long.txt``, the default model; skipped, with a line saying why, when the files are not
there), and ``synthetic_report`` pages (fixed scores, no encoder) of 30,000 x 3 and
200,000 x 5. Each page is opened ``TURNS`` times in a fresh tab of one browser; reported: the
file's size, time to ready (the page's own ``performance.now()`` when it has drawn everything
and can be used: navigation start to the segment table drawn, the file's reading and parsing
included), the time until every text block is read as well (search and text sorting wait for
it), and the JavaScript heap after ready, after a garbage collection (CDP
``Performance.getMetrics``, ``JSHeapUsedSize``); the best turn for times, the last for heap.

Run: ``python -m benches.report_browser [TURNS]`` (default 3); ``make bench-report-browser``.
Needs Chromium, chromedriver and selenium (``make test-browser`` installs them).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benches.common import load_average, machine, print_table, wmt_pairs
from rust_bertscore import BERTScorer
from rust_bertscore.analyses.report_html import report_payload, write_report
from rust_bertscore.analyses.report_synthetic import synthetic_report


def wmt_page(folder: Path) -> Path | None:
    """The 3,004 x 3 page of docs/report.md (base, last word of every third line cut, every
    second line lower-cased), or None without the WMT files."""
    pairs = wmt_pairs("report_browser (3,004 x 3 WMT)", 3004)
    if pairs is None:
        return None
    cands, refs = pairs
    cut = [" ".join(c.split()[:-1]) if i % 3 == 0 else c for i, c in enumerate(cands)]
    lower = [c.lower() if i % 2 == 0 else c for i, c in enumerate(cands)]
    out = folder / "wmt.html"
    BERTScorer().report({"base": cands, "sysA": cut, "sysB": lower}, refs, out)
    return out


def synthetic_page(folder: Path, n: int, k: int) -> Path:
    rep = synthetic_report(n, k, seed=1)
    payload = report_payload(rep, title="synthetic", signature="s", inputs=[], special_tokens=[])
    return write_report(folder / f"synthetic-{n}x{k}.html", payload)


def browser() -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not chromium or not driver:
        return None
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage"):
        options.add_argument(arg)
    options.add_argument("--window-size=1400,1000")
    return webdriver.Chrome(options=options, service=Service(driver))


def measure(driver: Any, path: Path) -> dict[str, float]:
    """One opening of ``path`` in a fresh tab: ready and all-texts times (ms), heap (MB)."""
    driver.switch_to.new_window("tab")
    driver.get(path.as_uri())
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        done = driver.execute_script(
            "return document.body.dataset.ready === '1' && document.body.dataset.texts === 'all'"
            " ? [JSON.parse(document.body.dataset.timings), performance.now()] : null"
        )
        if done:
            break
        time.sleep(0.02)
    else:
        raise RuntimeError(f"{path.name} never became ready")
    timings = done[0]
    driver.execute_cdp_cmd("HeapProfiler.enable", {})
    driver.execute_cdp_cmd("HeapProfiler.collectGarbage", {})
    driver.execute_cdp_cmd("Performance.enable", {})
    metrics = driver.execute_cdp_cmd("Performance.getMetrics", {})["metrics"]
    heap = next(m["value"] for m in metrics if m["name"] == "JSHeapUsedSize") / 1e6
    driver.close()
    driver.switch_to.window(driver.window_handles[0])
    return {"ready": timings["ready"], "texts": timings.get("texts", done[1]), "heap": heap}


def main() -> None:
    turns = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    driver = browser()
    if driver is None:
        print("report_browser: skipped, Chromium or chromedriver is not installed")
        return
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            pages: list[tuple[str, Path | None]] = [
                ("3,004 x 3 (WMT, encoder)", wmt_page(folder)),
                ("30,000 x 3 (synthetic)", synthetic_page(folder, 30_000, 3)),
                ("200,000 x 5 (synthetic)", synthetic_page(folder, 200_000, 5)),
            ]
            for label, path in pages:
                if path is None:
                    continue
                runs = [measure(driver, path) for _ in range(turns)]
                rows.append(
                    [
                        label,
                        f"{path.stat().st_size / 1e6:.1f}",
                        f"{min(r['ready'] for r in runs) / 1000:.2f}",
                        f"{min(r['texts'] for r in runs) / 1000:.2f}",
                        f"{runs[-1]['heap']:.0f}",
                    ]
                )
                print(label, json.dumps(runs), flush=True)
    finally:
        driver.quit()
    version = driver.capabilities.get("browserVersion", "?")
    print(f"Chromium {version}, {turns} turns; load {load_average()}; {machine()}")
    print_table(
        ["page", "file MB", "ready s (best)", "all texts s (best)", "JS heap MB"],
        rows,
        right=(1, 2, 3, 4),
    )


if __name__ == "__main__":
    main()
