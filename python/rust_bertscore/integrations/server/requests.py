"""Checking a ``POST /score`` body: JSON in, a :class:`ScoreRequest` out, or a
:class:`RequestError` that names the field and index at fault (no web framework needed).
"""

from __future__ import annotations

import json
from typing import Any

from ...stages.text import check_text
from .batching import ScoreRequest


class RequestError(Exception):
    """A request the server answers with a 4xx: ``status``, a message, and where.

    Examples
    --------
    >>> from rust_bertscore.integrations.server.requests import RequestError, parse_score_body
    >>> try:
    ...     parse_score_body(b'{"cands": ["a", 3], "refs": ["a", "b"]}')
    ... except RequestError as e:
    ...     print(e.status, e.body())
    422 {'error': 'cands[1] must be a str, got int: 3', 'field': 'cands', 'index': 1}
    """

    def __init__(
        self, status: int, message: str, field: str | None = None, index: int | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.field = field
        self.index = index

    def body(self) -> dict[str, Any]:
        """The JSON error body: ``{"error": message, "field": ..., "index": ...}``."""
        out: dict[str, Any] = {"error": self.message}
        if self.field is not None:
            out["field"] = self.field
        if self.index is not None:
            out["index"] = self.index
        return out


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
    """``{"cands": [str, ...], "refs": [str or [str, ...], ...]}`` as a :class:`ScoreRequest`.

    ``refs`` holds one reference per candidate, or a list of references per candidate (every
    candidate the same kind, as ``score()`` takes them). ``max_pairs``: most (candidate,
    reference) pairs accepted (a candidate with three references counts three; None: no limit).

    Raises
    ------
    RequestError
        400 for a body that is not UTF-8 JSON (or has a duplicate key, nesting too deep, an
        integer too long), 413 for more pairs than ``max_pairs``, 422 for a wrong shape or
        type, unequal lengths, or a text that cannot be encoded (a lone surrogate), naming
        field and index.

    Examples
    --------
    >>> from rust_bertscore.integrations.server.requests import parse_score_body
    >>> parse_score_body(b'{"cands": ["a cat"], "refs": [["the cat", "cats"]]}')
    ScoreRequest(cands=['a cat'], refs=[['the cat', 'cats']])
    >>> try:
    ...     parse_score_body(b'{"cands": ["a", "b"], "refs": ["a", "b"]}', max_pairs=1)
    ... except RequestError as e:
    ...     print(e.status, e.message)
    413 the request has 2 pairs, more than the 1 accepted (the server's --max-pairs)
    """
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
