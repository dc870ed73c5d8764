"""Issue 60: the HTML comparison report at any size, in headless Chromium.

Pages at 300 x 2 (the encoder), 3,004 x 3 and 200,000 x 5 (``synthetic_report``: fixed scores,
no encoder, no shared data): no console error, no request, the systems table equal to
``compare``'s with worse systems marked worse, every column inside its box at 1,400 px; the
layout at 1,920 and 390 px and in print; exact ties in a bar of their own; bucket axes from 0;
the reference that gave P, R and F; truncation marks; bidi controls in names shown, not acting;
a hash-only Content-Security-Policy that stops an injected script, image and link; search
highlights; texts side by side; the scatter's click; exports as CSV, LaTeX and SVG."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from report_browser_support import (
    FOUND,
    console_problems,
    drawn_rows,
    open_page,
    outside_box,
    requested_urls,
    start_browser,
    view,
    wait_for,
)
from test_compare import BASE, GOOD, REFS

from conftest import TINY
from rust_bertscore import BERTScorer
from rust_bertscore.analyses.compare import Comparison
from rust_bertscore.analyses.report import Report
from rust_bertscore.analyses.report_html import report_payload, write_report
from rust_bertscore.analyses.report_page import encode_scores
from rust_bertscore.analyses.report_synthetic import synthetic_report

pytestmark = pytest.mark.skipif(isinstance(FOUND, str), reason=str(FOUND))

RLO_NAME = "sys\u202etxt.lave\u202c.txt"
HOSTILE = '<script>window.__pwned = 1</script><img src="http://127.0.0.1:9/x">'


@pytest.fixture(scope="module")
def scorer() -> BERTScorer:
    return BERTScorer(model_type=str(TINY / "bert"))


@pytest.fixture(scope="module")
def browser():
    driver = start_browser(1400, 2400)
    yield driver
    driver.quit()


def _numbered(texts: list[str], n: int) -> list[str]:
    return [f"{texts[i % len(texts)]} ({i})" for i in range(n)]


@pytest.fixture(scope="module")
def page_300(scorer: BERTScorer, tmp_path_factory: pytest.TempPathFactory) -> tuple:
    """300 x 2 through the encoder: the second system drops words, so it is worse."""
    refs = _numbered(REFS, 300)
    worse = [" ".join(t.split()[:3]) for t in _numbered(BASE, 300)]
    systems = {"base": _numbered(GOOD, 300), "worse": worse}
    out = tmp_path_factory.mktemp("p300") / "r.html"
    rep = scorer.report(systems, refs, out, n_samples=200, seed=3, sources=refs)
    return rep, out, systems, refs


@pytest.fixture(scope="module")
def page_hostile(scorer: BERTScorer, tmp_path_factory: pytest.TempPathFactory) -> tuple:
    """8 segments, two references each, a bidi system name, hostile and over-long texts."""
    refs = [[r, g] for r, g in zip(REFS, GOOD)]
    mixed = [g if i % 2 else b for i, (b, g) in enumerate(zip(BASE, GOOD))]
    mixed[2] = HOSTILE
    mixed[5] = " ".join(["word"] * 400)  # past the model's 128 tokens
    systems = {"base": BASE, RLO_NAME: mixed}
    out = tmp_path_factory.mktemp("hostile") / "r.html"
    rep = scorer.report(systems, refs, out, n_samples=200, seed=3, sources=[HOSTILE] * 8)
    return rep, out, systems, refs


def _synthetic_page(tmp: Path, n: int, k: int) -> tuple[Report, Path]:
    rep = synthetic_report(n, k, seed=1)
    payload = report_payload(rep, title="synthetic", signature="s", inputs=[], special_tokens=[])
    return rep, write_report(tmp / f"s{n}x{k}.html", payload)


@pytest.fixture(scope="module")
def page_3004(tmp_path_factory: pytest.TempPathFactory) -> tuple[Report, Path]:
    return _synthetic_page(tmp_path_factory.mktemp("p3004"), 3004, 3)


@pytest.fixture(scope="module")
def page_200k(tmp_path_factory: pytest.TempPathFactory) -> tuple[Report, Path]:
    return _synthetic_page(tmp_path_factory.mktemp("p200k"), 200_000, 5)


def check_systems_table(browser, table: Comparison) -> None:
    """Every figure of the systems table is ``compare``'s, and the verdicts its verdicts."""
    verdicts = {"better": "▲ better", "worse": "▼ worse", "same": "● no significant difference"}
    seen = set()
    for s in table.systems:
        for metric, key in (("P", "P"), ("R", "R"), ("F", "F1")):
            cell = browser.find_element(
                "css selector", f'#systems td[data-system="{s.name}"][data-metric="{key}"]'
            )
            x = getattr(s, metric)
            assert cell.find_element("css selector", ".mean").text == f"{x.mean:.4f}"
            assert cell.find_element("css selector", ".ci").text == (
                f"[{x.ci_low:.4f}, {x.ci_high:.4f}]"
            )
            if s.is_baseline:
                continue
            assert cell.find_element("css selector", ".d").text == f"{x.delta:+.4f}"
            assert cell.find_element("css selector", ".p").text == f"{x.p_value:.4f}"
            assert cell.get_attribute("data-verdict") == x.verdict
            mark = cell.find_element("css selector", ".verdict")
            assert mark.text == verdicts[x.verdict]
            assert f"verdict-{x.verdict}" in mark.get_attribute("class")
            seen.add(x.verdict)
    assert "worse" in seen  # every page here has a significantly worse system


def check_clean_and_fits(browser, path: Path) -> None:
    assert not console_problems(browser)
    assert requested_urls(browser) == [path.as_uri()]
    assert not outside_box(browser, "#systems-wrap", "#systems th, #systems td")
    assert not outside_box(browser, "#segments-wrap", "#segments thead th, #seg-body td")
    assert not outside_box(browser, "#buckets", "table.buckets th, table.buckets td")


def test_300_segments_2_systems(browser, page_300: tuple, scorer: BERTScorer) -> None:
    rep, out, systems, refs = page_300
    browser.get_log("browser")
    browser.get_log("performance")
    open_page(browser, out)
    check_clean_and_fits(browser, out)
    compared = scorer.compare(systems, refs, n_samples=200, seed=3)
    assert compared.format_text() == rep.comparison.format_text()
    check_systems_table(browser, compared)
    # the forest plot of ΔF1 marks the worse system worse, in words too
    dot = browser.find_element("css selector", '#forest-f1 circle[data-system="worse"]')
    assert dot.get_attribute("data-verdict") == "worse"
    assert "▼ worse" in browser.find_element("id", "forest-f1").text


def test_3004_segments_3_systems(browser, page_3004: tuple) -> None:
    rep, out = page_3004
    browser.get_log("browser")
    browser.get_log("performance")
    open_page(browser, out)
    check_clean_and_fits(browser, out)
    check_systems_table(browser, rep.comparison)


def test_200000_segments_5_systems(browser, page_200k: tuple) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    rep, out = page_200k
    browser.get_log("browser")
    browser.get_log("performance")
    open_page(browser, out, seconds=120)
    check_clean_and_fits(browser, out)
    check_systems_table(browser, rep.comparison)
    n = 200_000
    assert len(drawn_rows(browser)) < 80
    # sort by a ΔF1 column: the whole order, on index arrays
    browser.find_element("css selector", 'button.sort[data-key="dF:sys2"]').click()
    order = view(browser)
    d = (
        encode_scores(rep.segments["sys2"].F) / 1e6
        - encode_scores(rep.segments["baseline"].F) / 1e6
    )
    assert len(order) == n and bool(np.all(np.diff(d[order]) >= 0))
    # search reaches every segment's texts
    target = 123_457
    needle = rep.segments["sys3"].cands[target]
    box = browser.find_element("id", "search")
    box.send_keys(needle)
    wait_for(browser, f"window.rbReport.view().includes({target})")
    box.clear()
    browser.execute_script(
        "const s = document.getElementById('search'); s.value = '';"
        " s.dispatchEvent(new Event('input'))"
    )
    # the scatter is a density here; a click opens a segment near the click
    canvas = browser.find_element("id", "scatter-0")
    assert canvas.get_attribute("data-mode") == "density"
    x, y = scatter_pixel(canvas, rep, "sys1", target)
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", canvas)
    ActionChains(browser).move_to_element_with_offset(
        canvas, x - canvas.size["width"] / 2, y - canvas.size["height"] / 2
    ).click().perform()
    picked = int(wait_for(browser, "document.getElementById('scatter-0').dataset.picked"))
    px, py = scatter_pixel(canvas, rep, "sys1", picked)
    assert abs(px - x) <= 3 and abs(py - y) <= 3
    wait_for(browser, f"document.getElementById('alignment').dataset.ready === '{picked}'")
    assert "No token alignment" in browser.find_element("id", "alignment").text
    assert not console_problems(browser)


def scatter_pixel(canvas, rep: Report, system: str, i: int) -> tuple[float, float]:
    """Where segment ``i`` lies on a scatter, in the canvas's CSS pixels."""
    lo, hi = float(canvas.get_attribute("data-lo")), float(canvas.get_attribute("data-hi"))
    size, pad = float(canvas.get_attribute("data-size")), float(canvas.get_attribute("data-pad"))
    base = next(iter(rep.segments.values()))
    fx = round(float(base.F[i]) * 1e6) / 1e6
    fy = round(float(rep.segments[system].F[i]) * 1e6) / 1e6
    return (
        pad + (size - pad - 8) * (fx - lo) / (hi - lo),
        size - pad - (size - pad - 8) * (fy - lo) / (hi - lo),
    )


def test_scatter_click_opens_that_segment(browser, page_300: tuple) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    rep, out, _, _ = page_300
    open_page(browser, out)
    canvas = browser.find_element("id", "scatter-0")
    assert canvas.get_attribute("data-mode") == "points"
    base = rep.segments["base"].F
    target = int(np.argmax(base))  # a point at the edge, alone
    x, y = scatter_pixel(canvas, rep, "worse", target)
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", canvas)
    ActionChains(browser).move_to_element_with_offset(
        canvas, x - canvas.size["width"] / 2, y - canvas.size["height"] / 2
    ).click().perform()
    picked = int(wait_for(browser, "document.getElementById('scatter-0').dataset.picked"))
    px, py = scatter_pixel(canvas, rep, "worse", picked)
    assert abs(px - x) <= 2 and abs(py - y) <= 2
    wait_for(browser, f"document.getElementById('alignment').dataset.ready === '{picked}'")
    assert f"Segment {picked}." in browser.find_element("id", "alignment").text


@pytest.mark.parametrize("width", [1400, 1920, 390])
def test_layout_fits_2_to_10_systems(browser, tmp_path: Path, width: int) -> None:
    """No horizontal page overflow and every systems-table cell inside its box, for 2 and 10
    systems, at 1,400, 1,920 and 390 px (a phone: emulated, a window cannot be that narrow),
    and in print; at 1,400 px and more every segment column header in its box too."""
    metrics = {"width": width, "height": 1600, "deviceScaleFactor": 1, "mobile": width < 500}
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    try:
        for k in (2, 10):
            _, out = _synthetic_page(tmp_path, 400, k)
            open_page(browser, out)
            assert browser.execute_script("return window.innerWidth") == width
            overflow = browser.execute_script(
                "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            assert overflow <= 0, (k, width, overflow)
            assert not outside_box(browser, "#systems-wrap", "#systems th, #systems td"), k
            if width >= 1400:
                assert not outside_box(browser, "#segments-wrap", "#segments thead th"), k
            browser.execute_cdp_cmd(
                "Emulation.setEmulatedMedia", {"media": "print", "features": []}
            )
            try:
                assert not outside_box(browser, "main", "#systems th, #systems td"), k
            finally:
                browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "", "features": []})
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_ties_have_a_bar_of_their_own(browser, page_3004: tuple) -> None:
    rep, out = page_3004
    open_page(browser, out)
    for j, name in enumerate(["sys1", "sys2"]):
        d = np.round(rep.segments[name].F, 6) - np.round(rep.segments["baseline"].F, 6)
        ties = int(np.sum(np.abs(d) < 1e-6))
        assert ties > 100
        chart = browser.find_element("id", f"hist-d-{j}")
        bar = chart.find_element("css selector", "rect.ties")
        assert int(bar.get_attribute("data-count")) == ties
        assert f"ties {ties}" in chart.text
        bins = chart.find_elements("css selector", "rect.bin")
        counts = [int(b.get_attribute("data-count")) for b in bins]
        assert sum(counts) + ties == len(d)
        # the bin right of zero holds only the non-tied segments in it
        for b, c in zip(bins, counts):
            lo, hi = float(b.get_attribute("data-lo")), float(b.get_attribute("data-hi"))
            if lo <= 0 < hi:
                inside = (d >= lo) & (d < hi) & (np.abs(d) >= 1e-6)
                assert c == int(np.sum(inside))


def test_bucket_bars_start_at_zero(browser, page_3004: tuple) -> None:
    _, out = page_3004
    open_page(browser, out)
    for key in ("length", "baseF"):
        chart = browser.find_element("id", f"bucket-{key}-mean")
        assert float(chart.get_attribute("data-axis-min")) == 0
        ticks = [t.text for t in chart.find_elements("css selector", "text.tick")]
        assert ticks[0] == "0.000"
        assert (
            float(browser.find_element("id", f"bucket-{key}-delta").get_attribute("data-axis-min"))
            <= 0
        )


def test_reference_used_for_each_score(browser, page_hostile: tuple) -> None:
    rep, out, _, _ = page_hostile
    open_page(browser, out)
    for i in range(len(REFS)):
        browser.execute_script(f"window.rbReport.open({i})")
        wait_for(browser, f"document.getElementById('alignment').dataset.ready === '{i}'")
        for name, s in rep.segments.items():
            b = [int(x) for x in s.best_ref[i]]
            panel = browser.find_element(
                "css selector", f'#alignment .full.cand[data-system="{name}"] .refs-used'
            )
            assert panel.text == (
                f"(P from reference {b[0]}, R from reference {b[1]}, F1 from reference {b[2]})"
            )
            text = browser.find_element(
                "css selector", f'#alignment .align-panel[data-system="{name}"]'
            ).text
            assert (
                f"Tokens against reference {s.alignments[i].ref_index} (the one that gives F1)"
                in text
            )
    # the reference F1 came from: the first with the highest F, as score() takes it


def test_truncated_texts_are_marked(browser, page_hostile: tuple) -> None:
    rep, out, _, _ = page_hostile
    open_page(browser, out)
    cut = {name: np.flatnonzero(s.truncated).tolist() for name, s in rep.segments.items()}
    assert cut[RLO_NAME] == [5]
    header = browser.find_element("id", "truncation")
    assert int(header.get_attribute("data-cands")) == sum(len(v) for v in cut.values())
    assert "✂" in header.text
    row = browser.find_element("css selector", '#seg-body tr[data-seg="5"]')
    assert row.find_elements("css selector", ".cut")
    assert not browser.find_element("css selector", '#seg-body tr[data-seg="4"]').find_elements(
        "css selector", ".cut"
    )
    browser.execute_script("window.rbReport.open(5)")
    wait_for(browser, "document.getElementById('alignment').dataset.ready === '5'")
    cand = browser.find_element("css selector", f'#alignment .full.cand[data-system="{RLO_NAME}"]')
    assert cand.find_elements("css selector", ".cut")


def test_bidi_names_are_shown_not_applied(browser, page_hostile: tuple) -> None:
    _, out, systems, _ = page_hostile
    open_page(browser, out)
    shown = "sys⟨U+202E⟩txt.lave⟨U+202C⟩.txt"
    name = browser.find_element("css selector", f'#systems tr[data-system="{RLO_NAME}"] .sysname')
    assert name.text == shown
    assert "\u202e" not in browser.execute_script("return document.title")
    labels = browser.execute_script(
        "return Array.from(document.querySelectorAll('.sysname, figcaption, option, #inputs td'))"
        ".map(e => e.textContent).join('\\n')"
    )
    assert "\u202e" not in labels and shown in labels
    # texts stay literal: the hostile candidate is shown as text, and nothing of it ran
    browser.execute_script(
        "document.getElementById('cand-system').value = '1';"
        "document.getElementById('cand-system').dispatchEvent(new Event('change'))"
    )
    cell = browser.find_element("css selector", '#seg-body tr[data-seg="2"] td[data-key="cand"]')
    assert cell.get_attribute("textContent") == systems[RLO_NAME][2]
    assert browser.execute_script("return window.__pwned") is None


def test_csp_allows_only_the_pages_own_code(browser, page_hostile: tuple) -> None:
    _, out, _, _ = page_hostile
    text = out.read_text(encoding="utf-8")
    found = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', text)
    assert found is not None
    csp = found.group(1)
    assert "unsafe-inline" not in csp and "unsafe-hashes" not in csp
    for part in ("default-src 'none'", "base-uri 'none'", "form-action 'none'", "img-src 'none'"):
        assert part in csp
    assert re.search(r"script-src 'sha256-[A-Za-z0-9+/=]{44}';", csp)
    assert re.search(r"style-src 'sha256-[A-Za-z0-9+/=]{44}';", csp)
    assert not re.search(r"\sstyle=", text.split('<script type="application/octet-stream"')[0])
    browser.get_log("browser")
    browser.get_log("performance")
    open_page(browser, out)
    assert not console_problems(browser)
    # a script added through the DOM does not run; the policy reports it; an inline handler
    # cannot even be set (Trusted Types), nor would it run (no 'unsafe-inline')
    refused_handler = browser.execute_script(
        """
        window.__violations = 0;
        document.addEventListener('securitypolicyviolation', () => window.__violations++);
        const s = document.createElement('script');
        s.appendChild(document.createTextNode('window.__pwned = 1'));
        document.body.appendChild(s);
        const b = document.createElement('div');
        document.body.appendChild(b);
        try { b.setAttribute('onclick', 'window.__pwned = 2'); } catch (e) { return true; }
        b.click();
        return false;
        """
    )
    wait_for(browser, "window.__violations >= 1")
    assert refused_handler
    assert browser.execute_script("return window.__pwned") is None
    # innerHTML needs a Trusted Type: a string is refused
    refused = browser.execute_script(
        "try { document.getElementById('meta').innerHTML = '<b>x</b>'; return false; }"
        " catch (e) { return e instanceof TypeError; }"
    )
    assert refused
    # an image and a link to a listening address go nowhere
    browser.execute_script(
        """
        const img = document.createElement('img');
        img.src = 'http://127.0.0.1:9/leak.png';
        document.body.appendChild(img);
        const a = document.createElement('a');
        a.href = 'http://127.0.0.1:9/leak';
        a.textContent = 'leak';
        document.body.appendChild(a);
        a.click();
        """
    )
    wait_for(browser, "document.body.dataset.cspViolations >= 1")
    assert browser.current_url == out.as_uri()
    blocked: dict[str, str] = {}
    assert requested_urls(browser, blocked) == [out.as_uri()]
    assert blocked == {"http://127.0.0.1:9/leak.png": "csp"}


def test_search_highlights_and_side_by_side(browser, page_300: tuple) -> None:
    _, out, systems, refs = page_300
    open_page(browser, out)
    box = browser.find_element("id", "search")
    box.send_keys("UMBRELLA")
    matches = [i for i, r in enumerate(refs) if "umbrella" in r.lower()]
    assert view(browser) == matches
    marks = browser.execute_script(
        "return Array.from(document.querySelectorAll('#seg-body mark')).map(m => m.textContent)"
    )
    assert marks and {m.lower() for m in marks} == {"umbrella"}
    # tick two rows: their full texts side by side (not cut cells)
    for i in matches[:2]:
        browser.find_element("css selector", f'#seg-body input.pick[data-seg="{i}"]').click()
    browser.find_element("id", "side-show").click()
    for i in matches[:2]:
        seg = browser.find_element("css selector", f'#side .side-seg[data-seg="{i}"]')
        for name, cands in systems.items():
            full = seg.find_element("css selector", f'.full.cand[data-system="{name}"] .txt')
            assert full.get_attribute("textContent") == cands[i]
        assert (
            seg.find_element("css selector", ".full.ref .txt").get_attribute("textContent")
            == refs[i]
        )
        assert (
            seg.find_element("css selector", ".full.src .txt").get_attribute("textContent")
            == refs[i]
        )
        assert seg.find_elements("css selector", ".full.ref mark")


def test_exports(browser, page_300: tuple) -> None:
    _, out, _, _ = page_300
    browser.get_log("browser")
    open_page(browser, out)

    def export(selector: str) -> tuple[str, str]:
        browser.execute_script("document.querySelector(arguments[0]).click()", selector)
        text = browser.execute_script("return document.getElementById('export-text').value")
        link = browser.find_element("id", "export-link")
        assert link.get_attribute("href").startswith("blob:")
        return text, link.get_attribute("download")

    csv, name = export('button.csv[data-for="systems"]')
    lines = csv.strip().split("\n")
    assert name == "systems.csv" and lines[0].startswith("system,P,R,F1")
    assert len(lines) == 3 and lines[2].startswith("worse,")
    tex, name = export('button.latex[data-for="bucket-table-length"]')
    assert name.endswith(".tex") and tex.startswith("\\begin{tabular}{lrrrr}")
    assert "\\end{tabular}" in tex
    for chart in ("hist-0", "forest-f1", "scatter-0"):
        svg, name = export(f'button.svg[data-for="{chart}"]')
        assert name.endswith(".svg")
        root = ET.fromstring(svg.split("\n", 1)[1])
        assert root.tag == "{http://www.w3.org/2000/svg}svg"
        assert len(list(root.iter())) > 5
    assert not console_problems(browser)


def test_padding_floor_is_explained(browser, page_300: tuple) -> None:
    rep, out, _, _ = page_300
    open_page(browser, out)
    i = next(
        i
        for i, a in enumerate(rep.segments["worse"].alignments)
        if a.candidate.floored or a.reference.floored
    )
    browser.execute_script(f"window.rbReport.open({i})")
    wait_for(browser, f"document.getElementById('alignment').dataset.ready === '{i}'")
    panel = browser.find_element("css selector", '.align-panel[data-system="worse"]').text
    assert "padding floor applied" in panel
    assert "padded to the longest one" in panel and "counted as 0" in panel
