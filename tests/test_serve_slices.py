"""The scoring server's large requests in steps of bounded cost (no web server): chunks scored
as ``score()`` scores the whole request, slices of bounded token rows, long texts tokenised by
prefixes to the same tokens, the queue ordered by remaining work with ageing, requests that
cannot finish refused before their work, and cancelled work kept in the cache."""

from __future__ import annotations

import threading
import time
import warnings

import numpy as np
import pytest

from conftest import TINY
from rust_bertscore import BERTScorer
from rust_bertscore.integrations.server import slices
from rust_bertscore.integrations.server.batching import SLICE_ROWS, RequestScorer, ScoreRequest
from rust_bertscore.integrations.server.scheduler import Batcher, Job, WouldTimeOut
from rust_bertscore.integrations.server.slices import Chunked, fill_tokens

WORDS = [
    "the",
    "cat",
    "sat",
    "on",
    "a",
    "warm",
    "mat",
    "while",
    "rain",
    "fell",
    ",",
    ".",
    "!",
    "café",
    "naïve",
    "日本",
    "don't",
    "x2",
]


def _text(rng: np.random.Generator, n: int) -> str:
    return " ".join(rng.choice(WORDS, n))


def _score(scorer: BERTScorer, request: ScoreRequest) -> tuple[tuple, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = scorer.score(request.cands, request.refs, batch_size=scorer.batch_size)
    return out, [str(w.message) for w in caught]


def _run(work: Chunked) -> int:
    steps = 1
    while work.step():
        steps += 1
    return steps


@pytest.mark.parametrize("idf", [False, True])
@pytest.mark.parametrize("independent", [False, True])
def test_chunks_score_as_score_on_the_whole_request(idf: bool, independent: bool) -> None:
    scorer = BERTScorer(batch_size=4, idf=idf, batch_independent=independent)
    rng = np.random.default_rng(1)
    cands = [_text(rng, int(rng.integers(1, 30))) for _ in range(23)]
    refs = [
        [_text(rng, int(rng.integers(1, 30))) for _ in range(int(rng.integers(1, 4)))]
        for _ in range(23)
    ]
    cands[5] = _text(rng, 700)  # cut at 512 tokens: the truncation warning, counted once
    refs[17] = [_text(rng, 900)]
    request = ScoreRequest(cands, refs)
    work = Chunked(request, RequestScorer(scorer), chunk_rows=300)
    assert len(work.bounds) > 2
    if not independent:  # each chunk starts on a scoring batch of 4 flattened pairs
        sizes = [len(r) for r in refs]
        assert all(sum(sizes[:lo]) % 4 == 0 for lo, _ in work.bounds)
    _run(work)
    got = work.result()
    (P, R, F), messages = _score(scorer, request)
    for a, b in zip((got.P, got.R, got.F), (P, R, F)):
        np.testing.assert_array_equal(a, b)
    assert got.warnings == messages and "2 texts were longer" in messages[0]


def test_slices_have_bounded_token_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(slices, "SLICE_ROWS", 100)
    scorer = BERTScorer(batch_size=64)
    rng = np.random.default_rng(2)
    request = ScoreRequest([_text(rng, 20) for _ in range(30)], [_text(rng, 20) for _ in range(30)])
    work = Chunked(request, RequestScorer(scorer), chunk_rows=10_000)
    seen = []
    while work.step():
        seen.append(work.last_rows)
    encoded = [r for r in seen if r]
    assert len(encoded) > 5 and max(encoded) <= 100
    want = scorer.pipeline.tokens.tokenize(request.texts()).ids
    assert sum(encoded) == sum(map(len, want))  # every text encoded once, in the slices


LONG = [
    "word " * 50_000,
    'The cat, it said -- "don\'t!" -- sat   on\tthe mat.\n' * 6_000,
    "café naïve 日本語のテキスト résumé ÅÄÖ 😀 emoji " * 8_000,
    "x" * 200_000 + " tail",  # no whitespace early on: tokenised whole
    "a." * 100_000,  # no whitespace: cut after punctuation
    "it's,x/y:" * 30_000 + "'s" * 1000,  # the apostrophe is never a cut (GPT-2's 's)
    "x.y" * 2000 + "é" * 100_000,
]
LONG_IDS = ["words", "punctuation", "unicode", "one word", "no space", "apostrophes", "tail"]


def _count_given(tokens: object, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The lengths of the texts the tokenizer is given from now on (``encode_content``)."""
    given: list[int] = []
    real = tokens.tokenizer.encode_content  # type: ignore[attr-defined]

    def counted(texts: list[str]) -> object:
        given.extend(len(t) for t in texts)
        return real(texts)

    monkeypatch.setattr(tokens.tokenizer, "encode_content", counted)  # type: ignore[attr-defined]
    return given


@pytest.mark.parametrize("model", ["default", "roberta"])
@pytest.mark.parametrize("text", LONG, ids=LONG_IDS)
def test_long_texts_by_prefix_give_the_tokens_of_the_whole_text(text: str, model: str) -> None:
    """The same ids as the whole text, with BERT's WordPiece and with GPT-2's byte-level BPE."""
    if model == "default":
        tokens = BERTScorer().pipeline.tokens
    else:
        tokens = BERTScorer(model_type=str(TINY / "roberta"), num_layers=2).pipeline.tokens
    memo: dict = {}
    fill_tokens(tokens, [text], memo)
    whole = tokens.tokenize([text])
    assert memo[text][0] == whole.ids[0]
    assert memo[text][1] == (0 in whole.cut)
    assert memo[text][3] == bool(whole.empty[0])


def test_a_long_text_without_whitespace_is_tokenised_by_a_prefix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``"a." * 1_000_000`` was tokenised whole (8 s and 1.3 GB here; 4.5 GiB at the body
    limit): a prefix cut after punctuation settles it; what the tokenizer is given is
    bounded by the prefix, not the text."""
    tokens = BERTScorer().pipeline.tokens
    text = "a." * 1_000_000
    given = _count_given(tokens, monkeypatch)
    memo: dict = {}
    fill_tokens(tokens, [text], memo)
    assert len(memo[text][0]) == 512 and memo[text][1]
    assert given and max(given) < 64 * 1024, given


def test_an_eight_million_character_text_is_tokenised_by_a_prefix() -> None:
    tokens = BERTScorer().pipeline.tokens
    text = "word " * 1_600_000
    start = time.perf_counter()
    memo: dict = {}
    fill_tokens(tokens, [text], memo)
    assert len(memo[text][0]) == 512 and memo[text][1]
    assert time.perf_counter() - start < 30  # whole, it takes seconds and a gigabyte


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "slow"])
def test_a_text_read_whole_past_the_limit_is_refused_before_the_tokenizer_sees_it(
    monkeypatch: pytest.MonkeyPatch, fast: bool
) -> None:
    """SentencePiece's ``Metaspace`` has no place to cut a text without whitespace, so it was
    tokenised whole (8 Mi characters of ``"a."``: 11 s and 1.6 GiB with ALBERT's tokenizer):
    past the limit such a text is refused, and the tokenizer never sees it; a long text the
    fast tokenizer can cut is still tokenised by prefixes (the slow one reads every text
    whole)."""
    tokens = BERTScorer(
        model_type=str(TINY / "albert"), num_layers=2, use_fast_tokenizer=fast
    ).pipeline.tokens
    assert slices._pre_tokenizer(tokens) == ("Metaspace" if fast else None)
    unbroken, spaced = "a." * 100_000, "a. " * 100_000
    assert slices.read_whole(tokens, unbroken) and slices.read_whole(tokens, spaced) != fast
    given = _count_given(tokens, monkeypatch)
    memo: dict = {}
    with pytest.raises(slices.WholeTextTooLong, match=r"200000 characters.*--max-whole-chars"):
        fill_tokens(tokens, [unbroken], memo, max_whole=150_000)
    assert unbroken not in memo and not given
    if fast:
        fill_tokens(tokens, [spaced], memo, max_whole=150_000)
        assert memo[spaced][1] and max(given) < 64 * 1024
    else:
        with pytest.raises(slices.WholeTextTooLong):
            fill_tokens(tokens, [spaced], memo, max_whole=150_000)
    fill_tokens(tokens, [unbroken[:100_000]], memo, max_whole=150_000)  # within it: whole
    assert memo[unbroken[:100_000]][0] == tokens.tokenize([unbroken[:100_000]]).ids[0]


def test_prefixes_stop_at_the_limit_for_words_thousands_of_characters_long(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Words of 4,000 characters are a token each: prefixes with enough tokens ran to 2.1 M
    characters (12 s of the worker, 1.2 GiB). With a limit they stop there, and the text is
    refused having given the tokenizer no more than the limit at once."""
    tokens = BERTScorer().pipeline.tokens
    text = ("a" * 4000 + " ") * 600
    given = _count_given(tokens, monkeypatch)
    with pytest.raises(slices.WholeTextTooLong) as caught:
        fill_tokens(tokens, [text], {}, max_whole=200_000)
    assert caught.value.text is text
    assert given and max(given) <= 200_000 and sum(given) <= 400_000, given


def _batcher(scorer: BERTScorer) -> Batcher:
    return Batcher(RequestScorer(scorer), max_batch=8, max_wait=0.001)


def test_large_requests_go_shortest_first_with_ageing() -> None:
    batcher = _batcher(BERTScorer(batch_size=8))
    rng = np.random.default_rng(3)

    def job(n: int, waited: float) -> Job:
        request = ScoreRequest([_text(rng, 40) for _ in range(n)], [_text(rng, 40)] * n)
        j = batcher.submit(request)
        batcher._queue.get_nowait()
        assert batcher._is_large(j)
        j.arrived = time.monotonic() - waited
        return j

    big, small = job(200, 0.0), job(50, 0.0)
    batcher._large = [big, small]
    assert batcher._next_large() is small
    old_big = job(200, 3600.0)  # waited an hour: its credit passes its size
    batcher._large = [small, old_big]
    assert batcher._next_large() is old_big


def test_a_request_that_cannot_finish_is_refused_before_its_work() -> None:
    scorer = BERTScorer(batch_size=8)
    batcher = _batcher(scorer)
    batcher.calibrate = lambda: None  # type: ignore[method-assign]  # the rate set below
    batcher.rate = 100.0  # token rows a second: 200 pairs of 40 words need over 80 s
    batcher.start()
    try:
        rng = np.random.default_rng(4)
        request = ScoreRequest([_text(rng, 40) for _ in range(200)], [_text(rng, 40)] * 200)
        job = batcher.submit(request, timeout=5.0)
        with pytest.raises(WouldTimeOut, match="at least"):
            job.future.result(timeout=60)
        assert batcher.refused == 1 and len(scorer.pipeline.cache) == 0  # nothing encoded
    finally:
        batcher.stop()


def test_the_encoders_rate_is_measured_before_the_first_request() -> None:
    batcher = _batcher(BERTScorer())
    assert batcher.rate is None
    batcher.calibrate()
    assert batcher.rate is not None and batcher.rate > 0


def test_tokenising_does_not_count_as_encoding_in_the_rate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A step that spends 2 s tokenising (one huge text did, on a fresh server) measures the
    encoder by its own time: the rate is not held under a slice's rows per 2 s, so feasible
    work is not refused as too slow."""
    scorer = BERTScorer(batch_size=8)
    batcher = _batcher(scorer)
    batcher.calibrate = lambda: None  # type: ignore[method-assign]  # only the step measures
    tokenizer = scorer.pipeline.tokens.tokenizer
    real = tokenizer.encode_content

    def slow(texts: list[str]) -> object:
        time.sleep(2.0)
        return real(texts)

    monkeypatch.setattr(tokenizer, "encode_content", slow)
    batcher.start()
    try:
        rng = np.random.default_rng(5)
        request = ScoreRequest([_text(rng, 40) for _ in range(40)], [_text(rng, 40)] * 40)
        batcher.submit(request, timeout=120.0).future.result(timeout=120)
    finally:
        batcher.stop()
    assert batcher.rate is not None
    assert batcher.rate > SLICE_ROWS / 2.0, batcher.rate  # over what a 2 s step could give


def test_cancelled_work_keeps_its_slices_in_the_cache() -> None:
    scorer = BERTScorer(batch_size=8)
    batcher = _batcher(scorer)
    batcher.start()
    try:
        rng = np.random.default_rng(5)
        request = ScoreRequest([_text(rng, 30) for _ in range(300)], [_text(rng, 30)] * 300)
        job = batcher.submit(request)
        deadline = time.monotonic() + 60
        while len(scorer.pipeline.cache) < 20 and time.monotonic() < deadline:
            time.sleep(0.01)
        job.abandon()
        deadline = time.monotonic() + 60
        while batcher.in_progress and time.monotonic() < deadline:
            time.sleep(0.01)
        kept = len(scorer.pipeline.cache)
        assert batcher.cancelled + batcher.skipped == 1 and kept >= 20
        assert kept < len(request.texts())  # stopped before the end
    finally:
        batcher.stop()


def _finish_order(jobs: dict[str, Job]) -> list[str]:
    order: list[str] = []
    lock = threading.Lock()
    for name, job in jobs.items():

        def done(_future: object, name: str = name) -> None:
            with lock:
                order.append(name)

        job.future.add_done_callback(done)
    return order


def _run_to_end(batcher: Batcher, jobs: dict[str, Job], timeout: float) -> list[str]:
    """Start ``batcher`` on the queued ``jobs``, wait for all, stop it: their finishing order."""
    order = _finish_order(jobs)
    batcher.start()
    try:
        for job in jobs.values():
            job.future.result(timeout=timeout)
    finally:
        batcher.stop()
    return order


def test_small_requests_are_batched_one_client_in_turn() -> None:
    """Client a queued 24 small requests before client b's one: b's goes in the first batch
    (clients in turn), not behind six batches of a's."""
    batcher = Batcher(RequestScorer(BERTScorer()), max_batch=4, max_wait=0.001)
    batcher.calibrate = lambda: None  # type: ignore[method-assign]
    jobs = {f"a{i}": batcher.submit(ScoreRequest([f"a cat {i}"], ["the cat"]), client="a")
            for i in range(24)}  # fmt: skip
    jobs["b"] = batcher.submit(ScoreRequest(["a dog"], ["the dog"]), client="b")
    order = _run_to_end(batcher, jobs, 120)
    assert order.index("b") < 4, order


def test_a_batch_of_small_requests_holds_at_most_one_slice() -> None:
    """Small requests of about 500 token rows each, from six clients: batched together they
    were up to ``max_batch`` slices of work ahead of the next request; now a batch holds one
    slice of rows (its first request whatever its size)."""
    scorer = RequestScorer(BERTScorer())
    batcher = Batcher(scorer, max_batch=8, max_wait=0.001)
    batcher.calibrate = lambda: None  # type: ignore[method-assign]
    sizes: list[int] = []
    real = scorer.score_batch

    def recorded(requests: list[ScoreRequest]) -> list:
        sizes.append(sum(scorer.rows_of(r) for r in requests))
        return real(requests)

    scorer.score_batch = recorded  # type: ignore[method-assign]
    rng = np.random.default_rng(8)
    jobs = {}
    for i in range(6):
        request = ScoreRequest([_text(rng, 240)], [_text(rng, 240)])
        assert not scorer.plan(request)  # small, about 500 rows
        jobs[f"c{i}"] = batcher.submit(request, client=f"c{i}")
    _run_to_end(batcher, jobs, 120)
    assert len(sizes) >= 3 and max(sizes) <= SLICE_ROWS, sizes


def test_a_small_request_goes_before_slices_from_many_addresses() -> None:
    """Eight addresses each queued a request of about a slice of rows; a one-pair request
    from a ninth went behind all eight in turn (p50 1.3 to 2.3 s under attack): the smallest
    goes first, in the first batch after the one in hand."""
    scorer = RequestScorer(BERTScorer())
    batcher = Batcher(scorer, max_batch=8, max_wait=0.001)
    batcher.calibrate = lambda: None  # type: ignore[method-assign]
    rng = np.random.default_rng(11)
    jobs = {}
    for i in range(8):
        request = ScoreRequest([_text(rng, 480)], [_text(rng, 480)])
        assert not scorer.plan(request)
        jobs[f"h{i}"] = batcher.submit(request, client=f"10.0.0.{i}")
    jobs["honest"] = batcher.submit(ScoreRequest(["a cat"], ["the cat"]), client="10.0.0.99")
    order = _run_to_end(batcher, jobs, 120)
    assert order.index("honest") <= 1, order


def test_large_requests_take_turns_between_clients() -> None:
    """Client a's three large requests and client b's one, all waiting: their slices go to a
    and b in turn, so b's finishes before a's second and third."""
    scorer = BERTScorer(batch_size=8)
    batcher = _batcher(scorer)
    batcher.calibrate = lambda: None  # type: ignore[method-assign]
    rng = np.random.default_rng(7)

    def large() -> ScoreRequest:
        return ScoreRequest([_text(rng, 40) for _ in range(24)], [_text(rng, 40)] * 24)

    jobs = {f"a{i}": batcher.submit(large(), client="a") for i in range(3)}
    jobs["b"] = batcher.submit(large(), client="b")
    order = _run_to_end(batcher, jobs, 300)
    assert order.index("b") <= 1, order
