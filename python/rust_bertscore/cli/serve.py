"""``rust-bertscore serve``: one model kept loaded, BERTScore as JSON over HTTP.

``GET /health`` names the model and settings; ``POST /score`` takes ``{"cands": [...], "refs":
[...]}`` and answers ``{"P": [...], "R": [...], "F": [...], "hash": ...}``, the numbers of
``score()`` on that request alone. Requests that arrive together are encoded together
(:mod:`rust_bertscore.integrations.server.batching`). Needs the extra ``[serve]`` (Starlette,
uvicorn), imported only here. SIGTERM or Ctrl-C (Ctrl-Break on Windows): requests in flight
are answered, then the server exits (code 0; :data:`EXIT_CUT` when requests received were
answered 503 unscored). Connection limits: :mod:`rust_bertscore.integrations.server.connections`.
docs/serving.md.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

from .common import (
    EXIT_FAILURE,
    PROG,
    CliError,
    add_common_flags,
    add_model_and_scoring_groups,
    check_baseline,
    check_baseline_path,
    checked_number,
    debug,
    positive_float,
    positive_int,
    scorer_options,
)

EXIT_CUT = 3
"""Exit code after a shutdown in which requests received were answered 503 unscored: cut off
by ``--graceful-timeout``, or pipelined behind one in hand when the shutdown began (0: every
request received was scored and answered)."""

EPILOG = """\
examples:
  rust-bertscore serve --port 8080
  rust-bertscore serve --lang en --rescale_with_baseline --max-batch 64
  curl -s localhost:8080/score -d '{"cands": ["The cat sat."], "refs": ["A cat sat."]}'

--port 0 takes a free port; the address is printed on stderr once the model is loaded:
  rust-bertscore serve: listening on http://127.0.0.1:PORT
"""


def non_negative_float(text: str) -> float:
    """argparse type: a finite number >= 0."""
    return checked_number(
        text,
        float,
        lambda v: 0 <= v < float("inf"),
        "a number >= 0",
        "a finite number >= 0",
        echo_text=True,
    )


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``serve`` and return its parser."""
    p = subparsers.add_parser(
        "serve",
        help="serve BERTScore over HTTP with one model loaded (needs rust-bertscore[serve])",
        description="Keep one model loaded and answer JSON over HTTP: GET /health, POST /score "
        '{"cands": [...], "refs": [...]}. Requests that arrive together are encoded together; '
        "each gets the numbers score() gives it alone.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    server = p.add_argument_group("server")
    server.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1)")
    server.add_argument(
        "--port", type=int, default=8080, help="port to bind (8080; 0: a free port)"
    )
    server.add_argument(
        "--max-batch",
        type=positive_int,
        default=32,
        metavar="N",
        help="most requests encoded together (32; 1 turns batching off)",
    )
    server.add_argument(
        "--max-wait-ms",
        type=non_negative_float,
        default=5.0,
        metavar="MS",
        help="how long a batch waits for more requests after its first (5 ms)",
    )
    server.add_argument(
        "--max-body-bytes",
        type=positive_int,
        default=8 * 1024 * 1024,
        metavar="N",
        help="largest request body accepted (8 MiB; 413 past it)",
    )
    server.add_argument(
        "--cache-bytes",
        type=positive_int,
        default=512 * 1024 * 1024,
        metavar="N",
        help="bytes of encoded texts kept between requests (512 MiB)",
    )
    server.add_argument(
        "--max-pairs",
        type=positive_int,
        default=1024,
        metavar="N",
        help="most (candidate, reference) pairs in one request (1024; 413 past it)",
    )
    server.add_argument(
        "--request-timeout",
        type=positive_float,
        default=60.0,
        metavar="S",
        help="seconds a request may wait and be scored (60; 503 past it, its work stopped)",
    )
    server.add_argument(
        "--read-timeout",
        type=positive_float,
        default=30.0,
        metavar="S",
        help="seconds a request has to arrive whole, headers and body (30; 408, then closed)",
    )
    server.add_argument(
        "--min-body-rate",
        type=non_negative_float,
        default=65536.0,
        metavar="B",
        help="bytes a second a request body must arrive at, after its first second (65536; "
        "408, then closed; 0: any rate)",
    )
    server.add_argument(
        "--keep-alive",
        type=positive_float,
        default=5.0,
        metavar="S",
        help="seconds an idle keep-alive connection is kept open (5)",
    )
    server.add_argument(
        "--max-connections",
        type=positive_int,
        default=1000,
        metavar="N",
        help="most open connections (1000; past it a new one gets 503 and is closed)",
    )
    server.add_argument(
        "--max-connections-per-client",
        type=positive_int,
        default=None,
        metavar="N",
        help="most open connections from one client address (off; past it a new one gets 503 "
        "and is closed)",
    )
    server.add_argument(
        "--max-queued-tokens",
        type=positive_int,
        default=None,
        metavar="N",
        help="tokens that requests in hand may hold, a token per byte of body, charged before "
        "the body is kept (an eighth of the memory available at start, at most 256 Mi, at "
        "least 4 bodies; past it 503 with Retry-After at once)",
    )
    server.add_argument(
        "--max-client-share",
        type=client_share,
        default=0.5,
        metavar="F",
        help="the part of --max-queued-tokens one client address (an IPv4 address, an IPv6 "
        "/64) may hold at once, in (0, 1] (0.5; past it that client gets 503, the others are "
        "served)",
    )
    server.add_argument(
        "--max-whole-chars",
        type=positive_int,
        default=256 * 1024,
        metavar="N",
        help="most characters of one text the tokenizer reads at once (262144; a longer text "
        "without whitespace to cut it at, or any with --long-texts window, gets 413)",
    )
    server.add_argument(
        "--backlog",
        type=positive_int,
        default=2048,
        metavar="N",
        help="connections waiting to be accepted, at most (2048)",
    )
    server.add_argument(
        "--ready-queue",
        type=positive_int,
        default=64,
        metavar="N",
        help="requests waiting or in progress past which GET /ready answers 503 (64)",
    )
    server.add_argument(
        "--graceful-timeout",
        type=positive_float,
        default=30.0,
        metavar="S",
        help="on SIGTERM, seconds to finish the requests in flight (30; past it they get 503 "
        "and the exit code is 3)",
    )
    add_model_and_scoring_groups(
        p,
        batch_size_help="pairs per scoring batch (bert_score's padding floor, per request) and "
        "texts per encoder call (64)",
        batch_independent_help="score every pair on its own, without bert_score's batch "
        "padding floor",
    )
    add_common_flags(p)
    p.set_defaults(run=run)
    return p


def client_share(text: str) -> float:
    """``--max-client-share``: a number in (0, 1].

    >>> client_share("0.25")
    0.25
    """
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1], got {text!r}")
    return value


def _import_server() -> tuple:
    try:
        import uvicorn

        from ..integrations.server.app import ScoringApp
        from ..integrations.server.connections import guarded_protocol
    except ImportError as e:
        raise CliError(
            f"serve needs Starlette and uvicorn ({e.name} is missing): "
            "pip install 'rust-bertscore[serve]'",
            EXIT_FAILURE,
        ) from None
    return uvicorn, ScoringApp, guarded_protocol


FREE_DESCRIPTORS = 64
"""Open files kept free of connections: the model's files, logs, and connections past
``--max-connections``, which are answered 503."""


def _raise_open_files_limit() -> int | None:
    """The soft open-files limit up to the hard one (each connection holds a descriptor);
    returns the limit (None where unknown)."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != soft:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
    return None if soft == resource.RLIM_INFINITY else soft


def stop_signals() -> tuple[int, ...]:
    """The signals that stop the server gracefully, as uvicorn's own list: SIGINT, SIGTERM and,
    on Windows, SIGBREAK (Ctrl-Break; Windows delivers no SIGTERM from another process)."""
    found = (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGBREAK", None))
    return tuple(int(sig) for sig in found if sig is not None)


def _server_class(uvicorn: Any) -> Any:
    class Server(uvicorn.Server):  # type: ignore[misc, name-defined]
        """uvicorn's server, ending with exit code 0 after a graceful stop on SIGTERM/SIGINT
        (uvicorn 0.29+ raises the signal again once stopped, so the process would end killed)."""

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            if threading.current_thread() is not threading.main_thread():
                yield  # signal handlers can only be set in the main thread
                return
            previous = {sig: signal.signal(sig, self.handle_exit) for sig in stop_signals()}
            try:
                yield
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

    return Server


def run(args: argparse.Namespace) -> int:
    """Load the model, bind, serve until SIGTERM / SIGINT."""
    uvicorn, scoring_app, guarded_protocol = _import_server()
    from ..scoring.scorer import BERTScorer

    check_baseline_path(args)
    start = time.perf_counter()
    scorer = BERTScorer(
        **scorer_options(args),
        cache_bytes=args.cache_bytes,
        batch_independent=args.batch_independent,
    )
    scorer.missing_baseline = "warn"  # as score()
    check_baseline(args, scorer)
    debug(
        args,
        f"model {scorer.model_type}, layer {scorer.num_layers}, {scorer.precision} on "
        f"{scorer.device} (loaded in {time.perf_counter() - start:.2f} s)",
    )
    app = scoring_app(
        scorer,
        max_batch=args.max_batch,
        max_wait=args.max_wait_ms / 1000,
        max_body=args.max_body_bytes,
        max_pairs=args.max_pairs,
        request_timeout=args.request_timeout,
        ready_queue=args.ready_queue,
        max_queued_tokens=args.max_queued_tokens,
        max_client_share=args.max_client_share,
        max_whole_chars=args.max_whole_chars,
    )
    max_connections = args.max_connections
    nofile = _raise_open_files_limit()
    if nofile is not None and max_connections > nofile - FREE_DESCRIPTORS:
        max_connections = max(1, nofile - FREE_DESCRIPTORS)
        print(
            f"{PROG} serve: --max-connections lowered to {max_connections} (the open-files "
            f"limit is {nofile}: raise it with ulimit -n)",
            file=sys.stderr,
        )
    min_body_rate = args.min_body_rate or None
    app.limits.update(
        read_timeout_s=args.read_timeout,
        min_body_rate=min_body_rate,
        keep_alive_s=args.keep_alive,
        max_connections=max_connections,
        max_connections_per_client=args.max_connections_per_client,
        graceful_timeout_s=args.graceful_timeout,
    )
    try:
        family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        if os.name == "posix":  # on Windows it would let two servers share a port (asyncio's rule)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((args.host, args.port))
        sock.listen(args.backlog)  # connections wait in the backlog until uvicorn accepts them
    except OSError as e:
        raise CliError(f"cannot bind {args.host}:{args.port}: {e.strerror or e}") from None
    host, port = sock.getsockname()[:2]
    from uvicorn.protocols.http.h11_impl import H11Protocol

    config = uvicorn.Config(
        app.asgi(),
        http=guarded_protocol(
            H11Protocol,
            args.read_timeout,
            max_connections,
            app.handle_busy,
            per_client=args.max_connections_per_client,
            stopping_app=app.handle_stopping,
            min_body_rate=min_body_rate,
        ),
        log_level="warning" if args.quiet else "info",
        access_log=args.verbose,
        timeout_graceful_shutdown=args.graceful_timeout,
        timeout_keep_alive=args.keep_alive,
        backlog=args.backlog,
    )
    server = _server_class(uvicorn)(config)
    shown = f"[{host}]" if ":" in host else host
    print(f"{PROG} serve: listening on http://{shown}:{port}", file=sys.stderr, flush=True)
    try:
        server.run(sockets=[sock])
    finally:
        scorer.close()  # the requests in flight were answered; the session goes
    if app.cut or app.refused_at_stop:
        print(
            f"{PROG} serve: {app.cut} request(s) cut off by the graceful timeout and "
            f"{app.refused_at_stop} received during the shutdown were answered 503 unscored",
            file=sys.stderr,
        )
        return EXIT_CUT
    return 0
