"""The Rust kernel (rust_bertscore._core) against the NumPy reference in kernel_reference.py."""

from __future__ import annotations

import math
import threading
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import kernel_reference as ref
from rust_bertscore import _core

TOL = 1e-5
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# -- helpers ---------------------------------------------------------------------------------


def assert_scores(got, want: np.ndarray, tol: float = TOL) -> None:
    """``got`` (P, R, F float32 arrays) equals ``want`` (3, ...) within ``tol``.

    F is compared where P and R have the same sign: elsewhere 2PR/(P+R) is ill-conditioned
    (P + R near 0 amplifies float32 rounding without bound) and not a meaningful mean anyway.
    """
    p, r, f = got
    for x in (p, r, f):
        assert x.dtype == np.float32
        assert x.shape == want.shape[1:]
    np.testing.assert_allclose(p, want[0], rtol=tol, atol=tol)
    np.testing.assert_allclose(r, want[1], rtol=tol, atol=tol)
    same_sign = want[0] * want[1] >= 0
    np.testing.assert_allclose(f[same_sign], want[2][same_sign], rtol=tol, atol=tol)


@st.composite
def text_sets(draw, min_texts: int = 1, max_texts: int = 5, raw: bool = False):
    """Texts of one random dim: (embeddings float32 (tokens, dim), weights or None).

    Raw dot products (``raw``) draw values in [-1, 1] so that float32 sums stay within 1e-5.
    """
    dim = draw(st.integers(1, 8))
    bound = 1.0 if raw else 10.0
    values = st.floats(-bound, bound, width=32, allow_nan=False)
    weights = st.floats(0.0, 5.0, width=32, allow_nan=False)
    texts = []
    for _ in range(draw(st.integers(min_texts, max_texts))):
        tokens = draw(st.integers(0, 6))
        emb = draw(arrays(np.float32, (tokens, dim), elements=values))
        w = draw(st.none() | arrays(np.float32, (tokens,), elements=weights))
        texts.append((emb, w))
    return texts


def embeddings(texts):
    return [t[0] for t in texts]


def weights(texts):
    return [t[1] for t in texts]


def ragged(texts):
    """One (total, dim) array, int64 offsets and float32 weights (ones where None)."""
    dim = texts[0][0].shape[1]
    data = np.concatenate([e for e, _ in texts]) if texts else np.zeros((0, dim), np.float32)
    lengths = [len(e) for e, _ in texts]
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    w = [np.ones(len(e), np.float32) if w is None else w for e, w in texts]
    return np.ascontiguousarray(data, dtype=np.float32), offsets, np.concatenate(w)


def random_texts(n: int, dim: int = 16, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [
        rng.standard_normal((int(rng.integers(1, 12)), dim)).astype(np.float32) for _ in range(n)
    ]


# -- the reval example -----------------------------------------------------------------------


def test_reval_example():
    # ExampleBERTScore of reval (github.com/itsubaki/reval, bert_score_test.go; it is a Go
    # module, documented on pkg.go.dev, not a PyPI package): raw dot products, printed
    # "0.8600, 0.7700, 0.8125". By hand: dots [[0.14, 0.50], [0.32, 1.22]], P = (0.50 + 1.22)/2,
    # R = (0.32 + 1.22)/2, F = 2PR/(P+R) = 0.81252.
    c = np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])
    r = np.array([[0.1, 0.2, 0.3], [0.7, 0.8, 0.9]])
    p, rec, f = _core.score_embeddings([c], [r], normalize=False)
    assert f"{p[0]:.4f}, {rec[0]:.4f}, {f[0]:.4f}" == "0.8600, 0.7700, 0.8125"
    assert p[0] == pytest.approx(0.86, abs=1e-6)
    assert rec[0] == pytest.approx(0.77, abs=1e-6)
    assert f[0] == pytest.approx(2 * 0.86 * 0.77 / 1.63, abs=1e-6)


def test_reval_edge_cases():
    # reval's TestBERTScore: an empty side gives 0; identical unit vectors give 1.
    one = np.array([[0.1, 0.2, 0.3]])
    empty = np.zeros((0, 3))
    assert_scores(_core.score_embeddings([empty, one], [one, empty]), np.zeros((3, 2)))
    same = np.array([[0.6, 0.8]])
    assert_scores(_core.score_embeddings([same], [same], normalize=False), np.ones((3, 1)))


# -- against the reference -------------------------------------------------------------------


@SETTINGS
@given(texts=text_sets(max_texts=6), normalize=st.booleans(), data=st.data())
def test_score_embeddings_matches_reference(texts, normalize, data):
    if not normalize:
        texts = data.draw(text_sets(max_texts=6, raw=True))
    cands, refs = texts, texts[::-1]
    got = _core.score_embeddings(
        embeddings(cands), embeddings(refs), weights(cands), weights(refs), normalize=normalize
    )
    want = ref.score_pairs(
        embeddings(cands), embeddings(refs), weights(cands), weights(refs), normalize
    )
    assert_scores(got, want)


@SETTINGS
@given(texts=text_sets(min_texts=2, max_texts=7))
def test_pairwise_matches_reference(texts):
    cands, refs = texts[: len(texts) // 2], texts[len(texts) // 2 :]
    got = _core.pairwise_embeddings(
        embeddings(cands), embeddings(refs), weights(cands), weights(refs)
    )
    want = ref.pairwise(embeddings(cands), embeddings(refs), weights(cands), weights(refs))
    assert_scores(got, want)


@SETTINGS
@given(texts=text_sets(max_texts=6), data=st.data())
def test_score_ragged_matches_reference(texts, data):
    n = len(texts)
    index = st.integers(0, n - 1)
    pairs = data.draw(st.lists(st.tuples(index, index), max_size=12))
    pair_cand = np.array([c for c, _ in pairs], dtype=np.int64)
    pair_ref = np.array([r for _, r in pairs], dtype=np.int64)
    flat, offsets, w = ragged(texts)
    got = _core.score_ragged(flat, offsets, w, pair_cand, pair_ref)
    cands, refs = [texts[c] for c in pair_cand], [texts[r] for r in pair_ref]
    want = ref.score_pairs(
        embeddings(cands), embeddings(refs), weights(cands), weights(refs)
    ).reshape(3, len(pairs))
    assert_scores(got, want)


@SETTINGS
@given(texts=text_sets(min_texts=2, max_texts=6))
def test_pairwise_ragged_matches_reference(texts):
    flat, offsets, w = ragged(texts)
    cands = np.arange(len(texts))[::2].astype(np.int64)
    refs = np.arange(len(texts))[::-1].astype(np.int64)
    got = _core.pairwise_ragged(flat, offsets, w, cands, refs)
    cand_texts, ref_texts = [texts[i] for i in cands], [texts[j] for j in refs]
    want = ref.pairwise(
        embeddings(cand_texts), embeddings(ref_texts), weights(cand_texts), weights(ref_texts)
    )
    assert_scores(got, want)


def test_all_pairs_equals_one_to_one():
    cands, refs = random_texts(9, seed=1), random_texts(13, seed=2)
    p, r, f = _core.pairwise_embeddings(cands, refs)
    assert p.shape == (9, 13)
    ii, jj = np.meshgrid(np.arange(9), np.arange(13), indexing="ij")
    one = _core.score_embeddings([cands[i] for i in ii.ravel()], [refs[j] for j in jj.ravel()])
    for got, want in zip((p, r, f), one):
        np.testing.assert_allclose(got.ravel(), want, rtol=TOL, atol=TOL)


def test_weights_lists_may_hold_none():
    texts = random_texts(3, seed=3)
    w = [None, np.ones(len(texts[1])), None]
    got = _core.score_embeddings(texts, texts[::-1], w, None)
    assert_scores(got, ref.score_pairs(texts, texts[::-1], w, None))


def test_empty_sides_and_zero_weights_score_zero():
    a = np.eye(3, dtype=np.float32)
    empty = np.zeros((0, 3), np.float32)
    got = _core.score_embeddings(
        [a, empty, a, a, empty], [empty, a, a, a, empty], [None, None, np.zeros(3), None, None]
    )
    want = np.zeros((3, 5))
    want[:, 3] = 1.0
    assert_scores(got, want)


def test_zero_vectors_are_finite():
    z = np.zeros((4, 5), np.float32)
    a = np.ones((2, 5), np.float32)
    for got in _core.score_embeddings([z, z, a], [z, a, z]):
        assert np.isfinite(got).all()
        np.testing.assert_array_equal(got, 0.0)


def test_empty_batches():
    p, r, f = _core.score_embeddings([], [])
    assert p.shape == r.shape == f.shape == (0,) and p.dtype == np.float32
    p, _, _ = _core.pairwise_embeddings([], [np.ones((2, 3))])
    assert p.shape == (0, 1)
    data = np.zeros((0, 4), np.float32)
    p, _, _ = _core.score_ragged(data, np.array([0]), None, np.array([], np.int64), [])
    assert p.shape == (0,)


# -- input forms -----------------------------------------------------------------------------


def test_float64_is_converted_to_float32():
    texts = random_texts(5, seed=4)
    as64 = [t.astype(np.float64) for t in texts]
    w64 = [np.linspace(0.5, 1.5, len(t)) for t in texts]
    w32 = [w.astype(np.float32) for w in w64]
    for a, b in zip(
        _core.score_embeddings(texts, texts[::-1], w32, w32[::-1]),
        _core.score_embeddings(as64, as64[::-1], w64, w64[::-1]),
    ):
        np.testing.assert_array_equal(a, b)
    flat, offsets, w = ragged([(t, None) for t in texts])
    pairs = np.arange(5, dtype=np.int64)
    for a, b in zip(
        _core.score_ragged(flat, offsets, w, pairs, pairs[::-1]),
        _core.score_ragged(
            flat.astype(np.float64), offsets, w.astype(np.float64), pairs, pairs[::-1]
        ),
    ):
        np.testing.assert_array_equal(a, b)


def test_strided_fortran_reversed_and_readonly_arrays():
    rng = np.random.default_rng(5)
    big = rng.standard_normal((10, 32)).astype(np.float32)
    variants = {
        "every other column": big[:, ::2],
        "every other row": big[::2, :16],
        "reversed rows": big[::-1, 5:21],
        "fortran order": np.asfortranarray(big[:, :16]),
    }
    readonly = big[:, 16:].copy()
    readonly.setflags(write=False)
    variants["read-only"] = readonly
    other = rng.standard_normal((7, 16)).astype(np.float32)
    for name, v in variants.items():
        want = _core.score_embeddings([np.ascontiguousarray(v)], [other])
        got = _core.score_embeddings([v], [other])
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7, err_msg=name)
    flat = np.ascontiguousarray(big[:, ::2])
    offsets = np.array([0, 4, 10])
    want = _core.score_ragged(flat, offsets, None, [0, 1], [1, 0])
    got = _core.score_ragged(big[:, ::2], offsets, None, [0, 1], [1, 0])
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    flat.setflags(write=False)
    np.testing.assert_allclose(_core.score_ragged(flat, offsets, None, [0], [1])[0], want[0][:1])


def test_index_arrays_of_other_integer_types_and_lists():
    texts = random_texts(3, seed=6)
    flat, offsets, w = ragged([(t, None) for t in texts])
    want = _core.score_ragged(flat, offsets, w, np.array([0, 2]), np.array([1, 1]))
    got = _core.score_ragged(flat, offsets.astype(np.int32), w, [0, 2], np.array([1, 1], np.uint8))
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


# -- reductions, vectors, IDF ----------------------------------------------------------------


@SETTINGS
@given(
    scores=arrays(
        np.float32, st.tuples(st.just(3), st.integers(1, 12)), elements=st.floats(-1, 1, width=32)
    ),
    data=st.data(),
)
def test_multi_ref_max_matches_reference(scores, data):
    n = scores.shape[1]
    cuts = sorted(set(data.draw(st.lists(st.integers(1, n - 1), max_size=4)))) if n > 1 else []
    offsets = [0, *cuts, n]
    got = _core.multi_ref_max(scores[0], scores[1], scores[2], np.array(offsets))
    np.testing.assert_array_equal(np.stack(got), ref.multi_ref_max(scores, offsets))
    np.testing.assert_array_equal(np.stack(got), np.maximum.reduceat(scores, offsets[:-1], axis=1))


def test_rescale_matches_reference():
    x = np.array([[0.9, 0.8], [1.0, 0.7]], dtype=np.float32)
    for b in (0.8, 0.0, -0.5):
        got = _core.rescale(x, b)
        assert got.dtype == np.float32 and got.shape == x.shape
        np.testing.assert_allclose(got, ref.rescale(x, b), rtol=1e-6, atol=1e-6)
    # float64 input is rounded to float32 first (0.9 -> 0.89999998).
    np.testing.assert_allclose(_core.rescale(np.full(3, 0.9), 0.8), [0.5] * 3, rtol=1e-6)


def test_vector_functions():
    a = np.array([3.0, 4.0])
    assert _core.l2_norm(a) == 5.0
    np.testing.assert_allclose(_core.normalize(a), [0.6, 0.8])
    np.testing.assert_array_equal(_core.normalize(np.zeros(3)), np.zeros(3))
    assert _core.dot(np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0])) == 32.0
    rng = np.random.default_rng(7)
    m, n = rng.standard_normal((5, 6)), rng.standard_normal((5, 6))
    m[2] = 0.0
    np.testing.assert_allclose(_core.l2_norm(m), np.linalg.norm(m, axis=1), rtol=1e-6)
    np.testing.assert_allclose(_core.normalize(m), ref.normalize_rows(m), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(_core.dot(m, n), (m * n).sum(axis=1), rtol=1e-5, atol=1e-6)
    assert isinstance(_core.l2_norm(a), float) and isinstance(_core.dot(a, a), float)
    assert _core.normalize(m.astype(np.float32)).dtype == np.float32


def test_idf_by_hand():
    docs = [[1, 2, 2, 3], [2, 4], [3, 3, 5]]
    # M = 3 documents. df: 1 -> 1, 2 -> 2, 3 -> 2, 4 -> 1, 5 -> 1 (repeats within a document
    # count once). idf = ln((M + 1) / (df + 1)): ln(4/2) for df 1, ln(4/3) for df 2.
    want = {1: math.log(2), 2: math.log(4 / 3), 3: math.log(4 / 3), 4: math.log(2), 5: math.log(2)}
    got = _core.idf_weights(docs)
    assert got.keys() == want.keys()
    for token, value in want.items():
        assert got[token] == pytest.approx(value, rel=1e-12)
    assert _core.idf_default(3) == pytest.approx(math.log(4))
    assert got == pytest.approx(ref.idf(docs))
    ids, values = _core.idf_table(docs)
    assert ids.dtype == np.int64 and values.dtype == np.float64
    assert ids.tolist() == [1, 2, 3, 4, 5]
    np.testing.assert_allclose(values, [want[i] for i in ids.tolist()])


def test_idf_options_and_array_documents():
    rng = np.random.default_rng(8)
    docs = [rng.integers(0, 50, size=int(rng.integers(0, 30))) for _ in range(700)]
    want = ref.idf([d.tolist() for d in docs], num_docs=1000)
    for threads in (1, None):
        got = _core.idf_weights(docs, 1000, num_threads=threads)
        assert got == pytest.approx(want)
    assert _core.idf_weights([]) == {}
    assert _core.idf_default(0) == 0.0


# -- threads and the GIL ---------------------------------------------------------------------


def test_thread_settings():
    before = _core.get_num_threads()
    assert before >= 1
    try:
        _core.set_num_threads(1)
        assert _core.get_num_threads() == 1
        _core.set_num_threads(2)
        assert _core.get_num_threads() == 2
    finally:
        _core.set_num_threads(before)
    assert _core.NUM_THREADS_ENV == "RUST_BERTSCORE_NUM_THREADS"


def test_thread_counts_give_identical_scores():
    texts = random_texts(300, dim=64, seed=9)
    serial = _core.score_embeddings(texts, texts[::-1], num_threads=1)
    for threads in (None, 2):
        for a, b in zip(serial, _core.score_embeddings(texts, texts[::-1], num_threads=threads)):
            np.testing.assert_array_equal(a, b)
    serial = _core.pairwise_embeddings(texts[:40], texts, num_threads=1)
    for a, b in zip(serial, _core.pairwise_embeddings(texts[:40], texts)):
        np.testing.assert_array_equal(a, b)


def test_gil_is_released_during_pairwise():
    rng = np.random.default_rng(10)
    texts = [rng.standard_normal((32, 256)).astype(np.float32) for _ in range(64)]

    def call(cands):
        start = time.perf_counter()
        _core.pairwise_embeddings(cands, texts, num_threads=1)
        return start, time.perf_counter()

    # Make one call last at least ~0.4 s on this machine, so that the window checked below is
    # far longer than the interpreter's switch interval (5 ms).
    start, end = call(texts)
    cands = texts * max(1, math.ceil(0.4 / max(end - start, 1e-3)))

    stamps: list[float] = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            stamps.append(time.perf_counter())
            time.sleep(0.0005)

    thread = threading.Thread(target=ticker)
    thread.start()
    try:
        time.sleep(0.05)
        start, end = call(cands)
    finally:
        stop.set()
        thread.join()
    # With the GIL held through the call, the ticker could not run between entering and leaving
    # it; only the 10 % margins allow for a switch just before or after.
    margin = 0.1 * (end - start)
    inside = [s for s in stamps if start + margin < s < end - margin]
    assert len(inside) >= 10, (len(inside), end - start)
