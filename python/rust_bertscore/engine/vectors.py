"""Where a scorer's token vectors come from: the call's memo, the in-memory cache, the
persistent store, else the encoder. Every distinct text of a call is encoded at most once.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..stages.embeddings import EmbeddingCache
from ..stages.windows import WindowSpec, embed_windowed
from ..store import EmbeddingStore, graph_fingerprint, key_space, text_keys

if TYPE_CHECKING:
    from ..models.runtime import ModelRuntime


def runtime_key_space(runtime: ModelRuntime, extra: str = "") -> bytes:
    """The store's key space of a loaded model (see ``store.keys.key_space``): the runtime
    (ONNX Runtime's provider and version, or OpenVINO's) is part of it."""
    from ..models.graph_cache import cache_root

    encoder = runtime.encoder
    if encoder.graph is not None:
        fingerprint = graph_fingerprint(encoder.graph, cache_root() / "fingerprints")
    else:  # a graph handed over as bytes
        fingerprint = encoder.graph_digest or "?"
    layers = "all" if runtime.all_layers else str(runtime.num_layers)
    provider = encoder.providers[0] if encoder.providers else "?"
    return key_space(
        fingerprint, runtime.precision, layers, provider, encoder.runtime_version, extra
    )


def _rows(data: np.ndarray, lo: int, hi: int, all_layers: bool) -> np.ndarray:
    return data[:, lo:hi] if all_layers else data[lo:hi]


def usable(value: np.ndarray, shape: tuple[int, ...]) -> bool:
    """Whether vectors read from the store can stand for a text's: exactly ``shape`` (rank,
    layers, the text's token rows, the encoder's hidden size), float32 and all finite.

    Examples
    --------
    >>> import numpy as np
    >>> from rust_bertscore.engine.vectors import usable
    >>> usable(np.zeros((3, 4), np.float32), (3, 4)), usable(np.zeros((1, 4), np.float32), (3, 4))
    (True, False)
    >>> usable(np.full((3, 4), np.nan, np.float32), (3, 4))
    False
    """
    return (
        isinstance(value, np.ndarray)
        and value.shape == shape
        and value.dtype.kind == "f"
        and value.dtype.itemsize == 4
        and bool(np.isfinite(value).all())
    )


class CallMemo:
    """The vectors of texts that come again later in one call, kept until their last use.

    Built from every text of the call with its number of uses; after each round the scorer
    calls :meth:`after_round`, which keeps (a copy of) the vectors of texts still to come and
    drops those used up. At most ``max_bytes`` are kept (the scorer passes its
    ``round_bytes``); past that the least recently used are dropped, and such a text is
    encoded again (or read from the store) where it comes back.
    """

    def __init__(self, texts: Iterable[str], max_bytes: int) -> None:
        self.remaining: Counter[str] = Counter(texts)
        self.max_bytes = max_bytes
        self.items: OrderedDict[str, np.ndarray] = OrderedDict()
        self.nbytes = 0

    def get(self, text: str) -> np.ndarray | None:
        value = self.items.get(text)
        if value is not None:
            self.items.move_to_end(text)
        return value

    def after_round(
        self,
        texts: Sequence[str],
        uses: np.ndarray,
        data: np.ndarray,
        offsets: np.ndarray,
        slot: np.ndarray,
        all_layers: bool,
    ) -> None:
        """``texts[i]`` was used ``uses[i]`` times in the round just scored; its vectors are
        rows ``offsets[slot[i]]:offsets[slot[i] + 1]`` of ``data``."""
        for i, text in enumerate(texts):
            left = self.remaining[text] - int(uses[i])
            if left > 0:
                self.remaining[text] = left
                if text not in self.items:
                    lo, hi = offsets[slot[i]], offsets[slot[i] + 1]
                    value = _rows(data, lo, hi, all_layers).copy()
                    self.items[text] = value
                    self.nbytes += value.nbytes
            else:
                del self.remaining[text]
                old = self.items.pop(text, None)
                if old is not None:
                    self.nbytes -= old.nbytes
        while self.nbytes > self.max_bytes and self.items:
            _, old = self.items.popitem(last=False)
            self.nbytes -= old.nbytes


class VectorSource:
    """Token vectors of texts, packed for the kernel, from the cheapest place that has them.

    Parameters
    ----------
    runtime : ModelRuntime
        The model (its encoder encodes what no other place has).
    cache : EmbeddingCache
        The scorer's in-memory cache, keyed by text (``max_bytes`` 0: off).
    store : EmbeddingStore, optional
        The persistent store, keyed by token ids in :func:`runtime_key_space` (a text longer
        than one window: in a key space that also names the window size and stride).
    window : WindowSpec, optional
        ``long_texts="window"``: texts longer than the model takes are encoded in these
        sliding windows (:func:`rust_bertscore.stages.windows.embed_windowed`).

    A text found in the memo, cache or store with another number of token rows than its ids
    (cut there, whole here, or the other way) is encoded again. What the store gives is
    hostile input (anyone who can write in its directory may write any record, with valid
    CRCs, for a real key): the store is asked for each text's exact shape (:meth:`shape`) and
    reads no copy of another, and each value it returns is checked again (:func:`usable`); a
    record that fails is a miss: the text is encoded and its vectors written back.
    """

    def __init__(
        self,
        runtime: ModelRuntime,
        cache: EmbeddingCache,
        store: EmbeddingStore | None,
        window: WindowSpec | None = None,
    ) -> None:
        self.runtime = runtime
        self.cache = cache
        self.store = store
        self.window = window
        self._space: bytes | None = None
        self._window_space: bytes | None = None
        self._layout: tuple[int, ...] | None = None
        self.encoded = 0
        """Texts encoded so far (not found in the memo, cache or store)."""

    @property
    def space(self) -> bytes:
        """The store's key space for this model (computed on first use)."""
        if self._space is None:
            self._space = runtime_key_space(self.runtime)
        return self._space

    def store_keys(self, ids: Sequence[list[int]]) -> list[bytes]:
        """The store keys of texts with token ids ``ids``: in :attr:`space`, or for a text
        scored in windows in a space naming the window (its vectors depend on the stride)."""
        spec = self.window
        if spec is None or all(spec.fits(len(t)) for t in ids):
            return text_keys(self.space, ids)
        if self._window_space is None:
            extra = f"window={spec.length},{spec.n_prefix},{spec.n_suffix},{spec.step}"
            self._window_space = runtime_key_space(self.runtime, extra)
        fit = [spec.fits(len(t)) for t in ids]
        plain = iter(text_keys(self.space, [t for t, f in zip(ids, fit) if f]))
        windowed = iter(text_keys(self._window_space, [t for t, f in zip(ids, fit) if not f]))
        return [next(plain) if f else next(windowed) for f in fit]

    def layout(self, probe: Sequence[int]) -> tuple[int, ...]:
        """A text's vectors' shape without its token rows: ``(hidden,)``, or with all layers
        ``(depth + 1, hidden)``. The hidden size is the encoder's when its graph declares it,
        else that of the first array encoded: when none was encoded yet, the text ``probe``
        (token ids) is encoded to learn it."""
        if self._layout is None:
            encoder = self.runtime.encoder
            hidden = getattr(encoder, "hidden_size", None)
            if isinstance(hidden, int) and hidden > 0:
                states = (self.runtime.depth + 1,) if self.runtime.all_layers else ()
                self._layout = (*states, hidden)
            else:
                data = embed_windowed(encoder, [probe], self.window, 1).data
                self._layout = (*data.shape[:-2], int(data.shape[-1]))
        return self._layout

    def shape(self, rows: int, layout: tuple[int, ...]) -> tuple[int, ...]:
        """The shape of the vectors of a text of ``rows`` tokens (``layout``: :meth:`layout`)."""
        return (*layout[:-1], rows, layout[-1])

    def packed(
        self,
        texts: Sequence[str],
        ids: Sequence[list[int]],
        batch_size: int,
        memo: CallMemo | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Token vectors of ``texts`` (distinct) packed for the kernel.

        Returns ``(data, offsets, slot)``: text ``i`` is rows ``offsets[slot[i]]:offsets[slot[i]
        + 1]`` of ``data`` (of its last two axes, for all layers).
        """
        n = len(texts)
        all_layers = self.runtime.all_layers
        found: list[np.ndarray | None] = [None] * n
        if memo is not None:
            found = [memo.get(t) for t in texts]
        if self.cache.max_bytes:
            found = [self.cache.get(texts[i]) if v is None else v for i, v in enumerate(found)]
        found = [
            v if v is None or v.shape[-2] == len(ids[i]) else None for i, v in enumerate(found)
        ]
        store_keys: dict[int, bytes] = {}
        if self.store is not None:
            wanted = [i for i, v in enumerate(found) if v is None]
            if wanted:
                keys = self.store_keys([ids[i] for i in wanted])
                store_keys = dict(zip(wanted, keys))
                layout = self.layout(min((ids[i] for i in wanted), key=len))
                shapes = [self.shape(len(ids[i]), layout) for i in wanted]
                for i, shape, value in zip(wanted, shapes, self.store.get_many(keys, shapes)):
                    if value is not None and usable(value, shape):
                        found[i] = value
                        if self.cache.max_bytes:
                            self.cache.put(texts[i], value)
        missing = [i for i, v in enumerate(found) if v is None]
        hits = [i for i, v in enumerate(found) if v is not None]
        hit_lengths = np.fromiter((len(ids[i]) for i in hits), np.int64, len(hits))
        if missing or not hits:
            packed = embed_windowed(
                self.runtime.encoder,
                [ids[i] for i in missing],
                self.window,
                batch_size,
                extra_rows=int(hit_lengths.sum()),
            )
            data, encoded_offsets, encoded_order = packed.data, packed.offsets, packed.order
            if self._layout is None and missing:
                self._layout = (*data.shape[:-2], int(data.shape[-1]))
        else:  # every text found: no encoder call (not even one to learn the output's shape)
            first = found[hits[0]]
            assert first is not None
            data = np.empty(
                (*first.shape[:-2], int(hit_lengths.sum()), first.shape[-1]), np.float32
            )
            encoded_offsets, encoded_order = np.zeros(1, np.int64), np.zeros(0, np.int64)
        self.encoded += len(missing)
        fresh = len(missing)
        offsets = np.concatenate([encoded_offsets, encoded_offsets[-1] + np.cumsum(hit_lengths)])
        slot = np.empty(n, dtype=np.int64)
        order = np.asarray(missing, dtype=np.int64)[encoded_order]
        slot[order] = np.arange(fresh)
        for k, i in enumerate(hits):
            slot[i] = fresh + k
            lo, hi = offsets[fresh + k], offsets[fresh + k + 1]
            if all_layers:
                data[:, lo:hi] = found[i]
            else:
                data[lo:hi] = found[i]
        if self.cache.max_bytes and fresh:
            # Views, not one copy per text: of the round's array itself when it holds only the
            # texts just encoded, else of one copy of their rows (the hits' rows are in the
            # cache already). The cache counts that array once, whole, while any entry views it.
            block = data
            if hits:
                rows = int(offsets[fresh])
                block = (data[:, :rows] if all_layers else data[:rows]).copy()
            for j, i in enumerate(order):
                self.cache.put(texts[i], _rows(block, offsets[j], offsets[j + 1], all_layers))
        if self.store is not None and fresh:
            self.store.put_many(
                [store_keys[int(i)] for i in order],
                [_rows(data, offsets[j], offsets[j + 1], all_layers) for j in range(fresh)],
            )
        return data, offsets, slot
