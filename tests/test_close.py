"""No hidden process-wide state: ``BERTScorer.close()``, the context manager and
``rust_bertscore.clear_cache()`` release the ONNX Runtime sessions (checked by weak references to
the sessions), a closed scorer says so, and a scorer sharing the closed one's model keeps
working."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import rust_bertscore as rb
from conftest import TINY_BERT
from rust_bertscore.distributed import BERTScoreBatch
from rust_bertscore.distributed.passes import load_tokenizer
from rust_bertscore.models.runtime import RUNTIMES
from rust_bertscore.store import EmbeddingStore

CANDS = ["the cat sat on the mat", "dogs run in the park"]
REFS = ["a cat sat on a mat", "a dog ran"]


@pytest.fixture(autouse=True)
def empty_caches() -> Iterator[None]:
    rb.clear_cache()
    yield
    rb.clear_cache()


def scorer(**options: object) -> rb.BERTScorer:
    return rb.BERTScorer(model_type=TINY_BERT, device="cpu", **options)  # type: ignore[arg-type]


def session_of(s: rb.BERTScorer) -> weakref.ref:
    return weakref.ref(s.runtime.encoder.session)


def test_close_and_clear_cache_free_the_session() -> None:
    s = scorer()
    s.score(CANDS, REFS)
    assert len(s.cache) > 0
    session = session_of(s)
    assert RUNTIMES.cache_info().currsize == 1
    s.close()
    rb.clear_cache()
    assert RUNTIMES.cache_info().currsize == 0
    gc.collect()
    assert session() is None
    assert s.closed


def test_close_alone_evicts_a_runtime_no_one_else_uses() -> None:
    s = scorer()
    session = session_of(s)
    cache = s.cache
    s.score(CANDS, REFS)
    s.close()
    assert RUNTIMES.cache_info().currsize == 0
    assert len(cache) == 0  # the scorer's encoded texts went too
    gc.collect()
    assert session() is None


def test_a_pipeline_held_elsewhere_lets_go_of_the_session() -> None:
    s = scorer()
    pipeline = s.pipeline  # e.g. an analysis that kept it
    session = session_of(s)
    s.close()
    gc.collect()
    assert session() is None
    with pytest.raises(rb.ScorerClosedError):
        pipeline.encode_ids(CANDS)
    with pytest.raises(rb.ScorerClosedError):
        pipeline.vector_source  # noqa: B018


def test_a_closed_scorer_says_so() -> None:
    s = scorer(idf=True, idf_sents=REFS)
    before = (s.num_layers, s.precision, s.use_fast_tokenizer, s.hash, s.block_pairs, s.round_bytes)
    s.close()
    s.close()  # twice is fine
    calls = {
        "score": lambda: s.score(CANDS, REFS),
        "embed": lambda: s.embed(CANDS),
        "pairwise": lambda: s.pairwise(CANDS, REFS),
        "align": lambda: s.align(CANDS[0], REFS[0]),
        "similarity_matrix": lambda: s.similarity_matrix(CANDS[0], REFS[0]),
        "mbr": lambda: s.mbr(CANDS),
        "compute_idf": lambda: s.compute_idf(REFS),
        "signature": lambda: s.signature,  # digests the model's files
        "tokenizer": lambda: s.tokenizer,
        "pipeline": lambda: s.pipeline,
    }
    for name, call in calls.items():
        with pytest.raises(rb.ScorerClosedError, match="was closed") as caught:
            call()
        assert isinstance(caught.value, RuntimeError), name
        assert isinstance(caught.value, rb.RustBertScoreError), name
    assert s.model_type == TINY_BERT  # settings stay readable
    after = (s.num_layers, s.precision, s.use_fast_tokenizer, s.hash, s.block_pairs, s.round_bytes)
    assert after == before and before[:3] == (3, "fp32", False)
    assert (s.idf, s.lang, s.all_layers) == (True, None, False)
    assert repr(s).endswith("closed)")


def test_with_closes_the_scorer() -> None:
    with scorer() as s:
        *_, F = s.score(CANDS, REFS)
        session = session_of(s)
    assert s.closed and F.shape == (2,)
    with pytest.raises(ValueError, match="boom"), scorer() as t:
        raise ValueError("boom")
    assert t.closed
    gc.collect()
    assert session() is None


def test_closing_one_scorer_leaves_another_on_the_same_model() -> None:
    a, b = scorer(), scorer()
    assert a.runtime is b.runtime  # one cached runtime, two users
    want = a.score(CANDS, REFS)
    session = session_of(a)
    a.close()
    assert RUNTIMES.cache_info().currsize == 1  # b still uses it
    for got, expected in zip(b.score(CANDS, REFS), want):
        np.testing.assert_array_equal(got, expected)
    c = scorer()
    assert c.runtime is b.runtime  # still shared from the cache
    b.close()
    assert c.score(CANDS, REFS)[2].shape == (2,)
    c.close()
    assert RUNTIMES.cache_info().currsize == 0
    gc.collect()
    assert session() is None


def test_clear_cache_leaves_open_scorers_working() -> None:
    s = scorer()
    session = session_of(s)
    rb.clear_cache()
    assert RUNTIMES.cache_info().currsize == 0
    assert s.score(CANDS, REFS)[2].shape == (2,)  # it holds its own model
    other = scorer()
    assert other.runtime is not s.runtime  # loaded again
    s.close()
    gc.collect()
    assert session() is None
    other.close()


def test_a_scorer_dropped_unclosed_leaves_its_runtime_for_the_next() -> None:
    # score() builds a scorer per call and drops it: the next call reuses the loaded model.
    runtime = scorer().runtime
    gc.collect()
    assert RUNTIMES.cache_info().currsize == 1
    assert scorer().runtime is runtime


def test_clear_cache_empties_the_tokenizer_cache() -> None:
    load_tokenizer(TINY_BERT)
    assert load_tokenizer.cache_info().currsize == 1
    rb.clear_cache()
    assert load_tokenizer.cache_info().currsize == 0


def test_close_closes_a_store_opened_from_a_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    closed: list[str] = []  # directories, not the stores: __del__ closes them too
    real_close = EmbeddingStore.close

    def record(store: EmbeddingStore) -> None:
        closed.append(store.directory.name)
        real_close(store)

    monkeypatch.setattr(EmbeddingStore, "close", record)
    with scorer(store=tmp_path / "mine") as s:
        s.score(CANDS, REFS)
        mine = s.store  # held here: only close() closes it, not its __del__
    assert closed == ["mine"] and mine is not None
    given = EmbeddingStore(tmp_path / "given")
    with scorer(store=given) as s:
        s.score(CANDS, REFS)
    assert "given" not in closed  # the caller's store stays open
    given.close()


def test_reward_and_engine_operator_close_their_scorers() -> None:
    reward = rb.bertscore_reward(model_type=TINY_BERT, device="cpu")
    reward.close()
    with pytest.raises(rb.ScorerClosedError):
        reward(CANDS, reference=REFS)
    op = BERTScoreBatch("hyp", "ref", model_type=TINY_BERT, device="cpu")
    op({"hyp": CANDS, "ref": REFS})
    first = op.scorer
    op.close()
    assert first.closed
    assert op({"hyp": CANDS, "ref": REFS})["F"].shape == (2,)
    op.close()
    assert RUNTIMES.cache_info().currsize == 0
