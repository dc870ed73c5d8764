"""The server's batching without HTTP: ``Batcher`` (bounded batches, cancelled requests skipped,
a stop that answers what is queued) and ``RequestScorer`` (each request as ``score()``)."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

from rust_bertscore import BERTScorer, score
from rust_bertscore.integrations.server.batching import (
    RequestScorer,
    ScoreRequest,
    ScoreResult,
)
from rust_bertscore.integrations.server.scheduler import Batcher


class Recorder:
    """Stands in for a RequestScorer: records batch sizes; blocks until released."""

    def __init__(self) -> None:
        self.sizes: list[int] = []
        self.release = threading.Event()
        self.started = threading.Event()

    def watch(self, check: Any) -> None:
        pass

    def plan(self, request: ScoreRequest) -> None:
        return None  # every request small: scored in batches

    def rows_of(self, request: ScoreRequest) -> int:
        return len(request.cands)  # a few rows each: the batches are bounded by max_batch

    def score_batch(self, requests: list[ScoreRequest]) -> list[Any]:
        self.started.set()
        self.release.wait(30)
        self.sizes.append(len(requests))
        out: list[Any] = []
        for r in requests:
            if r.cands == ["boom"]:
                out.append(ValueError("boom"))
            else:
                n = np.float32(len(r.cands))
                out.append(ScoreResult(np.array([n]), np.array([n]), np.array([n]), []))
        return out


def _request(k: int) -> ScoreRequest:
    return ScoreRequest(["x"] * k, ["y"] * k)


def test_batches_are_bounded_and_cancelled_requests_skipped() -> None:
    rec = Recorder()
    batcher = Batcher(rec, max_batch=3, max_wait=0.0)  # type: ignore[arg-type]
    batcher.start()
    try:
        first = batcher.submit(_request(1)).future
        assert rec.started.wait(30)  # the worker holds the first request
        futures = [batcher.submit(_request(k)).future for k in range(2, 9)]
        futures[1].cancel()  # its caller left before scoring began
        rec.release.set()
        assert first.result(30).P[0] == 1
        for k, f in enumerate(futures, start=2):
            if k == 3:
                assert f.cancelled()
            else:
                assert f.result(30).P[0] == k
    finally:
        batcher.stop(30)
    assert rec.sizes[0] == 1 and max(rec.sizes) <= 3
    assert sum(rec.sizes) == 7 and batcher.skipped == 1


def test_an_error_goes_to_its_request_only() -> None:
    rec = Recorder()
    rec.release.set()
    batcher = Batcher(rec, max_batch=8, max_wait=0.2)  # type: ignore[arg-type]
    batcher.start()
    try:
        bad = batcher.submit(ScoreRequest(["boom"], ["y"])).future
        good = batcher.submit(_request(2)).future
        with pytest.raises(ValueError, match="boom"):
            bad.result(30)
        assert good.result(30).P[0] == 2
    finally:
        batcher.stop(30)


def test_stop_answers_what_is_queued() -> None:
    rec = Recorder()
    batcher = Batcher(rec, max_batch=2, max_wait=0.0)  # type: ignore[arg-type]
    batcher.start()
    first = batcher.submit(_request(1)).future
    assert rec.started.wait(30)
    queued = [batcher.submit(_request(k)).future for k in (2, 3, 4)]
    stopper = threading.Thread(target=batcher.stop, args=(30,))
    stopper.start()
    rec.release.set()
    stopper.join(30)
    assert [f.result(0).P[0] for f in [first, *queued]] == [1, 2, 3, 4]


def test_bad_settings() -> None:
    with pytest.raises(ValueError, match="max_batch"):
        Batcher(Recorder(), max_batch=0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_wait"):
        Batcher(Recorder(), max_wait=-1)  # type: ignore[arg-type]


def test_request_scorer_equals_score_per_request_and_shares_encoding() -> None:
    scorer = BERTScorer()
    rs = RequestScorer(scorer)
    a = ScoreRequest(["ok"], ["the quick brown fox jumps over the lazy dog"])
    b = ScoreRequest(["a much longer candidate sentence about many other things"], ["short"])
    c = ScoreRequest(["the cat", "a dog"], [["a cat sat", "cats"], ["dogs run"]])
    encoded = scorer.pipeline.vector_source.encoded
    results = rs.score_batch([a, b, c])
    # every distinct text encoded once, in the shared pass
    assert scorer.pipeline.vector_source.encoded - encoded == 9
    assert rs.encoded_batches == 1
    for request, result in zip((a, b, c), results):
        assert isinstance(result, ScoreResult)
        want = score(request.cands, request.refs)
        for got, expected in zip((result.P, result.R, result.F), want):
            np.testing.assert_array_equal(got, expected)
    # a request the scorer refuses fails alone
    bad = ScoreRequest(["a"], [["b"], ["c"]])
    out = rs.score_batch([a, bad])
    assert isinstance(out[0], ScoreResult) and isinstance(out[1], ValueError)


def test_request_scorer_idf_is_per_request() -> None:
    rs = RequestScorer(BERTScorer(idf=True))
    a = ScoreRequest(["the cat sat on the mat"], ["a cat sat on a mat"])
    b = ScoreRequest(["the the the dog"], ["the dog ran away from the cat"])
    for request, result in zip((a, b), rs.score_batch([a, b])):
        assert isinstance(result, ScoreResult)
        np.testing.assert_array_equal(result.F, score(request.cands, request.refs, idf=True)[2])


def test_each_text_is_tokenised_once_per_batch() -> None:
    scorer = BERTScorer()
    rs = RequestScorer(scorer)
    tokens = scorer.pipeline.tokens
    seen: list[str] = []
    tokenize = tokens._tokenize

    def counting(texts: Any) -> Any:
        seen.extend(texts)
        return tokenize(texts)

    tokens._tokenize = counting  # type: ignore[method-assign]
    a = ScoreRequest(["the cat sat on a mat"], ["a cat sat"])
    b = ScoreRequest(["a dog ran"], [["the dog ran", "a cat sat"]])
    results = rs.score_batch([a, b])
    # the shared encoding tokenises each distinct text; the scoring of each request reuses them
    assert sorted(seen) == sorted({*a.texts(), *b.texts()})
    assert tokens.memo is None  # the memo lives for one batch only
    for request, result in zip((a, b), results):
        assert isinstance(result, ScoreResult)
        np.testing.assert_array_equal(result.F, score(request.cands, request.refs)[2])


def test_a_fault_in_choosing_a_batch_answers_its_requests_and_the_worker_goes_on() -> None:
    """A scorer double without ``rows_of`` made the worker thread die on its first batch, and
    every request waited for its timeout: now those requests get the error, and the next one
    is served."""
    rec = Recorder()
    rec.release.set()
    rows_of = Recorder.rows_of
    try:
        Recorder.rows_of = None  # type: ignore[assignment,method-assign]  # calling it fails
        batcher = Batcher(rec, max_batch=8, max_wait=0.0)  # type: ignore[arg-type]
        batcher.start()
        failed = batcher.submit(_request(1)).future
        with pytest.raises(TypeError):
            failed.result(30)
    finally:
        Recorder.rows_of = rows_of  # type: ignore[method-assign]
    try:
        assert batcher.submit(_request(2)).future.result(30).P[0] == 2
    finally:
        batcher.stop(30)
