"""Connection hygiene for ``rust-bertscore serve`` on uvicorn: a read timeout, a cap on open
connections, and accept errors logged once per interval.

uvicorn closes an idle keep-alive connection, but waits forever for a request that never
completes (nothing sent, half a request line, headers without their body).
:func:`guarded_protocol` subclasses uvicorn's HTTP protocol so that a request must arrive whole
within ``read_timeout`` seconds of the connection (or of the previous response, plus the
keep-alive time): past it the client gets a 408 JSON answer and the connection is closed.
Past ``max_connections`` open connections, a new one is answered by ``busy_app`` (the scoring
app's 503 JSON; health checks still answered) and closed; it has :data:`OVER_CAP_TIMEOUT` to
send its request. :class:`AcceptErrors` is the event loop's exception handler: when accepting
fails (out of file descriptors), asyncio reports every failed try; it logs a count once per
interval instead. Imported only by the CLI (the protocol subclasses uvicorn's).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

OVER_CAP_TIMEOUT = 1.0
"""Seconds a connection past the cap has to send its request (then 408 and closed): the
descriptors past the cap turn over quickly, so a health check gets through."""
TIMEOUT_BODY = json.dumps(
    {"error": "the request did not arrive whole within the server's --read-timeout"}
).encode()
TIMEOUT_RESPONSE = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
    b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(TIMEOUT_BODY), TIMEOUT_BODY)
)


def guarded_protocol(
    base: type, read_timeout: float, max_connections: int | None, busy_app: Any
) -> type:
    """uvicorn's HTTP protocol class ``base`` (h11's or httptools') with a read timeout and a
    connection cap: pass the result as ``uvicorn.Config(http=...)``.

    Examples
    --------
    >>> from uvicorn.protocols.http.h11_impl import H11Protocol
    >>> guarded_protocol(H11Protocol, 30.0, 1000, None).__name__
    'GuardedProtocol'
    """

    class GuardedProtocol(base):  # type: ignore[misc, valid-type]
        _read_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            if max_connections is not None and len(self.connections) > max_connections:
                self.app = busy_app  # answers 503 JSON and closes
                self._arm(min(read_timeout, OVER_CAP_TIMEOUT))  # a stalled one goes fast
            else:
                self._arm(read_timeout)

        def _arm(self, seconds: float) -> None:
            self._disarm()
            self._read_timer = self.loop.call_later(seconds, self._timed_out)

        def _disarm(self) -> None:
            if self._read_timer is not None:
                self._read_timer.cancel()
                self._read_timer = None

        def _serving(self) -> bool:
            """A whole request is in, its response not yet complete."""
            cycle = self.cycle
            return cycle is not None and not cycle.more_body and not cycle.response_complete

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self._serving():
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():  # the next request: keep-alive, then a read
                self._arm(self.timeout_keep_alive + read_timeout)

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _timed_out(self) -> None:
            self._read_timer = None
            if self.transport.is_closing() or self._serving():
                return
            cycle = self.cycle
            if cycle is None or cycle.response_complete or not cycle.response_started:
                self.transport.write(TIMEOUT_RESPONSE)
            self.transport.close()

    return GuardedProtocol


class AcceptErrors:
    """An event loop exception handler that counts ``socket.accept()`` failures and logs them
    once per ``interval`` seconds; anything else goes to the loop's default handler.

    Examples
    --------
    >>> import asyncio
    >>> handler = AcceptErrors(interval=60)
    >>> loop = asyncio.new_event_loop()
    >>> for _ in range(1000):
    ...     handler(loop, {"message": "socket.accept() out of system resource",
    ...                    "exception": OSError(24, "Too many open files")})
    >>> handler.total, handler.logged
    (1000, 1)
    >>> loop.close()
    """

    def __init__(self, interval: float = 10.0, logger: logging.Logger | None = None) -> None:
        self.interval = interval
        self.logger = logger or logging.getLogger("uvicorn.error")
        self.total = 0
        """Accept failures seen."""
        self.logged = 0
        """Log lines written about them."""
        self._since_log = 0
        self._last: float | None = None

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if not str(context.get("message", "")).startswith("socket.accept()"):
            loop.default_exception_handler(context)
            return
        self.total += 1
        self._since_log += 1
        now = time.monotonic()
        if self._last is None or now - self._last >= self.interval:
            self.logger.warning(
                "accepting connections failed %d time(s) in the last %.0f s (%s): raise the "
                "open-files limit (ulimit -n) or lower --max-connections",
                self._since_log,
                self.interval if self._last is not None else 0,
                context.get("exception"),
            )
            self.logged += 1
            self._since_log = 0
            self._last = now
