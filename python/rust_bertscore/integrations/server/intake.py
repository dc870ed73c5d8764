"""A ``POST /score`` request's intake: its body read and charged to the queued-token budget
as it arrives (a declared length is never charged; one client address holds at most its share),
then parsed and counted off the event loop.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator

from starlette.requests import ClientDisconnect, Request

from ...stages.scored_tokens import ScoredTokens
from .admission import Admission, text_bytes
from .batching import ScoreRequest
from .requests import RequestError, parse_score_body
from .rows import RowBounds
from .slices import SLICE_CHARS, least_rows_of, read_whole, whole_text_error

DRAIN_BYTES = 64 * 1024 * 1024
"""Bytes of an oversized body read and discarded before its 413, so that the client, done
sending, reads the answer (a connection closed on unread data is reset instead)."""


class Refused(Exception):
    """The queued-token budget is spent (503 with Retry-After) or too small (413)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def check_whole_texts(request: ScoreRequest, tokens: ScoredTokens, max_whole: int) -> None:
    """:class:`RequestError` 413 for a text longer than ``max_whole`` characters that the
    tokenizer would read whole (:func:`~.slices.read_whole`), naming its field and index."""
    for field, index, text in request.placed():
        if len(text) > max_whole and read_whole(tokens, text):
            message = f"{field}[{index}] has {whole_text_error(len(text), max_whole)}"
            raise RequestError(413, message, field, index)


def parse_request(
    body: bytearray, max_pairs: int | None, tokens: ScoredTokens, max_whole: int | None = None
) -> tuple[ScoreRequest, int]:
    """The request (with a lower bound of its texts' token rows) and the bytes its texts
    hold: the work of a request before the worker, run off the event loop. ``max_whole``:
    most characters of a text the tokenizer may read whole (413 past it; None: no limit)."""
    parsed = parse_score_body(body, max_pairs)  # type: ignore[arg-type]  # bytes-like
    body.clear()  # the body's memory goes now, not when the answer is sent
    if max_whole is not None:
        check_whole_texts(parsed, tokens, max_whole)
    flat = [t for r in parsed.refs for t in (r if isinstance(r, list) else [r])]
    nbytes = text_bytes(parsed.cands) + text_bytes(flat)
    texts = parsed.cands + flat
    # Rows counted here, off the worker: whether the request is small, and its chunks.
    parsed = dataclasses.replace(parsed, rows=RowBounds.of(tokens).counted(tokens, texts))
    if parsed.chars > SLICE_CHARS or len(flat) > 64:  # large: the worker's estimate, ahead
        parsed = dataclasses.replace(parsed, least=least_rows_of(tokens, texts))
    return parsed, nbytes


class Intake:
    """Reads request bodies against ``admission``, at most ``max_body`` bytes each."""

    def __init__(self, admission: Admission, max_body: int) -> None:
        self.admission = admission
        self.max_body = max_body

    async def drain(
        self, request: Request, read: int, stream: AsyncIterator[bytes] | None = None
    ) -> None:
        """Read and discard the rest of the body, up to :data:`DRAIN_BYTES` in all (``stream``:
        the body's stream, already begun; Starlette's ``request.stream()`` can be begun once)."""
        if stream is None:
            stream = request.stream()
        with contextlib.suppress(ClientDisconnect):
            async for chunk in stream:
                read += len(chunk)
                if read > DRAIN_BYTES:
                    break

    def charge(self, tokens: int, client: str) -> None:
        """Charge ``tokens`` more to the budget and ``client``'s share of it; :class:`Refused`
        when they do not fit."""
        if self.admission.reserve(tokens, client):
            return
        if tokens > self.admission.budget:
            raise Refused(
                413,
                f"the request needs {tokens} queued tokens, more than the server's whole "
                f"budget of {self.admission.budget} (its --max-queued-tokens)",
            )
        self.admission.refused += 1
        if self.admission.share_spent(client, tokens):
            raise Refused(
                503,
                f"this client ({client}) holds {self.admission.held_by[client]} queued tokens, "
                f"its share of the server's budget is {self.admission.client_budget} "
                "(--max-client-share); retry when its requests are answered",
            )
        raise Refused(
            503,
            f"the server is busy: {self.admission.held} of its {self.admission.budget} "
            "queued tokens (--max-queued-tokens) are held by requests in hand; retry later",
        )

    async def read_body(self, request: Request, held: list[int], client: str) -> bytearray:
        """The body, charged to the budget as it arrives, before it is kept (``held[0]``: the
        charge). A declared ``Content-Length`` is not charged: a client that sends headers
        and no body holds nothing (and its connection is cut by the minimum body rate)."""
        encoding = request.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            await self.drain(request, 0)
            raise RequestError(
                415, f"Content-Encoding {encoding!r} is not accepted: send the JSON as it is"
            )
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body:
            await self.drain(request, 0)
            raise RequestError(
                413,
                f"the body has {declared} bytes, more than the {self.max_body} accepted "
                "(the server's --max-body-bytes)",
            )
        body = bytearray()
        stream = request.stream()
        async for chunk in stream:
            if len(body) + len(chunk) > self.max_body:
                size = len(body) + len(chunk)
                body.clear()
                await self.drain(request, size, stream)
                raise RequestError(
                    413,
                    f"the body is longer than the {self.max_body} bytes accepted "
                    "(the server's --max-body-bytes)",
                )
            if len(body) + len(chunk) > held[0]:  # charged as it arrives
                more = len(body) + len(chunk) - held[0]
                try:
                    self.charge(more, client)
                except Refused:
                    body.clear()
                    await self.drain(request, held[0] + len(chunk), stream)
                    raise
                held[0] += more
            body += chunk
        return body
