"""Type stubs of ``rust_bertscore._core``, the Rust kernel (PyO3 binding of ``bertscore-core``).

Conventions shared by every function:

* Embedding inputs are NumPy arrays of float32 (borrowed as they are, without a copy, whatever
  their strides or writeable flag) or float64 (converted to float32). Other dtypes raise
  ``TypeError``; a wrong number of dimensions, NaN or infinity, mismatched lengths and the like
  raise :class:`KernelError` (a ``ValueError``) whose message names the pair or text at fault
  and the problem.
* Similarities are computed in float32 (one matrix product per pair or block); norms, means and
  other sums are accumulated in float64. Results are float32 arrays.
* The GIL is released while the kernel runs, so other Python threads keep going.
* ``num_threads``: at most this many threads of the package's one shared thread pool for this
  call (``1`` runs on the calling thread; ``None`` uses the whole pool). It never builds a pool.
  The pool is sized once by :func:`set_num_threads` or the ``RUST_BERTSCORE_NUM_THREADS``
  environment variable (default: all CPUs this process may use). Small calls run serially.
"""

from collections.abc import Sequence
from typing import Final

import numpy as np
from numpy.typing import NDArray

_F32 = NDArray[np.float32]
_FloatArray = NDArray[np.float32] | NDArray[np.float64]
_IndexArray = NDArray[np.integer] | Sequence[int]
_FlagArray = NDArray[np.bool_] | Sequence[bool]
_Triple = tuple[NDArray[np.float32], NDArray[np.float32], NDArray[np.float32]]

__all__ = [
    "ISA_ENV",
    "NUM_THREADS_ENV",
    "KernelError",
    "KernelTypeError",
    "RustBertScoreError",
    "ThreadPoolError",
    "__version__",
    "active_isa",
    "align_ragged",
    "bootstrap_ci",
    "dot",
    "get_num_threads",
    "idf_default",
    "idf_from_frequencies",
    "idf_table",
    "idf_weights",
    "l2_norm",
    "multi_ref_max",
    "normalize",
    "pad_floor_flags",
    "pad_floor_flags_at",
    "paired_bootstrap",
    "paired_permutation",
    "pairwise_embeddings",
    "pairwise_ragged",
    "parse_score_body",
    "requested_num_threads",
    "rescale",
    "score_embeddings",
    "score_ragged",
    "set_num_threads",
]

NUM_THREADS_ENV: Final[str]
__version__: Final[str]

class RustBertScoreError(Exception):
    """Base class of every error rust-bertscore raises.

    Examples
    --------
    >>> import numpy as np
    >>> from rust_bertscore import RustBertScoreError, score_embeddings
    >>> try:
    ...     score_embeddings([np.ones((2, 3))], [])
    ... except RustBertScoreError as e:
    ...     print(type(e).__name__, isinstance(e, ValueError))
    KernelError True
    """

class KernelError(RustBertScoreError, ValueError):
    """Bad input to a kernel: the message names the pair, text, index or argument at fault and
    the problem. Also a ValueError.

    Examples
    --------
    >>> import numpy as np
    >>> from rust_bertscore import KernelError, score_embeddings
    >>> try:
    ...     score_embeddings([np.ones((2, 3))], [np.ones((2, 4))])
    ... except KernelError as e:
    ...     print(e)
    pair 0 (candidate) has embedding dim 3, but pair 0 (reference) has dim 4
    """

class KernelTypeError(RustBertScoreError, TypeError):
    """An argument of a kernel of the wrong type or dtype (a list where an array is expected, an
    integer array where floats are): the message names it. Also a TypeError.

    Examples
    --------
    >>> import numpy as np
    >>> from rust_bertscore import KernelTypeError, score_embeddings
    >>> try:
    ...     score_embeddings([[[1.0, 2.0]]], [np.ones((1, 2))])
    ... except KernelTypeError as e:
    ...     print(isinstance(e, TypeError), e)
    True pair 0 (candidate): expected a numpy.ndarray of float32 or float64, got list
    """

class ThreadPoolError(RustBertScoreError, RuntimeError):
    """The kernel's thread pool could not be started. Also a RuntimeError.

    Examples
    --------
    >>> from rust_bertscore import RustBertScoreError, ThreadPoolError
    >>> issubclass(ThreadPoolError, RuntimeError), issubclass(ThreadPoolError, RustBertScoreError)
    (True, True)
    """

"""Name of the environment variable that sizes the thread pool: ``"RUST_BERTSCORE_NUM_THREADS"``."""

def score_embeddings(
    cands: Sequence[_FloatArray],
    refs: Sequence[_FloatArray],
    cand_weights: Sequence[_FloatArray | None] | None = None,
    ref_weights: Sequence[_FloatArray | None] | None = None,
    *,
    normalize: bool = True,
    num_threads: int | None = None,
) -> _Triple:
    """BERTScore of ``cands[k]`` against ``refs[k]`` for every pair ``k``.

    Each pair is scored on its own (the paper's definition: maxima over real tokens only), never
    with bert_score's batch padding floor, which ``score()`` reproduces (see
    :func:`pad_floor_flags` and ``score_ragged`` to get it here).

    For one pair, with token embeddings ``c`` (m x d) and ``r`` (n x d): rows are L2-normalised,
    ``S = c @ r.T``; precision is the weighted mean over candidate tokens of ``S.max(axis=1)``,
    recall the weighted mean over reference tokens of ``S.max(axis=0)``, and
    ``F = 2PR / (P + R)``. This is bert_score's ``greedy_cos_idf`` for one unpadded pair.

    Parameters
    ----------
    cands, refs : sequence of ndarray, shape (tokens, dim)
        Token embeddings, one 2-D float32 or float64 array per text; ``cands[k]`` and
        ``refs[k]`` must have the same ``dim``. A text may have 0 tokens.
    cand_weights, ref_weights : sequence of (ndarray of shape (tokens,) or None), optional
        Non-negative finite per-token weights (IDF), one entry per text; ``None`` (for the whole
        list or one entry) means all ones. Weights weight the means only: every token still takes
        part in the other side's maxima.
    normalize : bool, default True
        Normalise token embeddings to unit length (cosine similarity). ``False`` uses raw dot
        products.
    num_threads : int, optional
        At most this many threads of the shared pool (see the module docstring).

    Returns
    -------
    P, R, F : ndarray of float32, shape (len(cands),)
        Precision, recall and F1 per pair. A pair with an empty side (0 tokens), or a side whose
        weights sum to 0, scores ``P = R = F = 0``. ``F`` is 0 where ``P + R == 0`` or where the
        formula gives NaN or infinity.

    Raises
    ------
    ValueError
        ``cands`` and ``refs`` (or a weights list) of different lengths; an array that is not
        2-D (weights: 1-D); different dims within a pair; NaN or infinity in an embedding; a
        weight array of the wrong length; a negative, NaN or infinite weight; ``num_threads < 1``.
        The message names the pair index and side, e.g. ``"pair 3 (reference): ..."``.
    TypeError
        An entry that is not a NumPy array, or a dtype other than float32/float64.

    Examples
    --------
    The BERTScore example of the ``reval`` module (github.com/itsubaki/reval), raw dot products:

    >>> import numpy as np
    >>> from rust_bertscore._core import score_embeddings
    >>> c = np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])
    >>> r = np.array([[0.1, 0.2, 0.3], [0.7, 0.8, 0.9]])
    >>> P, R, F = score_embeddings([c], [r], normalize=False)
    >>> print(f"{P[0]:.4f} {R[0]:.4f} {F[0]:.4f}")
    0.8600 0.7700 0.8125
    """

def pairwise_embeddings(
    cands: Sequence[_FloatArray],
    refs: Sequence[_FloatArray],
    cand_weights: Sequence[_FloatArray | None] | None = None,
    ref_weights: Sequence[_FloatArray | None] | None = None,
    *,
    normalize: bool = True,
    num_threads: int | None = None,
) -> tuple[_F32, _F32, _F32]:
    """BERTScore of every candidate against every reference (MBR, deduplication, retrieval).

    Each pair is scored on its own (maxima over real tokens only), without bert_score's batch
    padding floor.

    Entry ``[i, j]`` equals ``score_embeddings([cands[i]], [refs[j]], ...)``. Each text is
    checked and normalised once, not once per pair; each candidate is multiplied by blocks of
    references in single matrix products, in parallel.

    Parameters
    ----------
    cands, refs : sequence of ndarray, shape (tokens, dim)
        Token embeddings (float32 or float64), all with the same ``dim``.
    cand_weights, ref_weights : sequence of (ndarray of shape (tokens,) or None), optional
        Per-token weights as in :func:`score_embeddings`.
    normalize : bool, default True
        Cosine (True) or raw dot-product (False) similarity.
    num_threads : int, optional
        At most this many threads of the shared pool.

    Returns
    -------
    P, R, F : ndarray of float32, shape (len(cands), len(refs))

    Raises
    ------
    ValueError
        A text whose dim differs from the first candidate's, or a bad text as in
        :func:`score_embeddings`; the message names ``candidate i`` or ``reference j``.
    TypeError
        A non-array entry or an unsupported dtype.

    Examples
    --------
    >>> import numpy as np
    >>> from rust_bertscore._core import pairwise_embeddings, score_embeddings
    >>> rng = np.random.default_rng(0)
    >>> cands = [rng.normal(size=(n, 8)) for n in (3, 5)]
    >>> refs = [rng.normal(size=(n, 8)) for n in (4, 2, 6)]
    >>> P, R, F = pairwise_embeddings(cands, refs)
    >>> F.shape, F.dtype
    ((2, 3), dtype('float32'))
    >>> bool(np.isclose(F[1, 2], score_embeddings([cands[1]], [refs[2]])[2][0]))
    True
    """

def align_ragged(
    data: _FloatArray,
    offsets: _IndexArray,
    pair_cand: _IndexArray,
    pair_ref: _IndexArray,
    keep: _FlagArray | None = None,
    *,
    normalize: bool = True,
    num_threads: int | None = None,
) -> tuple[
    NDArray[np.int64],
    NDArray[np.float32],
    NDArray[np.int64],
    NDArray[np.int64],
    NDArray[np.float32],
    NDArray[np.int64],
]:
    """Token alignments of pairs of texts of one ragged batch, all pairs in one call.

    For every token of pair ``k`` (text ``pair_cand[k]`` against text ``pair_ref[k]``, laid out
    as in :func:`score_ragged`), the index of its most similar token on the other side of the
    pair and their similarity: the maxima whose weighted means are P and R, with their argmax.
    The similarities are :func:`score_ragged`'s (the same normalisation and matrix product).
    Of equal maxima the first wins, as with ``numpy.argmax``.

    Parameters
    ----------
    data : ndarray of float32, shape (total_tokens, dim)
        Every text's token embeddings back to back (float64 is converted).
    offsets : ndarray of int64, shape (n_texts + 1,)
        Text ``t`` is rows ``offsets[t]:offsets[t + 1]``.
    pair_cand, pair_ref : ndarray of int64, shape (n_pairs,)
        Text indices in ``range(n_texts)``.
    keep : ndarray of bool, shape (total_tokens,), optional
        Rows flagged False take no part: they are no token's match and have none themselves
        (None: every row takes part).
    normalize : bool, default True
        Cosine (True) or raw dot-product (False) similarity.
    num_threads : int, optional
        At most this many threads of the shared pool.

    Returns
    -------
    cand_match : ndarray of int64
        Each candidate token's best reference token (an index within the pair's reference), or
        -1 for a token left out by ``keep`` or with no token to match.
    cand_cosine : ndarray of float32
        Its similarity (NaN where the match is -1).
    cand_offsets : ndarray of int64, shape (n_pairs + 1,)
        Pair ``k``'s candidate tokens are entries ``cand_offsets[k]:cand_offsets[k + 1]``.
    ref_match, ref_cosine, ref_offsets
        The same for the reference tokens (a match is an index within the pair's candidate).

    Raises
    ------
    ValueError
        Bad offsets, ``pair_cand`` and ``pair_ref`` of different lengths, an index out of range
        (``"pair 7: reference index 12 is out of range for 10 texts"``), ``keep`` not of one
        flag per row, NaN or infinity in a text (naming it).
    TypeError
        ``data`` not float32/float64, an index array that is not integer.

    Examples
    --------
    Text 0 (rows 0-1) against text 1 (rows 2-4):

    >>> import numpy as np
    >>> from rust_bertscore._core import align_ragged
    >>> data = np.array([[1, 0], [0, 1], [0, 2], [1, 0.1], [1, 1]], dtype=np.float32)
    >>> cm, cc, co, rm, rc, ro = align_ragged(data, [0, 2, 5], [0], [1])
    >>> cm.tolist(), rm.tolist(), co.tolist(), ro.tolist()
    ([1, 0], [1, 0, 0], [0, 2], [0, 3])
    >>> round(float(cc[1]), 4), round(float(rc[2]), 4)
    (1.0, 0.7071)

    With row 2 (the reference's token 0) left out, the candidate's token 1 matches token 2;
    the reference's token 2 is as close to both candidate tokens, and takes the first:

    >>> keep = [True, True, False, True, True]
    >>> cm, cc, co, rm, rc, ro = align_ragged(data, [0, 2, 5], [0], [1], keep)
    >>> cm.tolist(), rm.tolist(), bool(np.isnan(rc[0]))
    ([1, 2], [-1, 0, 0], True)
    """

def score_ragged(
    data: _FloatArray,
    offsets: _IndexArray,
    weights: _FloatArray | None,
    pair_cand: _IndexArray,
    pair_ref: _IndexArray,
    *,
    normalize: bool = True,
    num_threads: int | None = None,
    floor_precision: _FlagArray | None = None,
    floor_recall: _FlagArray | None = None,
) -> _Triple:
    """Scores pairs of texts of one ragged batch: the zero-copy entry point of the pipeline.

    Text ``t`` is rows ``offsets[t]:offsets[t + 1]`` of ``data``; pair ``k`` scores text
    ``pair_cand[k]`` (candidate) against text ``pair_ref[k]`` (reference). Each text is checked
    and normalised once, however many pairs use it. Without floors each pair gets the paper's
    definition (maxima over real tokens only); ``floor_precision``/``floor_recall`` reproduce
    bert_score's batch padding floor (see :func:`pad_floor_flags`).

    Parameters
    ----------
    data : ndarray of float32, shape (total_tokens, dim)
        Every text's token embeddings back to back. float32 is used in place (C-contiguous is
        fastest; any strides work); float64 is converted.
    offsets : ndarray of int64, shape (n_texts + 1,)
        Non-decreasing, ``offsets[0] == 0``, ``offsets[-1] == total_tokens``. Other integer
        arrays and sequences of ints are converted.
    weights : ndarray of float32, shape (total_tokens,), or None
        Per-token non-negative weights (None: all ones).
    pair_cand, pair_ref : ndarray of int64, shape (n_pairs,)
        Text indices in ``range(n_texts)``.
    normalize : bool, default True
        Cosine (True) or raw dot-product (False) similarity.
    num_threads : int, optional
        At most this many threads of the shared pool.
    floor_precision, floor_recall : ndarray of bool, shape (n_pairs,), optional
        Pair ``k``'s candidate tokens' best matches (precision) / reference tokens' best matches
        (recall) count ``max(best, 0)`` where flagged. None: no floor on that side.

    Returns
    -------
    P, R, F : ndarray of float32, shape (n_pairs,)

    Raises
    ------
    ValueError
        Bad offsets (negative, not starting at 0, decreasing, not ending at ``len(data)``),
        flag arrays not of one flag per pair,
        ``weights`` of the wrong length, ``pair_cand`` and ``pair_ref`` of different lengths,
        an index out of range (``"pair 7: reference index 12 is out of range for 10 texts"``),
        NaN or infinity in a text or a negative or non-finite weight (naming the text).
    TypeError
        ``data`` or ``weights`` not float32/float64, an index array that is not integer.

    Examples
    --------
    Three texts in one array (rows 0-1, 2-4, 5-6); pair 0 is text 0 against text 1, pair 1
    text 2 against text 1:

    >>> import numpy as np
    >>> from rust_bertscore._core import score_embeddings, score_ragged
    >>> data = np.random.default_rng(0).normal(size=(7, 4)).astype(np.float32)
    >>> P, R, F = score_ragged(data, [0, 2, 5, 7], None, [0, 2], [1, 1])
    >>> F.shape
    (2,)
    >>> bool(np.isclose(F[1], score_embeddings([data[5:7]], [data[2:5]])[2][0]))
    True
    """

def pad_floor_flags(
    cand_lengths: _IndexArray, ref_lengths: _IndexArray, batch_size: int
) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """bert_score's batch padding floor of every pair: which sides count ``max(best, 0)``.

    bert_score 0.3.13 scores pairs in consecutive batches of ``batch_size`` and pads each side of
    a batch to its longest text; padded similarities are 0 before the maxima. So pair ``k``'s
    precision side is floored when its reference is shorter than the longest reference of its
    batch (``k // batch_size``), and its recall side when its candidate is shorter than the
    longest candidate.

    Parameters
    ----------
    cand_lengths, ref_lengths : ndarray of int64, shape (n_pairs,)
        Token counts of each pair's candidate and reference, special tokens included.
    batch_size : int
        Pairs per batch (>= 1).

    Returns
    -------
    floor_precision, floor_recall : ndarray of bool, shape (n_pairs,)
        For :func:`score_ragged`.

    Raises
    ------
    ValueError
        Lengths of different sizes, a negative length, ``batch_size < 1``.

    Examples
    --------
    Pairs 0-1 form the first batch (longest reference 6, longest candidate 5), pair 2 the second:

    >>> from rust_bertscore._core import pad_floor_flags
    >>> p, r = pad_floor_flags([5, 3, 4], [2, 6, 6], 2)
    >>> p.tolist(), r.tolist()
    ([True, False, False], [False, True, False])
    """

def pad_floor_flags_at(
    positions: _IndexArray,
    cand_lengths: _IndexArray,
    ref_lengths: _IndexArray,
    longest_cand: _IndexArray,
    longest_ref: _IndexArray,
    batch_size: int,
) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """bert_score's batch padding floor of pairs scored away from their batch: the flags
    :func:`pad_floor_flags` gives the whole corpus, at the pairs' flattened ``positions``.

    For scoring a corpus in pieces (the streaming command line, the distributed engines): a
    first pass records the longest candidate and reference of every batch of ``batch_size``
    pairs; pair ``k`` is in batch ``positions[k] // batch_size`` and its precision side is
    floored when ``ref_lengths[k] < longest_ref[batch]``, its recall side when
    ``cand_lengths[k] < longest_cand[batch]`` (the same rule as :func:`pad_floor_flags`).

    Parameters
    ----------
    positions : ndarray of int64, shape (n_pairs,)
        Each pair's index in the flattened corpus (any order).
    cand_lengths, ref_lengths : ndarray of int64, shape (n_pairs,)
        Token counts of each pair's candidate and reference, special tokens included.
    longest_cand, longest_ref : ndarray of int64, shape (n_batches,)
        The longest candidate and reference of every batch.
    batch_size : int
        Pairs per batch (>= 1).

    Returns
    -------
    floor_precision, floor_recall : ndarray of bool, shape (n_pairs,)

    Raises
    ------
    ValueError
        Arrays of different sizes, a negative count or position, ``batch_size < 1``, or a
        position past the batches (``"positions [0] = 4 is past the 2 batches of 2 pairs"``).

    Examples
    --------
    The pairs at positions 2 and 0 of the corpus of :func:`pad_floor_flags`' example:

    >>> from rust_bertscore._core import pad_floor_flags_at
    >>> p, r = pad_floor_flags_at([2, 0], [4, 5], [6, 2], [5, 4], [6, 6], 2)
    >>> p.tolist(), r.tolist()
    ([False, True], [False, False])
    """

def pairwise_ragged(
    data: _FloatArray,
    offsets: _IndexArray,
    weights: _FloatArray | None,
    cands: _IndexArray,
    refs: _IndexArray,
    *,
    normalize: bool = True,
    num_threads: int | None = None,
) -> tuple[_F32, _F32, _F32]:
    """All pairs between texts of one ragged batch: entry ``[i, j]`` scores text ``cands[i]``
    against text ``refs[j]``.

    Parameters
    ----------
    data, offsets, weights
        The ragged batch, as in :func:`score_ragged`.
    cands, refs : ndarray of int64
        Text indices of the candidates and of the references.
    normalize : bool, default True
        Cosine (True) or raw dot-product (False) similarity.
    num_threads : int, optional
        At most this many threads of the shared pool.

    Returns
    -------
    P, R, F : ndarray of float32, shape (len(cands), len(refs))

    Raises
    ------
    ValueError
        As :func:`score_ragged`; an index out of range is named ``"cands[i] = ..."``.
    TypeError
        As :func:`score_ragged`.

    Examples
    --------
    >>> import numpy as np
    >>> from rust_bertscore._core import pairwise_ragged
    >>> data = np.random.default_rng(0).normal(size=(7, 4)).astype(np.float32)
    >>> P, R, F = pairwise_ragged(data, [0, 2, 5, 7], None, [0, 1], [0, 1, 2])
    >>> F.shape, round(float(F[0, 0]), 4)
    ((2, 3), 1.0)
    """

def multi_ref_max(
    precision: _FloatArray,
    recall: _FloatArray,
    f1: _FloatArray,
    group_offsets: _IndexArray,
) -> _Triple:
    """Maxima over groups of consecutive scores (one candidate against each of its references).

    Group ``g`` is ``[group_offsets[g], group_offsets[g + 1])``. P, R and F are each maxed
    independently, as bert_score does with several references, so the resulting F is not in
    general the harmonic mean of the resulting P and R. A NaN in a group makes its maximum NaN,
    as ``torch.max`` (bert_score) and ``np.maximum`` do.

    Parameters
    ----------
    precision, recall, f1 : ndarray, shape (n,)
        Scores of equal length (float32 or float64).
    group_offsets : ndarray of int64, shape (n_groups + 1,)
        Non-decreasing, from 0 to ``n``, every group non-empty.

    Returns
    -------
    P, R, F : ndarray of float32, shape (n_groups,)

    Raises
    ------
    ValueError
        Lengths that differ, bad offsets, or an empty group (``"group 2 is empty ..."``).

    Examples
    --------
    One candidate with two references, then one with one:

    >>> import numpy as np
    >>> from rust_bertscore._core import multi_ref_max
    >>> p, r, f = np.array([0.5, 0.7, 0.6]), np.array([0.9, 0.4, 0.3]), np.array([0.6, 0.5, 0.4])
    >>> [x.tolist() for x in multi_ref_max(p, r, f, [0, 2, 3])]  # doctest: +ELLIPSIS
    [[0.69999..., 0.60000...], [0.89999..., 0.30000...], [0.60000..., 0.40000...]]
    """

def rescale(x: _FloatArray, baseline: float) -> NDArray[np.float32]:
    """Baseline rescaling ``(x - baseline) / (1 - baseline)``, elementwise, in float32 with the
    baseline rounded to float32 first: bert_score's float32 torch arithmetic, bit for bit.

    Parameters
    ----------
    x : ndarray
        Scores of any shape (float32 or float64).
    baseline : float
        The baseline ``b`` of the score (bert_score's baseline files give one per P, R, F).

    Returns
    -------
    ndarray of float32, same shape as ``x``

    Raises
    ------
    ValueError
        ``baseline`` is 1 once rounded to float32 (division by zero), or not finite.

    Examples
    --------
    >>> import numpy as np
    >>> from rust_bertscore._core import rescale
    >>> rescale(np.array([0.9, 0.85]), 0.8).round(4)
    array([0.5 , 0.25], dtype=float32)
    """

def normalize(a: _FloatArray) -> NDArray[np.float32]:
    """``a / |a|`` for a vector, or each row of a 2-D array divided by its norm.

    Zero vectors (rows) come back unchanged. NaN and infinity propagate, as in NumPy.

    Parameters
    ----------
    a : ndarray, shape (d,) or (n, d)

    Returns
    -------
    ndarray of float32, same shape as ``a``

    Raises
    ------
    ValueError
        ``a`` is not 1-D or 2-D.

    Examples
    --------
    >>> import numpy as np
    >>> from rust_bertscore._core import normalize
    >>> normalize(np.array([3.0, 4.0]))
    array([0.6, 0.8], dtype=float32)
    >>> normalize(np.array([[0.0, 2.0], [0.0, 0.0]]))
    array([[0., 1.],
           [0., 0.]], dtype=float32)
    """

def l2_norm(a: _FloatArray) -> float | NDArray[np.float32]:
    """Euclidean norm of a vector (a float), or of each row of a 2-D array (float32 array).

    Parameters
    ----------
    a : ndarray, shape (d,) or (n, d)

    Returns
    -------
    float or ndarray of float32, shape (n,)

    Raises
    ------
    ValueError
        ``a`` is not 1-D or 2-D.

    Examples
    --------
    >>> import numpy as np
    >>> from rust_bertscore._core import l2_norm
    >>> l2_norm(np.array([3.0, 4.0]))
    5.0
    >>> l2_norm(np.array([[3.0, 4.0], [0.0, 1.0]]))
    array([5., 1.], dtype=float32)
    """

def dot(a: _FloatArray, b: _FloatArray) -> float | NDArray[np.float32]:
    """Dot product of two vectors (a float), or row-wise of two 2-D arrays: ``a[i] . b[i]``.

    Parameters
    ----------
    a, b : ndarray, both shape (d,) or both shape (n, d)

    Returns
    -------
    float or ndarray of float32, shape (n,)

    Raises
    ------
    ValueError
        Shapes that differ (never a silent 0), or arrays that are not 1-D or 2-D.

    Examples
    --------
    >>> import numpy as np
    >>> from rust_bertscore._core import dot
    >>> dot(np.array([1.0, 2.0]), np.array([3.0, 4.0]))
    11.0
    >>> dot(np.eye(2), np.array([[3.0, 4.0], [5.0, 6.0]]))
    array([3., 6.], dtype=float32)
    """

def idf_weights(
    docs: Sequence[Sequence[int] | NDArray[np.integer]],
    num_docs: int | None = None,
    *,
    num_threads: int | None = None,
) -> dict[int, float]:
    """IDF weights of the token ids in ``docs``, as bert_score's ``get_idf_dict``.

    A token's document frequency ``df`` is the number of documents containing it (a document
    counts once however often the token occurs in it); with ``M`` documents its weight is
    ``ln((M + 1) / (df + 1))``. Token ids absent from the dict (seen in no document) take
    :func:`idf_default` ``(M) = ln(M + 1)``. Documents are counted in parallel.

    Parameters
    ----------
    docs : sequence of (sequence of int or 1-D integer ndarray)
        Token ids of each document (typically the references' tokenizations).
    num_docs : int, optional
        ``M``; defaults to ``len(docs)``. Must not be smaller than ``len(docs)``.
    num_threads : int, optional
        At most this many threads of the shared pool.

    Returns
    -------
    dict of int to float
        ``{token_id: ln((M + 1) / (df + 1))}`` for every id seen.

    Raises
    ------
    ValueError
        ``num_docs < len(docs)`` or negative.
    TypeError
        A document that is not a sequence of ints.

    Examples
    --------
    >>> from rust_bertscore._core import idf_default, idf_weights
    >>> w = idf_weights([[1, 2, 2], [2, 3], [2]])
    >>> round(w[2], 6), round(w[1], 6), round(idf_default(3), 6)
    (0.0, 0.693147, 1.386294)
    """

def idf_table(
    docs: Sequence[Sequence[int] | NDArray[np.integer]],
    num_docs: int | None = None,
    *,
    num_threads: int | None = None,
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The weights of :func:`idf_weights` as two arrays, for vectorised lookup.

    Returns
    -------
    ids : ndarray of int64, shape (n_ids,)
        Every token id seen, ascending.
    weights : ndarray of float64, shape (n_ids,)
        ``ln((M + 1) / (df + 1))`` of each id. Unseen ids take :func:`idf_default` ``(M)``.

    Examples
    --------
    >>> from rust_bertscore._core import idf_table
    >>> ids, weights = idf_table([[1, 2, 2], [2, 3], [2]])
    >>> ids.tolist(), weights.round(6).tolist()
    ([1, 2, 3], [0.693147, 0.0, 0.693147])
    """

def idf_default(num_docs: int) -> float:
    """IDF of a token id seen in none of ``num_docs`` documents: ``ln(num_docs + 1)``.

    Raises
    ------
    ValueError
        ``num_docs < 0``.

    Examples
    --------
    >>> from rust_bertscore._core import idf_default
    >>> round(idf_default(3), 6)
    1.386294
    """

def set_num_threads(n: int) -> None:
    """Sets the size of the package's one shared thread pool.

    Before the pool exists (it is built on the first call big enough to run in parallel) this
    only records the size, which takes precedence over ``RUST_BERTSCORE_NUM_THREADS``. After,
    a different size builds a new pool once and swaps it in: later calls use it, calls already
    running finish on the old pool. The same size is a no-op. No call ever builds its own pool.

    Raises
    ------
    ValueError
        ``n < 1``.

    Examples
    --------
    >>> from rust_bertscore._core import get_num_threads, set_num_threads
    >>> n = get_num_threads()
    >>> set_num_threads(n)  # the same size: a no-op
    >>> get_num_threads() == n
    True
    """

def get_num_threads() -> int:
    """Size of the shared thread pool: its size if built, else the size it will be built with
    (:func:`set_num_threads`, else ``RUST_BERTSCORE_NUM_THREADS``, else the CPUs available).

    Raises
    ------
    ValueError
        ``RUST_BERTSCORE_NUM_THREADS`` is set to something other than a positive integer.

    Examples
    --------
    >>> from rust_bertscore._core import get_num_threads
    >>> get_num_threads() >= 1
    True
    """

def requested_num_threads() -> int | None:
    """The thread count the user set: the last :func:`set_num_threads` call, else
    ``RUST_BERTSCORE_NUM_THREADS``, else None (no setting). The one reader of the setting: the
    kernel's pool and the ONNX Runtime encoder both take it from here.

    Raises
    ------
    ValueError
        ``RUST_BERTSCORE_NUM_THREADS`` is set to something other than a positive integer.

    Examples
    --------
    >>> from rust_bertscore._core import requested_num_threads
    >>> n = requested_num_threads()
    >>> n is None or n >= 1
    True
    """

ISA_ENV: Final[str]
"""Name of the environment variable that caps the kernels' instruction set (read once per
process): ``"RUST_BERTSCORE_ISA"``, values ``portable``, ``avx2``, ``avx512``."""

def active_isa() -> str:
    """The instruction set of the kernels in this process: ``"avx512"``, ``"avx2"`` or
    ``"portable"`` (the best the CPU has, at most what ``RUST_BERTSCORE_ISA`` names).

    Examples
    --------
    >>> from rust_bertscore._core import active_isa
    >>> active_isa() in ("avx512", "avx2", "portable")
    True
    """

def parse_score_body(
    body: bytes, max_pairs: int | None = None
) -> tuple[list[str], list[str] | list[list[str]]]:
    """A server's ``POST /score`` body, ``{"cands": [str, ...], "refs": [str or [str, ...],
    ...]}``, parsed and checked with the GIL released: ``(cands, refs)``.

    Raises
    ------
    ValueError
        ``(status, message, field, index)`` for a body the server refuses: 400 not UTF-8 JSON
        (a duplicate key, nesting deeper than 512, an integer of more than 4,300 digits), 413
        more pairs than ``max_pairs``, 422 a wrong shape or type, naming field and index.

    Examples
    --------
    >>> from rust_bertscore._core import parse_score_body
    >>> parse_score_body(b'{"cands": ["a cat"], "refs": [["the cat", "cats"]]}')
    (['a cat'], [['the cat', 'cats']])
    >>> try:
    ...     parse_score_body(b'{"cands": [[[]]], "refs": []}')
    ... except ValueError as e:
    ...     print(e.args)
    (422, 'cands[0] must be a str, got list: [[]]', 'cands', 0)
    """

def idf_from_frequencies(df: _IndexArray, num_docs: int) -> NDArray[np.float64]:
    """bert_score's IDF ``ln((num_docs + 1) / (df + 1))`` of each document frequency.

    Raises
    ------
    ValueError
        ``num_docs < 0``, or a ``df`` outside ``0..=num_docs``.

    Examples
    --------
    >>> from rust_bertscore._core import idf_from_frequencies
    >>> idf_from_frequencies([0, 1, 3], 3).round(6).tolist()
    [1.386294, 0.693147, 0.0]
    """

# -- significance statistics (typed wrappers and result dataclasses: rust_bertscore.stats) -------

def bootstrap_ci(
    scores: NDArray[np.float64],
    confidence: float,
    n_resamples: int,
    seed: int,
    *,
    num_threads: int | None = None,
) -> tuple[float, float, float]:
    """Percentile bootstrap interval of the mean of ``scores``.

    Parameters
    ----------
    scores : ndarray of float64, shape (N,)
        Segment scores, N >= 2, all finite.
    confidence : float
        Coverage of the interval, in (0, 1).
    n_resamples : int
        Bootstrap resamples, >= 1.
    seed : int
        Seed in [0, 2**64): resample r draws from a stream keyed by (seed, r), so the result
        does not depend on the number of threads.
    num_threads : int, optional
        At most this many threads of the shared pool.

    Returns
    -------
    (mean, ci_low, ci_high) : tuple of float
        The mean of ``scores`` and the (1 - confidence)/2 and (1 + confidence)/2 quantiles
        (linear interpolation, NumPy's default) of the resampled means.

    Raises
    ------
    ValueError
        ``confidence`` outside (0, 1), ``n_resamples < 1``, fewer than 2 scores, or a NaN or
        infinite score (the message names the segment).

    Examples
    --------
    The typed wrapper is :func:`rust_bertscore.bootstrap_ci`; this is the kernel under it:

    >>> import numpy as np
    >>> from rust_bertscore._core import bootstrap_ci
    >>> scores = np.array([0.50, 0.61, 0.47, 0.55, 0.58, 0.52])
    >>> mean, low, high = bootstrap_ci(scores, 0.95, 1000, 1)
    >>> round(mean, 4), low < mean < high
    (0.5383, True)
    """

def paired_bootstrap(
    a: NDArray[np.float64],
    b: NDArray[np.float64],
    confidence: float,
    n_resamples: int,
    seed: int,
    *,
    num_threads: int | None = None,
) -> tuple[
    tuple[float, float, float],
    list[tuple[float, float, float, float, float, float, float, float, float]],
]:
    """Koehn's paired bootstrap of every row of ``b`` against ``a``, one index draw per resample
    shared by ``a`` and every system.

    Parameters
    ----------
    a : ndarray of float64, shape (N,)
        Baseline segment scores.
    b : ndarray of float64, shape (K, N)
        Segment scores of K systems over the same segments.
    confidence, n_resamples, seed, num_threads
        As :func:`bootstrap_ci`.

    Returns
    -------
    baseline : (mean, ci_low, ci_high)
        The baseline's mean and interval.
    systems : list of (mean_a, mean_b, delta, ci_low, ci_high, p_value, mean_b, b_ci_low, b_ci_high)
        Per system: ``delta = mean_b - mean_a``, the interval of the difference, the one-sided
        p-value ``(#{delta* <= 0} + 1) / (n_resamples + 1)`` and the system's own interval.

    Raises
    ------
    ValueError
        As :func:`bootstrap_ci`, or ``b`` without rows or with rows of another length than ``a``.

    Examples
    --------
    The typed wrapper is :func:`rust_bertscore.paired_bootstrap`; this is the kernel under it:

    >>> import numpy as np
    >>> from rust_bertscore._core import paired_bootstrap
    >>> a = np.array([0.50, 0.61, 0.47, 0.55, 0.58, 0.52])
    >>> baseline, systems = paired_bootstrap(a, (a + 0.1)[None, :], 0.95, 1000, 1)
    >>> round(systems[0][2], 6), systems[0][5] < 0.01
    (0.1, True)
    """

def paired_permutation(
    a: NDArray[np.float64],
    b: NDArray[np.float64],
    n_trials: int,
    seed: int,
    *,
    num_threads: int | None = None,
) -> list[tuple[float, float, float, float]]:
    """Paired approximate randomisation of every row of ``b`` against ``a``: each trial swaps
    ``a[i]`` and ``b[k, i]`` with probability 1/2 (the same swaps for every system).

    Returns
    -------
    list of (mean_a, mean_b, delta, p_value)
        Per system; ``p_value = (#{trials with |delta*| >= |delta|} + 1) / (n_trials + 1)``.

    Raises
    ------
    ValueError
        ``n_trials < 1``, fewer than 2 segments, a NaN or infinite score, or ``b`` without rows
        or with rows of another length than ``a``.

    Examples
    --------
    The typed wrapper is :func:`rust_bertscore.paired_permutation`; this is the kernel under it:

    >>> import numpy as np
    >>> from rust_bertscore._core import paired_permutation
    >>> a = np.array([0.50, 0.61, 0.47, 0.55, 0.58, 0.52])
    >>> [(mean_a, mean_b, delta, p)] = paired_permutation(a, (a + 0.1)[None, :], 1000, 1)
    >>> round(delta, 6), p < 0.05
    (0.1, True)
    """
