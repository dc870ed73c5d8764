"""A large request of the scoring server, worked in steps of bounded cost.

A request larger than one slice (:data:`SLICE_ROWS` token rows, or :data:`SLICE_CHARS`
characters) is cut into **chunks** of candidates, each a whole number of bert_score's scoring
batches (so that a chunk scores as it would inside the whole request) and of at most
``chunk_rows`` token rows (so that its vectors stay in the cache until it is scored). Each
chunk is encoded into the cache in **slices** of at most :data:`SLICE_ROWS` token rows, then
scored from the cache; the worker (:mod:`~rust_bertscore.integrations.server.scheduler`) runs
one step at a time and serves other requests between two steps. The chunks' P, R, F are
concatenated, and the warnings of ``score()`` on the whole request are given once (the
truncation warning with the request's count).

Long texts are tokenised in bounded pieces: where only the first ``max_length`` tokens of a
text count (``long_texts="truncate"``) and the tokenizer splits words at whitespace before
anything else, a prefix of the text cut at whitespace (or, in a text without whitespace, after
punctuation where BERT's and GPT-2's pre-tokenizers split) gives the same first tokens as the
whole text; :func:`fill_tokens` tokenises growing prefixes (checked against a longer one) until the
model's maximum is passed, so an 8 M-character text costs a few thousand characters of
tokenising, not seconds of the tokenizer holding the GIL and a gigabyte of offsets.
"""

from __future__ import annotations

import dataclasses
import re
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...stages.scored_tokens import ScoredTokens, warn_truncated
from ...stages.text import pair_texts
from .batching import SLICE_CHARS, SLICE_ROWS, RequestScorer, ScoreRequest, ScoreResult

PREFIX_CHARS = 8
"""Characters of a first prefix per token of the model's maximum length (doubled until the
prefix gives enough tokens)."""
PREFIX_MARGIN = 16
"""Tokens a prefix must give past the model's maximum, and on which two prefixes must agree."""
PREFIX_PRETOKENIZERS = frozenset(
    {"BertPreTokenizer", "Whitespace", "WhitespaceSplit", "ByteLevel", "Metaspace"}
)
"""``tokenizers`` pre-tokenizers that split at whitespace before the model sees a word."""
PUNCTUATION_PRETOKENIZERS = frozenset({"BertPreTokenizer", "Whitespace", "ByteLevel"})
"""Pre-tokenizers that also end a word at ASCII punctuation followed by a letter or digit (BERT
splits off every punctuation character; GPT-2's pattern and ``Whitespace`` split a run of
punctuation from the letters after it), so a text without whitespace is cut there."""
_WORD = re.compile(r"\S+")
_WORD_END = re.compile(r"\S\s")
_PUNCTUATION_END = re.compile(r"[!-&(-/:-@\[-`{-~](?=[A-Za-z0-9])")
"""ASCII punctuation but the apostrophe (GPT-2 keeps ``'s``, ``'ll`` whole), before a letter
or digit: a word boundary for :data:`PUNCTUATION_PRETOKENIZERS`."""
_TRUNCATION = "longer than the model's maximum of"
DEFAULT_WHOLE_CHARS = SLICE_CHARS
"""Most characters of one text the server has the tokenizer read at once, whole or as a
prefix (256 Ki; the tokenizer takes 200 to 600 bytes a character: 1 Mi CJK characters took
616 MiB and 3.8 s, and held the worker that long; 8 Mi of ALBERT's ``"a."``, 11 s and
1.6 GiB)."""


class WholeTextTooLong(ValueError):
    """A text the tokenizer would have to read whole (or by prefixes longer than the limit),
    longer than the server reads at once (the server answers 413 naming it)."""

    def __init__(self, text: str, limit: int) -> None:
        super().__init__(whole_text_error(len(text), limit))
        self.text = text


def _pre_tokenizer(tokens: ScoredTokens) -> str | None:
    source = getattr(tokens.tokenizer, "_source", None)
    fast = getattr(source, "tokenizer", None)
    pre = getattr(fast, "pre_tokenizer", None)
    return None if pre is None else type(pre).__name__


def _cuts_at_punctuation(tokens: ScoredTokens) -> bool:
    """Whether a text without whitespace may be cut after punctuation (see
    :data:`PUNCTUATION_PRETOKENIZERS`)."""
    return _pre_tokenizer(tokens) in PUNCTUATION_PRETOKENIZERS


def _splits_at_whitespace(tokens: ScoredTokens) -> bool:
    return _pre_tokenizer(tokens) in PREFIX_PRETOKENIZERS


def prefix_length(tokens: ScoredTokens) -> int | None:
    """Characters past which a text is tokenised by prefixes; None: always whole (windows, no
    maximum length, or a tokenizer that does not split at whitespace first).

    >>> from rust_bertscore import BERTScorer
    >>> prefix_length(BERTScorer().pipeline.tokens)  # 8 characters per token of 512
    4096
    """
    limit = tokens.tokenizer.max_length
    if tokens.window is not None or limit is None or not _splits_at_whitespace(tokens):
        return None
    return max(limit * PREFIX_CHARS, 1024)


def read_whole(tokens: ScoredTokens, text: str) -> bool:
    """Whether :func:`fill_tokens` would tokenise ``text`` whole: a text of at most twice
    :func:`prefix_length` characters, any text where prefixes do not apply (windows, no
    maximum length, a tokenizer that does not split at whitespace first), or one without a
    place to cut before its first prefix's end (``Metaspace`` without whitespace). Stateless:
    the parsing thread asks it while the worker tokenises.

    >>> from rust_bertscore import BERTScorer
    >>> tokens = BERTScorer().pipeline.tokens
    >>> read_whole(tokens, "a cat"), read_whole(tokens, "a." * 1_000_000)
    (True, False)
    >>> read_whole(tokens, "a" * 1_000_000)  # no whitespace and no punctuation
    True
    """
    long_at = prefix_length(tokens)
    if long_at is None or len(text) <= 2 * long_at:
        return True
    return _cut_at_word_end(text, long_at, _cuts_at_punctuation(tokens)) is None


def whole_text_error(chars: int, limit: int) -> str:
    """The message of a text too long to read whole.

    >>> print(whole_text_error(300000, 262144))  # doctest: +NORMALIZE_WHITESPACE
    300000 characters that the model's tokenizer must read whole (no whitespace to cut it at
    where only its first tokens count, too few tokens in its first 262144 characters, or
    windows); the server reads at most 262144 characters of one text at once (its
    --max-whole-chars)
    """
    return (
        f"{chars} characters that the model's tokenizer must read whole (no whitespace to cut "
        f"it at where only its first tokens count, too few tokens in its first {limit} "
        f"characters, or windows); the server reads at most {limit} characters of one text "
        "at once (its --max-whole-chars)"
    )


def _cut_at_word_end(text: str, at: int, punctuation: bool) -> int | None:
    """The end of the last word before ``at`` that whitespace follows, or (``punctuation``)
    failing that, the last ASCII punctuation before a letter or digit (a text without
    whitespace: ``"a." * 1_000_000``); None when there is neither."""
    lo = max(0, at - 4096)
    for pattern in (_WORD_END, _PUNCTUATION_END) if punctuation else (_WORD_END,):
        last = None
        for match in pattern.finditer(text, lo, at):
            last = match
        if last is not None:
            return last.start() + 1
    return None


def _prefix_entry(
    tokens: ScoredTokens, text: str, first: int, most: int | None = None
) -> Any | None:
    """The memo entry of ``text`` from a prefix (None when no prefix settles it): two
    prefixes cut at whitespace, each past the model's maximum by :data:`PREFIX_MARGIN` tokens,
    must agree on those tokens. ``most``: the longest prefix tried (None: up to the text): a
    text of words thousands of characters long needed prefixes of millions of characters."""
    limit = tokens.tokenizer.max_length
    assert limit is not None
    need = limit + PREFIX_MARGIN
    at, previous = first, None
    punctuation = _cuts_at_punctuation(tokens)
    saved, tokens.memo = tokens.memo, None
    try:
        while at < len(text):
            cut = _cut_at_word_end(text, at, punctuation)
            if cut is None:
                return None
            if most is not None and cut > most:
                return None
            prefix = text[:cut]
            content = tokens.tokenizer.encode_content([prefix])[0] or []
            if len(content) > need:
                if previous is not None and previous[:need] == content[:need]:
                    got = tokens.tokenize([prefix])
                    keep = None if got.keep is None else got.keep[0]
                    return (got.ids[0], True, keep, bool(got.empty[0]))
                previous = content
            at = cut + max(at, 1024)  # about twice as long
        return None
    finally:
        tokens.memo = saved


def fill_tokens(
    tokens: ScoredTokens,
    texts: Sequence[str],
    memo: dict[str, Any],
    max_whole: int | None = None,
) -> None:
    """Tokenise ``texts`` into ``memo`` (as ``ScoredTokens.memo`` holds them): long texts by
    prefixes where that gives the same tokens (see the module's note), the others whole.

    Raises
    ------
    WholeTextTooLong
        A text of more than ``max_whole`` characters (None: no limit) that would be read whole,
        or whose prefixes up to ``max_whole`` characters do not settle it (checked before the
        tokenizer sees more than ``max_whole`` characters of it).

    >>> from rust_bertscore import BERTScorer
    >>> tokens = BERTScorer().pipeline.tokens
    >>> memo = {}
    >>> text = "the cat sat " * 700_000
    >>> fill_tokens(tokens, [text, "a cat"], memo)
    >>> len(memo[text][0]), memo[text][1], memo["a cat"][0] == tokens.tokenize(["a cat"]).ids[0]
    (512, True, True)
    """
    long_at = prefix_length(tokens)
    whole = []
    for text in dict.fromkeys(texts):
        if text in memo:
            continue
        if long_at is not None and len(text) > 2 * long_at:
            entry = _prefix_entry(tokens, text, long_at, max_whole)
            if entry is not None:
                memo[text] = entry
                continue
        if max_whole is not None and len(text) > max_whole:
            raise WholeTextTooLong(text, max_whole)
        whole.append(text)
    if whole:
        saved = tokens.memo
        tokens.memo = memo
        try:
            tokens.tokenize(whole)
        finally:
            tokens.memo = saved


def least_rows(text: str, limit: int | None, special: int) -> int:
    """A lower bound of a text's token rows: one per whitespace-separated word (counted up to
    the model's maximum), plus the special tokens.

    >>> least_rows("the cat sat", 512, 2), least_rows("word " * 1000, 512, 2)
    (5, 512)
    """
    words = len(text.split(None, limit)) if limit is not None else len(text.split())
    return words + special if limit is None else min(words + special, limit)


def least_rows_of(tokens: ScoredTokens, texts: Sequence[str]) -> dict[str, int]:
    """:func:`least_rows` of each distinct text, with the limits of ``tokens``.

    >>> from rust_bertscore import BERTScorer
    >>> least_rows_of(BERTScorer().pipeline.tokens, ["the cat sat", "a"])
    {'the cat sat': 5, 'a': 3}
    """
    limit = tokens.window_length if tokens.window is None else None
    special = len(tokens.tokenizer.prefix_ids) + len(tokens.tokenizer.suffix_ids)
    return {t: least_rows(t, limit, special) for t in dict.fromkeys(texts)}


@dataclasses.dataclass(eq=False)
class Chunked:
    """A large request's progress: its chunks, the one in hand, the parts scored.

    Parameters
    ----------
    request : ScoreRequest
    scorer : RequestScorer
    chunk_rows : int
        Token rows of one chunk at most (estimated from above; a chunk has at least one
        scoring batch).

    Examples
    --------
    >>> from rust_bertscore import BERTScorer
    >>> from rust_bertscore.integrations.server.batching import RequestScorer, ScoreRequest
    >>> scorer = BERTScorer(batch_size=2)
    >>> request = ScoreRequest([f"cand {i}" for i in range(6)], [f"ref {i}" for i in range(6)])
    >>> work = Chunked(request, RequestScorer(scorer), chunk_rows=10)
    >>> work.bounds
    [(0, 2), (2, 4), (4, 6)]
    >>> while work.step():
    ...     pass
    >>> bool((work.result().F == scorer.score(request.cands, request.refs, batch_size=2)[2]).all())
    True
    """

    request: ScoreRequest
    scorer: RequestScorer
    chunk_rows: int
    bounds: list[tuple[int, int]] = dataclasses.field(default_factory=list)
    chunk: int = 0
    todo: list[str] | None = None
    memo: dict[str, Any] = dataclasses.field(default_factory=dict)
    parts: list[ScoreResult] = dataclasses.field(default_factory=list)
    cut: set[str] = dataclasses.field(default_factory=set)
    rows_left: int = 0
    """Token rows still to encode (estimated from above until tokenised)."""
    least_left: int = 0
    """A lower bound of the token rows still to encode."""
    last_rows: int = 0
    """Token rows encoded by the last step (0 for a chunk scored)."""

    def __post_init__(self) -> None:
        tokens = self.scorer.scorer.pipeline.tokens
        paired = pair_texts(self.request.cands, self.request.refs)
        sizes = [len(r) if isinstance(r, list) else 1 for r in self.request.refs]
        floor = None if self.scorer.scorer.batch_independent else self.scorer.scorer.batch_size
        most = self.request.most_rows(tokens)
        todo = self.scorer.uncached(list(most))  # cached texts cost no encoding
        self.rows_left = sum(most[t] for t in todo)
        least = self.request.least or least_rows_of(tokens, todo)
        self.least_left = sum(least[t] for t in todo)
        lo, flat, rows = 0, 0, 0
        for i, n in enumerate(sizes):
            for j in range(flat, flat + n):
                rows += most[paired.cands[j]] + most[paired.refs[j]]
            flat += n
            aligned = floor is None or flat % floor == 0
            if aligned and (rows >= self.chunk_rows or i + 1 == len(sizes)):
                self.bounds.append((lo, i + 1))
                lo, rows = i + 1, 0
        if lo < len(sizes):
            self.bounds.append((lo, len(sizes)))
        self._most = most

    def part(self) -> ScoreRequest:
        lo, hi = self.bounds[self.chunk]
        return ScoreRequest(self.request.cands[lo:hi], self.request.refs[lo:hi])

    def step(self) -> bool:
        """One step: tokenise and encode one slice of the chunk in hand, or score it once
        encoded. Returns True while there is more to do."""
        rs = self.scorer
        self.last_rows = 0
        if self.todo is None:
            self.todo = rs.uncached(self.part().texts())
        if self.todo:
            self._encode_slice()
            return True
        self._score_chunk()
        self.chunk += 1
        self.todo = None
        return self.chunk < len(self.bounds)

    def _encode_slice(self) -> None:
        assert self.todo is not None
        rs = self.scorer
        tokens = rs.scorer.pipeline.tokens
        take, rows, chars = 0, 0, 0
        while take < len(self.todo) and take < rs.scorer.batch_size:
            text = self.todo[take]
            if take and chars + min(len(text), SLICE_CHARS) > SLICE_CHARS:
                break
            fill_tokens(tokens, [text], self.memo, rs.max_whole_chars)
            n = len(self.memo[text][0])
            if take and rows + n > SLICE_ROWS:
                break
            rows += n
            chars += min(len(text), SLICE_CHARS)
            take += 1
        part, self.todo = self.todo[:take], self.todo[take:]
        ids = [self.memo[t][0] for t in part]
        rs.encode_ids(part, ids)
        self.last_rows = rows
        for text in part:
            self.rows_left -= self._most.get(text, 0)
            self.least_left -= min(self._most.get(text, 0), len(self.memo[text][0]))
        self.rows_left, self.least_left = max(self.rows_left, 0), max(self.least_left, 0)

    def _score_chunk(self) -> None:
        rs = self.scorer
        part = self.part()
        texts = part.texts()
        fill_tokens(rs.scorer.pipeline.tokens, texts, self.memo, rs.max_whole_chars)
        self.cut.update(t for t in texts if self.memo[t][1])
        idf_refs = None
        if rs.idf and len(self.bounds) > 1:
            idf_refs = pair_texts(self.request.cands, self.request.refs).refs
        with rs.tokens_kept(self.memo):
            result = rs.score_one(part, idf_refs)
        self.parts.append(result)
        if not rs.idf:
            self.memo.clear()  # the next chunk's texts are tokenised afresh

    def result(self) -> ScoreResult:
        """The whole request's result, as ``score()`` on it gives it."""
        if len(self.parts) == 1:
            return self.parts[0]
        messages = [m for p in self.parts for m in p.warnings if _TRUNCATION not in m]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            warn_truncated(len(self.cut), self.scorer.scorer.pipeline.tokenizer.max_length)
        messages[:0] = [str(w.message) for w in caught]
        return ScoreResult(
            np.concatenate([p.P for p in self.parts], axis=-1),
            np.concatenate([p.R for p in self.parts], axis=-1),
            np.concatenate([p.F for p in self.parts], axis=-1),
            list(dict.fromkeys(messages)),
        )
