"""Compute a rescale baseline with bert_score's recipe: the mean P, R and F of every layer over
random pairs of unrelated sentences from a corpus (one sentence per line).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np

from ..errors import InputValueError
from ..scoring.scorer import BERTScorer


def random_pairs(n: int, pairs: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``pairs`` index pairs (a, b) drawn uniformly with a != b, reproducible from ``seed``."""
    if n < 2:
        raise InputValueError(f"a baseline needs at least 2 distinct corpus lines, got {n}")
    if pairs < 1:
        raise InputValueError(f"pairs must be at least 1, got {pairs}")
    rng = np.random.default_rng(seed)
    a = rng.integers(0, n, size=pairs)
    b = rng.integers(0, n - 1, size=pairs)
    b = b + (b >= a)
    return a, b


def corpus_lines(lines: Iterable[str]) -> list[str]:
    """The corpus's non-empty lines, stripped (blank lines carry no sentence)."""
    return [s for s in (line.strip() for line in lines) if s]


PAIRS_PER_ROUND = 2048
"""Pairs scored per round; the sums are accumulated so memory does not grow with ``pairs``."""


def compute_baseline(
    model_type: str | None,
    corpus: Sequence[str],
    *,
    pairs: int = 20_000,
    seed: int = 0,
    batch_size: int = 64,
    device: str | None = None,
    lang: str | None = None,
    progress: Callable[[int], object] | None = None,
    revision: str | None = None,
) -> np.ndarray:
    """Mean P, R, F per layer (rows 0..depth) over random corpus pairs.

    Parameters
    ----------
    model_type, lang : str, optional
        The model, chosen as in :func:`rust_bertscore.score`.
    corpus : list of str
        Sentences, one per item; blank items are dropped.
    pairs : int
        How many random (candidate, reference) pairs to average over.
    seed : int
        Seed of the pair sampler: the same corpus, pairs and seed give the same file.
    batch_size : int
        Texts per encoder call.
    device : str, optional
        As in :func:`rust_bertscore.score`.
    progress : callable, optional
        Called with the number of pairs scored after each round.
    revision : str, optional
        The Hub branch, tag or commit of the model (default: ``main``).

    Returns
    -------
    np.ndarray
        float64 array of shape (layers + 1, 3): the rows of a ``LAYER,P,R,F`` file.
    """
    sentences = corpus_lines(corpus)
    a, b = random_pairs(len(sentences), pairs, seed)
    scorer = BERTScorer(
        model_type=model_type,
        lang=lang,
        all_layers=True,
        batch_size=batch_size,
        device=device,
        revision=revision,
    )
    sums: np.ndarray | None = None
    for start in range(0, pairs, PAIRS_PER_ROUND):
        stop = min(start + PAIRS_PER_ROUND, pairs)
        cands = [sentences[i] for i in a[start:stop]]
        refs = [sentences[i] for i in b[start:stop]]
        P, R, F = scorer.score(cands, refs)
        # (layers + 1, 3): this round's sums of P, R, F per layer, in float64.
        part = np.stack([P, R, F], axis=-1).astype(np.float64).sum(axis=1)
        sums = part if sums is None else sums + part
        if progress is not None:
            progress(stop - start)
    assert sums is not None  # pairs >= 1 (checked by random_pairs)
    return sums / pairs
