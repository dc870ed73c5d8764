"""What ``GET /metrics`` says, in Prometheus's text format (version 0.0.4): the pressure an
operator watches, named as text-embeddings-inference names its ``te_*`` set.

- counters: requests answered by status (``bertscore_requests_total``), refused or dropped by
  reason (``bertscore_request_failures_total``), requests and batches scored;
- gauges: the queue (waiting, in progress), the queued-token budget and how much of it is
  held, the clients holding a share (the largest few by address, and the largest share), the
  cache, the encoder's measured rate;
- histograms: the seconds of each stage of a ``POST /score`` (``read``: the body arriving,
  ``parse``: parsing and counting rows, ``queue``: waiting for the worker, ``score``: the
  worker's work, ``request``: all of it).

Kept with a lock: the event loop and the worker thread both record.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Mapping

PREFIX = "bertscore_"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
"""Upper bounds (seconds) of the duration histograms' buckets, ``+Inf`` added."""
STAGES = ("read", "parse", "queue", "score", "request")
TOP_CLIENTS = 8
"""Client addresses listed by name in ``bertscore_client_queued_tokens`` (the largest
holders; the label set stays bounded however many clients come)."""


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value != value:
        return "NaN"
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


class Histogram:
    """Cumulative buckets of :data:`BUCKETS`, with their sum and count."""

    def __init__(self) -> None:
        self.counts = [0] * (len(BUCKETS) + 1)
        self.sum = 0.0

    def observe(self, seconds: float) -> None:
        at = next((i for i, bound in enumerate(BUCKETS) if seconds <= bound), len(BUCKETS))
        self.counts[at] += 1
        self.sum += seconds

    def lines(self, name: str, labels: str) -> Iterable[str]:
        total = 0
        for bound, count in zip((*BUCKETS, math.inf), self.counts, strict=True):
            total += count
            yield f'{name}_bucket{{{labels},le="{_number(bound)}"}} {total}'
        yield f"{name}_sum{{{labels}}} {_number(self.sum)}"
        yield f"{name}_count{{{labels}}} {total}"


class Metrics:
    """Counters and histograms recorded as requests go by; :meth:`render` adds the gauges.

    Examples
    --------
    >>> m = Metrics()
    >>> m.answered(200)
    >>> m.observe("parse", 0.003)
    >>> text = m.render({"queue_size": ("Requests waiting", 0)}, {}, {})
    >>> print(text.splitlines()[2])
    bertscore_requests_total{status="200"} 1
    >>> 'bertscore_request_duration_seconds_bucket{stage="parse",le="0.005"} 1' in text
    True
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.statuses: dict[int, int] = {}
        self.durations = {stage: Histogram() for stage in STAGES}

    def answered(self, status: int) -> None:
        """A ``POST /score`` answered with ``status``."""
        with self._lock:
            self.statuses[status] = self.statuses.get(status, 0) + 1

    def observe(self, stage: str, seconds: float) -> None:
        """``seconds`` spent in ``stage`` (one of :data:`STAGES`) by one request."""
        with self._lock:
            self.durations[stage].observe(max(seconds, 0.0))

    def render(
        self,
        gauges: Mapping[str, tuple[str, float]],
        failures: Mapping[str, int],
        clients: Mapping[str, int],
        counters: Mapping[str, tuple[str, float]] | None = None,
    ) -> str:
        """The exposition: ``gauges`` (name: help, value), ``failures`` (reason: count),
        ``clients`` (address: queued tokens held; the :data:`TOP_CLIENTS` largest are
        listed), ``counters`` (name: help, value), with this object's counts."""
        with self._lock:
            statuses = dict(self.statuses)
            durations = {s: (list(h.counts), h.sum) for s, h in self.durations.items()}
        out = [
            f"# HELP {PREFIX}requests_total POST /score requests answered, by status",
            f"# TYPE {PREFIX}requests_total counter",
        ]
        out += [f'{PREFIX}requests_total{{status="{s}"}} {n}' for s, n in sorted(statuses.items())]
        out += [
            f"# HELP {PREFIX}request_failures_total Requests refused, stopped or dropped, "
            "by reason",
            f"# TYPE {PREFIX}request_failures_total counter",
        ]
        out += [
            f'{PREFIX}request_failures_total{{reason="{_label(r)}"}} {n}'
            for r, n in failures.items()
        ]
        for name, (text, value) in (counters or {}).items():
            out += [f"# HELP {PREFIX}{name}_total {text}", f"# TYPE {PREFIX}{name}_total counter"]
            out.append(f"{PREFIX}{name}_total {_number(value)}")
        for name, (text, value) in gauges.items():
            out += [f"# HELP {PREFIX}{name} {text}", f"# TYPE {PREFIX}{name} gauge"]
            out.append(f"{PREFIX}{name} {_number(value)}")
        top = sorted(clients.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_CLIENTS]
        out += [
            f"# HELP {PREFIX}client_queued_tokens Queued tokens held by a client address (the "
            f"{TOP_CLIENTS} largest holders)",
            f"# TYPE {PREFIX}client_queued_tokens gauge",
        ]
        out += [f'{PREFIX}client_queued_tokens{{client="{_label(c)}"}} {n}' for c, n in top]
        name = f"{PREFIX}request_duration_seconds"
        out += [
            f"# HELP {name} Seconds of each stage of a POST /score request",
            f"# TYPE {name} histogram",
        ]
        for stage, (counts, total) in durations.items():
            histogram = Histogram()
            histogram.counts, histogram.sum = counts, total
            out += histogram.lines(name, f'stage="{stage}"')
        return "\n".join(out) + "\n"
