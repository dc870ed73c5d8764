"""The scoring server's ASGI application (Starlette): ``GET /health`` and ``POST /score``.

Needs ``pip install 'rust-bertscore[serve]'`` (Starlette and uvicorn); imported only by
``rust-bertscore serve`` (:mod:`rust_bertscore.cli.serve`) and by users who mount the app
themselves.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ...scoring.scorer import BERTScorer
from .batching import Batcher, RequestScorer, ScoreResult
from .requests import RequestError, parse_score_body

DEFAULT_MAX_BODY = 8 * 1024 * 1024
"""Largest request body accepted, in bytes (413 past it)."""


def _float_list(values: Any) -> list[float | None]:
    # float() of a float32 is exact; JSON's shortest repr of it reads back as the same float32.
    # NaN (score() gives it, e.g., for a text whose tokens all weigh 0 under IDF) is null.
    return [None if v != v else float(v) for v in values.tolist()]


class ScoringApp:
    """The server's state and handlers: one scorer, one batcher.

    Parameters
    ----------
    scorer : BERTScorer
        The loaded model and settings (keep ``cache_bytes`` > 0 for batching to share encoding;
        ``idf=True``: IDF over each request's references, as ``score(..., idf=True)``).
    max_batch : int
        Most requests scored together (1: batching off).
    max_wait : float
        Seconds to wait for more requests once one has arrived.
    max_body : int
        Largest body accepted, in bytes.

    Examples
    --------
    >>> from rust_bertscore import BERTScorer
    >>> from rust_bertscore.integrations.server.app import ScoringApp
    >>> app = ScoringApp(BERTScorer(), max_batch=8).asgi()  # uvicorn.run(app, port=8080)
    >>> sorted(route.path for route in app.routes)
    ['/health', '/score']
    """

    def __init__(
        self,
        scorer: BERTScorer,
        *,
        max_batch: int = 32,
        max_wait: float = 0.005,
        max_body: int = DEFAULT_MAX_BODY,
    ) -> None:
        self.scorer = scorer
        self.batcher = Batcher(RequestScorer(scorer), max_batch, max_wait)
        self.max_body = max_body

    def health(self) -> dict[str, Any]:
        """What ``GET /health`` answers: the model and settings."""
        s = self.scorer
        return {
            "status": "ok",
            "model": s.model_type,
            "num_layers": s.num_layers,
            "precision": s.precision,
            "device": s.device,
            "idf": s.idf,
            "rescale_with_baseline": s.rescale_with_baseline,
            "hash": s.hash,
            "max_batch": self.batcher.max_batch,
            "max_wait_ms": self.batcher.max_wait * 1000,
            "requests_scored": self.batcher.requests,
            "batches": self.batcher.batches,
        }

    async def _read_body(self, request: Request) -> bytes:
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body:
            raise RequestError(
                413, f"the body has {declared} bytes, more than the {self.max_body} accepted"
            )
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > self.max_body:
                raise RequestError(
                    413, f"the body is longer than the {self.max_body} bytes accepted"
                )
            chunks.append(chunk)
        return b"".join(chunks)

    async def handle_health(self, request: Request) -> Response:
        return JSONResponse(self.health())

    async def handle_score(self, request: Request) -> Response:
        try:
            body = await self._read_body(request)
            parsed = parse_score_body(body)
        except RequestError as e:
            return JSONResponse(e.body(), status_code=e.status)
        except ClientDisconnect:
            return Response(status_code=499)
        if not parsed.cands:
            return JSONResponse({"P": [], "R": [], "F": [], "hash": self.scorer.hash})
        job = asyncio.ensure_future(self.batcher.score(parsed))
        gone = asyncio.ensure_future(_disconnected(request))
        try:
            await asyncio.wait({job, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
        if not job.done():  # the client left: drop its request (if not begun) and answer no one
            job.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await job
            return Response(status_code=499)
        try:
            result: ScoreResult = job.result()
        except (TypeError, ValueError) as e:  # the scorer refused this request's texts
            return JSONResponse({"error": str(e)}, status_code=422)
        except Exception as e:
            return JSONResponse({"error": f"{type(e).__name__}: {e}"}, status_code=500)
        out: dict[str, Any] = {
            "P": _float_list(result.P),
            "R": _float_list(result.R),
            "F": _float_list(result.F),
            "hash": self.scorer.hash,
        }
        if result.warnings:
            out["warnings"] = result.warnings
        return JSONResponse(out)

    def asgi(self) -> Starlette:
        """The Starlette application; its lifespan starts and stops the batcher."""

        @contextlib.asynccontextmanager
        async def lifespan(app: Starlette) -> AsyncIterator[None]:
            self.batcher.start()
            try:
                yield
            finally:
                # After the server's graceful shutdown: requests in flight are answered.
                await asyncio.get_running_loop().run_in_executor(None, self.batcher.stop)

        async def http_error(request: Request, exc: Exception) -> Response:
            status = exc.status_code if isinstance(exc, HTTPException) else 500
            detail = exc.detail if isinstance(exc, HTTPException) else str(exc)
            return JSONResponse({"error": detail}, status_code=status)

        return Starlette(
            routes=[
                Route("/health", self.handle_health, methods=["GET"]),
                Route("/score", self.handle_score, methods=["POST"]),
            ],
            exception_handlers={HTTPException: http_error},
            lifespan=lifespan,
        )


async def _disconnected(request: Request) -> None:
    """Returns when the client disconnects (the body has been read already)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return
