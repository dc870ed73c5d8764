"""Admission by cost: what the scoring server's queued requests may hold, in all.

Each ``POST /score`` is charged before its body is kept: one token per byte of the body as
the bytes arrive (a declared ``Content-Length`` is not charged), an upper bound of the
request's token rows (every token takes at least one byte of JSON) and of the memory its texts
hold once parsed (raised to that memory when it is more: Python keeps a text with one character
past Latin-1 at 2 or 4 bytes a character). The charge is returned when the request is answered.
A request that does not fit in what is left of the budget is answered 503 at once, with
``Retry-After``, instead of waiting for a timeout while its body fills memory; one larger than
the whole budget gets 413. So the memory that requests hold while queued stays within the
budget, whatever the clients send. No web framework here.
"""

from __future__ import annotations

import ctypes
import ipaddress
import math
from collections import Counter
from pathlib import Path

from ...errors import InputValueError

DEFAULT_SHARE = 8
"""The default budget: this fraction (1 / DEFAULT_SHARE) of the memory available at start."""
DEFAULT_MOST = 256 * 1024 * 1024
"""The default budget at most, in tokens (bytes)."""
DEFAULT_BODIES = 4
"""The default budget at least, in bodies of the largest size accepted."""
DEFAULT_CLIENT_SHARE = 0.5
"""The default ``--max-client-share``: the part of the budget one client address may hold."""


def client_key(host: str | None) -> str:
    """The address a client is counted by: an IPv4 address, or an IPv6 address's /64 (one
    host is given a /64; an IPv4-mapped IPv6 address is its IPv4 address).

    >>> client_key("10.0.0.7"), client_key("2001:db8:1:2:aa::1"), client_key("::ffff:10.0.0.7")
    ('10.0.0.7', '2001:db8:1:2::/64', '10.0.0.7')
    >>> client_key(None), client_key("unix-socket")
    ('unknown', 'unix-socket')
    """
    if host is None:
        return "unknown"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


def available_memory() -> int | None:
    """Bytes of memory available to this process: ``MemAvailable`` of ``/proc/meminfo``,
    lowered to the room left under a cgroup v2 limit; None where neither can be read.

    >>> n = available_memory()
    >>> n is None or n > 0
    True
    """
    avail = None
    try:
        # boundary-exempt: kernel pseudo-file (size 0 to fstat)
        meminfo = Path("/proc/meminfo").read_text()
        for line in meminfo.splitlines():
            if line.startswith("MemAvailable:"):
                avail = int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    try:
        # boundary-exempt: kernel pseudo-files
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        # boundary-exempt: kernel pseudo-files
        used = int(Path("/sys/fs/cgroup/memory.current").read_text())
        if limit != "max":
            room = max(int(limit) - used, 0)
            avail = room if avail is None else min(avail, room)
    except (OSError, ValueError):
        pass
    return avail


def default_queued_tokens(max_body: int, available: int | None = None) -> int:
    """The default ``--max-queued-tokens``: an eighth of the memory available (at most
    :data:`DEFAULT_MOST`), and room for at least :data:`DEFAULT_BODIES` bodies of ``max_body``.

    Examples
    --------
    >>> from rust_bertscore.integrations.server.admission import default_queued_tokens
    >>> default_queued_tokens(8 << 20, available=16 << 30) == 256 << 20
    True
    >>> default_queued_tokens(8 << 20, available=1 << 30) == 128 << 20
    True
    >>> default_queued_tokens(8 << 20, available=64 << 20) == 32 << 20
    True
    """
    if available is None:
        available = available_memory()
    share = DEFAULT_MOST if available is None else available // DEFAULT_SHARE
    return max(min(share, DEFAULT_MOST), DEFAULT_BODIES * max_body)


class Admission:
    """A budget of queued tokens: :meth:`reserve` a request's charge, :meth:`release` it.

    Used from the event loop only (no lock).

    Parameters
    ----------
    budget : int
        Tokens that admitted requests may hold at once.
    client_share : float
        The part of the budget one client address (:func:`client_key`) may hold at once, in
        (0, 1]: one client cannot take the whole budget from the others.

    Examples
    --------
    >>> from rust_bertscore.integrations.server.admission import Admission
    >>> adm = Admission(100)
    >>> adm.reserve(60), adm.reserve(50), adm.held
    (True, False, 60)
    >>> adm.release(60)
    >>> adm.reserve(100), adm.peak
    (True, 100)
    >>> fair = Admission(100, client_share=0.5)
    >>> fair.reserve(40, "10.0.0.1"), fair.reserve(20, "10.0.0.1"), fair.reserve(50, "10.0.0.2")
    (True, False, True)
    >>> fair.over_share
    1
    """

    def __init__(self, budget: int, client_share: float = 1.0) -> None:
        if budget < 1:
            raise InputValueError(f"the queued-token budget must be at least 1, got {budget}")
        if not 0 < client_share <= 1:
            raise InputValueError(f"the client share must be in (0, 1], got {client_share}")
        self.budget = budget
        self.client_share = client_share
        self.client_budget = max(1, int(budget * client_share))
        """Tokens one client address may hold at once."""
        self.held_by: Counter[str] = Counter()
        """Tokens held by each client address now."""
        self.over_share = 0
        """Requests refused (503) because their client held its share (counted here)."""
        self.held = 0
        """Tokens held by admitted requests now."""
        self.peak = 0
        """The most tokens held at once so far."""
        self.refused = 0
        """Requests refused (503) because the budget was spent (counted by the caller)."""

    def reserve(self, tokens: int, client: str | None = None) -> bool:
        """Charge ``tokens`` (to ``client``'s share too, when given) if they fit in what is
        left (True), else nothing (False)."""
        if tokens < 0 or self.held + tokens > self.budget:
            return False
        if client is not None:
            if self.held_by[client] + tokens > self.client_budget:
                self.over_share += 1
                return False
            self.held_by[client] += tokens
        self.held += tokens
        self.peak = max(self.peak, self.held)
        return True

    def share_spent(self, client: str | None, tokens: int) -> bool:
        """Whether ``tokens`` more would take ``client`` past its share (the reason a
        :meth:`reserve` was refused, when the budget itself had room)."""
        return client is not None and self.held_by[client] + tokens > self.client_budget

    def release(self, tokens: int, client: str | None = None) -> None:
        """Give back ``tokens`` charged before (to ``client``, when given)."""
        self.held = max(self.held - tokens, 0)
        if client is not None:
            left = self.held_by[client] - tokens
            if left > 0:
                self.held_by[client] = left
            else:
                del self.held_by[client]

    def retry_after(self, rate: float | None) -> int:
        """Seconds a refused client should wait: the time to work off what is held at
        ``rate`` tokens a second (1 to 60; 1 when the rate is not known)."""
        if not rate:
            return 1
        return int(min(max(math.ceil(self.held / rate), 1), 60))


def trim_heap() -> bool:
    """Hand the C heap's free memory back to the system (glibc's ``malloc_trim``), so that the
    RSS falls once large requests are answered; False where there is no such call.

    >>> isinstance(trim_heap(), bool)
    True
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
        return bool(libc.malloc_trim(0))
    except (OSError, AttributeError):
        return False


def text_bytes(texts: list[str]) -> int:
    """Bytes Python holds for ``texts`` (their characters at 1, 2 or 4 bytes each).

    >>> text_bytes(["abc", "日本"])
    7
    """
    total = 0
    for text in texts:
        width = 1
        if text and not text.isascii():
            top = max(map(ord, text)) if len(text) < 1 << 16 else 0x10FFFF
            width = 1 if top < 256 else 2 if top < 65536 else 4
        total += width * len(text)
    return total
