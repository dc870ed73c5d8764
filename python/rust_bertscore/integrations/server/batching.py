"""Dynamic batching for the scoring server: requests that arrive together are encoded together,
and each is still scored on its own.

:class:`RequestScorer` is the scoring seam. For a batch of requests it encodes every distinct
text of the batch in one pass through the scorer's pipeline (``pipeline.tokens.tokenize`` and
``pipeline.vectors``, which leave the vectors in the scorer's cache), then calls
:meth:`BERTScorer.score <rust_bertscore.BERTScorer.score>` once per request, which finds its
texts in the cache. So the encoder's work is shared across requests, while bert_score's padding
floor, IDF (``idf=True``: over that request's references, as ``score()``), the multi-reference
max and rescaling are each request's own: the numbers are those of ``score()`` on that request
alone. Each text is tokenised once per batch: the tokens of the shared encoding are kept
(``ScoredTokens.memo``) for the per-request scoring.

The worker thread that feeds it (bounded wait and batch size, large requests in slices,
cancellation) is :mod:`~rust_bertscore.integrations.server.scheduler`. No web framework here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from ...engine.rounds import round_budget
from ...scoring.scorer import BERTScorer
from ...stages.scored_tokens import ScoredTokens
from ...stages.text import pair_texts
from .rows import RowBounds

Refs = Sequence[str] | Sequence[Sequence[str]]

SLICE_ROWS = 1024
"""Token rows encoded in one step of a large request at most (one text at least): a one-pair
request waits behind at most this much encoding."""
SLICE_CHARS = 256 * 1024
"""Characters of text tokenised in one step at most (besides one text's prefix pieces)."""


CALIBRATION_ROWS = 512
"""Token rows of the start-up measure of the encoder's rate (:meth:`RequestScorer.calibrate`)."""
CALIBRATION_LENGTH = 62
"""Content tokens of each text of that measure."""
CALIBRATION_TEXT = (
    "The committee met on Tuesday to review the budget, and after a long discussion of the "
    "costs of the new building it agreed to delay the vote until the auditors had finished "
    "their report on the accounts of the previous three years."
)


@dataclasses.dataclass(frozen=True)
class ScoreRequest:
    """One request's candidates and references (checked: ``pair_texts`` accepts them)."""

    cands: list[str]
    refs: list[Any]
    least: dict[str, int] | None = dataclasses.field(default=None, compare=False, repr=False)
    """A lower bound of each distinct text's token rows, when worked out ahead (off the
    worker: the server's parsing thread); None: worked out when needed."""
    rows: dict[str, int] | None = dataclasses.field(default=None, compare=False, repr=False)
    """Each distinct text's token rows from above (:meth:`.rows.RowBounds.counted`), when
    worked out ahead; None: bounded by bytes when needed."""

    def most_rows(self, tokens: ScoredTokens) -> dict[str, int]:
        """Each distinct text's rows from above: :attr:`rows` when worked out ahead, else
        counted now (:meth:`.rows.RowBounds.counted`)."""
        texts = self.texts()
        if self.rows is not None and all(t in self.rows for t in texts):
            return self.rows
        return RowBounds.of(tokens).counted(tokens, texts)

    def placed(self) -> Iterator[tuple[str, int, str]]:
        """``(field, index, text)`` of every text, in order (a candidate's references share
        its index).

        >>> list(ScoreRequest(["a"], [["c", "d"]]).placed())
        [('cands', 0, 'a'), ('refs', 0, 'c'), ('refs', 0, 'd')]
        """
        for field, items in (("cands", self.cands), ("refs", self.refs)):
            for index, item in enumerate(items):
                for text in item if isinstance(item, list) else [item]:
                    yield field, index, text

    def locate(self, text: str) -> tuple[str, int]:
        """The field and index where ``text`` first appears (``("cands", 0)`` if nowhere).

        >>> ScoreRequest(["a", "b"], [["c", "d"], ["e"]]).locate("e")
        ('refs', 1)
        """
        found = next(((f, i) for f, i, t in self.placed() if t == text), None)
        return found or ("cands", 0)

    @property
    def chars(self) -> int:
        """Characters of text in the request (references counted as often as given)."""
        flat = (t for r in self.refs for t in (r if isinstance(r, list) else [r]))
        return sum(map(len, self.cands)) + sum(map(len, flat))

    @property
    def pairs(self) -> int:
        """(candidate, reference) pairs: a candidate with three references counts three."""
        return sum(len(r) if isinstance(r, list) else 1 for r in self.refs)

    def texts(self) -> list[str]:
        """The request's distinct texts, candidates first."""
        paired = pair_texts(self.cands, self.refs)
        return list(dict.fromkeys([*paired.cands, *paired.refs]))


@dataclasses.dataclass(frozen=True)
class ScoreResult:
    """One request's scores (float32, as ``score()`` returns them) and its warnings."""

    P: np.ndarray
    R: np.ndarray
    F: np.ndarray
    warnings: list[str]


class RequestScorer:
    """Scores batches of requests with one :class:`BERTScorer`, each request as ``score()``.

    Parameters
    ----------
    scorer : BERTScorer
        The loaded model and settings. Its cache (``cache_bytes``) holds the batch's vectors
        between the shared encoding and the per-request scoring; with ``cache_bytes=0`` each
        request encodes its own texts (no sharing; same numbers). A scorer made with
        ``idf=True`` weights each request's tokens by IDF over that request's references (as
        ``score(..., idf=True)``), replacing any weights set before.

    Examples
    --------
    >>> from rust_bertscore import BERTScorer, score
    >>> from rust_bertscore.integrations.server.batching import RequestScorer, ScoreRequest
    >>> rs = RequestScorer(BERTScorer())
    >>> a = ScoreRequest(["the cat sat"], ["a cat sat"])
    >>> b = ScoreRequest(["a dog", "hello"], [["the dog", "dogs"], ["hi"]])
    >>> ra, rb = rs.score_batch([a, b])
    >>> bool(ra.F[0] == score(a.cands, a.refs)[2][0])
    True
    """

    def __init__(self, scorer: BERTScorer) -> None:
        self.scorer = scorer
        self.idf = scorer.idf
        self.encoded_batches = 0
        """Shared encoder passes run so far (one per batch with texts to encode)."""
        self.max_whole_chars: int | None = None
        """Most characters of one text a large request's work has the tokenizer read whole
        (None: no limit; the server sets its ``--max-whole-chars``)."""

    @property
    def encoder_seconds(self) -> float | None:
        """Seconds the encoder has spent in its runtime so far (None: it does not say)."""
        seconds = getattr(self.scorer.pipeline.runtime.encoder, "run_seconds", None)
        return float(seconds) if isinstance(seconds, (int, float)) else None

    def calibrate(self, rows: int = CALIBRATION_ROWS) -> tuple[int, float]:
        """The encoder's rate on ``rows`` token rows of a fixed English text, outside the cache:
        ``(rows, seconds)`` of a second run (the first warms the runtime up). The server's
        time estimate starts from it, so no first request (a huge text to tokenise, a cold
        runtime) sets it alone."""
        tokenizer = self.scorer.pipeline.tokens.tokenizer
        content = (tokenizer.encode_content([CALIBRATION_TEXT])[0] or [])[:CALIBRATION_LENGTH]
        ids = [*tokenizer.prefix_ids, *content, *tokenizer.suffix_ids]
        if not content:
            return 0, 0.0
        texts = [ids] * max(1, rows // len(ids))
        encoder = self.scorer.pipeline.runtime.encoder
        encoder.embed(texts, len(texts))
        start = time.perf_counter()
        encoder.embed(texts, len(texts))
        return len(texts) * len(ids), time.perf_counter() - start

    @property
    def budget(self) -> int:
        """Token rows encoded ahead of scoring at most: half the cache (and one scoring
        round); the rest of a request, if any, is encoded by its own ``score()``."""
        pipeline = self.scorer.pipeline
        return round_budget(
            min(pipeline.cache.max_bytes // 2, pipeline.round_bytes),
            pipeline.runtime.encoder.hidden_size or 1024,
            pipeline.layers,
        )

    @contextlib.contextmanager
    def tokens_kept(self, memo: dict[str, Any]) -> Iterator[None]:
        """Within the block, texts tokenised once (into ``memo``) are not tokenised again."""
        tokens = self.scorer.pipeline.tokens
        tokens.memo = memo
        try:
            yield
        finally:
            tokens.memo = None

    def plan(self, request: ScoreRequest) -> bool:
        """Whether ``request`` is large: more than :data:`SLICE_CHARS` characters, a text longer
        than :attr:`max_whole_chars`, or more than :data:`SLICE_ROWS` token rows to encode
        (counted, or bounded by bytes: :mod:`.rows`);
        a large request is worked in slices (:mod:`~rust_bertscore.integrations.server.slices`),
        a small one in a batch."""
        if request.chars > SLICE_CHARS:
            return True
        limit = self.max_whole_chars
        if limit is not None and any(len(t) > limit for t in request.texts()):
            return True  # the slices' tokenising holds it to the limit
        most = request.most_rows(self.scorer.pipeline.tokens)
        return sum(most[t] for t in self.uncached(request.texts())) > SLICE_ROWS

    def rows_of(self, request: ScoreRequest) -> int:
        """Token rows ``request`` takes to encode, from above (its texts' rows, counted or
        bounded: :meth:`ScoreRequest.most_rows`)."""
        return sum(request.most_rows(self.scorer.pipeline.tokens).values())

    def uncached(self, texts: Sequence[str]) -> list[str]:
        """Those of ``texts`` whose vectors are not in the cache (all of them without one)."""
        cache = self.scorer.pipeline.cache
        return [t for t in texts if cache.get(t) is None]

    def watch(self, check: Callable[[int], object] | None) -> None:
        """Call ``check`` after each encoder batch (it raises to stop the work in hand)."""
        self.scorer.pipeline.runtime.encoder.on_batch = check

    def encode_ids(self, texts: Sequence[str], ids: Sequence[list[int]]) -> None:
        """Encode ``texts`` (distinct, not cached; token ids ``ids``) into the cache, in
        encoder batches of the scorer's ``batch_size``."""
        if texts and self.scorer.pipeline.cache.max_bytes:
            self.scorer.pipeline.vectors(texts, ids, self.scorer.batch_size)
            self.encoded_batches += 1

    def encode(self, texts: Sequence[str], budget: int | None = None) -> int:
        """Encode ``texts`` (distinct, not cached) into the cache: as many as fit ``budget``
        token rows (default :attr:`budget`), longest first in encoder batches of the scorer's
        ``batch_size``. Returns the token rows encoded (0 without a cache)."""
        pipeline = self.scorer.pipeline
        if not pipeline.cache.max_bytes or not texts:
            return 0
        ids = pipeline.tokens.tokenize(texts).ids
        rows = np.cumsum([len(t) for t in ids])
        take = int(np.searchsorted(rows, self.budget if budget is None else budget, "right"))
        if take:
            pipeline.vectors(texts[:take], ids[:take], self.scorer.batch_size)
            self.encoded_batches += 1
        return int(rows[take - 1]) if take else 0

    def encode_together(self, requests: Sequence[ScoreRequest]) -> None:
        """Encode the distinct texts of ``requests`` in one pass, into the scorer's cache."""
        texts: dict[str, None] = {}
        for request in requests:
            texts.update(dict.fromkeys(request.texts()))
        self.encode(self.uncached(list(texts)))

    def score_one(
        self, request: ScoreRequest, idf_refs: Sequence[str] | None = None
    ) -> ScoreResult:
        """``score(request.cands, request.refs)`` with this scorer's settings (``idf_refs``:
        the references IDF is taken over, when not the request's own: a part of a request)."""
        scorer = self.scorer
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if self.idf:
                if idf_refs is None:
                    idf_refs = pair_texts(request.cands, request.refs).refs
                scorer.set_idf_sents(idf_refs)
            P, R, F = scorer.score(request.cands, request.refs, batch_size=scorer.batch_size)
        return ScoreResult(P, R, F, [str(w.message) for w in caught])

    def score_batch(self, requests: Sequence[ScoreRequest]) -> list[ScoreResult | Exception]:
        """Each request's result, or the exception scoring it raised (the others still score)."""
        with self.tokens_kept({}):
            if len(requests) > 1:
                # A failure here (one bad request, memory) leaves each request to encode its own.
                with contextlib.suppress(Exception):
                    self.encode_together(requests)
            out: list[ScoreResult | Exception] = []
            for request in requests:
                try:
                    out.append(self.score_one(request))
                except Exception as e:  # handed to that request's caller
                    out.append(e)
        return out
