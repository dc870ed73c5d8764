"""The HTML comparison report: one self-contained file (data, script and styles inline) drawn
from a :class:`~rust_bertscore.analyses.report.Report`.

The page makes no network request: its Content-Security-Policy allows nothing but its own
inline script and styles. The data travel as gzip-compressed JSON in base64, unpacked in the
page by the browser's ``DecompressionStream``. Layout of the JSON (``report_payload``):

- ``meta``: title, signature, date, version, inputs (role, path, lines), test, alpha;
- ``systems``: names, the baseline first; ``table``: ``Comparison.to_dict()``'s systems;
  ``wins``: {system: [wins, losses, ties]};
- ``buckets``: ``length`` and ``baseF``, lists of ``BucketRow.to_dict()``;
- ``vocab``: every token string once; ``specials``: the special tokens' vocab indices;
- ``refs``: each segment's references; ``reftok``: per segment, per reference,
  ``{"t": vocab indices, "w": weights}``;
- ``seg``: per system ``{"cands", "P", "R", "F", "al"}``; ``al[i]`` the alignment of segment
  ``i``: ``ri`` (reference), ``ct``/``cw`` (candidate tokens, weights), ``cm``/``cc`` (each
  candidate token's best reference position and cosine x 10^4, rounded; -1/null when excluded),
  ``rm``/``rc`` (the same for reference tokens), ``cf``/``rf`` (padding floor applied).

No token vector is embedded: only best matches and their cosines.

>>> from rust_bertscore.analyses.report_html import ASSETS
>>> sorted(p.name for p in ASSETS.iterdir() if p.suffix in (".css", ".js"))
['report.css', 'report.js']
"""

from __future__ import annotations

import base64
import gzip
import html
import json
import math
import re
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .._version import __version__
from ..support.atomic import write_text_atomic
from .align import SideAlignment
from .comparison import ALPHA
from .report import Report

ASSETS = Path(__file__).with_name("report_assets")
"""The page's stylesheet and script, inlined into every report."""

__all__ = ["ASSETS", "report_html", "report_payload", "write_report"]


def _num(x: float, digits: int = 6) -> float | None:
    return None if x is None or math.isnan(x) else round(float(x), digits)


def _nums(xs: Any, digits: int = 6) -> list[float | None]:
    return [_num(float(x), digits) for x in xs]


def _clean(value: Any) -> Any:
    """NaN to None (JSON null), recursively."""
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def _weight(w: float) -> float | int:
    r = round(w, 3)
    return int(r) if r == int(r) else r


def _cos(side: SideAlignment) -> list[int | None]:
    return [None if t.excluded or t.match < 0 else round(t.cosine * 1e4) for t in side.tokens]


def report_payload(
    report: Report,
    *,
    title: str,
    signature: str,
    inputs: Sequence[tuple[str, str, int]],
    special_tokens: Sequence[str],
) -> dict[str, Any]:
    """The page's data (see the module docstring); ``inputs``: (role, path, lines).

    >>> from rust_bertscore import BERTScorer
    >>> from rust_bertscore.analyses.report import build_report
    >>> from rust_bertscore.analyses.report_html import report_payload
    >>> refs = ["the cat sat", "it rains"]
    >>> rep = build_report(BERTScorer(), {"a": refs, "b": ["a cat", "sun"]}, refs, n_samples=50)
    >>> doc = report_payload(rep, title="t", signature="s", inputs=[], special_tokens=["[CLS]"])
    >>> al = doc["seg"]["b"]["al"][0]  # "a cat" against "the cat sat"
    >>> [doc["vocab"][t] for t in al["ct"]], doc["vocab"][doc["reftok"][0]["0"]["t"][al["cm"][2]]]
    (['[CLS]', 'a', 'cat', '[SEP]'], 'cat')
    """
    vocab: dict[str, int] = {}

    def ids(side: SideAlignment) -> list[int]:
        return [vocab.setdefault(t.token, len(vocab)) for t in side.tokens]

    c = report.comparison
    names = list(report.segments)
    reftok: list[dict[str, dict[str, list[Any]]]] = [{} for _ in report.refs]
    seg: dict[str, Any] = {}
    for name in names:
        s = report.segments[name]
        al = []
        for i, a in enumerate(s.alignments):
            ri = a.ref_index or 0
            if str(ri) not in reftok[i]:
                reftok[i][str(ri)] = {
                    "t": ids(a.reference),
                    "w": [_weight(t.weight) for t in a.reference.tokens],
                }
            al.append(
                {
                    "ri": ri,
                    "ct": ids(a.candidate),
                    "cw": [_weight(t.weight) for t in a.candidate.tokens],
                    "cm": [t.match for t in a.candidate.tokens],
                    "cc": _cos(a.candidate),
                    "rm": [t.match for t in a.reference.tokens],
                    "rc": _cos(a.reference),
                    "cf": int(a.candidate.floored),
                    "rf": int(a.reference.floored),
                }
            )
        seg[name] = {"cands": s.cands, "P": _nums(s.P), "R": _nums(s.R), "F": _nums(s.F), "al": al}
    pct = f"{100 * c.confidence:g}%"
    test = (
        f"Paired bootstrap resampling ({c.n_samples} resamples, seed {c.seed}): one-sided p of "
        "'not better than the baseline'."
        if c.test == "paired-bs"
        else f"Paired approximate randomisation ({c.n_samples} trials, seed {c.seed}; intervals "
        f"from {c.n_resamples} bootstrap resamples): two-sided p of 'scores the same'."
    )
    meta = {
        "title": title,
        "signature": signature,
        "hash": c.hash,
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "version": __version__,
        "inputs": [{"role": r, "path": p, "lines": n} for r, p, n in inputs],
        "test": c.test,
        "test_title": f"{c.segments} segments, {pct} intervals. {test}",
        "pct": pct,
        "alpha": ALPHA,
        "rescaled": any(a.rescaled for s in report.segments.values() for a in s.alignments[:1]),
    }
    return {
        "meta": meta,
        "systems": names,
        "table": _clean(c.to_dict()),
        "wins": {k: list(v) for k, v in report.wins.items()},
        "buckets": {
            "length": [_clean(b.to_dict()) for b in report.length_buckets],
            "baseF": [_clean(b.to_dict()) for b in report.f_buckets],
        },
        "refs": report.refs,
        "reftok": reftok,
        "seg": seg,
        "specials": [vocab[t] for t in special_tokens if t in vocab],
        "vocab": list(vocab),
    }


PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; \
style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<meta name="generator" content="rust-bertscore @@VERSION@@">
<title>@@TITLE@@</title>
<style>
@@CSS@@
</style>
</head>
<body>
<a class="skip" href="#segments-section">Skip to the segments</a>
<main>
<header>
<div class="toolbar noprint" style="justify-content: space-between">
<h1 id="title">@@TITLE@@</h1>
<button type="button" id="theme" title="switch light / dark colours">colours: auto</button>
</div>
<div id="meta"></div>
</header>
<section id="systems-section" aria-labelledby="h-systems">
<h2 id="h-systems">Systems</h2>
<p class="muted">Mean P, R and F1 of each system with its bootstrap interval; under each system
but the baseline, its difference from the baseline with the paired interval and p
(* p &lt; @@ALPHA@@). Wins, losses and ties: segments where the system's F1 is above, below or
equal (within 10<sup>-6</sup>) to the baseline's.</p>
<div id="systems-wrap"></div>
</section>
<section aria-labelledby="h-dist">
<h2 id="h-dist">Distributions</h2>
<div class="charts" id="dist"></div>
</section>
<section aria-labelledby="h-buckets">
<h2 id="h-buckets">Buckets</h2>
<p class="muted">Mean F1 and ΔF1 of the segments in each bucket, with bootstrap intervals
(paired for ΔF1; p: one-sided paired bootstrap, "not better than the baseline"). Each bucket's
p is a test of its own: with many buckets, expect some p &lt; @@ALPHA@@ by chance.</p>
<div id="buckets"></div>
</section>
<section id="segments-section" aria-labelledby="h-segments">
<h2 id="h-segments">Segments</h2>
<p class="muted noprint">Click a row, or focus it (Tab, ↑ ↓) and press Enter, to see its
alignment; ← → turn pages; / searches; Esc goes back to the selected row.</p>
<div class="toolbar" id="seg-controls"></div>
<div id="segments-wrap"></div>
<div class="pager" id="pager"></div>
</section>
<section id="alignment-section" class="hidden" aria-labelledby="h-alignment">
<h2 id="h-alignment">Alignment</h2>
<div id="alignment" aria-live="polite"></div>
</section>
</main>
<script type="application/octet-stream" id="report-data">
@@DATA@@
</script>
<script>
@@JS@@
</script>
</body>
</html>
"""


def report_html(payload: dict[str, Any]) -> str:
    """The page of ``payload`` (see :func:`report_payload`) as one HTML string.

    >>> from rust_bertscore.analyses.report_html import report_html
    >>> page = report_html({"meta": {"title": "a <b>"}})
    >>> "<title>a &lt;b&gt;</title>" in page, "connect-src" in page or "default-src 'none'" in page
    (True, True)
    """
    raw = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    data = base64.b64encode(gzip.compress(raw.encode("utf-8"), 9, mtime=0)).decode("ascii")
    lines = "\n".join(data[i : i + 120] for i in range(0, len(data), 120))
    fields = {
        "VERSION": html.escape(__version__),
        "TITLE": html.escape(str(payload.get("meta", {}).get("title", ""))),
        "ALPHA": f"{ALPHA:g}",
        "CSS": (ASSETS / "report.css").read_text(
            encoding="utf-8"
        ),  # boundary-exempt: the package's own asset
        "JS": (ASSETS / "report.js").read_text(
            encoding="utf-8"
        ),  # boundary-exempt: the package's own asset
        "DATA": lines,
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
