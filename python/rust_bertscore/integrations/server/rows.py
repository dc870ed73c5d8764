"""How many token rows a text takes to encode, from above, by bounds that hold for any text.

The server decides from these whether a request is small (one batch) or large (worked in
slices), and how to cut a large one into chunks. A guess per character (a token per 3
characters) was beaten 2.9 times by punctuation and CJK and 5.8 times by Hangul then ``!``,
so "small" requests ran for tens of seconds in one batch. Here a text's rows are counted by
the tokenizer itself (on the server's parsing thread, off the worker) for texts up to
:data:`COUNT_CHARS` characters; past that, truncation bounds them (the model's maximum), and
with windows they are bounded by the text's UTF-8 bytes times :data:`EXPANSION` (NFKC makes
``ﷺ``, 3 bytes, 18 characters: T5 gave it 8 tokens; a token takes at least a byte of the
normalised text, plus one ``▁`` before the first word).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...stages.scored_tokens import ScoredTokens
from ...stages.windows import WindowSpec, window_starts

EXPANSION = 18
"""The most characters a normaliser makes of one code point (NFKC's largest, U+FDFA)."""
COUNT_CHARS = 4096
"""Texts up to this many characters are counted by the tokenizer; longer ones are bounded by
their bytes (a long text is tokenised by prefixes later, never whole here)."""


@dataclass(frozen=True)
class RowBounds:
    """A scorer's rules for the rows a text is encoded in.

    Examples
    --------
    >>> from rust_bertscore import BERTScorer
    >>> bounds = RowBounds.of(BERTScorer().pipeline.tokens)
    >>> bounds.most("the cat sat"), bounds.most("word " * 1000)
    (201, 512)
    >>> bounds.counted(BERTScorer().pipeline.tokens, ["the cat sat", "한!" * 10])
    {'the cat sat': 5, '한!한!한!한!한!한!한!한!한!한!': 42}
    """

    limit: int | None
    """The most rows of one text (the model's maximum), or None with windows."""
    special: int
    """Special tokens around a text (or a window)."""
    window: WindowSpec | None

    @classmethod
    def of(cls, tokens: ScoredTokens) -> RowBounds:
        special = len(tokens.tokenizer.prefix_ids) + len(tokens.tokenizer.suffix_ids)
        limit = tokens.window_length if tokens.window is None else None
        return cls(limit, special, tokens.window)

    def encoded(self, content: int) -> int:
        """Rows encoded for a text of ``content`` tokens (special tokens not counted)."""
        n = content + self.special
        if self.window is None:
            return n if self.limit is None else min(n, self.limit)
        if self.window.fits(n):
            return n
        spec = self.window
        return len(window_starts(content, spec.content, spec.step)) * spec.length

    def most(self, text: str) -> int:
        """Rows of ``text`` from above, for any text, uncounted: :data:`EXPANSION` tokens per
        UTF-8 byte, plus one (truncation then caps them at the model's maximum)."""
        return self.encoded(EXPANSION * len(text.encode("utf-8", "surrogatepass")) + 1)

    def counted(self, tokens: ScoredTokens, texts: Sequence[str]) -> dict[str, int]:
        """Each distinct text's rows: counted by the tokenizer (``encode_content``, which keeps
        no state) up to :data:`COUNT_CHARS` characters, :meth:`most` past that."""
        distinct = list(dict.fromkeys(texts))
        short = [t for t in distinct if len(t) <= COUNT_CHARS]
        rows = {t: self.most(t) for t in distinct if len(t) > COUNT_CHARS}
        for text, ids in zip(short, tokens.tokenizer.encode_content(short), strict=True):
            rows[text] = self.encoded(len(ids or ()))
        return rows
