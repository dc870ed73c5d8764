"""The encoder's arena (``stages.arena.Arena``): packed outputs reuse a kept buffer only when
nothing refers to it, so no array handed out is ever overwritten under its holder."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import rust_bertscore as rb
from rust_bertscore.stages import arena as arena_module
from rust_bertscore.stages.arena import Arena

needs_refcounts = pytest.mark.skipif(
    not arena_module.REUSABLE, reason="free-threaded build: the arena never reuses"
)


@needs_refcounts
def test_a_buffer_is_reused_once_its_view_is_gone() -> None:
    arena = Arena()
    a = arena.take((100, 8))
    a[:] = 1.0
    b = arena.take((100, 8))
    assert not np.shares_memory(a, b)
    del a
    c = arena.take((50, 8))
    assert arena.kept == 2 and not np.shares_memory(b, c)


@pytest.mark.parametrize(
    "keep_alive",
    [
        lambda a: a[3:],  # a slice
        lambda a: a.reshape(-1),  # a reshaped view
        lambda a: a[::2].T,  # a view of a view
        memoryview,  # the buffer protocol
        lambda a: np.asarray(a),  # the same array again
        lambda a: np.frombuffer(a.data, dtype=np.float32),
    ],
)
@needs_refcounts
def test_any_view_keeps_its_buffer_from_reuse(keep_alive) -> None:  # type: ignore[no-untyped-def]
    arena = Arena(keep=1)
    a = arena.take((64, 4))
    a[:] = 7.0
    held = keep_alive(a)
    del a
    for _ in range(3):
        other = arena.take((64, 4))
        other[:] = -1.0
        assert not np.shares_memory(np.asarray(held), other)
    assert np.all(np.asarray(held) == 7.0)


def test_requests_past_the_kept_bytes_are_not_kept() -> None:
    arena = Arena(keep=2, keep_bytes=1024)
    big = arena.take((1000,))
    assert big.shape == (1000,) and arena.kept == 0
    small = arena.take((10, 10))
    assert small.dtype == np.float32 and arena.kept == (1 if arena_module.REUSABLE else 0)


@needs_refcounts
def test_at_most_keep_buffers_and_free_small_ones_make_room() -> None:
    arena = Arena(keep=2, keep_bytes=4 * 1000)
    a, b = arena.take((100,)), arena.take((100,))
    del a
    c = arena.take((700,))  # drops the free 100, keeps b and c
    assert arena.kept == 2 and not np.shares_memory(b, c)
    d = arena.take((800,))  # b and c are held: fresh, not kept
    assert arena.kept == 2 and not np.shares_memory(d, c)


@needs_refcounts
def test_threads_never_share_a_live_buffer() -> None:
    arena = Arena(keep=4)
    held: list[np.ndarray] = []
    lock = threading.Lock()
    barrier = threading.Barrier(4)

    def work(k: int) -> None:
        for _ in range(200):
            x = arena.take((256,))
            x[:] = k
            barrier.wait() if _ == 0 else None
            assert np.all(x == k)
            with lock:
                if len(held) < 8:
                    held.append(x)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, x in enumerate(held):
        for y in held[i + 1 :]:
            assert not np.shares_memory(x, y)


def test_encoder_output_is_unchanged_and_earlier_results_survive() -> None:
    scorer = rb.BERTScorer(cache_bytes=0)
    encoder, tokenizer = scorer.runtime.encoder, scorer.runtime.tokenizer
    first_ids = tokenizer.encode(["the cat sat on the mat", "a dog", "rain again today"])
    first = encoder.embed_packed(first_ids, 2)
    kept = first.data.copy()
    for _ in range(3):  # later calls while ``first`` is held: it must not change
        encoder.embed_packed(tokenizer.encode(["other words here", "and more"]), 2)
    assert np.array_equal(first.data, kept)
    del first
    again = encoder.embed_packed(first_ids, 2)  # on reused memory: the same vectors
    np.testing.assert_array_equal(again.data, kept)
