"""Tokens left out of matching: punctuation and special tokens (``exclude_punctuation``,
``exclude_special_tokens``).

An excluded token is neither matched nor averaged, on either side of a pair: its row is dropped
from the vectors the kernel scores (a weight of 0 would not do: a zero-weight token still takes
part in the other side's maxima). With IDF the remaining weights renormalise, since the kernel
divides by their sum.

* Punctuation: the token's text, with the tokenisers' word markers stripped (WordPiece's ``##``,
  byte-level BPE's ``Ġ``, SentencePiece's ``▁``, word BPE's ``</w>``), is not empty and made
  only of Unicode punctuation (categories ``P*``).
* Special tokens: the ones the text is encoded with, i.e. the tokenizer template's positions
  (``[CLS]``/``[SEP]``, T5's ``</s>``, mBART's ``</s>`` and language code, ...).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import Protocol

import numpy as np

WORD_MARKERS_BEFORE = ("##", "Ġ", "▁")
"""Markers a token's text may start with (continuation or word start)."""

WORD_MARKERS_AFTER = ("</w>",)
"""Markers a token's text may end with (word end)."""


class _TokenTexts(Protocol):
    def token_text(self, token_id: int) -> str: ...


def strip_word_markers(text: str) -> str:
    """``text`` without the tokenisers' word markers at its start and end."""
    changed = True
    while changed:
        changed = False
        for marker in WORD_MARKERS_BEFORE:
            if text.startswith(marker):
                text, changed = text[len(marker) :], True
        for marker in WORD_MARKERS_AFTER:
            if text.endswith(marker):
                text, changed = text[: -len(marker)], True
    return text


def is_punctuation(text: str) -> bool:
    """Whether ``text``, word markers stripped, is non-empty and all Unicode punctuation (P*).

    Examples
    --------
    >>> from rust_bertscore.stages.token_filter import is_punctuation
    >>> [is_punctuation(t) for t in (".", "Ġ,", "▁«", "##...", "$", "a.", "##")]
    [True, True, True, True, False, False, False]
    """
    core = strip_word_markers(text)
    return bool(core) and all(unicodedata.category(ch).startswith("P") for ch in core)


def special_mask(n_tokens: int, n_prefix: int, n_suffix: int) -> np.ndarray:
    """The template's positions among a text's ``n_tokens``: the first ``n_prefix`` and the
    last ``n_suffix`` (all of them for a text shorter than the template)."""
    mask = np.zeros(n_tokens, dtype=bool)
    mask[: min(n_prefix, n_tokens)] = True
    if n_suffix:
        mask[max(n_tokens - n_suffix, 0) :] = True
    return mask


class TokenFilter:
    """Which tokens of encoded texts are scored.

    Parameters
    ----------
    tokenizer
        Has ``token_text(id)``: the readable text of a token (``TextTokenizer.token_text``).
    n_prefix, n_suffix : int
        Special tokens of the tokenizer's template before and after a text's own.
    punctuation, special_tokens : bool
        Exclude punctuation tokens; exclude the special tokens.
    """

    def __init__(
        self,
        tokenizer: _TokenTexts,
        n_prefix: int,
        n_suffix: int,
        *,
        punctuation: bool,
        special_tokens: bool,
    ) -> None:
        self.tokenizer = tokenizer
        self.n_prefix = n_prefix
        self.n_suffix = n_suffix
        self.punctuation = punctuation
        self.special_tokens = special_tokens
        self._punct: dict[int, bool] = {}

    def is_punctuation_id(self, token_id: int) -> bool:
        """Whether the token ``token_id`` is punctuation (cached per id)."""
        found = self._punct.get(token_id)
        if found is None:
            found = is_punctuation(self.tokenizer.token_text(token_id))
            self._punct[token_id] = found
        return found

    def special(self, ids: Sequence[int]) -> np.ndarray:
        """The special-token mask of one encoded text."""
        return special_mask(len(ids), self.n_prefix, self.n_suffix)

    def excluded(self, ids: Sequence[int]) -> np.ndarray:
        """bool per token: True where the token is left out of matching."""
        special = self.special(ids)
        out = special.copy() if self.special_tokens else np.zeros(len(ids), dtype=bool)
        if self.punctuation:
            punct = np.fromiter((self.is_punctuation_id(int(t)) for t in ids), bool, len(ids))
            out |= punct & ~special
        return out

    def keep(self, ids: Sequence[int]) -> np.ndarray:
        """bool per token: True where the token is scored."""
        return ~self.excluded(ids)

    def emptied(self, ids: Sequence[int], keep: np.ndarray) -> bool:
        """Whether nothing but special tokens is left of a text: bert_score's empty text."""
        return not bool((keep & ~self.special(ids)).any())


def drop_rows(
    data: np.ndarray, offsets: np.ndarray, keep: Sequence[np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """Packed token vectors without the rows ``keep`` leaves out.

    Parameters
    ----------
    data : np.ndarray
        ``(rows, dim)`` or ``(layers, rows, dim)``; text ``j`` is rows
        ``offsets[j]:offsets[j + 1]``.
    offsets : np.ndarray
        int64 ``(n + 1,)``.
    keep : list of np.ndarray
        Text ``j``'s bool mask, one entry per row of it.

    Returns
    -------
    (data, offsets)
        A new packed array of the kept rows and its offsets.
    """
    rows = np.zeros(data.shape[-2], dtype=bool)
    for j, mask in enumerate(keep):
        lo, hi = int(offsets[j]), int(offsets[j + 1])
        if hi - lo != len(mask):
            raise ValueError(f"text {j} has {hi - lo} token rows but a mask of {len(mask)}")
        rows[lo:hi] = mask
    counts = np.fromiter((int(m.sum()) for m in keep), np.int64, len(keep))
    new_offsets = np.zeros(len(keep) + 1, dtype=np.int64)
    np.cumsum(counts, out=new_offsets[1:])
    kept = data[:, rows] if data.ndim == 3 else data[rows]
    return np.ascontiguousarray(kept, dtype=np.float32), new_offsets
