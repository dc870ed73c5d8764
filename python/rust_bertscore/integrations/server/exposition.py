"""``GET /metrics`` of a server (a :class:`~rust_bertscore.integrations.server.app.ScoringApp`):
its counters and gauges gathered into :class:`~.metrics.Metrics`' exposition."""

from __future__ import annotations

from typing import Any, Protocol

from .metrics import Metrics


class ServerState(Protocol):
    """What :func:`exposition` reads of a server (a ``ScoringApp`` has it)."""

    admission: Any
    batcher: Any
    scorer: Any
    metrics: Metrics
    timed_out: int
    cut: int
    refused_at_stop: int

    def ready(self) -> bool: ...


def exposition(app: ServerState) -> str:
    """The Prometheus text of ``app``'s state: refusals by reason, the queue, the budget and
    the clients holding it, the cache, the encoder's rate, readiness."""
    a, b, s = app.admission, app.batcher, app.scorer
    failures = {
        "budget": max(a.refused - a.over_share, 0),
        "client_share": a.over_share,
        "too_slow": b.refused,
        "timed_out": app.timed_out,
        "dropped": b.skipped,
        "cancelled": b.cancelled,
        "stopping": app.refused_at_stop,
        "cut": app.cut,
    }
    share = max(a.held_by.values(), default=0) / a.budget if a.budget else 0.0
    gauges = {
        "queue_size": ("Requests waiting for the worker", b.queued),
        "in_progress": ("Requests being worked on", b.in_progress),
        "queued_tokens": ("Queued tokens held by requests in hand", a.held),
        "queued_tokens_peak": ("Most queued tokens held at once so far", a.peak),
        "queued_tokens_budget": ("The budget of queued tokens (--max-queued-tokens)", a.budget),
        "clients_holding": ("Client addresses holding queued tokens", len(a.held_by)),
        "client_share_max": ("The largest part of the budget one client holds", share),
        "cache_bytes": ("Bytes of vectors in the cache", s.pipeline.cache.nbytes),
        "cache_texts": ("Texts whose vectors are cached", len(s.pipeline.cache)),
        "encoder_rate": ("The fastest encoder rate seen, token rows/s", b.rate or 0.0),
        "ready": ("1 when GET /ready answers 200", int(app.ready())),
    }
    counters = {
        "requests_scored": ("Requests scored", b.requests),
        "batches": ("Batches and large requests scored", b.batches),
    }
    return app.metrics.render(gauges, failures, dict(a.held_by), counters)
