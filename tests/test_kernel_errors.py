"""Bad input to the Rust kernel: the right exception, with a message naming the index and the
problem, and never a panic across the boundary."""

from __future__ import annotations

import numpy as np
import pytest

from rust_bertscore import _core

A = np.ones((3, 4), np.float32)
B = np.ones((2, 4), np.float32)


def nan_at(row: int, col: int) -> np.ndarray:
    x = A.copy()
    x[row, col] = np.nan
    return x


def inf_at(row: int) -> np.ndarray:
    x = A.copy()
    x[row, 0] = -np.inf
    return x


# (call, exception, message pattern)
SCORE_CASES = {
    "unequal lists": (
        lambda: _core.score_embeddings([A, A], [B]),
        ValueError,
        r"cands and refs must have the same length, got 2 and 1",
    ),
    "1-D candidate": (
        lambda: _core.score_embeddings([A, A[0]], [B, B]),
        ValueError,
        r"pair 1 \(candidate\): expected a 2-D array .*got shape \(4,\)",
    ),
    "3-D reference": (
        lambda: _core.score_embeddings([A], [A[None]]),
        ValueError,
        r"pair 0 \(reference\): expected a 2-D array .*got shape \(1, 3, 4\)",
    ),
    "different dims": (
        lambda: _core.score_embeddings([A, A], [B, np.ones((2, 5))]),
        ValueError,
        r"pair 1 \(candidate\) has embedding dim 4, but pair 1 \(reference\) has dim 5",
    ),
    "NaN": (
        lambda: _core.score_embeddings([A, A, nan_at(2, 1)], [A, A, A]),
        ValueError,
        r"pair 2 \(candidate\): the embedding of token 2 contains NaN or infinity",
    ),
    "inf": (
        lambda: _core.score_embeddings([A], [inf_at(1)]),
        ValueError,
        r"pair 0 \(reference\): the embedding of token 1 contains NaN or infinity",
    ),
    "float64 overflowing float32": (
        lambda: _core.score_embeddings([A.astype(np.float64) * 1e300], [A]),
        ValueError,
        r"pair 0 \(candidate\): the embedding of token 0 contains NaN or infinity",
    ),
    "weight length": (
        lambda: _core.score_embeddings([A, A], [A, B], None, [None, np.ones(3)]),
        ValueError,
        r"pair 1 \(reference\): got 3 weights for 2 tokens",
    ),
    "negative weight": (
        lambda: _core.score_embeddings([A], [A], [np.array([1.0, -0.5, 1.0])]),
        ValueError,
        r"pair 0 \(candidate\): the weight of token 1 is -0.5; weights must be finite and >= 0",
    ),
    "NaN weight": (
        lambda: _core.score_embeddings([A], [A], None, [np.array([1.0, 1.0, np.nan])]),
        ValueError,
        r"pair 0 \(reference\): the weight of token 2 is NaN",
    ),
    "weights list length": (
        lambda: _core.score_embeddings([A, A], [A, A], [None]),
        ValueError,
        r"cand_weights must have one entry per text \(2\), got 1",
    ),
    "2-D weights": (
        lambda: _core.score_embeddings([A], [A], [np.ones((3, 1))]),
        ValueError,
        r"pair 0 \(candidate\) weights: expected a 1-D array, got shape \(3, 1\)",
    ),
    "integer dtype": (
        lambda: _core.score_embeddings([A.astype(np.int64)], [A]),
        TypeError,
        r"pair 0 \(candidate\): dtype int64 is not supported; expected float32 or float64",
    ),
    "object dtype": (
        lambda: _core.score_embeddings([A], [A.astype(object)]),
        TypeError,
        r"pair 0 \(reference\): dtype object is not supported",
    ),
    "float16 dtype": (
        lambda: _core.score_embeddings([A.astype(np.float16)], [A]),
        TypeError,
        r"dtype float16 is not supported",
    ),
    "list instead of array": (
        lambda: _core.score_embeddings([A.tolist()], [A]),
        TypeError,
        r"pair 0 \(candidate\): expected a numpy.ndarray of float32 or float64, got list",
    ),
    "not a sequence": (
        lambda: _core.score_embeddings(3, [A]),
        TypeError,
        r"cands must be a sequence of arrays, got int",
    ),
    "num_threads 0": (
        lambda: _core.score_embeddings([A], [A], num_threads=0),
        ValueError,
        r"num_threads must be at least 1, got 0",
    ),
    "num_threads negative": (
        lambda: _core.pairwise_embeddings([A], [A], num_threads=-2),
        ValueError,
        r"num_threads must be at least 1, got -2",
    ),
    "pairwise dims": (
        lambda: _core.pairwise_embeddings([A, A], [B, np.ones((2, 3))]),
        ValueError,
        r"reference 1 has embedding dim 3, but candidate 0 has dim 4",
    ),
    "pairwise NaN": (
        lambda: _core.pairwise_embeddings([A, A], [B, nan_at(0, 0)]),
        ValueError,
        r"reference 1: the embedding of token 0 contains NaN or infinity",
    ),
    "pairwise negative weight": (
        lambda: _core.pairwise_embeddings([A, B], [B], [None, np.array([1.0, -1.0])]),
        ValueError,
        r"candidate 1: the weight of token 1 is -1",
    ),
}

DATA = np.ones((5, 4), np.float32)
OFFSETS = np.array([0, 2, 5], np.int64)
W = np.ones(5, np.float32)
P0 = np.array([0, 1], np.int64)

RAGGED_CASES = {
    "pair index out of range": (
        lambda: _core.score_ragged(DATA, OFFSETS, W, np.array([0, 1, 2]), np.array([1, 1, 0])),
        ValueError,
        r"pair 2: candidate index 2 is out of range for 2 texts",
    ),
    "negative pair index": (
        lambda: _core.score_ragged(DATA, OFFSETS, W, P0, np.array([1, -1])),
        ValueError,
        r"pair 1: reference index -1 is out of range for 2 texts",
    ),
    "pair arrays of different lengths": (
        lambda: _core.score_ragged(DATA, OFFSETS, W, P0, np.array([1])),
        ValueError,
        r"pair_cand and pair_ref must have the same length, got 2 and 1",
    ),
    "offsets not starting at 0": (
        lambda: _core.score_ragged(DATA, np.array([1, 2, 5]), W, P0, P0),
        ValueError,
        r"offsets: must start at 0, got 1",
    ),
    "offsets decreasing": (
        lambda: _core.score_ragged(DATA, np.array([0, 3, 2, 5]), W, P0, P0),
        ValueError,
        r"offsets: must be non-decreasing, but \[1\] = 3 > \[2\] = 2",
    ),
    "offsets not ending at total": (
        lambda: _core.score_ragged(DATA, np.array([0, 2, 4]), W, P0, P0),
        ValueError,
        r"offsets: must end at 5 \(the number of rows of data\), got 4",
    ),
    "negative offset": (
        lambda: _core.score_ragged(DATA, np.array([0, -2, 5]), W, P0, P0),
        ValueError,
        r"offsets: \[1\] is negative \(-2\)",
    ),
    "empty offsets": (
        lambda: _core.score_ragged(DATA, np.array([], np.int64), W, P0, P0),
        ValueError,
        r"offsets: is empty",
    ),
    "2-D offsets": (
        lambda: _core.score_ragged(DATA, OFFSETS[None], W, P0, P0),
        ValueError,
        r"offsets must be a 1-D integer array, got shape \(1, 3\)",
    ),
    "float offsets": (
        lambda: _core.score_ragged(DATA, OFFSETS.astype(np.float64), W, P0, P0),
        TypeError,
        r"offsets must be an integer \(int64\) array, got dtype float64",
    ),
    "weights length": (
        lambda: _core.score_ragged(DATA, OFFSETS, np.ones(4, np.float32), P0, P0),
        ValueError,
        r"weights and the rows of data must have the same length, got 4 and 5",
    ),
    "negative ragged weight": (
        lambda: _core.score_ragged(DATA, OFFSETS, -W, P0, P0),
        ValueError,
        r"text 0: the weight of token 0 is -1",
    ),
    "NaN in a text": (
        lambda: _core.score_ragged(np.vstack([DATA, nan_at(1, 2)]), [0, 2, 5, 8], None, P0, P0),
        ValueError,
        r"text 2: the embedding of token 1 contains NaN or infinity",
    ),
    "1-D data": (
        lambda: _core.score_ragged(W, OFFSETS, W, P0, P0),
        ValueError,
        r"data: expected a 2-D array",
    ),
    "integer data": (
        lambda: _core.score_ragged(DATA.astype(np.int32), OFFSETS, W, P0, P0),
        TypeError,
        r"data: dtype int32 is not supported",
    ),
    "pairwise_ragged index": (
        lambda: _core.pairwise_ragged(DATA, OFFSETS, W, [0, 1], [2]),
        ValueError,
        r"refs\[0\] = 2 is out of range for 2 texts",
    ),
}

OTHER_CASES = {
    "empty group": (
        lambda: _core.multi_ref_max(W, W, W, np.array([0, 2, 2, 5])),
        ValueError,
        r"group 1 is empty",
    ),
    "group offsets not ending at n": (
        lambda: _core.multi_ref_max(W, W, W, np.array([0, 2])),
        ValueError,
        r"group_offsets: must end at 5",
    ),
    "P, R, F of different lengths": (
        lambda: _core.multi_ref_max(W, W[:4], W, np.array([0, 5])),
        ValueError,
        r"precision and recall must have the same length, got 5 and 4",
    ),
    "baseline 1": (
        lambda: _core.rescale(W, 1.0),
        ValueError,
        r"baseline must be finite and different from 1, got 1",
    ),
    "baseline NaN": (lambda: _core.rescale(W, float("nan")), ValueError, r"baseline"),
    "dot length mismatch": (
        lambda: _core.dot(np.ones(3), np.ones(4)),
        ValueError,
        r"must have the same length, got 3 and 4",
    ),
    "dot rows mismatch": (
        lambda: _core.dot(np.ones((2, 3)), np.ones((3, 3))),
        ValueError,
        r"got 2 and 3",
    ),
    "dot 1-D with 2-D": (lambda: _core.dot(np.ones(3), np.ones((1, 3))), ValueError, r"1-D"),
    "normalize 3-D": (
        lambda: _core.normalize(np.ones((1, 2, 3))),
        ValueError,
        r"a must be a 1-D vector or a 2-D array of rows, got 3-D",
    ),
    "l2_norm of ints": (lambda: _core.l2_norm(np.arange(3)), TypeError, r"dtype int64"),
    "num_docs too small": (
        lambda: _core.idf_weights([[1], [2], [3]], 2),
        ValueError,
        r"num_docs \(2\) is smaller than the number of documents \(3\)",
    ),
    "num_docs negative": (lambda: _core.idf_table([[1]], -1), ValueError, r"num_docs must be >= 0"),
    "document of strings": (
        lambda: _core.idf_weights([[1, 2], ["a"]]),
        TypeError,
        r"docs\[1\] must be a sequence of int token ids",
    ),
    "float document array": (
        lambda: _core.idf_weights([np.ones(3)]),
        TypeError,
        r"docs\[0\] must be an integer \(int64\) array",
    ),
    "idf_default negative": (lambda: _core.idf_default(-1), ValueError, r"num_docs"),
    "set_num_threads 0": (
        lambda: _core.set_num_threads(0),
        ValueError,
        r"must be at least 1, got 0",
    ),
}


@pytest.mark.parametrize(
    ("call", "error", "pattern"),
    [pytest.param(*case, id=name) for name, case in {**SCORE_CASES, **RAGGED_CASES}.items()],
)
def test_scoring_errors(call, error, pattern):
    with pytest.raises(error, match=pattern):
        call()


@pytest.mark.parametrize(
    ("call", "error", "pattern"),
    [pytest.param(*case, id=name) for name, case in OTHER_CASES.items()],
)
def test_other_errors(call, error, pattern):
    with pytest.raises(error, match=pattern):
        call()


def test_first_error_in_pair_order_is_reported():
    cands = [A, nan_at(0, 0), A, nan_at(1, 0)]
    refs = [A, A, inf_at(0), A]
    for threads in (1, None):
        with pytest.raises(ValueError, match=r"^pair 1 \(candidate\)"):
            _core.score_embeddings(cands * 200, refs * 200, num_threads=threads)


def test_errors_leave_the_module_usable():
    with pytest.raises(ValueError):
        _core.score_embeddings([nan_at(0, 0)], [A])
    p, _, _ = _core.score_embeddings([A], [A])
    assert p[0] == pytest.approx(1.0)
