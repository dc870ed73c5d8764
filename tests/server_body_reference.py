"""The server's body check as it was in Python (``json.loads`` and checks on the objects), kept
as the reference the Rust parser (``rust_bertscore._core.parse_score_body``) is compared with in
tests/test_serve_body_parser.py: same status, field and index for every body."""

from __future__ import annotations

import json
from typing import Any

from rust_bertscore.integrations.server.batching import ScoreRequest
from rust_bertscore.integrations.server.requests import RequestError
from rust_bertscore.stages.text import check_text


def _text(value: object, field: str, index: int, where: str) -> str:
    try:
        return check_text(value, where)
    except (TypeError, ValueError) as e:
        raise RequestError(422, str(e), field, index) from None


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        key = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise RequestError(400, f"duplicate key {key!r} in a JSON object", key)
    return out


def load_json(body: bytes) -> Any:
    """``body`` as JSON, strictly: UTF-8 only, no duplicate keys; a :class:`RequestError`
    (400) for anything else, deep nesting and integers too long to read included."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RequestError(
            400, f"the body is not UTF-8 text: {e.reason} at byte {e.start}"
        ) from None
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as e:
        raise RequestError(
            400, f"invalid JSON: {e.msg} at line {e.lineno} column {e.colno} (char {e.pos})"
        ) from None
    except RecursionError:
        raise RequestError(400, "invalid JSON: nested too deeply") from None
    except ValueError as e:  # e.g. an integer of more digits than Python reads
        raise RequestError(400, f"invalid JSON: {e}") from None


def parse_score_body(body: bytes, max_pairs: int | None = None) -> ScoreRequest:
    """The body as the server checked it in Python (see the module's note)."""
    data = load_json(body)
    if not isinstance(data, dict):
        raise RequestError(
            422,
            f'the body must be a JSON object {{"cands": [...], "refs": [...]}}, got '
            f"{type(data).__name__}",
        )
    for field in ("cands", "refs"):
        if field not in data:
            raise RequestError(422, f"missing field {field!r}", field)
        if not isinstance(data[field], list):
            raise RequestError(
                422, f"{field} must be a list, got {type(data[field]).__name__}", field
            )
    unknown = sorted(set(data) - {"cands", "refs"})
    if unknown:
        raise RequestError(422, f"unknown field {unknown[0]!r} (fields: cands, refs)", unknown[0])
    raw_cands, raw_refs = data["cands"], data["refs"]
    if max_pairs is not None:
        pairs = sum(len(r) if isinstance(r, list) else 1 for r in raw_refs)
        pairs = max(pairs, len(raw_cands))
        if pairs > max_pairs:
            raise RequestError(
                413,
                f"the request has {pairs} pairs, more than the {max_pairs} accepted "
                "(the server's --max-pairs)",
            )
    cands = [_text(c, "cands", i, f"cands[{i}]") for i, c in enumerate(raw_cands)]
    if len(raw_refs) != len(cands):
        raise RequestError(
            422,
            f"cands and refs differ in length: {len(cands)} cands, {len(raw_refs)} refs",
            "refs",
        )
    grouped = bool(raw_refs) and isinstance(raw_refs[0], list)
    refs: list[Any] = []
    for i, item in enumerate(raw_refs):
        if not grouped:
            if isinstance(item, list):
                raise RequestError(
                    422,
                    f"refs[{i}] is a list but refs[0] is a str: give every candidate one str, "
                    "or every candidate a list of str",
                    "refs",
                    i,
                )
            refs.append(_text(item, "refs", i, f"refs[{i}]"))
            continue
        if not isinstance(item, list):
            raise RequestError(
                422,
                f"refs[{i}] must be a list of str (refs[0] is one), got {type(item).__name__}",
                "refs",
                i,
            )
        if not item:
            raise RequestError(
                422, f"refs[{i}] is an empty list: each candidate needs a reference", "refs", i
            )
        refs.append([_text(t, "refs", i, f"refs[{i}][{j}]") for j, t in enumerate(item)])
    return ScoreRequest(cands, refs)
