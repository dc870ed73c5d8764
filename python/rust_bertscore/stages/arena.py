"""Memory for packed token vectors, reused once nothing refers to it any more.

Each encoding round writes its texts' token vectors into one fresh float32 array (about
:data:`~rust_bertscore.engine.settings.CHUNK_BYTES`). A fresh array of that size costs the
operating system a page fault per 4 KiB page on first write; in a KVM guest that was 0.26 s of a
4 s bf16 pass over 2,700 WMT pairs (docs/performance.md). :class:`Arena` hands out views of a
few kept buffers instead, and reuses a buffer only when its reference count says that no view of
it (nor a view of a view: NumPy points every view at the buffer that owns the memory) is alive.
"""

from __future__ import annotations

import sys
import sysconfig
import threading
from math import prod

import numpy as np

KEEP = 2
"""Buffers an arena keeps between calls: a round's vectors may still be held (the call's memo)
while the next round is encoded."""

KEEP_BYTES = 320 * 1024 * 1024
"""The most bytes an arena keeps: a request past that gets an array of its own, not kept."""

REUSABLE = not sysconfig.get_config_var("Py_GIL_DISABLED")
"""Whether reference counts can say a buffer is free: not on a free-threaded CPython build,
whose counts may be deferred (there every request gets a fresh array)."""


class Arena:
    """Float32 arrays for the encoder's packed outputs, on memory it already touched where it
    can.

    Thread-safe: a buffer is taken and its view made under one lock, so two threads never get
    the same free buffer.

    Examples
    --------
    >>> from rust_bertscore.stages.arena import Arena
    >>> arena = Arena()
    >>> a = arena.take((3, 4))
    >>> a.shape, a.dtype.name
    ((3, 4), 'float32')
    >>> b = arena.take((2, 4))  # ``a`` is alive: another buffer
    >>> np.shares_memory(a, b)
    False
    >>> del a
    >>> c = arena.take((2, 2))  # ``a``'s buffer is free again
    >>> arena.kept
    2
    """

    def __init__(self, keep: int = KEEP, keep_bytes: int = KEEP_BYTES) -> None:
        self.keep = keep
        self.keep_bytes = keep_bytes
        self._buffers: list[np.ndarray] = []
        self._lock = threading.Lock()

    @property
    def kept(self) -> int:
        """How many buffers are kept now."""
        return len(self._buffers)

    def _free(self, i: int) -> bool:
        # Free: referred to by the list and by getrefcount's own argument, nothing else.
        return REUSABLE and sys.getrefcount(self._buffers[i]) == 2

    def take(self, shape: tuple[int, ...]) -> np.ndarray:
        """An uninitialised C-contiguous float32 array of ``shape``: a view of a kept buffer
        that nothing refers to, else of a new one (kept while room is left)."""
        n = prod(shape)
        with self._lock:
            fitting = [i for i in range(len(self._buffers)) if self._buffers[i].size >= n]
            free = [i for i in fitting if self._free(i)]
            if free:
                best = min(free, key=lambda i: self._buffers[i].size)
                return self._buffers[best][:n].reshape(shape)
            buffer = np.empty(n, dtype=np.float32)
            if REUSABLE and n and self._make_room(4 * n):
                self._buffers.append(buffer)
            return buffer[:n].reshape(shape)

    def _make_room(self, nbytes: int) -> bool:
        """Drop free buffers, smallest first, until one of ``nbytes`` more fits within
        :attr:`keep` buffers and :attr:`keep_bytes`; whether it does."""
        if nbytes > self.keep_bytes:
            return False
        held = sum(4 * b.size for b in self._buffers)
        count = len(self._buffers)
        drop = set()
        for i in sorted(range(count), key=lambda i: self._buffers[i].size):
            if held + nbytes <= self.keep_bytes and count < self.keep:
                break
            if self._free(i):
                drop.add(i)
                held -= 4 * self._buffers[i].size
                count -= 1
        if drop:
            self._buffers = [b for i, b in enumerate(self._buffers) if i not in drop]
        return held + nbytes <= self.keep_bytes and count < self.keep
