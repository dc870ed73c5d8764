"""The scoring server's ASGI application (Starlette): ``GET /health``, ``GET /ready``,
``POST /score``, ``GET /metrics`` (Prometheus) and ``GET /openapi.json``.

Needs ``pip install 'rust-bertscore[serve]'`` (Starlette and uvicorn); imported only by
``rust-bertscore serve`` (:mod:`rust_bertscore.cli.serve`) and by users who mount the app
themselves.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from ...scoring.scorer import BERTScorer
from .admission import (
    DEFAULT_CLIENT_SHARE,
    Admission,
    client_key,
    default_queued_tokens,
    trim_heap,
)
from .batching import RequestScorer, ScoreResult
from .connections import DEFAULT_MIN_BODY_RATE, AcceptErrors
from .exposition import exposition
from .intake import DRAIN_BYTES, Intake, Refused, parse_request
from .metrics import CONTENT_TYPE, Metrics
from .openapi import openapi_document
from .requests import RequestError
from .scheduler import Batcher, WouldTimeOut
from .slices import DEFAULT_WHOLE_CHARS, WholeTextTooLong

DEFAULT_MAX_BODY = 8 * 1024 * 1024
"""Largest request body accepted, in bytes (413 past it)."""
DEFAULT_MAX_PAIRS = 1024
"""Most (candidate, reference) pairs in one request (413 past it)."""
DEFAULT_REQUEST_TIMEOUT = 60.0
"""Seconds a request may wait and be scored at most (503 past it)."""
DEFAULT_READY_QUEUE = 64
"""Requests waiting or in progress past which ``GET /ready`` answers 503."""
CLOSE = {"connection": "close"}
SMALL_BODY = 64 * 1024
"""Bodies up to this many bytes are parsed on their own thread: eight clients sending 8 MiB
bodies kept a one-pair request's parse waiting behind theirs (p50 0.5 s)."""
TRIM_BYTES = 1024 * 1024
"""Once requests of this many bytes or more are all answered, the C heap is trimmed."""


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
    max_pairs : int or None
        Most (candidate, reference) pairs in one request (None: no limit).
    request_timeout : float or None
        Seconds a request may take, queued and scored (503 past it; None: no limit).
    ready_queue : int
        Requests waiting or in progress past which ``GET /ready`` answers 503.
    max_queued_tokens : int or None
        Tokens that admitted requests may hold at once (a request is charged a token per byte
        of its body as the bytes arrive, before they are kept; see
        :mod:`~rust_bertscore.integrations.server.admission`); None: derived from memory.
    max_client_share : float
        The part of ``max_queued_tokens`` one client address may hold at once.
    max_whole_chars : int or None
        Most characters of one text the tokenizer reads whole (413 past it; a long text that
        can be cut into prefixes is not limited; None: no limit).

    Examples
    --------
    >>> from rust_bertscore import BERTScorer
    >>> from rust_bertscore.integrations.server.app import ScoringApp
    >>> app = ScoringApp(BERTScorer(), max_batch=8).asgi()  # uvicorn.run(app, port=8080)
    >>> sorted(route.path for route in app.routes)
    ['/health', '/metrics', '/openapi.json', '/ready', '/score']
    """

    def __init__(
        self,
        scorer: BERTScorer,
        *,
        max_batch: int = 32,
        max_wait: float = 0.005,
        max_body: int = DEFAULT_MAX_BODY,
        max_pairs: int | None = DEFAULT_MAX_PAIRS,
        request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT,
        ready_queue: int = DEFAULT_READY_QUEUE,
        max_queued_tokens: int | None = None,
        max_client_share: float = DEFAULT_CLIENT_SHARE,
        max_whole_chars: int | None = DEFAULT_WHOLE_CHARS,
    ) -> None:
        self.scorer = scorer
        self.batcher = Batcher(RequestScorer(scorer), max_batch, max_wait)
        self.batcher.scorer.max_whole_chars = max_whole_chars  # the one place it is held
        self.metrics = Metrics()
        self.batcher.metrics = self.metrics
        if max_queued_tokens is None:
            max_queued_tokens = default_queued_tokens(max_body)
        self.admission = Admission(max_queued_tokens, max_client_share)
        self.intake = Intake(self.admission, max_body)
        self._parser = ThreadPoolExecutor(1, thread_name_prefix="bertscore-parse")
        self._small_parser = ThreadPoolExecutor(1, thread_name_prefix="bertscore-parse-small")
        """Bodies up to :data:`SMALL_BODY` bytes: never parsed behind a queue of large ones."""
        self.max_body = max_body
        self.max_pairs = max_pairs
        self.request_timeout = request_timeout
        self.ready_queue = ready_queue
        self.limits: dict[str, Any] = {
            "max_body_bytes": max_body,
            "max_pairs": max_pairs,
            "request_timeout_s": request_timeout,
            "ready_queue": ready_queue,
            "max_queued_tokens": max_queued_tokens,
            "max_client_share": max_client_share,
            "max_whole_chars": max_whole_chars,
            "min_body_rate": DEFAULT_MIN_BODY_RATE,
        }
        """The limits ``/health`` reports (the CLI adds its connection limits, and sets
        ``min_body_rate`` to what its protocol enforces)."""
        self.cut = 0
        """Requests cut off unanswered by the server's shutdown (answered 503)."""
        self.timed_out = 0
        """Requests answered 503 past ``request_timeout``."""
        self.refused_at_stop = 0
        """Requests received during the shutdown and answered 503 unscored."""
        self._asgi: Starlette | None = None

    def health(self) -> dict[str, Any]:
        """What ``GET /health`` answers: the model and settings, the queue and the limits."""
        s, b = self.scorer, self.batcher
        return {
            "status": "ok",
            "model": s.model_type,
            "num_layers": s.num_layers,
            "precision": s.precision,
            "device": s.device,
            "idf": s.idf,
            "rescale_with_baseline": s.rescale_with_baseline,
            "hash": s.hash,
            "max_batch": b.max_batch,
            "max_wait_ms": b.max_wait * 1000,
            "cache_bytes": s.pipeline.cache.nbytes,
            "cache_texts": len(s.pipeline.cache),
            "queued": b.queued,
            "in_progress": b.in_progress,
            "requests_scored": b.requests,
            "batches": b.batches,
            "dropped": b.skipped,
            "cancelled": b.cancelled,
            "timed_out": self.timed_out,
            "refused_too_slow": b.refused,
            "refused_busy": self.admission.refused,
            "queued_tokens": self.admission.held,
            "queued_tokens_peak": self.admission.peak,
            "refused_over_share": self.admission.over_share,
            "limits": dict(self.limits),
        }

    def ready(self) -> bool:
        """Whether the queue (waiting and in progress) is at most ``ready_queue``."""
        return self.batcher.queued + self.batcher.in_progress <= self.ready_queue

    async def handle_health(self, request: Request) -> Response:
        return JSONResponse(self.health())

    def metrics_text(self) -> str:
        """What ``GET /metrics`` answers (:func:`.exposition.exposition`)."""
        return exposition(self)

    async def handle_metrics(self, request: Request) -> Response:
        return PlainTextResponse(self.metrics_text(), media_type=CONTENT_TYPE)

    async def handle_openapi(self, request: Request) -> Response:
        return JSONResponse(openapi_document(self.limits))

    async def handle_ready(self, request: Request) -> Response:
        ready = self.ready()
        body = {
            "ready": ready,
            "queued": self.batcher.queued,
            "in_progress": self.batcher.in_progress,
            "ready_queue": self.ready_queue,
        }
        return JSONResponse(body, status_code=200 if ready else 503)

    async def handle_busy(
        self, scope: Any, receive: Any, send: Any, error: str | None = None
    ) -> None:
        """The ASGI app for connections past the cap: 503 JSON (``error``: its message), then
        the connection closes (``GET /health`` and ``/ready`` are answered as usual: probes
        get through)."""
        if scope["type"] != "http":
            return
        if scope["path"] in ("/health", "/ready", "/metrics") and self._asgi is not None:
            await self._asgi(scope, receive, send)
            return
        read, more = 0, True
        try:
            while more and read <= DRAIN_BYTES:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return
                read += len(message.get("body", b""))
                more = message.get("more_body", False)
        except asyncio.CancelledError:  # the graceful-shutdown timeout, mid-upload
            await self._cut_response(scope["method"], received=False)(scope, receive, send)
            return
        if error is None:
            error = "too many open connections (the server's --max-connections): retry later"
        headers = {**CLOSE, "retry-after": "1"}
        await JSONResponse({"error": error}, 503, headers)(scope, receive, send)

    async def handle_stopping(
        self, scope: Any, receive: Any, send: Any, last: Callable[[], bool]
    ) -> None:
        """The ASGI app for a request received during the shutdown (pipelined behind one in
        hand): 503 JSON, with ``Connection: close`` when ``last()`` (nothing more buffered)."""
        if scope["type"] != "http":
            return
        more = True
        try:
            while more:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return
                more = message.get("more_body", False)
        except asyncio.CancelledError:  # the graceful-shutdown timeout, mid-upload
            await self._cut_response(scope["method"], received=False)(scope, receive, send)
            return
        if scope["method"] == "POST":
            self.refused_at_stop += 1
        error = "the server is stopping: this request was received but not scored; retry it"
        headers = {"retry-after": "1", **(CLOSE if last() else {})}
        await JSONResponse({"error": error}, 503, headers)(scope, receive, send)

    def _cut_response(self, method: str, received: bool) -> Response:
        """The 503 JSON for a request cut off by the graceful-shutdown timeout, counted in
        :attr:`cut` (so the exit code is 3) when it is a ``POST``."""
        if method == "POST":
            self.cut += 1
        if received:
            error = "the server stopped before this request was scored (its --graceful-timeout)"
        else:
            error = (
                "the server stopped before this request arrived whole (its --graceful-timeout "
                "ran out during the upload); retry it"
            )
        return JSONResponse({"error": error}, status_code=503, headers=CLOSE)

    async def handle_score(self, request: Request) -> Response:
        held = [0]
        received = [False]
        client = client_key(request.client.host if request.client else None)
        start = time.monotonic()
        response: Response | None = None
        try:
            response = await self._score(request, held, received, client)
            return response
        except asyncio.CancelledError:  # the graceful-shutdown timeout: mid-upload or parsing
            response = self._cut_response("POST", received[0])
            return response
        finally:
            self.metrics.answered(500 if response is None else response.status_code)
            self.metrics.observe("request", time.monotonic() - start)
            self.admission.release(held[0], client)
            if held[0] >= TRIM_BYTES and self.admission.held == 0:  # the last large one went
                asyncio.get_running_loop().run_in_executor(self._parser, trim_heap)

    async def _score(
        self, request: Request, held: list[int], received: list[bool], client: str
    ) -> Response:
        try:
            start = time.monotonic()
            body = await self.intake.read_body(request, held, client)
            received[0] = True
            read_at = time.monotonic()
            self.metrics.observe("read", read_at - start)
            loop = asyncio.get_running_loop()
            try:
                parsed, nbytes = await loop.run_in_executor(
                    self._small_parser if len(body) <= SMALL_BODY else self._parser,
                    parse_request,
                    body,
                    self.max_pairs,
                    self.scorer.pipeline.tokens,
                    self.batcher.scorer.max_whole_chars,
                )
            finally:
                self.metrics.observe("parse", time.monotonic() - read_at)
            del body
            if nbytes > held[0]:  # texts wider than their bytes: charge what they hold
                self.intake.charge(nbytes - held[0], client)
                held[0] = nbytes
        except RequestError as e:
            headers = CLOSE if e.status in (413, 415) else None
            return JSONResponse(e.body(), status_code=e.status, headers=headers)
        except Refused as e:
            retry = str(self.admission.retry_after(self.batcher.rate))
            return JSONResponse({"error": str(e)}, e.status, {**CLOSE, "retry-after": retry})
        except ClientDisconnect:
            return Response(status_code=499)
        if not parsed.cands:
            return JSONResponse({"P": [], "R": [], "F": [], "hash": self.scorer.hash})
        job = asyncio.ensure_future(self.batcher.score(parsed, self.request_timeout, client))
        gone = asyncio.ensure_future(_disconnected(request))
        try:
            await asyncio.wait({job, gone}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # the server's graceful-shutdown timeout cut it off
            job.cancel()
            return self._cut_response("POST", received=True)
        finally:
            gone.cancel()
        if not job.done():  # the client left: drop or stop its request and answer no one
            job.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await job
            return Response(status_code=499)
        try:
            result: ScoreResult = job.result()
        except WouldTimeOut as e:
            error = (
                f"the request cannot be scored within the {self.request_timeout} s allowed "
                f"(the server's --request-timeout): {e}; send fewer or shorter texts"
            )
            return JSONResponse({"error": error}, status_code=503)
        except (asyncio.TimeoutError, TimeoutError):
            self.timed_out += 1
            error = (
                f"the request was not scored within the {self.request_timeout} s allowed "
                "(the server's --request-timeout): send fewer pairs, or retry later"
            )
            return JSONResponse({"error": error}, status_code=503)
        except WholeTextTooLong as e:  # found on the worker: its prefixes did not settle it
            field, index = parsed.locate(e.text)
            refused = RequestError(413, f"{field}[{index}] has {e}", field, index)
            return JSONResponse(refused.body(), status_code=413, headers=CLOSE)
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
            asyncio.get_running_loop().set_exception_handler(AcceptErrors())
            self.batcher.start()
            try:
                yield
            finally:
                # After the server's graceful shutdown: requests in flight are answered.
                await asyncio.get_running_loop().run_in_executor(None, self.batcher.stop)
                self._parser.shutdown(wait=False)
                self._small_parser.shutdown(wait=False)

        async def http_error(request: Request, exc: Exception) -> Response:
            status = exc.status_code if isinstance(exc, HTTPException) else 500
            detail = exc.detail if isinstance(exc, HTTPException) else str(exc)
            if status == 404:
                detail = (
                    f"no such path {request.url.path!r} "
                    "(paths: /health, /ready, /score, /metrics, /openapi.json)"
                )
            elif status == 500:
                detail = f"{type(exc).__name__}: {exc}"
            return JSONResponse({"error": detail}, status_code=status)

        app = Starlette(
            routes=[
                Route("/health", self.handle_health, methods=["GET"]),
                Route("/ready", self.handle_ready, methods=["GET"]),
                Route("/score", self.handle_score, methods=["POST"]),
                Route("/metrics", self.handle_metrics, methods=["GET"]),
                Route("/openapi.json", self.handle_openapi, methods=["GET"]),
            ],
            exception_handlers={HTTPException: http_error, Exception: http_error},
            lifespan=lifespan,
        )
        app.router.redirect_slashes = False  # /score/ is a 404 JSON, not a 307 without a body
        self._asgi = app
        return app


async def _disconnected(request: Request) -> None:
    """Returns when the client disconnects (the body has been read already)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return
