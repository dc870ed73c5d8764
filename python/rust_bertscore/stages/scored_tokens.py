"""The tokens a scorer scores: ids as encoded (cut, or whole for windows), which of them take
part in matching, and the truncation warning.

:class:`ScoredTokens` puts :class:`~rust_bertscore.stages.options.ScoringOptions` to work on a
tokenizer. It needs no encoder, so the engines' first pass (IDF, padding floors) and the
scorer count the same tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import warn_user
from .options import ScoringOptions
from .token_filter import TokenFilter, special_mask
from .tokenization.tokenizer import TextTokenizer
from .windows import WindowSpec


@dataclass(frozen=True)
class TokenizedTexts:
    """Texts tokenised for scoring.

    Attributes
    ----------
    ids : list of list of int
        Each text's ids as the encoder gets them (special tokens included): cut at the model's
        maximum length, or whole with ``long_texts="window"``.
    cut : list of int
        Indices of the texts that were cut (``long_texts="truncate"`` only).
    keep : list of np.ndarray or None
        With exclusions, per text, True for the tokens scored; None: every token.
    empty : np.ndarray
        bool per text: bert_score's empty text (2 tokens; with exclusions: nothing but special
        tokens left), whose pairs score P = R = 0.
    """

    ids: list[list[int]]
    cut: list[int]
    keep: list[np.ndarray] | None
    empty: np.ndarray

    def lengths(self) -> np.ndarray:
        """Tokens scored per text (after exclusions)."""
        if self.keep is None:
            return np.fromiter((len(t) for t in self.ids), np.int64, len(self.ids))
        return np.fromiter((int(k.sum()) for k in self.keep), np.int64, len(self.keep))


class ScoredTokens:
    """A tokenizer with a scorer's options: what every text is scored with.

    Parameters
    ----------
    tokenizer : TextTokenizer
    options : ScoringOptions
    """

    def __init__(self, tokenizer: TextTokenizer, options: ScoringOptions) -> None:
        self.tokenizer = tokenizer
        self.options = options
        n_prefix, n_suffix = len(tokenizer.prefix_ids), len(tokenizer.suffix_ids)
        self.window: WindowSpec | None = None
        if options.windows and self.window_length is not None:
            self.window = WindowSpec(self.window_length, n_prefix, n_suffix, options.window_stride)
        self.filter: TokenFilter | None = None
        if options.excludes:
            self.filter = TokenFilter(
                tokenizer,
                n_prefix,
                n_suffix,
                punctuation=options.exclude_punctuation,
                special_tokens=options.exclude_special_tokens,
            )
        self.memo: dict[str, tuple[list[int], bool, np.ndarray | None, bool]] | None = None
        """Set to a dict to keep each text's tokens (ids, cut, kept tokens, empty) and reuse
        them in later :meth:`tokenize` calls (the scoring server's batches); None: no memo."""

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.vocab_size

    @property
    def window_length(self) -> int | None:
        """The most tokens the model takes at once: the tokenizer's maximum length, or a
        BigBird's full-attention limit when lower; None: no limit."""
        limits = [
            x
            for x in (self.tokenizer.max_length, self.tokenizer.full_attention_limit)
            if x is not None
        ]
        return min(limits) if limits else None

    def tokenize(self, texts: Sequence[str]) -> TokenizedTexts:
        """Ids, exclusions and empty flags of ``texts`` (see :class:`TokenizedTexts`); texts
        in :attr:`memo` are not tokenised again."""
        memo = self.memo
        if memo is None:
            return self._tokenize(texts)
        missing = [t for t in dict.fromkeys(texts) if t not in memo]
        if missing:
            fresh = self._tokenize(missing)
            cut = set(fresh.cut)
            for i, text in enumerate(missing):
                keep = None if fresh.keep is None else fresh.keep[i]
                memo[text] = (fresh.ids[i], i in cut, keep, bool(fresh.empty[i]))
        rows = [memo[t] for t in texts]
        return TokenizedTexts(
            [r[0] for r in rows],
            [i for i, r in enumerate(rows) if r[1]],
            None if self.filter is None else [r[2] for r in rows],  # type: ignore[misc]
            np.fromiter((r[3] for r in rows), bool, len(rows)),
        )

    def _tokenize(self, texts: Sequence[str]) -> TokenizedTexts:
        tok = self.tokenizer
        content = tok.encode_content(texts)
        cut: list[int] = []
        if self.window is not None:
            spec = self.window
            ids = []
            for c in content:
                whole = tok.build(c, truncate=False)
                if c is not None and not spec.fits(len(whole)):
                    whole = tok.prefix_ids + c + tok.suffix_ids  # T5's eos always, for windows
                ids.append(whole)
        else:
            ids = [tok.build(c) for c in content]
            limit = tok.max_length
            if limit is not None:
                n_special = len(tok.prefix_ids) + len(tok.suffix_ids)
                cut = [i for i, c in enumerate(content) if c and len(c) + n_special > limit]
            if tok.full_attention_limit is not None:
                tok.check_full_attention(texts, ids)
        keep = None
        if self.filter is None:
            empty = np.fromiter((len(t) == 2 for t in ids), bool, len(ids))
        else:
            keep = [self.filter.keep(t) for t in ids]
            empty = np.fromiter(
                (self.filter.emptied(t, k) for t, k in zip(ids, keep)), bool, len(ids)
            )
        return TokenizedTexts(ids, cut, keep, empty)

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's ids as encoded (special and excluded tokens included): what IDF counts."""
        return self.tokenize(texts).ids

    def lengths(self, texts: Sequence[str]) -> np.ndarray:
        """Tokens scored per text (after exclusions): what the padding floor compares."""
        return self.tokenize(texts).lengths()

    def special(self, ids: Sequence[int]) -> np.ndarray:
        """The special-token mask of one encoded text (the template's positions)."""
        return special_mask(
            len(ids), len(self.tokenizer.prefix_ids), len(self.tokenizer.suffix_ids)
        )


def warn_truncated(count: int, length: int | None) -> None:
    """The one warning of a call whose texts were cut (nothing when ``count`` is 0), at the
    user's line (:func:`~rust_bertscore.errors.warn_user`)."""
    if not count or length is None:
        return
    texts = "1 text was" if count == 1 else f"{count} texts were"
    warn_user(
        f"{texts} longer than the model's maximum of {length} tokens and cut to {length} "
        "tokens, as bert_score does: the rest of such a text is not scored. Pass "
        "long_texts='window' (CLI: --long-texts window) to score every token."
    )
