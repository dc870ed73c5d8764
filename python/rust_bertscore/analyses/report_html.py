"""The HTML comparison report: one self-contained file (data, script and styles inline) drawn
from a :class:`~rust_bertscore.analyses.report.Report`; the data's layout is
:mod:`rust_bertscore.analyses.report_page`'s.

The page makes no network request and runs nothing but its own code: its
Content-Security-Policy allows only its own script and style elements, by their SHA-256
(computed here when the page is written), no inline handler or ``style`` attribute, no image,
frame, font, connection or worker source (``default-src 'none'``), no ``<base>`` and no form
target, and requires Trusted Types for every script sink (``innerHTML`` and the like throw). A
meta CSP cannot forbid navigation (nor set ``frame-ancestors``, ``sandbox`` or a report URL):
the page's script cancels any click on a link that is not its own (``#`` fragments and the
``blob:`` downloads it made), and the referrer is never sent.

>>> from rust_bertscore.analyses.report_html import ASSETS, SCRIPTS
>>> sorted(p.name for p in ASSETS.iterdir() if p.suffix == ".css"), len(SCRIPTS) > 1
(['report.css'], True)
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
import unicodedata
from pathlib import Path
from typing import Any

from .._version import __version__
from ..support.atomic import write_text_atomic
from .comparison import ALPHA
from .report_page import page_blocks, printable, report_payload

ASSETS = Path(__file__).with_name("report_assets")
"""The page's stylesheet and scripts, inlined into every report."""

SCRIPTS = (
    "util.js",
    "tables.js",
    "charts.js",
    "scatter.js",
    "segments.js",
    "detail.js",
    "main.js",
)
"""The page's script files, in the order they are joined into its one script element."""

__all__ = [
    "ASSETS",
    "SCRIPTS",
    "content_security_policy",
    "report_html",
    "report_payload",
    "visible",
    "write_report",
]


def _asset(name: str) -> str:
    return (ASSETS / name).read_text(encoding="utf-8")  # boundary-exempt: the package's own asset


def _sha256(text: str) -> str:
    return (
        "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"
    )


def content_security_policy(script: str, style: str) -> str:
    """The page's policy: ``script`` and ``style`` (the exact text of its one script and one
    style element) allowed by hash, nothing else loaded, no base, no form target, Trusted Types.

    >>> from rust_bertscore.analyses.report_html import content_security_policy
    >>> csp = content_security_policy("1", "")
    >>> "'unsafe-inline'" in csp, "'sha256-a4ayc/80/OGda4BO/1o/V0etpOqiLx1JwB5S3beHW0s='" in csp
    (False, True)
    """
    return (
        f"default-src 'none'; script-src {_sha256(script)}; style-src {_sha256(style)}; "
        "img-src 'none'; base-uri 'none'; form-action 'none'; "
        "require-trusted-types-for 'script'; trusted-types 'none'"
    )


PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="@@CSP@@">
<meta name="referrer" content="no-referrer">
<meta name="generator" content="rust-bertscore @@VERSION@@">
<title>@@TITLE@@</title>
<style>@@CSS@@</style>
</head>
<body>
<div id="no-script" class="warn panel" role="alert">This page's script did not run (blocked or
modified): the tables, charts and segments below need it. The page allows only its own script,
by its hash, so a page whose script was changed after it was written shows nothing more; write
the report again with <code>rust-bertscore report</code>, and open it in a browser with
JavaScript on.</div>
<a class="skip" href="#segments-section">Skip to the segments</a>
<main>
<header>
<div class="toolbar noprint spread">
<h1 id="title">@@TITLE@@</h1>
<button type="button" id="theme" title="switch light / dark colours">colours: auto</button>
</div>
<div id="meta"></div>
</header>
<section id="systems-section" aria-labelledby="h-systems">
<h2 id="h-systems">Systems</h2>
<p class="muted">Mean P, R and F1 of each system with its bootstrap interval; under each system
but the baseline, its difference from the baseline with the paired interval and p, and the
verdict of the two-sided test at p &lt; @@ALPHA@@:
<span class="verdict verdict-better">▲ better</span>,
<span class="verdict verdict-worse">▼ worse</span> or <span class="verdict verdict-same">●
no significant difference</span>. Wins, losses and ties: segments where the system's F1 is
above, below or equal (within 10<sup>-6</sup>) to the baseline's.</p>
<div id="systems-wrap" class="fit"></div>
<div class="charts" id="forest"></div>
</section>
<section aria-labelledby="h-dist">
<h2 id="h-dist">Distributions</h2>
<p class="muted">F1 per segment of each system; ΔF1 against the baseline with the exact ties
(|ΔF1| &lt; 10<sup>-6</sup>) in a bar of their own at 0; each system's segment F1 against the
baseline's (click a point, or a shaded cell when there are many, to open the nearest segment).</p>
<div class="charts" id="dist"></div>
<div class="charts" id="scatter"></div>
</section>
<section aria-labelledby="h-buckets">
<h2 id="h-buckets">Buckets</h2>
<p class="muted">Mean F1 and ΔF1 of the segments in each bucket, with bootstrap intervals
(paired for ΔF1, with the table's verdict rule). Bars start at 0. Each bucket's test is a test
of its own: with many buckets, expect some p &lt; @@ALPHA@@ by chance.</p>
<div id="buckets"></div>
</section>
<section id="words-section" aria-labelledby="h-words">
<h2 id="h-words">Words</h2>
<p class="muted">Reference words by how often they occur in the references, with the mean
recall (best-match cosine) of their tokens in each system's candidates, and the words each
system matches poorly most often.</p>
<div id="words"></div>
</section>
<section id="segments-section" aria-labelledby="h-segments">
<h2 id="h-segments">Segments</h2>
<p class="muted noprint">Click a row, or focus it (Tab, ↑ ↓) and press Enter, to see its full
texts and alignment; tick rows to see them side by side; Page Up / Down scroll; / searches;
Esc goes back to the selected row. ✂ marks a text cut at the model's length.</p>
<div class="toolbar" id="seg-controls"></div>
<p id="seg-damaged" class="warn hidden" role="alert"></p>
<p id="print-note" class="printonly"></p>
<div id="segments-wrap"></div>
<p id="seg-info" class="muted" aria-live="polite"></p>
</section>
<section id="side-section" class="hidden" aria-labelledby="h-side">
<h2 id="h-side">Side by side</h2>
<div id="side"></div>
</section>
<section id="alignment-section" class="hidden" aria-labelledby="h-alignment">
<h2 id="h-alignment">Segment</h2>
<div id="alignment" aria-live="polite"></div>
</section>
<section id="export-section" class="hidden noprint" aria-labelledby="h-export">
<h2 id="h-export">Export</h2>
<p class="muted">The text below is the export (select and copy it), or save it:
<a id="export-link" href="#export-section" download="export.txt">download</a>.</p>
<textarea id="export-text" readonly rows="12" aria-labelledby="h-export"></textarea>
</section>
</main>
@@DATA@@
<script>@@JS@@</script>
</body>
</html>
"""


_DEFAULT_IGNORABLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)
"""Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt): drawn as nothing."""

_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def _hidden(c: str) -> bool:
    code = ord(c)
    return (
        unicodedata.category(c) in _HIDDEN_CATEGORIES
        or bool(_DEFAULT_IGNORABLE.match(c))
        or 0xFDD0 <= code <= 0xFDEF
        or code & 0xFFFE == 0xFFFE  # the noncharacters U+FFFE, U+FFFF, U+1FFFE...
    )


def visible(name: str) -> str:
    """``name`` with control, format (bidi, zero-width, tag...), separator and surrogate
    characters, every default-ignorable code point (soft hyphen, variation selectors, Hangul
    fillers...) and noncharacter (U+FFFF...) shown as ``⟨U+XXXX⟩``: the page's rule for names
    and labels (its ``visibleName``); texts in cells stay literal.

    >>> from rust_bertscore.analyses.report_html import visible
    >>> visible("sys\u202etxt.lave\u202c.txt")
    'sys⟨U+202E⟩txt.lave⟨U+202C⟩.txt'
    >>> visible("ba\u00adse\ufe0f\U000e0041")
    'ba⟨U+00AD⟩se⟨U+FE0F⟩⟨U+E0041⟩'
    """
    return "".join(f"⟨U+{ord(c):04X}⟩" if _hidden(c) else c for c in name)


def report_html(payload: dict[str, Any]) -> str:
    """The page of ``payload`` (see :func:`report_payload`) as one HTML string.

    >>> from rust_bertscore.analyses.report_html import report_html
    >>> page = report_html({"meta": {"title": "a <b>"}})
    >>> "<title>a &lt;b&gt;</title>" in page, "default-src 'none'" in page
    (True, True)
    """
    css = _asset("report.css")
    js = "(function () {\n'use strict';\n" + "\n".join(_asset(f) for f in SCRIPTS) + "\n})();\n"
    data = "\n".join(
        f'<script type="application/octet-stream" id="{key}">\n{text}\n</script>'
        for key, text in page_blocks(payload)
    )
    fields = {
        "CSP": html.escape(content_security_policy(js, css), quote=False),
        "VERSION": html.escape(__version__),
        "TITLE": html.escape(visible(printable(str(payload.get("meta", {}).get("title", ""))))),
        "ALPHA": f"{ALPHA:g}",
        "CSS": css,
        "JS": js,
        "DATA": data,
    }
    return re.sub(r"@@([A-Z]+)@@", lambda m: fields[m.group(1)], PAGE)


def write_report(path: str | Path, payload: dict[str, Any]) -> Path:
    """Write the page of ``payload`` to ``path`` atomically; returns the path.

    >>> import os, tempfile
    >>> from rust_bertscore.analyses.report_html import write_report
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     out = write_report(os.path.join(tmp, "r.html"), {"meta": {"title": "t"}})
    ...     print(out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>"))
    True
    """
    out = Path(path)
    write_text_atomic(out, report_html(payload))
    return out
