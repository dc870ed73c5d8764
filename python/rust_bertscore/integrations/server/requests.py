"""Checking a ``POST /score`` body: JSON in, a :class:`ScoreRequest` out, or a
:class:`RequestError` that names the field and index at fault (no web framework needed).

The body is parsed and checked by the Rust extension with the GIL released
(``bertscore_core::request``): the JSON grammar of Python's ``json.loads`` (strict strings,
no duplicate key, integers of at most 4,300 digits), nesting at most 512 deep, and the
request's shape checked while parsing (a value of the wrong type is skipped, never built), so
no body, nested arrays included, holds the interpreter while the event loop waits.
"""

from __future__ import annotations

from typing import Any

from ... import _core
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
    try:
        cands, refs = _core.parse_score_body(bytes(body), max_pairs)
    except ValueError as e:
        status, message, field, index = e.args
        raise RequestError(status, message, field, index) from None
    return ScoreRequest(cands, refs)
