"""The worker side of the plan's two cheap passes (tokenizer only, no encoder): what each engine
batch computes for :class:`~rust_bertscore.distributed.plan.PlanBuilder` to combine on the driver
(see :mod:`rust_bertscore.distributed.plan` for the whole first pass).

* :func:`count_pairs` (pass 1): each row's number of references.
* :func:`batch_statistics` / :func:`statistics_part` (pass 2): the longest candidate and
  reference of every scoring batch met in the engine batch, and its references' document
  frequencies.

Each returns its result pickled (bytes travel through every engine alike). The helpers
:func:`row_index`, :func:`flatten` and :func:`pair_positions` are shared with the scoring pass
(:class:`~rust_bertscore.distributed.BERTScoreBatch`) and :class:`ScorePlan.floors
<rust_bertscore.distributed.ScorePlan>`. The tokenizer comes from
:func:`~rust_bertscore.models.caches.load_tokenizer`, the process's tokenizer cache
(``rust_bertscore.clear_cache()`` empties it).
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence

import numpy as np

from ..analyses.corpus import document_frequencies, pair_lengths
from ..models.caches import load_tokenizer
from ..stages.options import ScoringOptions
from ..stages.scored_tokens import ScoredTokens
from ..stages.tokenization.tokenizer import TextTokenizer
from .columns import Batch, DistributedInputError, checked_rows, column, good_rows, ref_groups


def row_index(batch: Batch, index_col: str) -> np.ndarray:
    """The global row numbers of a batch, from its index column.

    Parameters
    ----------
    batch : Batch
        A pandas DataFrame, a pyarrow Table or a mapping of column name to values.
    index_col : str
        The column that numbers the dataset's rows.

    Returns
    -------
    np.ndarray
        The row numbers, int64.

    Raises
    ------
    DistributedInputError
        When the column does not hold integers.

    Examples
    --------
    >>> import numpy as np
    >>> from rust_bertscore.distributed.passes import row_index
    >>> row_index({"row": np.array([4, 2], dtype=np.int32)}, "row").tolist()
    [4, 2]
    """
    values = np.asarray(column(batch, index_col))
    if values.dtype.kind not in "iu":
        raise DistributedInputError(
            f"index column {index_col!r} must hold integer row numbers, got {values.dtype}"
        )
    return values.astype(np.int64)


def flatten(
    cands: Sequence[str], groups: Sequence[Sequence[str]]
) -> tuple[list[str], list[str], np.ndarray]:
    """Pairs as bert_score flattens them, and each row's number of pairs.

    Parameters
    ----------
    cands : sequence of str
        One candidate per row.
    groups : sequence of sequences of str
        Each row's references.

    Returns
    -------
    tuple of (list of str, list of str, np.ndarray)
        The candidate of every pair (repeated per reference), the reference of every pair, and
        each row's number of pairs (int64).

    Examples
    --------
    >>> from rust_bertscore.distributed.passes import flatten
    >>> cands, refs, counts = flatten(["a", "b"], [["x", "y"], ["z"]])
    >>> cands, refs, counts.tolist()
    (['a', 'a', 'b'], ['x', 'y', 'z'], [2, 1])
    """
    flat_cands = [c for c, g in zip(cands, groups) for _ in g]
    flat_refs = [r for g in groups for r in g]
    counts = np.fromiter((len(g) for g in groups), np.int64, len(groups))
    return flat_cands, flat_refs, counts


def count_pairs(
    batch: Batch, ref_col: str, index_col: str, cand_col: str | None = None, on_error: str = "raise"
) -> bytes:
    """Pass 1 on one engine batch: (row index, number of pairs) of every row, pickled.

    Parameters
    ----------
    batch : Batch
        The engine batch.
    ref_col, index_col : str
        The reference column (a str or a list of str per row) and the row-number column.
    cand_col : str or None
        The candidate column, needed with ``on_error="null"``.
    on_error : {"raise", "null"}
        ``"null"`` (``cand_col`` given): a bad row counts no pairs, it is left out.

    Returns
    -------
    bytes
        The pickled ``(index, counts)`` arrays, for :meth:`PlanBuilder.add_counts
        <rust_bertscore.distributed.plan.PlanBuilder.add_counts>`.

    Examples
    --------
    >>> import pickle
    >>> import numpy as np
    >>> from rust_bertscore.distributed.passes import count_pairs
    >>> batch = {"ref": [["x", "y"], "z"], "row": np.array([0, 1])}
    >>> index, counts = pickle.loads(count_pairs(batch, "ref", "row"))
    >>> index.tolist(), counts.tolist()
    ([0, 1], [2, 1])
    """
    index = row_index(batch, index_col)
    if on_error == "null" and cand_col is not None:
        cands = column(batch, cand_col)
        _, groups, errors = checked_rows(
            cands, column(batch, ref_col), cand_col, ref_col, index, on_error
        )
        counts = np.zeros(len(index), dtype=np.int64)
        counts[good_rows(errors, len(index))] = [len(g) for g in groups]
    else:
        groups = ref_groups(column(batch, ref_col), ref_col, index)
        counts = np.fromiter((len(g) for g in groups), np.int64, len(groups))
    return pickle.dumps((index, counts), protocol=pickle.HIGHEST_PROTOCOL)


def batch_statistics(
    batch: Batch,
    cand_col: str,
    ref_col: str,
    index_col: str,
    *,
    tokenizer: TextTokenizer | ScoredTokens,
    pair_offsets: np.ndarray | None,
    batch_size: int,
    floors: bool,
    idf: bool,
    on_error: str = "raise",
) -> bytes:
    """Pass 2 on one engine batch, pickled: the longest candidate/reference per scoring batch
    met here (``floors``) and the references' document frequencies (``idf``).

    Parameters
    ----------
    batch : Batch
        The engine batch.
    cand_col, ref_col, index_col : str
        The candidate, reference and row-number columns.
    tokenizer : TextTokenizer or ScoredTokens
        Counts as a scorer with these options counts (a plain ``TextTokenizer``: the defaults).
    pair_offsets : np.ndarray or None
        Every row's flattened pair offset from pass 1; None when every row has one reference.
    batch_size : int
        bert_score's scoring batch (pairs).
    floors, idf : bool
        Whether to collect the per-batch longest texts, and the document frequencies.
    on_error : {"raise", "null"}
        ``"null"``: bad rows are left out of both.

    Returns
    -------
    bytes
        A pickled dict (``rows``; ``floors``: batch ids, longest candidate, longest reference;
        ``idf``: token ids, their counts, references counted), for
        :meth:`PlanBuilder.add_statistics
        <rust_bertscore.distributed.plan.PlanBuilder.add_statistics>`.

    Examples
    --------
    >>> import pickle
    >>> import numpy as np
    >>> from rust_bertscore.distributed.passes import batch_statistics, load_tokenizer
    >>> batch = {"hyp": ["a cat", "a dog sat"], "ref": ["the cat", "dogs"], "row": np.arange(2)}
    >>> part = batch_statistics(batch, "hyp", "ref", "row", tokenizer=load_tokenizer(None),
    ...                         pair_offsets=None, batch_size=64, floors=True, idf=False)
    >>> stats = pickle.loads(part)
    >>> stats["rows"], stats["floors"][0].tolist()  # two rows, both in scoring batch 0
    (2, [0])
    """
    if isinstance(tokenizer, TextTokenizer):
        tokenizer = ScoredTokens(tokenizer, ScoringOptions())
    all_rows = row_index(batch, index_col)
    cands, groups, errors = checked_rows(
        column(batch, cand_col), column(batch, ref_col), cand_col, ref_col, all_rows, on_error
    )
    index = all_rows[good_rows(errors, len(all_rows))]
    flat_cands, flat_refs, counts = flatten(cands, groups)
    out: dict[str, object] = {"rows": len(all_rows)}
    if floors:
        cand_len, ref_len = pair_lengths(tokenizer, flat_cands, flat_refs)
        ids = pair_positions(pair_offsets, index, counts) // batch_size
        seen, where = np.unique(ids, return_inverse=True)
        cand_max = np.zeros(len(seen), dtype=np.int64)
        ref_max = np.zeros(len(seen), dtype=np.int64)
        np.maximum.at(cand_max, where, cand_len)
        np.maximum.at(ref_max, where, ref_len)
        out["floors"] = (seen, cand_max, ref_max)
    if idf:
        df, m = document_frequencies(tokenizer, [flat_refs])
        tokens = np.flatnonzero(df)
        out["idf"] = (tokens, df[tokens], m)
    return pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)


def pair_positions(
    pair_offsets: np.ndarray | None, index: np.ndarray, counts: np.ndarray
) -> np.ndarray:
    """Flattened position of every pair of these rows (rows in batch order, then references).

    Parameters
    ----------
    pair_offsets : np.ndarray or None
        Every row's flattened pair offset; None when every row has one reference.
    index : np.ndarray
        The rows' global numbers, in batch order.
    counts : np.ndarray
        Each row's number of pairs.

    Returns
    -------
    np.ndarray
        One int64 position per pair.

    Examples
    --------
    >>> import numpy as np
    >>> from rust_bertscore.distributed.passes import pair_positions
    >>> offsets = np.array([0, 2, 3, 6])  # rows of 2, 1 and 3 references
    >>> pair_positions(offsets, np.array([2, 0]), np.array([3, 2])).tolist()
    [3, 4, 5, 0, 1]
    """
    starts = index if pair_offsets is None else pair_offsets[index]
    within = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(
        np.cumsum(counts) - counts, counts
    )
    return np.repeat(starts, counts) + within


def statistics_part(
    batch: Batch,
    cand_col: str,
    ref_col: str,
    index_col: str,
    *,
    model_type: str | None,
    lang: str | None,
    pair_offsets: np.ndarray | None,
    batch_size: int,
    floors: bool,
    idf: bool,
    options: ScoringOptions | None = None,
    on_error: str = "raise",
    revision: str | None = None,
) -> bytes:
    """:func:`batch_statistics` with the tokenizer of ``model_type`` and ``lang`` and the
    scorer's ``options`` (long texts, exclusions).

    Parameters
    ----------
    batch, cand_col, ref_col, index_col, pair_offsets, batch_size, floors, idf, on_error
        As for :func:`batch_statistics`.
    model_type, lang, revision : str or None
        The model, as ``score()`` takes them (see :func:`load_tokenizer`).
    options : ScoringOptions or None
        The scorer's token options (None: the defaults).

    Returns
    -------
    bytes
        What :func:`batch_statistics` returns.

    Examples
    --------
    >>> import pickle
    >>> import numpy as np
    >>> from rust_bertscore.distributed.passes import statistics_part
    >>> batch = {"hyp": ["a cat"], "ref": [["the cat", "a cat"]], "row": np.arange(1)}
    >>> part = statistics_part(batch, "hyp", "ref", "row", model_type=None, lang=None,
    ...                        pair_offsets=None, batch_size=64, floors=False, idf=True)
    >>> pickle.loads(part)["idf"][2]  # references counted
    2
    """
    return batch_statistics(
        batch,
        cand_col,
        ref_col,
        index_col,
        tokenizer=ScoredTokens(
            load_tokenizer(model_type, lang, revision), options or ScoringOptions()
        ),
        pair_offsets=pair_offsets,
        batch_size=batch_size,
        floors=floors,
        idf=idf,
        on_error=on_error,
    )
