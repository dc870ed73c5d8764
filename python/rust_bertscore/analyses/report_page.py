"""The data of the HTML comparison report, laid out for a page that opens fast at any size.

:func:`report_payload` turns a :class:`~rust_bertscore.analyses.report.Report` into a payload;
:func:`page_blocks` packs it into the page's data blocks, each gzip-compressed and base64 in a
``<script type="application/octet-stream">`` element (never run; the page unpacks them with the
browser's ``DecompressionStream``):

- ``report-data``: JSON of ``meta``, ``systems``, ``table`` (``Comparison.to_dict()``),
  ``wins``, ``buckets``, ``words``, ``poor_words``, ``n`` (segments), ``has_src``, ``numbers``
  (where each array lies in ``report-numbers``), ``chunk`` and ``chunks`` (segments per
  alignment block, blocks), ``text_chunk`` and ``text_chunks`` (the same for texts);
- ``report-numbers``: little-endian int32 arrays one after the other: per system P, R and F
  times 10^6 (rounded; ``NAN_CODE`` for NaN), ``best_ref`` (n x 3, -1 unknown), ``cmp``
  (:func:`compare_codes` against the baseline: the table's win / loss / tie of each segment,
  from the raw scores) and ``truncated`` (0/1), then the references' ``ref_truncated``;
- ``tx-K``: the texts of segments ``K * text_chunk`` to ``(K + 1) * text_chunk - 1``, JSON
  ``{"src": [...] or null, "refs": [[...]], "cands": [[...] per system]}`` (the page reads the
  first before it is ready, the others after, in the background);
- ``al-K``: the alignments of segments ``K * chunk`` to ``(K + 1) * chunk - 1``, read only when
  one of them is opened: JSON ``{"vocab", "specials", "reftok", "al"}``; ``reftok[j][ri]`` the
  reference tokens ``{"t", "w"}``, ``al[s][j]`` system ``s``'s alignment ``{"ri", "ct", "cw",
  "cm", "cc", "rm", "rc", "cf", "rf"}`` (tokens as vocab indices, weights, best matches,
  cosines x 10^4, padding floors).

No token vector is embedded: only best matches and their cosines. Lone surrogates (a file
name that is not UTF-8) are written as ``\\xNN`` (:func:`printable`).

>>> from rust_bertscore.analyses.report_page import NAN_CODE, encode_scores
>>> import numpy as np
>>> encode_scores(np.array([0.5, float("nan")])).tolist() == [500000, NAN_CODE]
True
"""

from __future__ import annotations

import base64
import gzip
import json
import math
import re
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

import numpy as np

from .._version import __version__
from .align import Alignment, SideAlignment
from .comparison import ALPHA
from .report import TIE, Report

__all__ = [
    "CHUNK",
    "NAN_CODE",
    "TEXT_CHUNK",
    "compare_codes",
    "encode_scores",
    "page_blocks",
    "printable",
    "read_blocks",
    "report_payload",
]

CHUNK = 256
"""Segments per alignment block (a block is unpacked when one of its segments is opened)."""

TEXT_CHUNK = 8192
"""Segments per text block."""

NAN_CODE = -(2**31)
"""The int32 that stands for NaN in ``report-numbers``."""


def _clean(value: Any) -> Any:
    """NaN to None (JSON null) and NumPy scalars to Python, recursively."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def encode_scores(x: np.ndarray) -> np.ndarray:
    """Scores as int32 millionths (the page's six decimals), NaN as :data:`NAN_CODE`.

    >>> import numpy as np
    >>> from rust_bertscore.analyses.report_page import encode_scores
    >>> encode_scores(np.array([0.1234564, -1.0])).tolist()
    [123456, -1000000]
    """
    v = np.asarray(x, np.float64)
    out = np.full(v.shape, NAN_CODE, np.int32)
    ok = np.isfinite(v)
    out[ok] = np.rint(v[ok] * 1e6).astype(np.int32)
    return out


def compare_codes(base: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Per segment, 1, -1 or 0 where ``other``'s raw F is above, below or within
    :data:`~rust_bertscore.analyses.report.TIE` of ``base``'s (the table's wins, losses and
    ties), 2 where either is NaN: the page's win / loss / tie of each segment.

    >>> import numpy as np
    >>> from rust_bertscore.analyses.report_page import compare_codes
    >>> base = np.array([0.5, 0.5, 0.5, 0.5])
    >>> compare_codes(base, np.array([0.6, 0.4, 0.5000003, np.nan])).tolist()
    [1, -1, 0, 2]
    """
    d = np.asarray(other, np.float64) - np.asarray(base, np.float64)
    if d.shape != np.shape(base) or d.ndim != 1:
        return np.full(np.size(base), 2, np.int32)
    out = np.full(d.shape, 2, np.int32)
    ok = ~np.isnan(d)
    out[ok] = np.where(np.abs(d[ok]) < TIE, 0, np.sign(d[ok]))
    return out


_SURROGATE = re.compile("[\ud800-\udfff]")


def printable(text: str) -> str:
    """``text`` with lone surrogates (the undecodable bytes of a file name read with
    ``surrogateescape``) written as ``\\xNN`` (U+FFFD for other lone surrogates), so that it
    can be encoded as UTF-8.

    >>> from rust_bertscore.analyses.report_page import printable
    >>> printable(b"out\\xff.txt".decode("utf-8", "surrogateescape"))
    'out\\\\xff.txt'
    """

    def one(m: re.Match[str]) -> str:
        c = ord(m.group(0))
        return f"\\x{c - 0xDC00:02x}" if 0xDC80 <= c <= 0xDCFF else "\ufffd"

    return _SURROGATE.sub(one, text)


def _weight(w: float) -> float | int:
    r = round(w, 3)
    return int(r) if r == int(r) else r


def _cos(side: SideAlignment) -> list[int | None]:
    return [None if t.excluded or t.match < 0 else round(t.cosine * 1e4) for t in side.tokens]


def _chunk(report: Report, start: int, stop: int, special_tokens: Sequence[str]) -> dict[str, Any]:
    """The alignment block of segments ``start`` to ``stop - 1`` (see the module docstring)."""
    vocab: dict[str, int] = {}

    def ids(side: SideAlignment) -> list[int]:
        return [vocab.setdefault(t.token, len(vocab)) for t in side.tokens]

    reftok: list[dict[str, dict[str, list[Any]]]] = [{} for _ in range(start, stop)]
    al: list[list[dict[str, Any] | None]] = []
    for s in report.segments.values():
        rows: list[dict[str, Any] | None] = []
        for j, i in enumerate(range(start, stop)):
            a: Alignment | None = s.alignments[i] if i < len(s.alignments) else None
            if a is None:
                rows.append(None)
                continue
            ri = a.ref_index or 0
            if str(ri) not in reftok[j]:
                reftok[j][str(ri)] = {
                    "t": ids(a.reference),
                    "w": [_weight(t.weight) for t in a.reference.tokens],
                }
            rows.append(
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
        al.append(rows)
    specials = [vocab[t] for t in special_tokens if t in vocab]
    return {"vocab": list(vocab), "specials": specials, "reftok": reftok, "al": al}


def _test_title(report: Report) -> str:
    c = report.comparison
    pct = f"{100 * c.confidence:g}%"
    test = (
        f"Paired bootstrap resampling ({c.n_samples} resamples, seed {c.seed}), two-sided: "
        "better or worse when the paired interval of the difference excludes 0."
        if c.test == "paired-bs"
        else f"Paired approximate randomisation ({c.n_samples} trials, seed {c.seed}; intervals "
        f"from {c.n_resamples} bootstrap resamples): two-sided p of 'scores the same'."
    )
    return f"{c.segments} segments, {pct} intervals. {test}"


def report_payload(
    report: Report,
    *,
    title: str,
    signature: str,
    inputs: Sequence[tuple[str, str, int]],
    special_tokens: Sequence[str],
) -> dict[str, Any]:
    """The page's data (see the module docstring); ``inputs``: (role, path, lines).

    JSON-ready but for ``numbers`` (NumPy arrays) and ``chunks`` (alignment blocks), which
    :func:`page_blocks` packs apart.

    >>> from rust_bertscore import BERTScorer
    >>> from rust_bertscore.analyses.report import build_report
    >>> from rust_bertscore.analyses.report_page import report_payload
    >>> refs = ["the cat sat", "it rains"]
    >>> rep = build_report(BERTScorer(), {"a": refs, "b": ["a cat", "sun"]}, refs, n_samples=50)
    >>> doc = report_payload(rep, title="t", signature="s", inputs=[], special_tokens=["[CLS]"])
    >>> block = doc["chunks"][0]
    >>> al = block["al"][1][0]  # system "b", segment 0: "a cat" against "the cat sat"
    >>> vocab, ref = block["vocab"], block["reftok"][0]["0"]["t"]
    >>> [vocab[t] for t in al["ct"]], vocab[ref[al["cm"][2]]]
    (['[CLS]', 'a', 'cat', '[SEP]'], 'cat')
    """
    c = report.comparison
    names = list(report.segments)
    n = len(report.refs)
    numbers: dict[str, np.ndarray] = {}
    for k, name in enumerate(names):
        s = report.segments[name]
        for m in ("P", "R", "F"):
            numbers[f"{k}:{m}"] = encode_scores(getattr(s, m))
        best = np.asarray(s.best_ref, np.int32)
        numbers[f"{k}:best_ref"] = (
            best.ravel() if best.size == n * 3 else np.full(n * 3, -1, np.int32)
        )
        numbers[f"{k}:cmp"] = compare_codes(report.segments[names[0]].F, s.F)
        trunc = np.asarray(s.truncated, np.int32)
        numbers[f"{k}:truncated"] = trunc if trunc.size == n else np.zeros(n, np.int32)
    rt = np.asarray(report.ref_truncated, np.int32)
    numbers["ref_truncated"] = rt if rt.size == n else np.zeros(n, np.int32)
    meta = {
        "title": title,
        "signature": signature,
        "hash": c.hash,
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "version": __version__,
        "inputs": [{"role": r, "path": p, "lines": k} for r, p, k in inputs],
        "test": c.test,
        "test_title": _test_title(report),
        "pct": f"{100 * c.confidence:g}%",
        "alpha": ALPHA,
        "rescaled": any(a.rescaled for s in report.segments.values() for a in s.alignments[:1]),
    }
    words = {k: [w.to_dict() for w in v] for k, v in report.words.items()}
    poor = {k: [list(t) for t in v] for k, v in report.poor_words.items()}
    return {
        "meta": meta,
        "systems": names,
        "table": _clean(c.to_dict()),
        "wins": {k: list(v) for k, v in report.wins.items()},
        "buckets": {
            "length": [_clean(b.to_dict()) for b in report.length_buckets],
            "baseF": [_clean(b.to_dict()) for b in report.f_buckets],
        },
        "words": _clean(words),
        "poor_words": _clean(poor),
        "n": n,
        "texts": {
            "src": report.sources,
            "refs": report.refs,
            "cands": [report.segments[k].cands for k in names],
        },
        "numbers": numbers,
        "chunks": [
            _chunk(report, start, min(n, start + CHUNK), special_tokens)
            for start in range(0, n, CHUNK)
        ],
    }


def _pack(raw: bytes) -> str:
    data = base64.b64encode(gzip.compress(raw, 6, mtime=0)).decode("ascii")
    return "\n".join(data[i : i + 120] for i in range(0, len(data), 120))


def _json(value: Any) -> bytes:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    text = _SURROGATE.sub(lambda m: json.dumps(printable(m.group(0)))[1:-1], text)
    return text.encode("utf-8")


def page_blocks(payload: dict[str, Any]) -> list[tuple[str, str]]:
    """The page's data blocks, (element id, base64 of gzip) each, from :func:`report_payload`'s
    payload (a payload without ``numbers``, ``texts`` or ``chunks`` gives empty ones).

    >>> from rust_bertscore.analyses.report_page import page_blocks, read_blocks
    >>> blocks = page_blocks({"meta": {"title": "t"}})
    >>> [k for k, _ in blocks], read_blocks(dict(blocks))["data"]["meta"]
    (['report-data', 'report-numbers'], {'title': 't'})
    """
    numbers = payload.get("numbers", {})
    chunks = payload.get("chunks", [])
    layout: dict[str, list[int]] = {}
    offset = 0
    for key, arr in numbers.items():
        layout[key] = [offset, int(arr.size)]
        offset += int(arr.size)
    texts = payload.get("texts", {})
    src, refs, cands = texts.get("src"), texts.get("refs", []), texts.get("cands", [])
    text_blocks = [
        {
            "src": None if src is None else src[a : a + TEXT_CHUNK],
            "refs": refs[a : a + TEXT_CHUNK],
            "cands": [c[a : a + TEXT_CHUNK] for c in cands],
        }
        for a in range(0, len(refs), TEXT_CHUNK)
    ]
    main = {k: v for k, v in payload.items() if k not in ("numbers", "texts", "chunks")}
    main["numbers"] = layout
    main["has_src"] = src is not None
    main["chunk"] = CHUNK
    main["chunks"] = len(chunks)
    main["text_chunk"] = TEXT_CHUNK
    main["text_chunks"] = len(text_blocks)
    flat = (
        np.concatenate([np.asarray(a, "<i4").ravel() for a in numbers.values()])
        if numbers
        else np.zeros(0, "<i4")
    )
    blocks = [
        ("report-data", _pack(_json(main))),
        ("report-numbers", _pack(flat.astype("<i4").tobytes())),
    ]
    blocks += [(f"tx-{k}", _pack(_json(t))) for k, t in enumerate(text_blocks)]
    blocks += [(f"al-{k}", _pack(_json(chunk))) for k, chunk in enumerate(chunks)]
    return blocks


def read_blocks(blocks: dict[str, str]) -> dict[str, Any]:
    """The page's data back from its blocks (element id to text), for tests and tools:
    ``data`` (the main JSON), ``numbers`` (name to NumPy array, scores as floats),
    ``texts`` and ``chunks``.

    >>> from rust_bertscore.analyses.report_page import page_blocks, read_blocks
    >>> import numpy as np
    >>> out = read_blocks(dict(page_blocks({"numbers": {"0:F": np.array([1500, 2])}})))
    >>> out["numbers"]["0:F"].tolist()
    [0.0015, 2e-06]
    """

    def unpack(text: str) -> bytes:
        return gzip.decompress(base64.b64decode("".join(text.split())))

    data = json.loads(unpack(blocks["report-data"]))
    flat = np.frombuffer(unpack(blocks["report-numbers"]), "<i4")
    numbers: dict[str, np.ndarray] = {}
    for key, (offset, size) in data.get("numbers", {}).items():
        arr = flat[offset : offset + size]
        if key.endswith((":P", ":R", ":F")):
            numbers[key] = np.where(arr == NAN_CODE, np.nan, arr / 1e6)
        else:
            numbers[key] = arr.copy()
    parts = [json.loads(unpack(blocks[f"tx-{k}"])) for k in range(data.get("text_chunks", 0))]
    texts = {
        "src": None if not data.get("has_src") else [x for p in parts for x in p["src"]],
        "refs": [x for p in parts for x in p["refs"]],
        "cands": [
            [x for p in parts for x in p["cands"][s]] for s in range(len(data.get("systems", [])))
        ],
    }
    return {
        "data": data,
        "numbers": numbers,
        "texts": texts,
        "chunks": [
            json.loads(unpack(blocks[f"al-{k}"])) for k in range(int(data.get("chunks", 0)))
        ],
    }
