"""A queued request of the scoring server's worker (:class:`Job`), and how its work ends
early: :class:`WouldTimeOut` (it cannot finish in time), :class:`WorkCancelled` (its callers
have gone)."""

from __future__ import annotations

import dataclasses
import time
from concurrent.futures import Future, InvalidStateError

from .batching import ScoreRequest, ScoreResult
from .slices import Chunked


class WouldTimeOut(TimeoutError):
    """A request that cannot be scored before its deadline, even at the fastest rate seen.

    >>> print(WouldTimeOut(90.0, 60.0))  # doctest: +NORMALIZE_WHITESPACE
    the request needs at least 90.0 s of encoding at the fastest rate seen,
    and 60.0 s are left of its time
    """

    def __init__(self, seconds: float, left: float) -> None:
        super().__init__(
            f"the request needs at least {seconds:.1f} s of encoding at the fastest rate seen, "
            f"and {max(left, 0):.1f} s are left of its time"
        )
        self.seconds = seconds


class WorkCancelled(BaseException):
    """Raised at an encoder batch when every caller of the work in hand has gone (a
    BaseException, so that no ``except Exception`` on the way swallows it)."""


@dataclasses.dataclass(eq=False)
class Job:
    """One queued request: its future, deadline and what is left to encode ahead of scoring."""

    request: ScoreRequest
    future: Future[ScoreResult]
    deadline: float | None = None
    """``time.monotonic()`` past which nobody waits for it (None: no deadline)."""
    abandoned: bool = False
    work: Chunked | None = None
    """A large request's progress (None: scored in a batch)."""
    arrived: float = dataclasses.field(default_factory=time.monotonic)
    started: float | None = None
    """``time.monotonic()`` when the worker first worked on it (None: not yet)."""
    client: str = ""
    """The client address it came from (``admission.client_key``): compute is shared between
    clients in turn."""

    def abandon(self) -> None:
        """Its caller has gone: drop it if not begun, stop it at the next encoder batch if so."""
        self.abandoned = True
        self.future.cancel()

    def gone(self) -> bool:
        """Whether no one waits for it any more."""
        if self.abandoned or self.future.cancelled():
            return True
        return self.deadline is not None and time.monotonic() > self.deadline

    def finish(self, result: ScoreResult | BaseException) -> None:
        """Hand the caller its result (no-op once the future is done or cancelled)."""
        try:
            if isinstance(result, BaseException):
                self.future.set_exception(result)
            else:
                self.future.set_result(result)
        except InvalidStateError:
            pass
