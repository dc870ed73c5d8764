"""Texts longer than the model takes, scored whole: sliding windows and vector stitching.

The rule (``long_texts="window"``; the project's reference data defines it the same way):

* ``M`` = the model's maximum length (BigBird: its full-attention limit), ``W`` = ``M`` minus
  the special tokens of the tokenizer's template = content tokens per window, stride ``S``
  (default ``W // 2``).
* A text's own ids ``c_0 .. c_{n-1}`` (no special tokens, no truncation). If the text fits
  (``n <= W``) nothing changes. Otherwise windows start at ``0, S, 2S, ...`` while
  ``start + W < n``, plus a last window ending at ``n`` (start ``n - W``); each is encoded with
  the tokenizer's own template (``[CLS] c[start:start+W] [SEP]``, T5's ``c </s>``, XLNet's
  ``c <sep> <cls>``, mBART's ``c </s> en_XX``).
* Token ``i`` takes its vector from the window where ``min(i - start, start + W - 1 - i)`` (its
  context on the nearer side) is largest, ties to the earlier window: BERT's "max context" rule
  for document spans. The template's leading special tokens come from the first window, its
  trailing ones from the last.
* The ``n`` + specials vectors are then scored as any text (greedy matching over every token).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InputValueError

if TYPE_CHECKING:  # the encoder (ONNX Runtime) loads only when texts are encoded
    from .batches import PackedStates
    from .encoder import Encoder


@dataclass(frozen=True)
class WindowSpec:
    """How a model's long texts are cut into windows.

    Attributes
    ----------
    length : int
        ``M``: tokens per window, special tokens included.
    n_prefix, n_suffix : int
        Special tokens the template puts before and after a text's own.
    stride : int or None
        Content tokens between window starts; None: half a window (``W // 2``, at least 1).

    Examples
    --------
    BERT's template (``[CLS] X [SEP]``) in windows of 512 tokens:

    >>> from rust_bertscore.stages.windows import WindowSpec
    >>> spec = WindowSpec(length=512, n_prefix=1, n_suffix=1)
    >>> spec.content, spec.step, spec.fits(512), spec.fits(513)
    (510, 255, True, False)
    """

    length: int
    n_prefix: int
    n_suffix: int
    stride: int | None = None

    def __post_init__(self) -> None:
        if self.content < 1:
            raise InputValueError(
                f"a window of {self.length} tokens leaves no room for text beside "
                f"{self.n_prefix + self.n_suffix} special tokens"
            )
        if self.stride is not None and not 1 <= self.stride <= self.content:
            raise InputValueError(
                f"window_stride must be between 1 and {self.content} (the content tokens of a "
                f"window of {self.length}), got {self.stride}: a larger stride would skip tokens"
            )

    @property
    def content(self) -> int:
        """``W``: a window's content tokens."""
        return self.length - self.n_prefix - self.n_suffix

    @property
    def step(self) -> int:
        """``S``: the stride in use."""
        return self.stride if self.stride is not None else max(1, self.content // 2)

    def fits(self, n_tokens: int) -> bool:
        """Whether a text of ``n_tokens`` (special tokens included) needs no windows."""
        return n_tokens <= self.length


def window_starts(n: int, width: int, stride: int) -> np.ndarray:
    """Start of every window over ``n`` content tokens (``n > width``): ``0, S, 2S, ...`` while
    ``start + width < n``, then ``n - width``."""
    starts = list(range(0, max(n - width, 0), stride))
    starts.append(n - width)
    return np.asarray(starts, dtype=np.int64)


def token_sources(n: int, width: int, stride: int) -> tuple[np.ndarray, np.ndarray]:
    """For each content token, the window it takes its vector from and its position in it.

    Returns
    -------
    (window, position) : (np.ndarray, np.ndarray)
        int64 arrays of length ``n``: the max-context window of token ``i`` (ties: the earlier)
        and ``i - starts[window]``.
    """
    starts = window_starts(n, width, stride)
    best = np.full(n, -1, dtype=np.int64)
    window = np.zeros(n, dtype=np.int64)
    for k, start in enumerate(starts.tolist()):
        pos = np.arange(width, dtype=np.int64)
        context = np.minimum(pos, width - 1 - pos)
        span = slice(start, start + width)
        better = context > best[span]  # strictly: a tie keeps the earlier window
        best[span] = np.where(better, context, best[span])
        window[span] = np.where(better, k, window[span])
    return window, np.arange(n, dtype=np.int64) - starts[window]


@dataclass(frozen=True)
class WindowPlan:
    """One long text's windows and where each of its token vectors comes from.

    Attributes
    ----------
    windows : list of list of int
        Each window's ids (``spec.length`` each), template included.
    rows : np.ndarray
        int64, one per token of the text (special tokens included): the row of the windows'
        outputs laid end to end (window ``k`` is rows ``k * length .. (k + 1) * length``).
    """

    windows: list[list[int]]
    rows: np.ndarray


def plan_windows(ids: Sequence[int], spec: WindowSpec) -> WindowPlan:
    """The :class:`WindowPlan` of a text whose ids (template included) do not fit.

    Examples
    --------
    Ten content ids between ``[CLS]`` (101) and ``[SEP]`` (102), windows of 6 tokens (4 of
    content, stride 2):

    >>> from rust_bertscore.stages.windows import WindowSpec, plan_windows
    >>> plan = plan_windows([101, *range(10), 102], WindowSpec(6, 1, 1))
    >>> plan.windows
    [[101, 0, 1, 2, 3, 102], [101, 2, 3, 4, 5, 102], [101, 4, 5, 6, 7, 102], [101, 6, 7, 8, 9, 102]]
    >>> plan.rows.tolist()  # token i's row in the windows laid end to end
    [0, 1, 2, 3, 8, 9, 14, 15, 20, 21, 22, 23]
    """
    p, s, width, m = spec.n_prefix, spec.n_suffix, spec.content, spec.length
    total = len(ids)
    prefix, content, suffix = list(ids[:p]), list(ids[p : total - s]), list(ids[total - s :])
    n = len(content)
    starts = window_starts(n, width, spec.step)
    windows = [prefix + content[a : a + width] + suffix for a in starts.tolist()]
    window, position = token_sources(n, width, spec.step)
    last = len(windows) - 1
    rows = np.concatenate(
        [
            np.arange(p, dtype=np.int64),  # leading specials: the first window's
            window * m + p + position,
            last * m + p + width + np.arange(s, dtype=np.int64),  # trailing: the last window's
        ]
    )
    return WindowPlan(windows, rows)


def embed_windowed(
    encoder: Encoder,
    id_lists: Sequence[Sequence[int]],
    spec: WindowSpec | None,
    batch_size: int,
    *,
    extra_rows: int = 0,
) -> PackedStates:
    """:meth:`Encoder.embed_packed` for texts of any length: texts that fit are encoded as
    they are; each longer one window by window (one text at a time, so memory holds one long
    text's windows at most), its vectors stitched by :func:`plan_windows`' rule into its rows.

    Returns the same layout as :meth:`Encoder.embed_packed`: the texts that fit first (longest
    first), then the long ones in input order, ``extra_rows`` free rows at the end.
    """
    if spec is None or all(spec.fits(len(ids)) for ids in id_lists):
        return encoder.embed_packed(id_lists, batch_size, extra_rows=extra_rows)
    from .batches import PackedStates

    short = [i for i, ids in enumerate(id_lists) if spec.fits(len(ids))]
    long = [i for i, ids in enumerate(id_lists) if not spec.fits(len(ids))]
    long_lengths = np.fromiter((len(id_lists[i]) for i in long), np.int64, len(long))
    packed = encoder.embed_packed(
        [id_lists[i] for i in short], batch_size, extra_rows=int(long_lengths.sum()) + extra_rows
    )
    data = packed.data
    offsets = np.concatenate([packed.offsets, packed.offsets[-1] + np.cumsum(long_lengths)])
    order = np.concatenate(
        [np.asarray(short, dtype=np.int64)[packed.order], np.asarray(long, dtype=np.int64)]
    )
    for k, i in enumerate(long):
        plan = plan_windows(id_lists[i], spec)
        states = encoder.embed_packed(plan.windows, batch_size)
        # Windows all have spec.length tokens: put them back in window order.
        where = np.empty(len(plan.windows), dtype=np.int64)
        where[states.order] = np.arange(len(plan.windows))
        rows = where[plan.rows // spec.length] * spec.length + plan.rows % spec.length
        lo, hi = offsets[len(short) + k], offsets[len(short) + k + 1]
        if data.ndim == 3:
            data[:, lo:hi] = states.data[:, rows]
        else:
            data[lo:hi] = states.data[rows]
    return PackedStates(data, offsets, order)
