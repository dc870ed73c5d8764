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

Bodies: uvicorn appends each piece of a body (a chunk, or the part of one that arrived) to a
``bytes`` object, which takes time quadratic in the pieces read at once; here the pieces of one
read are joined once (:class:`PiecedConnection`), and a body of more than
:data:`FREE_PIECES` pieces plus one per :data:`BYTES_PER_PIECE` bytes is refused (400 JSON,
then closed). A body must arrive at ``min_body_rate`` bytes a second, its first
:data:`BODY_GRACE` second free: a body that falls behind gets 408 JSON and the connection is
closed, so that a connection holding headers without their body is gone within about a second.
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
DEFAULT_MIN_BODY_RATE = 64 * 1024
"""Bytes a second at which a request body must arrive, after its first :data:`BODY_GRACE`
seconds (408 and closed when it falls behind)."""
BODY_GRACE = 1.0
"""Seconds of a body, from its request's headers, before its rate counts."""
FREE_PIECES = 256
"""Pieces (chunks, or parts of chunks, as they arrive) any body may come in (4,096 before:
four connections sending 1-byte chunks, reopened as each was refused, kept ``/health`` at a
p50 of 276 ms, each refusal costing the event loop some 4,400 chunks of h11's parsing)."""
BYTES_PER_PIECE = 16
"""Past :data:`FREE_PIECES`, a body may come in one more piece per this many bytes."""


def _error_response(status: bytes, reason: bytes, message: str) -> bytes:
    body = json.dumps({"error": message}).encode()
    head = b"HTTP/1.1 %s %s\r\ncontent-type: application/json\r\n" % (status, reason)
    return head + b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body)


class PiecedConnection(h11.Connection):
    r"""An h11 server connection whose body pieces read at once come as one
    :class:`h11.Data` event, joined once (uvicorn appends each event's data to a ``bytes``
    object: quadratic in the pieces of a read), and which refuses a body of too many pieces.

    ``pieces`` and ``body_bytes`` count the current request's body as it arrives;
    ``on_request`` (if set) is called with no argument when a request's headers arrive;
    ``refusal`` says why a body was refused (``next_event`` then raises
    :class:`h11.RemoteProtocolError`).

    Examples
    --------
    >>> import h11
    >>> conn = PiecedConnection(h11.SERVER)
    >>> head = b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
    >>> conn.receive_data(head + b"1\r\na\r\n" * 3 + b"0\r\n\r\n")
    >>> [type(conn.next_event()).__name__ for _ in range(3)]
    ['Request', 'Data', 'EndOfMessage']
    >>> conn.pieces, conn.body_bytes
    (3, 3)
    """

    def __init__(self, our_role: Any, **kwargs: Any) -> None:
        super().__init__(our_role, **kwargs)
        self.pieces = 0
        self.body_bytes = 0
        self.refusal: str | None = None
        self.on_request: Any = None
        self._held: Any = None

    def _next(self) -> Any:
        event = super().next_event()
        if isinstance(event, h11.Request):
            self.pieces = self.body_bytes = 0
            if self.on_request is not None:
                self.on_request()
        elif isinstance(event, h11.Data):
            self.pieces += 1
            self.body_bytes += len(event.data)
            if self.pieces > FREE_PIECES + self.body_bytes // BYTES_PER_PIECE:
                self.refusal = (
                    f"the request body came in too many pieces: {self.pieces} for "
                    f"{self.body_bytes} bytes (at most {FREE_PIECES} plus one per "
                    f"{BYTES_PER_PIECE} bytes); send larger chunks, or a Content-Length"
                )
                raise h11.RemoteProtocolError(self.refusal, 400)
        return event

    def next_event(self) -> Any:
        """h11's next event, consecutive :class:`h11.Data` events merged into one."""
        if self._held is not None:
            event, self._held = self._held, None
            return event
        if self.refusal is not None:
            raise h11.RemoteProtocolError(self.refusal, 400)
        event = self._next()
        if not isinstance(event, h11.Data):
            return event
        parts = [event.data]
        while True:
            try:
                more = self._next()
            except h11.RemoteProtocolError:  # raised again at the next call
                break
            if not isinstance(more, h11.Data):
                self._held = more
                break
            parts.append(more.data)
        if len(parts) == 1:
            return event
        return h11.Data(data=b"".join(parts))


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
    min_body_rate: float | None = DEFAULT_MIN_BODY_RATE,
) -> type:
    """uvicorn's h11 HTTP protocol class ``base`` with a read timeout, a connection cap (in
    all, and ``per_client`` per client address; None: none), framing errors answered as JSON,
    requests received before a shutdown answered by ``stopping_app``, bodies read in linear
    time and at ``min_body_rate`` bytes a second at least (None: any rate): pass the result as
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
        _rate_timer: asyncio.TimerHandle | None = None
        _body_began = 0.0

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            most = self.config.h11_max_incomplete_event_size  # None: h11's default, as uvicorn
            size = {} if most is None else {"max_incomplete_event_size": most}
            self.conn = PiecedConnection(h11.SERVER, **size)
            self.conn.on_request = self._request_began
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
            """A framing error (h11 could not read the request) or a body of too many pieces:
            400 JSON, then closed."""
            refusal = getattr(self.conn, "refusal", None)
            body = FRAMING_BODY if refusal is None else json.dumps({"error": refusal}).encode()
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", b"%d" % len(body)),
                CLOSE_HEADER,
            ]
            try:
                for event in (
                    h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
                    h11.Data(data=body),
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

        def _request_began(self) -> None:
            """A request's headers arrived: its body (if any) is timed from now."""
            self._body_began = self.loop.time()
            if min_body_rate is not None:
                if self._rate_timer is not None:
                    self._rate_timer.cancel()
                self._rate_timer = self.loop.call_later(BODY_GRACE, self._check_rate)

        def _check_rate(self) -> None:
            """408 and closed when the body in hand has arrived at less than
            ``min_body_rate`` bytes a second since its first :data:`BODY_GRACE` second."""
            self._rate_timer = None
            cycle = self.cycle
            if (
                min_body_rate is None
                or self.transport.is_closing()
                or cycle is None
                or not cycle.more_body
                or cycle.response_complete
            ):
                return  # no body in hand: the next request arms it again
            got = self.conn.body_bytes
            now = self.loop.time()
            if self.flow.read_paused:  # the server is not reading: not the client's fault
                self._body_began = max(self._body_began, now - BODY_GRACE - got / min_body_rate)
                self._rate_timer = self.loop.call_later(BODY_GRACE, self._check_rate)
                return
            due = self._body_began + BODY_GRACE + got / min_body_rate  # when it falls behind
            if now < due:
                self._rate_timer = self.loop.call_later(
                    max(due - now, 0.01) + 0.01, self._check_rate
                )
                return
            if not cycle.response_started:
                seconds = now - self._body_began
                self.transport.write(
                    _error_response(
                        b"408",
                        b"Request Timeout",
                        f"the request body arrived too slowly: {got} bytes in {seconds:.1f} s, "
                        f"below the server's --min-body-rate of {min_body_rate:g} bytes a second "
                        f"after the first {BODY_GRACE:g} s (a request must arrive whole within "
                        "the server's --read-timeout, its body at that rate at least)",
                    )
                )
            self.transport.close()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            if self._rate_timer is not None:
                self._rate_timer.cancel()
                self._rate_timer = None
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
