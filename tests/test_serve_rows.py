"""The server's row bounds (integrations/server/rows.py): a text's token rows are counted by the
tokenizer or bounded by its bytes, never guessed per character, so a "small" request is small
for any text."""

from __future__ import annotations

import random

import pytest

from conftest import TINY
from rust_bertscore import BERTScorer
from rust_bertscore.integrations.server.batching import SLICE_ROWS, RequestScorer, ScoreRequest
from rust_bertscore.integrations.server.rows import RowBounds

PIECES = ["a", "the ", "!", "한", "中", "😀", "é", ".", ",", " ", "1", "\u0301", "ß", "ﷺ", "ǅ"]


def random_texts(seed: int, n: int = 300) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(PIECES) for _ in range(rng.randint(0, 60))) for _ in range(n)]


@pytest.mark.parametrize("model", ["default", "xlm", "roberta", "t5"])
def test_the_uncounted_bound_holds_for_every_text(model: str) -> None:
    """Counted rows never pass the bound used uncounted, for WordPiece, SentencePiece (XLM, T5:
    NFKC makes ``ﷺ`` 18 characters) and byte-level BPE, over texts of many scripts, marks and
    punctuation."""
    scorer = BERTScorer() if model == "default" else BERTScorer(model_type=str(TINY / model))
    tokens = scorer.pipeline.tokens
    bounds = RowBounds.of(tokens)
    texts = random_texts(3)
    counted = bounds.counted(tokens, texts)
    over = {t: (counted[t], bounds.most(t)) for t in texts if counted[t] > bounds.most(t)}
    assert not over, over


def test_a_request_of_hangul_and_punctuation_is_large_whatever_its_characters() -> None:
    """Eight pairs of ``"한!" * 40``: a token per 3 characters guessed 464 rows (small, one
    batch); counted, they are over a slice (worked in slices)."""
    scorer = RequestScorer(BERTScorer(cache_bytes=0))
    tokens = scorer.scorer.pipeline.tokens
    texts = ["한!" * 40 + str(i) for i in range(16)]
    request = ScoreRequest(texts[:8], texts[8:])
    counted = RowBounds.of(tokens).counted(tokens, texts)
    assert sum(counted.values()) > SLICE_ROWS
    assert scorer.plan(request)  # counted by the worker
    with_rows = ScoreRequest(texts[:8], texts[8:], rows=counted)
    assert scorer.plan(with_rows)  # counted ahead, as the server's parsing thread does
    assert not scorer.plan(ScoreRequest(["a cat"], ["the cat"]))


def test_windows_count_every_window() -> None:
    tokens = BERTScorer(long_texts="window").pipeline.tokens
    bounds = RowBounds.of(tokens)
    assert bounds.limit is None and bounds.window is not None
    text = "word " * 2000
    counted = bounds.counted(tokens, [text])[text]
    assert counted > 512 and counted % bounds.window.length == 0
    assert counted <= bounds.most(text)
