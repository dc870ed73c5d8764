"""The scoring server's worker thread: which request is encoded and scored next.

:class:`Batcher` takes requests from a queue on one worker thread. Small requests that arrive
together (within ``max_wait``, at most ``max_batch``) are scored as one batch by a
:class:`~rust_bertscore.integrations.server.batching.RequestScorer`. A large request (more than
one slice: :data:`~rust_bertscore.integrations.server.batching.SLICE_ROWS` token rows or
:data:`~rust_bertscore.integrations.server.batching.SLICE_CHARS` characters) is worked in steps of
one slice (:class:`~rust_bertscore.integrations.server.slices.Chunked`), and between two steps
the worker serves what has arrived since: a request of one pair waits for at most one slice.
Large requests go shortest first by their remaining token rows, less an ageing credit for the
time they have waited, so a large one still finishes. A request that cannot finish before its
deadline even at the fastest rate seen is refused (:class:`WouldTimeOut`) before its work, or
as soon as it falls that far behind. Work whose callers have all gone (:meth:`Job.abandon`, or
past its deadline) stops at the next encoder batch (the encoder's ``on_batch`` hook raises
:class:`WorkCancelled`); the slices it encoded stay in the cache. No web framework here.
"""

from __future__ import annotations

import asyncio
import collections
import queue
import threading
import time
from concurrent.futures import Future
from typing import Any

from ...errors import InputValueError
from .batching import SLICE_CHARS, RequestScorer, ScoreRequest, ScoreResult
from .jobs import Job, WorkCancelled, WouldTimeOut
from .metrics import Metrics
from .slices import SLICE_ROWS, Chunked

__all__ = ["Batcher", "Job", "WorkCancelled", "WouldTimeOut"]

AGEING_ROWS = 1000
"""Token rows of credit per second waited, before the encoder's rate is measured."""
RATE_SAMPLE_ROWS = 256
"""Slices of fewer token rows are not used to measure the encoder's rate."""


_STOP = object()


class Batcher:
    """A worker thread that scores queued requests in batches, large ones in slices.

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
    >>> from rust_bertscore.integrations.server.batching import RequestScorer, ScoreRequest
    >>> from rust_bertscore.integrations.server.scheduler import Batcher
    >>> batcher = Batcher(RequestScorer(BERTScorer()), max_batch=8, max_wait=0.005)
    >>> batcher.start()
    >>> job = batcher.submit(ScoreRequest(["the cat sat"], ["a cat sat"]))
    >>> job.future.result(timeout=60).F.shape
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
        self._large: list[Job] = []
        self._small: dict[str, collections.deque[Job]] = {}
        """Small jobs waiting, per client, in arrival order (clients in turn)."""
        self._small_waiting = 0
        """How many (the worker writes it; ``queued`` reads it from any thread)."""
        self._served: collections.Counter[str] = collections.Counter()
        """Token rows of large jobs encoded per client with large jobs waiting (turns)."""
        self._current: list[Job] = []
        self.batches = 0
        """Batches scored so far."""
        self.requests = 0
        """Requests scored so far."""
        self.skipped = 0
        """Requests dropped because their caller had gone before scoring began."""
        self.cancelled = 0
        """Requests stopped mid-work because their caller had gone (or their deadline passed)."""
        self.refused = 0
        """Requests refused because they could not finish before their deadline."""
        self.rate: float | None = None
        """The fastest encoding rate seen, in token rows per second (None: not measured)."""
        self.metrics: Metrics | None = None
        """Where the seconds a request waited and was worked on go (None: nowhere)."""

    @property
    def queued(self) -> int:
        """Requests waiting for the worker."""
        return self._queue.qsize() + self._small_waiting

    @property
    def in_progress(self) -> int:
        """Requests the worker has begun: the batch in hand and large requests in slices."""
        return len(self._current) + sum(j not in self._current for j in self._large)

    def start(self) -> None:
        """Start the worker thread (and hook the encoder, to stop abandoned work)."""
        if self._thread is None:
            self.scorer.watch(self._check)
            self._thread = threading.Thread(target=self._work, name="bertscore-batcher")
            self._thread.daemon = True
            self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """Score what is queued, then end the worker thread."""
        if self._thread is not None:
            self._queue.put(_STOP)
            self._thread.join(timeout)
            self._thread = None

    def submit(self, request: ScoreRequest, timeout: float | None = None, client: str = "") -> Job:
        """Queue ``request`` (``timeout``: seconds it may take at most; ``client``: its
        address, for the turns between clients); the job's future gets its
        :class:`ScoreResult` (or exception). :meth:`Job.abandon` drops or stops it."""
        deadline = None if timeout is None else time.monotonic() + timeout
        job = Job(request, Future(), deadline, client=client)
        self._queue.put(job)
        return job

    async def score(
        self, request: ScoreRequest, timeout: float | None = None, client: str = ""
    ) -> ScoreResult:
        """:meth:`submit`, awaited; raises ``asyncio.TimeoutError`` past ``timeout``. Cancelling
        the awaiting task, or the timeout, abandons the request."""
        job = self.submit(request, timeout, client)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(job.future), timeout)
        finally:
            job.abandon()  # no-op once done; drops or stops a request whose caller went away
            if self.metrics is not None:
                now = time.monotonic()
                started = now if job.started is None else job.started
                self.metrics.observe("queue", started - job.arrived)
                if job.started is not None:
                    self.metrics.observe("score", now - job.started)

    def _check(self, _texts: int) -> None:
        current = self._current
        if current and all(job.gone() for job in current):
            raise WorkCancelled

    def _take(self, block: bool) -> tuple[list[Job], bool]:
        """Arrivals: when ``block``, wait for a first one and up to ``max_wait`` for more (a
        batch's worth), then those queued now; else only those queued now. Returns them and
        whether a stop was asked for."""
        items: list[Job] = []
        deadline = time.monotonic() + self.max_wait
        while True:
            if len(items) >= self.max_batch:
                block = False  # a batch's worth came: the rest queued now, without waiting
            try:
                if block and not items:
                    item = self._queue.get()
                    deadline = time.monotonic() + self.max_wait
                else:
                    left = deadline - time.monotonic() if block else 0
                    item = self._queue.get(timeout=left) if left > 0 else self._queue.get_nowait()
            except queue.Empty:
                break
            if item is _STOP:
                return items, True
            items.append(item)
        return items, False

    def _is_large(self, job: Job) -> bool:
        if not self.scorer.plan(job.request):
            return False
        job.work = Chunked(job.request, self.scorer, max(self.scorer.budget, SLICE_ROWS))
        return True

    def _too_slow(self, job: Job) -> bool:
        """Refuse ``job`` (True) when it cannot finish before its deadline at :attr:`rate`."""
        if job.deadline is None or self.rate is None or job.work is None:
            return False
        need = job.work.least_left / self.rate
        left = job.deadline - time.monotonic()
        if need <= left:
            return False
        self.refused += 1
        job.finish(WouldTimeOut(need, left))
        return True

    def _next_large(self) -> Job:
        """The client whose large jobs have had the fewest rows encoded goes next (turns:
        one client's many requests do not hold the others back); of its jobs, the one with
        the least remaining work, less its ageing credit."""
        clients = {j.client for j in self._large}
        for gone in set(self._served) - clients:
            del self._served[gone]
        floor = min(self._served.values(), default=0)
        for client in clients - set(self._served):  # a newcomer starts level, not behind
            self._served[client] = floor
        turn = min(clients, key=lambda c: self._served[c])
        now, per_s = time.monotonic(), self.rate or AGEING_ROWS
        best = min(
            (j for j in self._large if j.client == turn),
            key=lambda j: (j.work.rows_left if j.work else 0) - per_s * (now - j.arrived),
        )
        self._large.remove(best)
        return best

    def _queue_small(self, job: Job) -> None:
        self._small.setdefault(job.client, collections.deque()).append(job)
        self._small_waiting += 1

    def _small_batch(self) -> list[Job]:
        """Up to ``max_batch`` small jobs, one per client in each pass (a client's flood of
        small requests fills its own turns, not every batch), the clients whose next request
        is smallest first, its rows discounted by the time it has waited (eight addresses
        sending requests of a slice each kept a one-pair request behind eight slices, p50
        1.1 to 2.3 s). A batch holds at most one slice of work (:data:`SLICE_ROWS` token rows from
        above, :data:`SLICE_CHARS` characters; its first job whatever its size), so a request
        waits behind at most one slice and the texts tokenised at once stay bounded."""
        batch: list[Job] = []
        rows = chars = 0
        now, per_s = time.monotonic(), self.rate or AGEING_ROWS

        def size(job: Job) -> tuple[int, int]:
            return self.scorer.rows_of(job.request), job.request.chars

        while self._small and len(batch) < self.max_batch:
            heads = {client: size(jobs[0]) for client, jobs in self._small.items()}
            # Rows over (1 + slices' worth of time waited): a request that has waited as long
            # as one slice takes counts half its rows, so a fresh one-pair request goes ahead
            # of eight slice-sized ones that have waited a second, and a slice-sized one still
            # goes ahead of fresh one-pair requests after some seconds.
            slice_s = SLICE_ROWS / per_s
            order = sorted(
                heads,
                key=lambda c: heads[c][0] / (1 + (now - self._small[c][0].arrived) / slice_s),
            )
            took = False
            for client in order:
                more, text = heads[client]
                if batch and (rows + more > SLICE_ROWS or chars + text > SLICE_CHARS):
                    continue  # it waits for the next batch; a smaller one may still fit
                pending = self._small[client]
                job = pending.popleft()
                self._small_waiting -= 1
                if not pending:
                    del self._small[client]
                took = True
                if job.gone():
                    self.skipped += 1
                else:
                    batch.append(job)
                    rows, chars = rows + more, chars + text
                if len(batch) >= self.max_batch:
                    break
            if not took:
                break
        return batch

    def _fail_small(self, error: Exception) -> list[Job]:
        """Answer every waiting small request with ``error`` (the worker goes on); none left."""
        for pending in self._small.values():
            for job in pending:
                job.finish(error)
        self._small.clear()
        self._small_waiting = 0
        return []

    def _measured(self, rows: int, seconds: float) -> None:
        """A sample of the encoder's rate: the fastest seen is kept."""
        if rows >= RATE_SAMPLE_ROWS and seconds > 0:
            self.rate = max(self.rate or 0.0, rows / seconds)

    def calibrate(self) -> None:
        """The encoder's rate measured before any request (the worker does it first): a
        request's deadline is judged against it from the first request on."""
        try:
            self._measured(*self.scorer.calibrate())
        except Exception:
            return

    def _work(self) -> None:
        self.calibrate()
        stopping = False
        while True:
            if not stopping:
                arrived, stopping = self._take(block=not self._large and not self._small)
            else:  # score what was queued before the stop, then end
                arrived, _ = self._take(block=False)
                if not arrived and not self._large and not self._small:
                    return
            for job in arrived:
                if job.gone():
                    self.skipped += 1
                elif self._is_large(job):
                    if not self._too_slow(job):
                        self._large.append(job)
                else:
                    self._queue_small(job)
            try:
                small = self._small_batch()
            except Exception as e:  # a fault in choosing: its requests hear of it, not a hang
                small = self._fail_small(e)
            if small:
                self._run(small, self._score_small, small)
            if self._large:
                job = self._next_large()
                if job.gone():
                    self.skipped += 1
                elif not self._too_slow(job) and self._run([job], self._advance, job):
                    self._large.append(job)

    def _run(self, jobs: list[Job], step: Any, arg: Any) -> bool:
        """``step(arg)`` with ``jobs`` in hand (their callers' leaving stops it); its result, or
        False once the jobs have gone."""
        self._current = jobs
        now = time.monotonic()
        for job in jobs:
            job.started = now if job.started is None else job.started
        try:
            return bool(step(arg))
        except WorkCancelled:
            self.cancelled += len(jobs)
            for job in jobs:
                job.finish(TimeoutError("the request was abandoned or ran past its deadline"))
            return False
        finally:
            self._current = []

    def _score_small(self, jobs: list[Job]) -> bool:
        results = self.scorer.score_batch([job.request for job in jobs])
        self.batches += 1
        self.requests += len(jobs)
        self._current = []  # done before the callers hear of it: /health then says so
        for job, result in zip(jobs, results):
            job.finish(result)
        return False

    def _advance(self, job: Job) -> bool:
        """One step of ``job`` (a slice encoded, or a chunk scored); True: more to do."""
        work = job.work
        assert work is not None
        start, encoding = time.perf_counter(), self.scorer.encoder_seconds
        try:
            more = work.step()
        except Exception as e:  # handed to that request's caller
            job.finish(e)
            return False
        # The encoder's own time where it says (a step's tokenising is not encoding: one
        # huge text to tokenise made the first rate 20 times too slow, and feasible work was
        # refused until a faster step came).
        after = self.scorer.encoder_seconds
        seconds = time.perf_counter() - start
        if encoding is not None and after is not None and after > encoding:
            seconds = after - encoding
        self._measured(work.last_rows, seconds)
        self._served[job.client] += max(work.last_rows, 1)
        if more:
            return True
        self.batches += 1
        self.requests += 1
        self._current = []
        job.finish(work.result())
        return False
