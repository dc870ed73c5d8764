"""Scoring blocks with the encoder kept busy: each round's vectors are fetched on a worker
thread while the kernel scores the round before and the next block is tokenised.

:meth:`~rust_bertscore.engine.blocks.BlockScorer.score` runs a block's stages one after the
other, so the encoder waits while texts are tokenised and rounds are scored. On a GPU that wait
is most of a call. :func:`score_overlapped` runs the same stages in another order: the fetch of
round ``r + 1`` (cache, store, else the encoder, which releases the GIL while it runs) is handed
to one worker thread before the kernel scores round ``r`` (Rust, GIL released too) and before
the next block is tokenised. Rounds are fetched in order on that one thread, so the call's memo
sees them as before, and the scores are the same numbers. At most two rounds' vectors are held
at once (the one being scored and the one being fetched), as the one-by-one order does when the
memo keeps a round's texts.

A call of one round has nothing to overlap and runs without a thread. The worker is a plain
thread made for the call and joined before it returns, so nothing outlives a call, forks see no
pool, and an error on either side is raised in the caller once the other side has stopped.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

import numpy as np

from .blocks import Block, BlockScorer, RoundVectors

T = TypeVar("T")

BlockSpans = Sequence[tuple[int, int, tuple[np.ndarray, np.ndarray] | None]]
"""``(block, block_stop, floors)`` of each block of a call, in order."""


class Worker(Generic[T]):
    """One job at a time on one thread made on first use; :meth:`result` waits for the job
    and returns its value or raises its error in the caller."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._thread: threading.Thread | None = None
        self._value: T | None = None
        self._error: BaseException | None = None

    def start(self, job: Callable[[], T]) -> None:
        """Run ``job`` on a new thread (the previous job must have been waited for)."""
        assert self._thread is None, "one job at a time"
        self._value, self._error = None, None

        def run() -> None:
            try:
                self._value = job()
            except BaseException as e:  # handed to the caller by result()
                self._error = e

        self._thread = threading.Thread(target=run, name=self.name, daemon=True)
        self._thread.start()

    @property
    def busy(self) -> bool:
        """A job was started and not yet waited for."""
        return self._thread is not None

    def result(self) -> T:
        """Wait for the job; its value, or its error raised here."""
        assert self._thread is not None, "no job started"
        self._thread.join()
        self._thread = None
        value, error = self._value, self._error
        self._value = self._error = None
        if error is not None:
            raise error
        return value  # type: ignore[return-value]


def score_overlapped(blocks: BlockScorer, spans: BlockSpans) -> None:
    """Score every block of ``spans`` with :meth:`BlockScorer.fetch` one round ahead on a
    worker thread; the same numbers as ``blocks.score`` block by block.

    Examples
    --------
    >>> import numpy as np
    >>> from rust_bertscore import BERTScorer
    >>> from rust_bertscore.engine.blocks import BlockScorer
    >>> from rust_bertscore.engine.overlap import score_overlapped
    >>> from rust_bertscore.stages.text import pair_texts
    >>> pipeline = BERTScorer().pipeline
    >>> cands, refs = ["the cat sat", "a dog", "birds fly"], ["a cat sat", "the dog", "a bird"]
    >>> paired = pair_texts(cands, refs)
    >>> out = np.zeros((3, 1, 3), np.float32)
    >>> blocks = BlockScorer(
    ...     pipeline.tokens, pipeline.vectors, False, 1.0, paired, pipeline.uniform,
    ...     batch_size=64, floor_batch=None, budget=12, out=out,
    ... )
    >>> score_overlapped(blocks, [(0, 2, None), (2, 3, None)])
    >>> expected = pipeline.score_pairs(paired, pipeline.uniform, batch_size=64, floor_batch=None)
    >>> bool(np.array_equal(out[:, 0, :], expected))
    True
    """
    worker: Worker[RoundVectors] = Worker("rust-bertscore-fetch")
    pending: tuple[Block, int, int, bool] | None = None  # the round being fetched
    try:
        for block, block_stop, floors in spans:
            b = blocks.prepare(block, block_stop, floors)  # tokenised while a fetch runs
            round_spans = blocks.round_spans(b)
            if len(spans) == 1 and len(round_spans) == 1:  # one round: nothing to overlap
                lo, hi = round_spans[0]
                blocks.score_round(b, lo, hi, blocks.fetch(b, lo, hi))
                blocks.finish(b)
                return
            for k, (lo, hi) in enumerate(round_spans):
                if pending is None:  # the call's first round: nothing to score meanwhile
                    worker.start(_fetch(blocks, b, lo, hi))
                    pending = (b, lo, hi, k == len(round_spans) - 1)
                    continue
                fetched = worker.result()
                worker.start(_fetch(blocks, b, lo, hi))
                _score(blocks, pending, fetched)
                pending = (b, lo, hi, k == len(round_spans) - 1)
        if pending is not None:
            _score(blocks, pending, worker.result())
    finally:
        if worker.busy:  # an error here: let the fetch end before the caller goes on
            with contextlib.suppress(BaseException):
                worker.result()


def _fetch(blocks: BlockScorer, b: Block, lo: int, hi: int) -> Callable[[], RoundVectors]:
    return lambda: blocks.fetch(b, lo, hi)


def _score(
    blocks: BlockScorer, round_: tuple[Block, int, int, bool], fetched: RoundVectors
) -> None:
    b, lo, hi, last = round_
    blocks.score_round(b, lo, hi, fetched)
    if last:
        blocks.finish(b)
