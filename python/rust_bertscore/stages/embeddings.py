"""Stage 4, embeddings: per-token weights (IDF or uniform), packing of ragged token vectors into
one contiguous array for the kernel, and a bounded cache of texts already encoded.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .. import _core
from ..errors import InputTypeError, InputValueError


@dataclass(frozen=True)
class TokenWeights:
    """Weight of every token id: a lookup table plus the weight of ids past its end.

    Attributes
    ----------
    table : np.ndarray
        float32, ``table[id]`` is the weight of ``id``.
    default : float
        The weight of ids not in ``table``.
    """

    table: np.ndarray
    default: float

    @classmethod
    def uniform(cls, special_ids: Iterable[int], vocab_size: int) -> TokenWeights:
        """Weight 1 for every token, 0 for the special tokens (bert_score with ``idf=False``)."""
        table = np.ones(max(vocab_size, 1), dtype=np.float32)
        for token_id in special_ids:
            if 0 <= token_id < len(table):
                table[token_id] = 0.0
        return cls(table, 1.0)

    @classmethod
    def from_idf(cls, idf: Mapping[int, float], default: float, vocab_size: int) -> TokenWeights:
        """A table from ``{token id: weight}``; ids missing from it weigh ``default``."""
        keys = list(idf.keys())
        for key in keys:
            if isinstance(key, bool) or not isinstance(key, (int, np.integer)):
                raise InputTypeError(
                    f"idf dict keys must be int token ids, got {type(key).__name__} {key!r}"
                )
            if key < 0:
                raise InputValueError(f"idf dict key {key} is not a valid token id (negative)")
        size = max([vocab_size, *(int(k) + 1 for k in keys)]) if keys else max(vocab_size, 1)
        table = np.full(size, default, dtype=np.float32)
        if keys:
            values = np.asarray([float(idf[k]) for k in keys], dtype=np.float64)
            bad = ~np.isfinite(values) | (values < 0)
            if bad.any():
                k = keys[int(np.argmax(bad))]
                raise InputValueError(f"idf dict weight for token id {k} must be finite and >= 0")
            table[np.asarray(keys, dtype=np.int64)] = values.astype(np.float32)
        return cls(table, float(default))

    def weights(self, ids: Sequence[int]) -> np.ndarray:
        """float32 weights of a token-id sequence."""
        arr = np.asarray(ids, dtype=np.int64)
        out = np.full(arr.shape, self.default, dtype=np.float32)
        inside = arr < len(self.table)
        out[inside] = self.table[arr[inside]]
        return out


def idf_from_dict(idf: Mapping[int, float]) -> tuple[dict[int, float], float | None]:
    """Split a user's idf dict into entries and the default of a ``defaultdict``, if any."""
    factory = getattr(idf, "default_factory", None)
    default = float(factory()) if callable(factory) else None
    return dict(idf), default


def unseen_idf(num_docs: int) -> float:
    """bert_score's weight for ids that occur in no reference: ``ln(M + 1)`` (the kernel's
    ``_core.idf_default``)."""
    return _core.idf_default(num_docs)


@dataclass(frozen=True)
class PackedEmbeddings:
    """Texts' token vectors back to back: ``data[offsets[i]:offsets[i+1]]`` is text ``i``."""

    data: np.ndarray
    offsets: np.ndarray
    weights: np.ndarray


def pack(vectors: Sequence[np.ndarray], weights: Sequence[np.ndarray]) -> PackedEmbeddings:
    """Concatenate per-text (tokens x dim) arrays and their weights for the kernel."""
    lengths = np.fromiter((len(v) for v in vectors), dtype=np.int64, count=len(vectors))
    offsets = np.zeros(len(vectors) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    dim = vectors[0].shape[-1] if vectors else 0
    data = np.concatenate(vectors, axis=0) if vectors else np.zeros((0, dim), np.float32)
    w = np.concatenate(weights) if weights else np.zeros(0, np.float32)
    return PackedEmbeddings(
        np.ascontiguousarray(data, dtype=np.float32),
        offsets,
        np.ascontiguousarray(w, dtype=np.float32),
    )


class EmbeddingCache:
    """A thread-safe LRU of encoded texts, bounded in bytes.

    Keys are texts, values their token vectors. Only the arrays' bytes count toward the bound
    (a text's key and bookkeeping are small beside its vectors: 1.5 KB a token at hidden size
    384). A value may be a view of a larger array (the packed array of the round that encoded
    it: no per-text copy): such an array counts once, whole, for as long as any entry views it,
    and is freed with the last one. Views are kept read-only.

    Parameters
    ----------
    max_bytes : int
        Total size of the arrays kept; 0 disables the cache.

    Attributes
    ----------
    hits, misses : int
        Look-ups that found a text, and that did not, since creation or :meth:`clear`.

    Examples
    --------
    >>> import numpy as np
    >>> from rust_bertscore.stages.embeddings import EmbeddingCache
    >>> cache = EmbeddingCache(1000)
    >>> block = np.zeros((10, 4), np.float32)  # 160 bytes: two texts' vectors
    >>> cache.put("a", block[:6])
    >>> cache.put("b", block[6:])
    >>> cache.nbytes, len(cache)  # the block counts once
    (160, 2)
    """

    def __init__(self, max_bytes: int) -> None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, (int, np.integer)):
            raise InputTypeError(f"cache size must be an int number of bytes, got {max_bytes!r}")
        if max_bytes < 0:
            raise InputValueError(f"cache size must be >= 0 bytes, got {max_bytes}")
        self.max_bytes = int(max_bytes)
        self._items: OrderedDict[str, np.ndarray] = OrderedDict()
        self._bases: dict[int, list] = {}  # id(base) -> [base, entries viewing it]
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @property
    def nbytes(self) -> int:
        """Bytes held now (an array that entries view counts once, whole)."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: str) -> np.ndarray | None:
        """The vectors of ``key`` (now the most recently used), or None."""
        with self._lock:
            value = self._items.get(key)
            if value is None:
                self.misses += 1
            else:
                self.hits += 1
                self._items.move_to_end(key)
            return value

    @staticmethod
    def _base(value: np.ndarray) -> np.ndarray:
        base = value
        while isinstance(base.base, np.ndarray):
            base = base.base
        return base

    def _hold(self, value: np.ndarray) -> None:
        base = self._base(value)
        held = self._bases.get(id(base))
        if held is None:
            self._bases[id(base)] = [base, 1]
            self._bytes += base.nbytes
        else:
            held[1] += 1

    def _release(self, value: np.ndarray) -> None:
        base = self._base(value)
        held = self._bases[id(base)]
        held[1] -= 1
        if held[1] == 0:
            del self._bases[id(base)]
            self._bytes -= base.nbytes

    def put(self, key: str, value: np.ndarray) -> None:
        """Keep ``value`` for ``key``, evicting the least recently used entries to stay within
        :attr:`max_bytes`. A view whose array is larger than a quarter of the bound is kept as
        a copy (it would crowd out the rest); a value larger than the whole bound is not kept.
        """
        if value.nbytes > self.max_bytes:
            return
        base = self._base(value)
        if base is not value and base.nbytes > self.max_bytes // 4:
            value = value.copy()
        elif base is not value:
            value = value.view()
            value.flags.writeable = False
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._release(old)
            self._items[key] = value
            self._hold(value)
            while self._bytes > self.max_bytes:
                _, evicted = self._items.popitem(last=False)
                self._release(evicted)

    def clear(self) -> None:
        """Drop every entry and reset the counters."""
        with self._lock:
            self._items.clear()
            self._bases.clear()
            self._bytes = 0
            self.hits = self.misses = 0
