"""Dynamic batching for the scoring server: requests that arrive together are encoded together,
and each is still scored on its own.

:class:`RequestScorer` is the scoring seam. For a batch of requests it encodes every distinct
text of the batch in one pass through the scorer's pipeline (``pipeline.tokens.tokenize`` and
``pipeline.vectors``, which leave the vectors in the scorer's cache), then calls
:meth:`BERTScorer.score <rust_bertscore.BERTScorer.score>` once per request, which finds its
texts in the cache. So the encoder's work is shared across requests, while bert_score's padding
floor, IDF (``idf=True``: over that request's references, as ``score()``), the multi-reference
max and rescaling are each request's own: the numbers are those of ``score()`` on that request
alone.

:class:`Batcher` runs a :class:`RequestScorer` on one worker thread: it waits for a first
request, gathers more for at most ``max_wait`` seconds (or until ``max_batch``), scores them
and hands each caller its result. Requests whose caller has gone (a cancelled future) are
skipped. This module needs no web framework.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import queue
import threading
import time
import warnings
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any

import numpy as np

from ...engine.rounds import round_budget
from ...errors import InputValueError
from ...scoring.scorer import BERTScorer
from ...stages.text import pair_texts

Refs = Sequence[str] | Sequence[Sequence[str]]


@dataclasses.dataclass(frozen=True)
class ScoreRequest:
    """One request's candidates and references (checked: ``pair_texts`` accepts them)."""

    cands: list[str]
    refs: list[Any]


@dataclasses.dataclass(frozen=True)
class ScoreResult:
    """One request's scores (float32, as ``score()`` returns them) and its warnings."""

    P: np.ndarray
    R: np.ndarray
    F: np.ndarray
    warnings: list[str]


class RequestScorer:
    """Scores batches of requests with one :class:`BERTScorer`, each request as ``score()``.

    Parameters
    ----------
    scorer : BERTScorer
        The loaded model and settings. Its cache (``cache_bytes``) holds the batch's vectors
        between the shared encoding and the per-request scoring; with ``cache_bytes=0`` each
        request encodes its own texts (no sharing; same numbers). A scorer made with
        ``idf=True`` weights each request's tokens by IDF over that request's references (as
        ``score(..., idf=True)``), replacing any weights set before.

    Examples
    --------
    >>> from rust_bertscore import BERTScorer, score
    >>> from rust_bertscore.integrations.server.batching import RequestScorer, ScoreRequest
    >>> rs = RequestScorer(BERTScorer())
    >>> a = ScoreRequest(["the cat sat"], ["a cat sat"])
    >>> b = ScoreRequest(["a dog", "hello"], [["the dog", "dogs"], ["hi"]])
    >>> ra, rb = rs.score_batch([a, b])
    >>> bool(ra.F[0] == score(a.cands, a.refs)[2][0])
    True
    """

    def __init__(self, scorer: BERTScorer) -> None:
        self.scorer = scorer
        self.idf = scorer.idf
        self.encoded_batches = 0
        """Shared encoder passes run so far (one per batch with texts to encode)."""

    def encode_together(self, requests: Sequence[ScoreRequest]) -> None:
        """Encode the distinct texts of ``requests`` in one pass, into the scorer's cache."""
        pipeline = self.scorer.pipeline
        if not pipeline.cache.max_bytes:
            return
        texts: dict[str, None] = {}
        for request in requests:
            paired = pair_texts(request.cands, request.refs)
            texts.update(dict.fromkeys(paired.cands))
            texts.update(dict.fromkeys(paired.refs))
        unique = [t for t in texts if pipeline.cache.get(t) is None]
        if not unique:
            return
        ids = pipeline.tokens.tokenize(unique).ids
        # At most half the cache (and one scoring round) of vectors at once: the rest, if any,
        # is encoded by its own request, as score() would.
        budget = round_budget(
            min(pipeline.cache.max_bytes // 2, pipeline.round_bytes),
            pipeline.runtime.encoder.hidden_size or 1024,
            pipeline.layers,
        )
        rows = np.cumsum([len(t) for t in ids])
        take = int(np.searchsorted(rows, budget, side="right"))
        if take:
            pipeline.vectors(unique[:take], ids[:take], self.scorer.batch_size)
            self.encoded_batches += 1

    def score_one(self, request: ScoreRequest) -> ScoreResult:
        """``score(request.cands, request.refs)`` with this scorer's settings."""
        scorer = self.scorer
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if self.idf:
                scorer.set_idf_sents(pair_texts(request.cands, request.refs).refs)
            P, R, F = scorer.score(request.cands, request.refs, batch_size=scorer.batch_size)
        return ScoreResult(P, R, F, [str(w.message) for w in caught])

    def score_batch(self, requests: Sequence[ScoreRequest]) -> list[ScoreResult | Exception]:
        """Each request's result, or the exception scoring it raised (the others still score)."""
        if len(requests) > 1:
            # A failure here (one bad request, memory) leaves each request to encode its own.
            with contextlib.suppress(Exception):
                self.encode_together(requests)
        out: list[ScoreResult | Exception] = []
        for request in requests:
            try:
                out.append(self.score_one(request))
            except Exception as e:  # handed to that request's caller
                out.append(e)
        return out


_STOP = object()


class Batcher:
    """A worker thread that scores queued requests in batches.

    Parameters
    ----------
    scorer : RequestScorer
    max_batch : int
        Most requests scored together (1: no batching, one request at a time).
    max_wait : float
        Seconds the worker waits, after the first request of a batch arrives, for more.

    Examples
    --------
    >>> from rust_bertscore import BERTScorer
    >>> from rust_bertscore.integrations.server.batching import (
    ...     Batcher, RequestScorer, ScoreRequest)
    >>> batcher = Batcher(RequestScorer(BERTScorer()), max_batch=8, max_wait=0.005)
    >>> batcher.start()
    >>> result = batcher.submit(ScoreRequest(["the cat sat"], ["a cat sat"])).result(timeout=60)
    >>> result.F.shape
    (1,)
    >>> batcher.stop()
    """

    def __init__(self, scorer: RequestScorer, max_batch: int = 32, max_wait: float = 0.005):
        if max_batch < 1:
            raise InputValueError(f"max_batch must be at least 1, got {max_batch}")
        if not max_wait >= 0:
            raise InputValueError(f"max_wait must be >= 0 seconds, got {max_wait}")
        self.scorer = scorer
        self.max_batch = max_batch
        self.max_wait = max_wait
        self._queue: queue.Queue[Any] = queue.Queue()
        self._thread: threading.Thread | None = None
        self.batches = 0
        """Batches scored so far."""
        self.requests = 0
        """Requests scored so far."""
        self.skipped = 0
        """Requests dropped because their caller had gone before scoring began."""

    def start(self) -> None:
        """Start the worker thread."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="bertscore-batcher")
            self._thread.daemon = True
            self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """Score what is queued, then end the worker thread."""
        if self._thread is not None:
            self._queue.put(_STOP)
            self._thread.join(timeout)
            self._thread = None

    def submit(self, request: ScoreRequest) -> Future[ScoreResult]:
        """Queue ``request``; the future gets its :class:`ScoreResult` (or exception). Cancel
        the future to drop the request if scoring has not begun."""
        future: Future[ScoreResult] = Future()
        self._queue.put((request, future))
        return future

    async def score(self, request: ScoreRequest) -> ScoreResult:
        """:meth:`submit`, awaited; cancelling the awaiting task drops the request."""
        future = self.submit(request)
        try:
            return await asyncio.wrap_future(future)
        finally:
            future.cancel()  # no-op once done; drops a request whose caller went away

    def _gather(self, first: Any) -> tuple[list[Any], bool]:
        items, stop = [first], False
        deadline = time.monotonic() + self.max_wait
        while len(items) < self.max_batch:
            left = deadline - time.monotonic()
            try:
                item = self._queue.get(timeout=left) if left > 0 else self._queue.get_nowait()
            except queue.Empty:
                break
            if item is _STOP:
                stop = True
                break
            items.append(item)
        return items, stop

    def _work(self) -> None:
        stopping = False
        while True:
            if stopping:  # score what was queued before the stop, then end
                first = self._next_queued()
                if first is None:
                    return
            else:
                first = self._queue.get()
                if first is _STOP:
                    stopping = True
                    continue
            items, stopped = self._gather(first)
            stopping = stopping or stopped
            live = [(r, f) for r, f in items if f.set_running_or_notify_cancel()]
            self.skipped += len(items) - len(live)
            if not live:
                continue
            results = self.scorer.score_batch([r for r, _ in live])
            self.batches += 1
            self.requests += len(live)
            for (_, future), result in zip(live, results):
                if isinstance(result, Exception):
                    future.set_exception(result)
                else:
                    future.set_result(result)

    def _next_queued(self) -> Any:
        try:
            item = self._queue.get_nowait()
        except queue.Empty:
            return None
        return None if item is _STOP else item
