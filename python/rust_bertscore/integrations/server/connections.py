"""Connection hygiene for ``rust-bertscore serve`` on uvicorn: a read timeout, caps on open
connections (in all and per client address), HTTP framing errors answered as JSON, requests
framed by both Content-Length and Transfer-Encoding answered on a closing connection, every
request received before a shutdown answered, and accept errors logged once per interval.

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

On shutdown (SIGTERM), uvicorn's own protocol closes a connection after the response in hand,
and requests pipelined behind it, already received, are dropped unanswered. Here each of them
is answered by ``stopping_app`` (the scoring app's 503 JSON), the last one with
``Connection: close``; a response in hand with nothing behind it says ``Connection: close``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import Counter
from typing import Any

import h11

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
FRAMING_BODY = json.dumps(
    {
        "error": "malformed HTTP request: its request line, headers, Content-Length or chunked "
        "body cannot be read (HTTP/1.1, RFC 9112); the connection is closed"
    }
).encode()
CLOSE_HEADER = (b"connection", b"close")


def _smuggling_guard(app: Any) -> Any:
    """``app``, with a request framed by both Content-Length and Transfer-Encoding answered on
    a connection closed after the answer (RFC 9112, section 6.3: the shape of request
    smuggling)."""

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            names = {name for name, _ in scope["headers"]}
            if b"content-length" in names and b"transfer-encoding" in names:
                scope["headers"].append(CLOSE_HEADER)  # uvicorn then answers "close"
        await app(scope, receive, send)

    return guarded


def guarded_protocol(
    base: type,
    read_timeout: float,
    max_connections: int | None,
    busy_app: Any,
    *,
    per_client: int | None = None,
    stopping_app: Any = None,
) -> type:
    """uvicorn's h11 HTTP protocol class ``base`` with a read timeout, a connection cap (in
    all, and ``per_client`` per client address; None: none), framing errors answered as JSON,
    and requests received before a shutdown answered by ``stopping_app``: pass the result as
    ``uvicorn.Config(http=...)``.

    ``busy_app(scope, receive, send, error=None)`` answers past a cap (``error``: the message
    for the per-client one); ``stopping_app(scope, receive, send, last)`` answers a request
    received during a shutdown (``last()``: whether no other request is buffered behind it).

    Examples
    --------
    >>> from uvicorn.protocols.http.h11_impl import H11Protocol
    >>> guarded_protocol(H11Protocol, 30.0, 1000, None).__name__
    'GuardedProtocol'
    """
    open_per_client: Counter[str] = Counter()

    class GuardedProtocol(base):  # type: ignore[misc, valid-type]
        app: Any
        _read_timer: asyncio.TimerHandle | None = None
        _client_key: str | None = None
        _stopping = False

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self.app = _smuggling_guard(self.app)
            host = self.client[0] if self.client else None
            if per_client is not None and host is not None:
                self._client_key = host
                open_per_client[host] += 1
            if max_connections is not None and len(self.connections) > max_connections:
                self.app = busy_app  # answers 503 JSON and closes
                self._arm(min(read_timeout, OVER_CAP_TIMEOUT))  # a stalled one goes fast
            elif per_client is not None and host is not None and open_per_client[host] > per_client:
                error = (
                    f"too many open connections from {host} (the server's "
                    f"--max-connections-per-client, {per_client}): retry later"
                )

                async def over(scope: Any, receive: Any, send: Any) -> None:
                    await busy_app(scope, receive, send, error=error)

                self.app = over
                self._arm(min(read_timeout, OVER_CAP_TIMEOUT))
            else:
                self._arm(read_timeout)

        def send_400_response(self, msg: str) -> None:
            """A framing error (h11 could not read the request): 400 JSON, then closed."""
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", b"%d" % len(FRAMING_BODY)),
                CLOSE_HEADER,
            ]
            try:
                for event in (
                    h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
                    h11.Data(data=FRAMING_BODY),
                    h11.EndOfMessage(),
                ):
                    self.transport.write(self.conn.send(event))
            except h11.LocalProtocolError:  # a response had begun: nothing more can be said
                pass
            self.transport.close()

        def shutdown(self) -> None:
            """Graceful shutdown: each request already received is answered (scored if in
            hand, else by ``stopping_app``); then the connection closes."""
            self._stopping = True
            if stopping_app is not None:

                async def stopping(scope: Any, receive: Any, send: Any) -> None:
                    await stopping_app(scope, receive, send, self._nothing_buffered)

                self.app = stopping
            cycle = self.cycle
            if cycle is None or cycle.response_complete or stopping_app is None:
                super().shutdown()
            elif self._nothing_buffered():  # the answer in hand is the last: say so
                cycle.keep_alive = False
                if not cycle.response_started:
                    cycle.scope["headers"].append(CLOSE_HEADER)

        def _nothing_buffered(self) -> bool:
            return not self.conn.trailing_data[0]

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
            if self._stopping and not self.transport.is_closing():
                cycle = self.cycle
                if cycle is None or cycle.response_complete:  # nothing more was received
                    self.transport.close()
                    return
            if not self.transport.is_closing():  # the next request: keep-alive, then a read
                self._arm(self.timeout_keep_alive + read_timeout)

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            if self._client_key is not None:
                open_per_client[self._client_key] -= 1
                if open_per_client[self._client_key] <= 0:
                    del open_per_client[self._client_key]
                self._client_key = None
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
