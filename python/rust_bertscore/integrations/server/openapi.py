"""The scoring server's OpenAPI 3.1 document (``GET /openapi.json``): its paths, the request
and answer shapes, every status it answers with, and the limits it runs under.

Written by hand (the server takes no schema library) and checked in the tests by an OpenAPI
validator, and against what the server answers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..._version import __version__

_TEXT = {"type": "string"}
_SCORES = {
    "type": "array",
    "items": {"type": ["number", "null"], "format": "float"},
    "description": "one score per candidate (float32 values; null where score() gives NaN)",
}
_ERROR = {"$ref": "#/components/schemas/Error"}


def _errors(*statuses: tuple[int, str]) -> dict[str, Any]:
    return {
        str(status): {
            "description": text,
            "content": {"application/json": {"schema": _ERROR}},
        }
        for status, text in statuses
    }


def _json(schema: Mapping[str, Any], text: str) -> dict[str, Any]:
    return {"description": text, "content": {"application/json": {"schema": dict(schema)}}}


def openapi_document(limits: Mapping[str, Any]) -> dict[str, Any]:
    """The document, with the server's ``limits`` (as ``/health`` reports them) in it.

    Examples
    --------
    >>> doc = openapi_document({"max_pairs": 1024, "max_body_bytes": 8388608})
    >>> doc["openapi"], sorted(doc["paths"])
    ('3.1.0', ['/health', '/metrics', '/openapi.json', '/ready', '/score'])
    >>> doc["components"]["schemas"]["ScoreRequest"]["properties"]["cands"]["maxItems"]
    1024
    """
    max_pairs = limits.get("max_pairs")
    cands: dict[str, Any] = {"type": "array", "items": _TEXT, "description": "candidates"}
    if max_pairs is not None:
        cands["maxItems"] = max_pairs
    request = {
        "type": "object",
        "required": ["cands", "refs"],
        "properties": {
            "cands": cands,
            "refs": {
                "description": "one reference per candidate, or a list of references per "
                "candidate (every candidate the same kind); a candidate with k references "
                "counts k pairs of --max-pairs",
                "oneOf": [
                    {"type": "array", "items": _TEXT},
                    {"type": "array", "items": {"type": "array", "items": _TEXT, "minItems": 1}},
                ],
            },
        },
        "additionalProperties": True,
    }
    scores = {
        "type": "object",
        "required": ["P", "R", "F", "hash"],
        "properties": {
            "P": _SCORES,
            "R": _SCORES,
            "F": _SCORES,
            "hash": {"type": "string", "description": "the scorer's signature"},
            "warnings": {"type": "array", "items": _TEXT},
        },
    }
    error = {
        "type": "object",
        "required": ["error"],
        "properties": {
            "error": {"type": "string", "description": "what is wrong, naming the limit or flag"},
            "field": {"type": "string", "description": "the field at fault (cands, refs)"},
            "index": {"type": "integer", "description": "the index at fault in that field"},
        },
    }
    free_object = {"type": "object", "additionalProperties": True}
    score = {
        "summary": "BERTScore P, R, F of each candidate against its reference(s)",
        "description": "As score(cands, refs) with the server's settings on this request "
        f"alone. Body at most {limits.get('max_body_bytes')} bytes (--max-body-bytes).",
        "operationId": "score",
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/ScoreRequest"}}
            },
        },
        "responses": {
            "200": _json({"$ref": "#/components/schemas/ScoreResponse"}, "the scores"),
            **_errors(
                (400, "not UTF-8 JSON, unreadable framing, or too many chunks"),
                (408, "the body did not arrive within --read-timeout or at --min-body-rate"),
                (
                    413,
                    "over --max-body-bytes, --max-pairs, --max-queued-tokens or --max-whole-chars",
                ),
                (415, "a Content-Encoding other than identity"),
                (422, "a wrong shape or type, unequal lengths, a text that cannot be encoded"),
                (500, "a fault of the server"),
                (
                    503,
                    "busy (the budget, the client's share, connections), too slow to "
                    "finish within --request-timeout, or stopping; see Retry-After",
                ),
            ),
        },
    }

    def get(
        summary: str, op: str, ok: dict[str, Any], extra: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        return {
            "get": {
                "summary": summary,
                "operationId": op,
                "responses": {"200": ok, **(extra or {})},
            }
        }

    metrics_ok = {
        "description": "Prometheus text format 0.0.4",
        "content": {"text/plain": {"schema": {"type": "string"}}},
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "rust-bertscore serve",
            "version": __version__,
            "description": "BERTScore over HTTP: the same numbers as rust_bertscore.score().",
        },
        "paths": {
            "/score": {"post": score},
            "/health": get(
                "The model, settings, queue and limits",
                "health",
                _json(free_object, "liveness and state"),
            ),
            "/ready": get(
                "Whether the queue is short enough to route to",
                "ready",
                _json(free_object, "ready"),
                {"503": _json(free_object, "not ready")},
            ),
            "/metrics": get(
                "Counters, gauges and stage durations (Prometheus)", "metrics", metrics_ok
            ),
            "/openapi.json": get("This document", "openapi", _json(free_object, "OpenAPI 3.1")),
        },
        "components": {
            "schemas": {"ScoreRequest": request, "ScoreResponse": scores, "Error": error}
        },
    }
