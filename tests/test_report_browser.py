"""The HTML report in a real browser: headless Chromium (Debian's ``chromium`` and
``chromium-driver``) driven by Selenium opens the file from disk. Skipped, with the reason, when
Selenium, Chromium or its driver is missing; ``make test-browser`` installs them and runs this.

Checked: no console error, no request but the file itself, the systems table equal to
``compare``'s text table, sorting and filtering, a segment's alignment equal to ``align``'s
tokens and cosines, the keyboard, the dark scheme, drawn charts, and 10,000 segments drawn in a
window as the table scrolls (tests/test_report_page.py has issue 60's checks)."""

from __future__ import annotations

import io
import re
import time
from pathlib import Path

import numpy as np
import pytest
from report_browser_support import (
    FOUND,
    console_problems,
    drawn_rows,
    open_page,
    requested_urls,
    start_browser,
    view,
    wait_for,
)
from test_compare import BASE, GOOD, REFS

from conftest import TINY
from rust_bertscore import BERTScorer

BERT = str(TINY / "bert")
MIXED = [g if i % 2 else b for i, (b, g) in enumerate(zip(BASE, GOOD))]
SYSTEMS = {"base": BASE, "good": GOOD, "mixed": MIXED}
SEED, SAMPLES = 5, 400


pytestmark = pytest.mark.skipif(isinstance(FOUND, str), reason=str(FOUND))


@pytest.fixture(scope="module")
def scorer() -> BERTScorer:
    return BERTScorer(model_type=BERT)


@pytest.fixture(scope="module")
def page(scorer: BERTScorer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("browser") / "report.html"
    scorer.report(SYSTEMS, REFS, out, n_samples=SAMPLES, seed=SEED)
    return out


@pytest.fixture(scope="module")
def browser():
    driver = start_browser(1300, 2400)
    yield driver
    driver.quit()


def rows(driver) -> list[int]:
    return view(driver)


def cell_values(driver, key: str) -> list[str]:
    """The drawn rows' values of a column (every row: these pages fit in one window)."""
    return driver.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0])).map(td => td.textContent)",
        f'#seg-body [data-key="{key}"]',
    )


def test_no_console_error_and_no_request_but_the_file(browser, page: Path) -> None:
    browser.get_log("browser")
    browser.get_log("performance")
    open_page(browser, page)
    browser.find_element("css selector", '#seg-body tr[data-seg="3"]').click()
    wait_for(browser, "document.getElementById('alignment').dataset.ready === '3'")
    errors = console_problems(browser)
    assert not errors, errors
    urls = requested_urls(browser)
    assert urls == [page.as_uri()], urls


def test_systems_table_equals_compare(browser, page: Path, scorer: BERTScorer) -> None:
    open_page(browser, page)
    table = scorer.compare(SYSTEMS, REFS, n_samples=SAMPLES, seed=SEED)
    for s in table.systems:
        for metric in ("P", "R", "F"):
            key = "F1" if metric == "F" else metric
            cell = browser.find_element(
                "css selector", f'#systems td[data-system="{s.name}"][data-metric="{key}"]'
            )
            x = getattr(s, metric)
            assert cell.find_element("css selector", ".mean").text == f"{x.mean:.4f}"
            assert (
                cell.find_element("css selector", ".ci").text
                == f"[{x.ci_low:.4f}, {x.ci_high:.4f}]"
            )
            if not s.is_baseline:
                assert cell.find_element("css selector", ".d").text == f"{x.delta:+.4f}"
                assert cell.find_element("css selector", ".p").text == f"{x.p_value:.4f}"
    # the same numbers as compare's text table, line for line
    text = table.format_text()
    for s in table.systems:
        row = browser.find_element("css selector", f'#systems tr[data-system="{s.name}"]').text
        for m in ("P", "R", "F"):
            assert f"{getattr(s, m).mean:.4f}" in text and f"{getattr(s, m).mean:.4f}" in row


def test_sorting_and_filtering(browser, page: Path, scorer: BERTScorer) -> None:
    open_page(browser, page)
    F = {k: np.asarray(scorer.score(v, REFS)[2], np.float64) for k, v in SYSTEMS.items()}
    assert rows(browser) == list(range(len(REFS)))
    browser.find_element("css selector", 'button.sort[data-key="F:good"]').click()
    assert rows(browser) == np.argsort(F["good"], kind="stable").tolist()
    assert drawn_rows(browser) == rows(browser)
    values = [float(v) for v in cell_values(browser, "F:good")]
    assert values == sorted(values)
    browser.find_element("css selector", 'button.sort[data-key="F:good"]').click()
    assert [float(v) for v in cell_values(browser, "F:good")] == sorted(values, reverse=True)
    header = browser.find_element("css selector", '#segments th[data-system="good"]')
    assert header.get_attribute("aria-sort") == "descending"
    # text search: the segments with "umbrella" in any of their texts
    search = browser.find_element("id", "search")
    search.send_keys("umbrella")
    assert rows(browser) == [6]
    search.clear()
    search.send_keys("xx-nowhere")
    assert rows(browser) == []
    assert browser.find_element("id", "seg-info").text.startswith("0 of 8 segments")
    browser.execute_script(
        "const s = document.getElementById('search'); s.value = '';"
        " s.dispatchEvent(new Event('input'))"
    )
    # ΔF range of "mixed": segments it improves by at least 0.001
    browser.find_element("css selector", '#delta-system option[value="mixed"]').click()
    browser.find_element("id", "dmin").send_keys("0.001")
    d = F["mixed"] - F["base"]
    expected = sorted(np.flatnonzero(d >= 0.001).tolist(), key=lambda i: (-F["good"][i], i))
    assert rows(browser) == expected and expected
    assert all(float(v) >= 0.001 for v in cell_values(browser, "dF:mixed"))


def test_clicking_a_segment_shows_aligns_tokens(browser, page: Path, scorer: BERTScorer) -> None:
    open_page(browser, page)
    browser.find_element("css selector", '#seg-body tr[data-seg="3"]').click()
    wait_for(browser, "document.getElementById('alignment').dataset.ready === '3'")
    for name, cands in SYSTEMS.items():
        a = scorer.align_batch(cands, REFS)[3]
        for side, alignment in (("cand", a.candidate), ("ref", a.reference)):
            spans = browser.execute_script(
                "return Array.from(document.querySelectorAll(arguments[0]))"
                ".map(s => [s.dataset.token, +s.dataset.match, s.dataset.cos, s.title])",
                f'.tokens[data-side="{side}"][data-system="{name}"] .tok',
            )
            assert [s[0] for s in spans] == [t.token for t in alignment.tokens]
            assert [s[1] for s in spans] == [t.match for t in alignment.tokens]
            assert [s[2] for s in spans] == [f"{t.cosine:.4f}" for t in alignment.tokens]
            other = a.reference if side == "cand" else a.candidate
            for s, t in zip(spans, alignment.tokens):  # the hover names the matched token
                assert (
                    f"→ {other.tokens[t.match].token} (#{t.match}), cosine {t.cosine:.4f}" in s[3]
                )
        panel = browser.find_element("css selector", f'.align-panel[data-system="{name}"]')
        assert f"F1 {a.F:.4f}" in panel.find_element("css selector", "h3").text
        # the heatmap: one square per candidate token's match, one dot per reference token's
        # (special tokens left out, as `show` draws it)
        special = scorer.tokenizer.special_ids
        squares = panel.find_elements("css selector", "svg.heatmap rect.pmatch")
        dots = panel.find_elements("css selector", "svg.heatmap circle.rmatch")
        assert len(squares) == content(a.candidate, a.reference, special)
        assert len(dots) == content(a.reference, a.candidate, special)


def content(side, other, special: frozenset[int]) -> int:
    """Matches between two content tokens (the heatmap leaves special tokens out)."""
    return sum(t.id not in special and other.tokens[t.match].id not in special for t in side.tokens)


def test_keyboard_and_colour_schemes(browser, page: Path) -> None:
    from selenium.webdriver.common.keys import Keys

    open_page(browser, page)
    first = browser.find_element("css selector", '#seg-body tr[data-seg="0"]')
    first.send_keys(Keys.ARROW_DOWN)
    assert browser.switch_to.active_element.get_attribute("data-seg") == "1"
    browser.switch_to.active_element.send_keys(Keys.ENTER)
    wait_for(browser, "document.getElementById('alignment').dataset.ready === '1'")
    assert browser.find_element("id", "alignment-section").is_displayed()
    assert "Segment 1." in browser.find_element("id", "alignment").text
    browser.find_element("tag name", "body").send_keys("/")
    assert browser.switch_to.active_element.get_attribute("id") == "search"

    def background() -> list[int]:
        rgb = browser.execute_script("return getComputedStyle(document.body).backgroundColor")
        return [int(x) for x in re.findall(r"\d+", rgb)[:3]]

    theme = browser.find_element("id", "theme")
    theme.click()
    assert browser.execute_script("return document.documentElement.dataset.theme") == "light"
    assert min(background()) > 200
    theme.click()
    assert browser.execute_script("return document.documentElement.dataset.theme") == "dark"
    assert max(background()) < 60
    text = browser.execute_script("return getComputedStyle(document.body).color")
    assert min(int(x) for x in re.findall(r"\d+", text)[:3]) > 180  # light text on dark
    # "auto" follows the system's scheme
    theme.click()
    assert browser.execute_script("return document.documentElement.dataset.theme") is None
    browser.execute_cdp_cmd(
        "Emulation.setEmulatedMedia",
        {"media": "", "features": [{"name": "prefers-color-scheme", "value": "dark"}]},
    )
    assert max(background()) < 60
    browser.execute_cdp_cmd(
        "Emulation.setEmulatedMedia",
        {"media": "", "features": [{"name": "prefers-color-scheme", "value": "light"}]},
    )
    assert min(background()) > 200
    # print: the controls go, the tables and charts stay
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "print", "features": []})
    assert not browser.find_element("id", "seg-controls").is_displayed()
    assert not browser.find_element("id", "theme").is_displayed()
    assert browser.find_element("id", "systems").is_displayed()
    assert browser.find_element("id", "hist-0").is_displayed()
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "", "features": []})


def test_charts_are_drawn(browser, page: Path, tmp_path: Path) -> None:
    from PIL import Image

    open_page(browser, page)
    for chart in ("hist-0", "hist-d-0", "bucket-length-mean", "bucket-baseF-delta"):
        element = browser.find_element("id", chart)
        image = Image.open(io.BytesIO(element.screenshot_as_png)).convert("RGB")
        pixels = np.asarray(image).reshape(-1, 3)
        background = np.asarray(Image.new("RGB", (1, 1), (245, 247, 249))).reshape(3)
        drawn = np.any(np.abs(pixels.astype(int) - background) > 40, axis=1).mean()
        colours = len({tuple(p) for p in pixels[:: max(1, len(pixels) // 5000)]})
        assert drawn > 0.02 and colours > 5, (chart, drawn, colours)
    browser.save_screenshot(str(tmp_path / "page.png"))
    assert (tmp_path / "page.png").stat().st_size > 20_000


def test_ten_thousand_segments_stay_windowed(browser, scorer: BERTScorer, tmp_path: Path) -> None:
    """A page of 10,000 segments (the 8 segments' report repeated: only the page is under test)
    keeps one window of rows in the document, and sorts, filters and scrolls."""
    from dataclasses import replace

    from rust_bertscore.analyses.report import build_report
    from rust_bertscore.analyses.report_html import report_payload, write_report

    small = build_report(scorer, SYSTEMS, REFS, n_samples=100)
    k = 1250
    n = k * len(REFS)
    segments = {
        name: replace(
            s,
            cands=s.cands * k,
            P=np.tile(s.P, k),
            R=np.tile(s.R, k),
            F=np.tile(s.F, k),
            alignments=s.alignments * k,
            best_ref=np.tile(s.best_ref, (k, 1)),
            truncated=np.tile(s.truncated, k),
        )
        for name, s in small.segments.items()
    }
    big = replace(
        small,
        segments=segments,
        refs=small.refs * k,
        ref_lengths=np.tile(small.ref_lengths, k),
        ref_truncated=np.tile(small.ref_truncated, k),
    )
    payload = report_payload(
        big, title="10,000", signature="s", inputs=[], special_tokens=["[CLS]", "[SEP]"]
    )
    out = write_report(tmp_path / "big.html", payload)
    start = time.perf_counter()
    open_page(browser, out)
    opened = time.perf_counter() - start
    assert len(drawn_rows(browser)) < 60  # one window in the document, not 10,000 rows
    start = time.perf_counter()
    browser.find_element("css selector", 'button.sort[data-key="dF:good"]').click()
    browser.find_element("id", "search").send_keys("umbrella")
    sorted_filtered = time.perf_counter() - start
    info = browser.find_element("id", "seg-info").text
    assert f"{k} of {n} segments (filtered from {n})" in info
    assert set(rows(browser)) == set(range(6, n, 8))
    browser.execute_script("document.getElementById('segments-wrap').scrollTop = 44 * 600")
    wait_for(
        browser, "document.querySelector('#seg-body tr.row').getAttribute('aria-rowindex') > 500"
    )
    time.sleep(0.2)
    first = int(
        browser.execute_script(
            "const r = document.querySelector('#seg-body tr.row'); r.click(); return r.dataset.seg"
        )
    )
    assert rows(browser).index(first) > 500
    wait_for(browser, f"document.getElementById('alignment').dataset.ready === '{first}'")
    assert browser.find_element("id", "alignment-section").is_displayed()
    print(
        f"10,000 segments: {out.stat().st_size / 1e6:.1f} MB, opened in {opened:.2f} s, "
        f"sorted and filtered in {sorted_filtered:.2f} s"
    )
