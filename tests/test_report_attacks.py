"""Issue 60, attack round: hostile names, damaged data and odd scores in the HTML report.

Each test is one defect the attack found (D1 to D15 of the issue's attack report): names that
are Object.prototype keys, CSV formulas, LaTeX that pdflatex refuses, SVG that is not XML,
invisible characters in names, undecodable file names, damaged data blocks, a modified
script, thousands of search matches, near ties, the candidate picker, case-folding search,
all-NaN scores, 390 px with a long name and print."""

from __future__ import annotations

import base64
import dataclasses
import gzip
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from report_browser_support import (
    FOUND,
    console_problems,
    open_page,
    start_browser,
    view,
    wait_for,
)

from rust_bertscore.analyses.report import win_loss_tie
from rust_bertscore.analyses.report_html import report_html, report_payload, visible, write_report
from rust_bertscore.analyses.report_page import read_blocks
from rust_bertscore.analyses.report_synthetic import synthetic_report

browser_only = pytest.mark.skipif(isinstance(FOUND, str), reason=str(FOUND))


def renamed(value: Any, names: dict[str, str]) -> Any:
    """``value`` (a payload) with the systems renamed: every string equal to an old name, and
    the keys of maps keyed by system names (dicts without a ``name`` field)."""
    if isinstance(value, str):
        return names.get(value, value)
    if isinstance(value, list):
        return [renamed(v, names) for v in value]
    if isinstance(value, dict):
        keyed = "name" not in value
        return {(names.get(k, k) if keyed else k): renamed(v, names) for k, v in value.items()}
    return value


def page(tmp: Path, n: int, k: int, names: dict[str, str] | None = None, rep: Any = None) -> Path:
    rep = rep or synthetic_report(n, k, seed=1)
    payload = report_payload(rep, title="attack", signature="s", inputs=[], special_tokens=[])
    if names:
        payload = renamed(payload, names)
    return write_report(tmp / "r.html", payload)


@pytest.fixture(scope="module")
def browser():
    if isinstance(FOUND, str):
        pytest.skip(FOUND)
    driver = start_browser(1400, 2400)
    yield driver
    driver.quit()


def export(browser, selector: str) -> str:
    browser.execute_script("document.querySelector(arguments[0]).click()", selector)
    return browser.execute_script("return document.getElementById('export-text').value")


def fresh(browser, path: Path) -> None:
    browser.get_log("browser")
    open_page(browser, path)


PROTO_NAMES = {"baseline": "constructor", "sys1": "__proto__", "sys2": "toString"}


@browser_only
def test_d1_prototype_key_names(browser, tmp_path: Path) -> None:
    rep = synthetic_report(60, 3, seed=1)
    fresh(browser, page(tmp_path, 60, 3, PROTO_NAMES, rep))
    assert not console_problems(browser)
    for old, new in PROTO_NAMES.items():
        wlt = browser.execute_script(
            "return document.querySelector('#systems tr[data-system=\"' + arguments[0] + '\"]"
            " td.wlt').textContent",
            new,
        )
        assert wlt == (" / ".join(map(str, rep.wins[old])) if old in rep.wins else "–")
    assert browser.find_elements("css selector", "#bucket-table-length td[data-system]")
    assert browser.find_elements("css selector", "#poor-1 tbody tr")


FORMULA = '-1+HYPERLINK("http://evil.example/x","click")'
ODD = {"baseline": "[9pt]bracket", "sys1": FORMULA, "sys2": "ctl\x01name\uffff"}


@pytest.fixture(scope="module")
def odd_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return page(tmp_path_factory.mktemp("odd"), 60, 3, ODD)


@browser_only
def test_d2_csv_neutralises_formulas(browser, odd_page: Path) -> None:
    fresh(browser, odd_page)
    csv = export(browser, 'button.csv[data-for="systems"]')
    rows = csv.strip().split("\n")
    assert any(r.startswith("\"'" + FORMULA.replace('"', '""')) for r in rows), rows
    # plain numbers stay numbers; no cell starts with a formula character unescaped
    for line in (csv + export(browser, 'button.csv[data-for="poor-1"]')).split("\n"):
        for cell in re.findall(r'(?:^|,)("(?:[^"]|"")*"|[^,]*)', line):
            text = cell[1:-1].replace('""', '"') if cell.startswith('"') else cell
            if text[:1] in ("=", "+", "-", "@", "\t", "\r"):
                assert re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text), text


@browser_only
def test_d3_latex_compiles(browser, odd_page: Path, tmp_path: Path) -> None:
    fresh(browser, odd_page)
    tables = [
        export(browser, f'button.latex[data-for="{t}"]') for t in ("systems", "bucket-table-length")
    ]
    for tex in tables:
        assert not re.search("[●▲▼⟨⟩Δ–−✂]", tex)
        # every row starts with {} (a row starting with [ is not \\'s argument)
        rows = [r for r in tex.split("\n") if r.endswith("\\\\")]
        assert rows and all(r.startswith("{}") for r in rows)
    systems = tables[0]
    assert "{}Baseline: [9pt]bracket" in systems
    # the mean and the difference under it are apart
    assert re.search(r"\]; [+-]\d", systems)
    pdflatex = shutil.which("pdflatex")
    if not pdflatex:
        pytest.skip("pdflatex is not installed")
    doc = (
        "\\documentclass{article}\\usepackage[utf8]{inputenc}\\usepackage[T1]{fontenc}"
        "\\usepackage[margin=5mm,landscape]{geometry}\\begin{document}\\tiny\n"
        + "\n\n".join(tables)
        + "\\end{document}\n"
    )
    (tmp_path / "t.tex").write_text(doc, encoding="utf-8")
    run = subprocess.run(
        [pdflatex, "-interaction=nonstopmode", "-halt-on-error", "t.tex"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout[-2000:]
    assert (
        "9pt" in (tmp_path / "t.log").read_text(errors="replace") or (tmp_path / "t.pdf").exists()
    )


@browser_only
def test_d4_every_svg_export_is_xml(browser, odd_page: Path) -> None:
    fresh(browser, odd_page)
    ids = browser.execute_script(
        "return Array.from(document.querySelectorAll('button.svg')).map(b => b.dataset.for)"
    )
    assert len(ids) > 5
    for chart in ids:
        svg = export(browser, f'button.svg[data-for="{chart}"]')
        ET.fromstring(svg.split("\n", 1)[1].encode("utf-8"))
    assert not console_problems(browser)


HIDDEN = "\u00ad\u034f\u180e\ufe0f\U000e0041\ufff9\u200b\u2066\ufeff\U0001d173\u115f"


def test_d5_visible_shows_default_ignorables() -> None:
    shown = visible("a" + HIDDEN + "b")
    assert shown.startswith("a⟨U+00AD⟩⟨U+034F⟩⟨U+180E⟩⟨U+FE0F⟩⟨U+E0041⟩⟨U+FFF9⟩")
    assert shown.count("⟨U+") == len(HIDDEN) and shown.endswith("⟨U+115F⟩b")
    assert visible("café 東京") == "café 東京"


@browser_only
def test_d5_page_shows_default_ignorables(browser, tmp_path: Path) -> None:
    fresh(browser, page(tmp_path, 40, 2, {"sys1": "sys" + HIDDEN}))
    name = browser.execute_script(
        "return document.querySelectorAll('#systems .sysname')[1].textContent"
    )
    assert name == visible("sys" + HIDDEN)


def test_d6_undecodable_file_name(tmp_path: Path) -> None:
    bad = b"out\xff.txt".decode("utf-8", "surrogateescape")
    rep = synthetic_report(20, 2, seed=1)
    payload = report_payload(
        rep, title=bad, signature="s", inputs=[("system", bad, 20)], special_tokens=[]
    )
    payload = renamed(payload, {"sys1": bad})
    out = write_report(tmp_path / "r.html", payload)
    text = out.read_text(encoding="utf-8")
    assert "<title>out\\xff.txt</title>" in text
    blocks = dict(
        re.findall(r'<script type="application/octet-stream" id="([^"]+)">([^<]*)<', text)
    )
    data = read_blocks(blocks)["data"]
    assert data["systems"][1] == "out\\xff.txt"
    assert data["meta"]["inputs"][0]["path"] == "out\\xff.txt"


def _damage(path: Path, block: str) -> None:
    """Corrupt the gzip of ``block`` in the page (valid base64, bad data)."""
    text = path.read_text(encoding="utf-8")
    m = re.search(f'(id="{block}">\n)([^<]*)(\n</script>)', text)
    assert m
    raw = bytearray(gzip.compress(b'{"not": "this"}' * 50))
    raw[20:40] = b"\xff" * 20
    bad = base64.b64encode(bytes(raw)).decode()
    path.write_text(text[: m.start(2)] + bad + text[m.end(2) :], encoding="utf-8")


@browser_only
def test_d7_damaged_blocks_are_named(browser, tmp_path: Path) -> None:
    out = page(tmp_path, 9000, 2)
    _damage(out, "tx-1")
    _damage(out, "al-0")
    fresh(browser, out)
    note = browser.find_element("id", "seg-damaged").text
    assert "This report's data is damaged: block tx-1 (segments 8,192–8,999)" in note
    # segments of the readable block open; the damaged alignment block says so
    browser.execute_script("window.rbReport.open(3)")
    wait_for(
        browser, "document.querySelector('#alignment .alignments').textContent.includes('al-0')"
    )
    msg = browser.find_element("css selector", "#alignment .alignments").text
    assert "block al-0 (segments 0–255) could not be read" in msg
    assert browser.find_element("css selector", "#alignment .full.ref .txt").text
    # the last segment's texts are marked damaged, not pending
    browser.execute_script("document.getElementById('segments-wrap').scrollTop = 1e9")
    wait_for(browser, "document.querySelector('#seg-body td.damaged')")
    browser.execute_script("window.rbReport.open(8500)")
    wait_for(browser, "document.querySelector('#alignment').textContent.includes('tx-1')")
    assert not console_problems(browser)
    # the main data block damaged: the page says so, not 'TypeError'
    _damage(out, "report-data")
    browser.get(out.as_uri())
    text = wait_for(
        browser,
        "document.getElementById('read-error') &&"
        " document.getElementById('read-error').textContent",
    )
    assert text.startswith("This report's data is damaged: block report-data")


@browser_only
def test_d8_modified_script_says_so(browser, tmp_path: Path) -> None:
    out = page(tmp_path, 20, 2)
    fresh(browser, out)
    assert not browser.find_elements("id", "no-script")
    text = out.read_text(encoding="utf-8")
    out.write_text(text.replace("'use strict';", "'use strict'; ", 1), encoding="utf-8")
    browser.get(out.as_uri())
    note = browser.find_element("id", "no-script")
    assert note.is_displayed() and "script did not run (blocked or modified)" in note.text


@browser_only
def test_d9_highlights_are_capped(browser, tmp_path: Path) -> None:
    rep = synthetic_report(20, 2, seed=1)
    rep.segments["baseline"].cands[0] = "ab " * 5000
    fresh(browser, page(tmp_path, 20, 2, rep=rep))
    browser.execute_script(
        "var s = document.getElementById('search'); s.value = 'ab';"
        "s.dispatchEvent(new Event('input'))"
    )
    wait_for(browser, "document.querySelector('#seg-body td.text .more-marks')")
    counts = browser.execute_script(
        "return Array.from(document.querySelectorAll('#seg-body td.text'))"
        ".map(td => td.querySelectorAll('mark').length)"
    )
    assert max(counts) == 100
    more = browser.find_element("css selector", "#seg-body td.text .more-marks")
    assert more.get_attribute("textContent") == " (+4900 more matches)"


@browser_only
def test_d10_near_ties_agree_with_the_table(browser, tmp_path: Path) -> None:
    rep = synthetic_report(2000, 2, seed=0)
    rng = np.random.default_rng(0)
    b, o = rep.segments["baseline"].F, rep.segments["sys1"].F
    o[:] = b + 1e-7 * rng.integers(-3, 4, len(b))
    wins = dict(rep.wins)
    wins["sys1"] = win_loss_tie(b, o)
    rep = dataclasses.replace(rep, wins=wins)
    assert wins["sys1"] == (0, 0, 2000)
    fresh(browser, page(tmp_path, 2000, 2, rep=rep))
    ties = browser.find_element("css selector", "#hist-d-0 rect.ties").get_attribute("data-count")
    assert int(ties) == 2000
    counts = browser.execute_script(
        "return Array.from(document.querySelectorAll('#hist-d-0 rect.bin'))"
        ".map(r => +r.dataset.count)"
    )
    assert sum(counts) == 0
    assert not browser.find_elements("css selector", "#seg-body .d.pos, #seg-body .d.neg")


@browser_only
def test_d11_candidate_picker_keeps_the_sort_button(browser, tmp_path: Path) -> None:
    fresh(browser, page(tmp_path, 30, 3))
    browser.execute_script(
        "var s = document.getElementById('cand-system'); s.value = '2';"
        "s.dispatchEvent(new Event('change'))"
    )
    assert browser.find_elements("css selector", '#cand-head button.sort[data-key="cand"]')
    assert browser.find_element("id", "cand-of").get_attribute("textContent") == "sys2"


@browser_only
def test_d12_search_and_highlight_use_one_rule(browser, tmp_path: Path) -> None:
    rep = synthetic_report(20, 2, seed=1)
    rep.refs[0] = ["İstanbul and ISTANBUL"]
    fresh(browser, page(tmp_path, 20, 2, rep=rep))
    browser.execute_script(
        "var s = document.getElementById('search'); s.value = 'i\u0307stanbul';"
        "s.dispatchEvent(new Event('input'))"
    )
    wait_for(browser, "window.rbReport.view().length === 1")
    assert view(browser) == [0]
    marks = browser.execute_script(
        "return Array.from(document.querySelectorAll('#seg-body mark')).map(m => m.textContent)"
    )
    assert marks == ["İstanbul"]


def _nan_report() -> Any:
    rep = synthetic_report(50, 3, seed=0)
    for m in "PRF":
        getattr(rep.segments["sys2"], m)[:] = np.nan
        getattr(rep.segments["sys1"], m)[::4] = np.nan
    return rep


@browser_only
def test_d13_all_nan_system_draws_no_nan(browser, tmp_path: Path) -> None:
    fresh(browser, page(tmp_path, 50, 3, rep=_nan_report()))
    bad = browser.execute_script(
        """
        const out = [];
        document.querySelectorAll('svg, svg *').forEach(e => {
          for (const a of e.attributes)
            if (/NaN|Infinity/.test(a.value)) out.push(e.tagName + ' ' + a.name + '=' + a.value);
          if (e.tagName === 'text' && /NaN|Infinity/.test(e.textContent))
            out.push('text ' + e.textContent);
        });
        return out;
        """
    )
    assert bad == []
    assert "every value is missing" in browser.find_element("id", "hist-2").text
    assert "every value is missing" in browser.find_element("id", "hist-d-1").text


LONG = "outputs/wmt23.en-de.online-B.txt"


@browser_only
def test_d14_no_horizontal_overflow_at_390(tmp_path: Path) -> None:
    names = {"baseline": LONG, "sys1": "outputs/wmt23.en-de.ONLINE-W-long-name.txt"}
    out = page(tmp_path, 40, 2, names)
    driver = start_browser(390, 844)
    try:
        driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True},
        )
        open_page(driver, out)
        sizes = driver.execute_script(
            "const d = document.documentElement; return [d.scrollWidth, d.clientWidth]"
        )
        assert sizes[0] <= sizes[1], sizes
        title = driver.find_element("css selector", "#cand-system").get_attribute("title")
        assert title == LONG
    finally:
        driver.quit()


@browser_only
def test_d15_print_shows_every_row_and_the_filter(browser, tmp_path: Path) -> None:
    fresh(browser, page(tmp_path, 3000, 2))
    browser.execute_script(
        "var s = document.getElementById('search'); s.value = ' ';"
        "s.dispatchEvent(new Event('input'))"
    )
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "print"})
    try:
        wait_for(browser, "document.querySelectorAll('#seg-body tr.row').length === 2000")
        note = browser.find_element("id", "print-note").text
        assert "3000 of 3000 segments" in note and "1000 more rows are left out" in note
        browser.execute_script(
            "var s = document.getElementById('search'); s.value = '12';"
            "s.dispatchEvent(new Event('input'))"
        )
        n = len(view(browser))
        assert 0 < n < 2000
        wait_for(browser, f"document.querySelectorAll('#seg-body tr.row').length === {n}")
        assert "search “12”" in browser.find_element("id", "print-note").text
    finally:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": ""})


def test_d8_page_has_the_static_note() -> None:
    text = report_html({"meta": {"title": "t"}})
    assert '<div id="no-script"' in text
    assert "did not run (blocked or modified)" in " ".join(text.split())


def test_d6_cli_report_with_an_undecodable_file_name(tmp_path: Path) -> None:
    import os
    import sys

    import rust_bertscore
    from conftest import TINY

    (tmp_path / "ref.txt").write_text("the cat sat\nit rains\n", encoding="utf-8")
    (tmp_path / "base.txt").write_text("the cat\nrain\n", encoding="utf-8")
    bad = os.fsdecode(b"b\xff.txt")
    (tmp_path / bad).write_text("a cat\nsun\n", encoding="utf-8")
    args = ["-m", str(TINY / "bert"), "-r", "ref.txt", "-c", "base.txt", "-c", bad]
    proc = subprocess.run(
        [sys.executable, "-m", "rust_bertscore", "report", *args, "-o", "r.html"],
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(Path(rust_bertscore.__file__).parents[1])},
        cwd=tmp_path,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "r.html").read_text(encoding="utf-8")
    blocks = dict(
        re.findall(r'<script type="application/octet-stream" id="([^"]+)">([^<]*)<', text)
    )
    assert read_blocks(blocks)["data"]["systems"] == ["base.txt", "b\\xff.txt"]
