"""Word-level analysis of the report, from the token alignments BERTScore computes anyway: how
well each system's candidates cover the reference tokens, by how frequent those tokens are in
the references (compare-mt's word accuracy by frequency bucket), and which reference tokens are
matched poorly most often.

The units are the tokenizer's tokens (word pieces: ``##ing`` in WordPiece, a word's first piece
without its ``Ġ``/``▁`` marker), as BERTScore matches them; special tokens and tokens excluded
by the scorer's options are left out. A token's *cosine* is its best (raw, not rescaled) cosine
with the candidate's tokens; it is *poorly matched* below :data:`POOR_COSINE`. A token's
frequency counts its occurrences in every reference of every segment; the tokens whose matches
are counted are those of the alignment the report shows for each segment (with several
references, the reference of highest F).

>>> from rust_bertscore.analyses.report_words import frequency_bucket
>>> [frequency_bucket(n) for n in (1, 2, 4, 7, 50, 500, 5000)]
[0, 1, 2, 3, 4, 5, 6]
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .align import Alignment

__all__ = [
    "FREQUENCY_EDGES",
    "FREQUENCY_LABELS",
    "POOR_COSINE",
    "POOR_WORDS_TOP",
    "WordBucket",
    "buckets_of_words",
    "count_tokens",
    "frequency_bucket",
    "poor_words",
    "poorest_words",
    "reference_words",
    "word_buckets",
]

FREQUENCY_EDGES = (1, 2, 3, 5, 10, 100, 1000)
"""Lower edges of the frequency buckets (occurrences in all the references), compare-mt's."""

FREQUENCY_LABELS = ("1", "2", "3-4", "5-9", "10-99", "100-999", "1000+")
"""Labels of the frequency buckets."""

POOR_COSINE = 0.5
"""A reference token whose best cosine with the candidate is below this is poorly matched.
Cosines are the model's raw ones (not rescaled): with all-MiniLM-L6-v2 a token the candidate
has scores about 0.8-1.0 and one it lacks about 0.2-0.5; models with higher baseline cosines
(RoBERTa-large) flag fewer tokens at the same threshold."""

POOR_WORDS_TOP = 20
"""Tokens listed per system in :func:`poor_words`."""


@dataclass(frozen=True)
class WordBucket:
    """Reference tokens of one frequency bucket, as one system's candidates match them.

    Attributes
    ----------
    label : str
        The bucket (:data:`FREQUENCY_LABELS`).
    n : int
        Reference tokens in it (every occurrence).
    recall : float
        Mean best cosine of those tokens (unweighted).
    poor : float
        Share of them whose best cosine is below :data:`POOR_COSINE`.

    Examples
    --------
    >>> from rust_bertscore.analyses.report_words import WordBucket
    >>> WordBucket("1", 4, 0.75, 0.25).to_dict()
    {'label': '1', 'n': 4, 'recall': 0.75, 'poor': 0.25}
    """

    label: str
    n: int
    recall: float
    poor: float

    def to_dict(self) -> dict[str, Any]:
        """Plain data: label, n, recall, poor."""
        return {"label": self.label, "n": self.n, "recall": self.recall, "poor": self.poor}


def frequency_bucket(count: int) -> int:
    """The frequency bucket (index into :data:`FREQUENCY_LABELS`) of a token seen ``count``
    times (a count below 1, a token of no reference, goes to the first).

    >>> from rust_bertscore.analyses.report_words import FREQUENCY_LABELS, frequency_bucket
    >>> FREQUENCY_LABELS[frequency_bucket(3)], FREQUENCY_LABELS[frequency_bucket(1000)]
    ('3-4', '1000+')
    """
    return max(0, bisect.bisect_right(FREQUENCY_EDGES, count) - 1)


def reference_words(
    alignments: Sequence[Alignment], special: frozenset[int] | set[int]
) -> tuple[list[str], np.ndarray]:
    """The reference tokens that count (not special, not excluded, matched) of every
    alignment, in order, and their best cosines: one pass for :func:`word_buckets` and
    :func:`poor_words`.

    >>> from rust_bertscore import BERTScorer
    >>> from rust_bertscore.analyses.report_words import reference_words
    >>> words, cosines = reference_words([BERTScorer().align("a cat", "the cat")], {101, 102})
    >>> words, cosines.shape
    (['the', 'cat'], (2,))
    """
    kept = [
        t
        for a in alignments
        for t in a.reference.tokens
        if not t.excluded and t.match >= 0 and t.id not in special
    ]
    return [t.token for t in kept], np.fromiter((t.cosine for t in kept), np.float64, len(kept))


def count_tokens(
    ref_ids: Iterable[Sequence[int]],
    token_text: Mapping[int, str],
    special: frozenset[int] | set[int],
    keep: Iterable[np.ndarray] | None = None,
) -> Counter[str]:
    """How often each token text occurs in the references (``ref_ids``: each reference's ids;
    ``token_text``: the text of each id; ``keep``: per reference, the tokens scored).

    >>> from rust_bertscore.analyses.report_words import count_tokens
    >>> text = {0: "[CLS]", 1: "the", 2: "cat", 3: "[SEP]"}
    >>> sorted(count_tokens([[0, 1, 2, 3], [0, 1, 3]], text, {0, 3}).items())
    [('cat', 1), ('the', 2)]
    """
    counts: Counter[str] = Counter()
    keeps: Iterable[np.ndarray | None] = keep if keep is not None else iter(lambda: None, 0)
    for ids, kept in zip(ref_ids, keeps):
        counts.update(
            token_text[i]
            for k, i in enumerate(ids)
            if i not in special and (kept is None or bool(kept[k]))
        )
    return counts


def word_buckets(
    alignments: Sequence[Alignment],
    frequency: Mapping[str, int],
    special: frozenset[int] | set[int],
    poor_below: float = POOR_COSINE,
) -> list[WordBucket]:
    """Recall and share of poorly matched reference tokens by frequency bucket, for one
    system's alignments (``frequency``: :func:`count_tokens` of all the references). Empty
    buckets are left out.

    Examples
    --------
    >>> from rust_bertscore import BERTScorer
    >>> from rust_bertscore.analyses.report_words import word_buckets
    >>> a = BERTScorer().align("the cat", "the cat the dog")
    >>> rows = word_buckets([a], {"the": 2, "cat": 1, "dog": 1}, {101, 102})
    >>> [(r.label, r.n) for r in rows], rows[1].poor
    ([('1', 2), ('2', 2)], 0.0)
    """
    return buckets_of_words(*reference_words(alignments, special), frequency, poor_below)


def buckets_of_words(
    words: Sequence[str],
    cosines: np.ndarray,
    frequency: Mapping[str, int],
    poor_below: float = POOR_COSINE,
) -> list[WordBucket]:
    """:func:`word_buckets` of :func:`reference_words`' output.

    >>> import numpy as np
    >>> from rust_bertscore.analyses.report_words import buckets_of_words
    >>> rows = buckets_of_words(["a", "b", "a"], np.array([0.9, 0.2, 0.7]), {"a": 2, "b": 1})
    >>> [(r.label, r.n, round(r.recall, 2), r.poor) for r in rows]
    [('1', 1, 0.2, 1.0), ('2', 2, 0.8, 0.0)]
    """
    bucket_of: dict[str, int] = {}
    for w in words:
        if w not in bucket_of:
            bucket_of[w] = frequency_bucket(frequency.get(w, 0))
    which = np.fromiter((bucket_of[w] for w in words), np.int64, len(words))
    k = len(FREQUENCY_LABELS)
    n = np.bincount(which, minlength=k)
    total = np.bincount(which, weights=cosines, minlength=k)
    poor = np.bincount(which, weights=(cosines < poor_below).astype(np.float64), minlength=k)
    return [
        WordBucket(label, int(n[j]), float(total[j] / n[j]), float(poor[j] / n[j]))
        for j, label in enumerate(FREQUENCY_LABELS)
        if n[j]
    ]


def poor_words(
    alignments: Sequence[Alignment],
    special: frozenset[int] | set[int],
    poor_below: float = POOR_COSINE,
    top: int = POOR_WORDS_TOP,
) -> list[tuple[str, int, float]]:
    """The reference tokens one system's candidates match poorly most often: up to ``top`` of
    (token, times its best cosine was below ``poor_below``, its mean best cosine over all its
    occurrences), most often first, ties by token text.

    Examples
    --------
    >>> from rust_bertscore import BERTScorer
    >>> from rust_bertscore.analyses.report_words import poor_words
    >>> a = BERTScorer().align("the cat sat", "the cat sat near quantum physics")
    >>> [(w, n) for w, n, _ in poor_words([a], {101, 102})]
    [('near', 1), ('physics', 1), ('quantum', 1)]
    """
    return poorest_words(*reference_words(alignments, special), poor_below, top)


def poorest_words(
    words: Sequence[str],
    cosines: np.ndarray,
    poor_below: float = POOR_COSINE,
    top: int = POOR_WORDS_TOP,
) -> list[tuple[str, int, float]]:
    """:func:`poor_words` of :func:`reference_words`' output.

    >>> import numpy as np
    >>> from rust_bertscore.analyses.report_words import poorest_words
    >>> poorest_words(["b", "a", "a", "c"], np.array([0.1, 0.2, 0.8, 0.9]))
    [('a', 1, 0.5), ('b', 1, 0.1)]
    """
    index: dict[str, int] = {}
    which = np.fromiter((index.setdefault(w, len(index)) for w in words), np.int64, len(words))
    seen = np.bincount(which, minlength=len(index))
    total = np.bincount(which, weights=cosines, minlength=len(index))
    poor = np.bincount(which, weights=(cosines < poor_below), minlength=len(index))
    names = list(index)
    ranked = sorted(
        ((names[j], int(poor[j])) for j in np.flatnonzero(poor)), key=lambda x: (-x[1], x[0])
    )[:top]
    return [(w, count, float(total[index[w]] / seen[index[w]])) for w, count in ranked]
