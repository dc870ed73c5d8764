"""Minimum Bayes risk (MBR) selection with BERTScore as the utility.

Given ``n`` samples (say, a model's translations of one source), the expected utility of
sample ``i`` is its mean F against every *other* sample taken as a pseudo-reference:
``u[i] = mean_{j != i} F(cand=samples[i], ref=samples[j])``, each pair scored on its own
(``batch_independent=True``, with the scorer's options: windows, exclusions, beta) and
rescaled when the scorer rescales. MBR picks the sample of highest utility.

Rules:

* ties: the lowest index among the samples of highest utility (compared in float64);
* duplicates count as separate samples: a sample repeated ``k`` times is a pseudo-reference
  ``k`` times (only sample ``i`` itself is left out of ``u[i]``); each distinct text is
  encoded once;
* one sample: it is chosen (index 0) and its utility is NaN (a mean over no other sample);
* no samples: ``ValueError``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..engine.settings import batch_size_or
from ..stages.scored_tokens import warn_truncated
from ..stages.text import as_list, check_texts
from .pairwise import (
    TextSet,
    budget_rows,
    distinct,
    finish,
    grid_from_packed,
    pack_texts,
    raw_grid,
)

if TYPE_CHECKING:
    from .seams import Scorer


@dataclass(frozen=True)
class MBRResult:
    """The outcome of MBR over one list of samples.

    Attributes
    ----------
    index : int
        Position of the chosen sample.
    sample : str
        The chosen sample.
    utilities : np.ndarray
        float64, one per sample: its mean F against the other samples (NaN for a lone
        sample).

    Examples
    --------
    >>> import numpy as np
    >>> MBRResult(0, "only one", np.array([np.nan])).as_dict()
    {'index': 0, 'sample': 'only one', 'utilities': [None]}
    """

    index: int
    sample: str
    utilities: np.ndarray

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready dict (a NaN utility becomes None)."""
        return {
            "index": self.index,
            "sample": self.sample,
            "utilities": [None if np.isnan(u) else float(u) for u in self.utilities],
        }


def utilities(f: np.ndarray) -> np.ndarray:
    """Expected utilities from an (n, n) F grid (rows: candidates, columns: pseudo-references):
    each row's mean off the diagonal, in float64."""
    f = np.asarray(f, dtype=np.float64)
    n = f.shape[0]
    if f.shape != (n, n):
        raise ValueError(f"expected a square F grid, got shape {f.shape}")
    if n == 1:
        return np.full(1, np.nan)
    return (f.sum(axis=1) - np.diag(f)) / (n - 1)


def choose(utility: np.ndarray) -> int:
    """The index of the highest utility; ties go to the lowest index; NaN never wins unless
    every utility is NaN (then 0)."""
    u = np.where(np.isnan(utility), -np.inf, utility)
    return int(np.argmax(u)) if len(u) else 0


def _result(samples: list[str], f: np.ndarray) -> MBRResult:
    u = utilities(f)
    k = choose(u)
    return MBRResult(k, samples[k], u)


def _check_scorer(scorer: Scorer) -> None:
    if scorer.all_layers:
        raise ValueError(
            "mbr needs one layer: use a scorer built without all_layers (num_layers=...)"
        )


def _check_samples(samples: object, where: str) -> list[str]:
    texts = check_texts(samples, where)
    if not texts:
        raise ValueError(f"{where} is empty: MBR needs at least one sample")
    return texts


def mbr_select(scorer: Scorer, samples: Sequence[str], batch_size: int | None = None) -> MBRResult:
    """The sample of highest mean F against the other samples (see the module docstring).

    Parameters
    ----------
    scorer : Scorer
        Model, layer, weights and rescaling of the utility.
    samples : list of str
        The hypotheses, which are also the pseudo-references.
    batch_size : int, optional
        Most texts per encoder call (default: the scorer's).
    """
    _check_scorer(scorer)
    texts = _check_samples(samples, "samples")
    batch = batch_size_or(scorer.batch_size, batch_size)
    index: dict[str, int] = {}
    rows = distinct(texts, index)
    table = TextSet.of(scorer, list(index))
    warn_truncated(len(table.cut), scorer.tokenizer.max_length)
    _, _, f = finish(scorer, raw_grid(scorer, table, rows, rows, batch))
    return _result(texts, f)


def mbr_select_batch(
    scorer: Scorer, sources: Sequence[Sequence[str]], batch_size: int | None = None
) -> list[MBRResult]:
    """:func:`mbr_select` for each list of samples in ``sources``.

    The distinct texts of consecutive sources are encoded together, as many as fit in the
    scorer's ``round_bytes`` at once, so the encoder runs full batches.
    """
    _check_scorer(scorer)
    lists = [
        _check_samples(s, f"sources[{i}]")
        for i, s in enumerate(as_list(sources, "sources", "a list of lists of str"))
    ]
    batch = batch_size_or(scorer.batch_size, batch_size)
    index: dict[str, int] = {}
    rows = [distinct(s, index) for s in lists]
    table = TextSet.of(scorer, list(index))
    warn_truncated(len(table.cut), scorer.tokenizer.max_length)
    budget = budget_rows(scorer)
    source = scorer.pipeline.vector_source
    results: list[MBRResult] = []
    start = 0
    while start < len(lists):
        stop, used = start, 0
        while stop < len(lists):
            size = int(table.lengths[np.unique(rows[stop])].sum())
            if stop > start and used + size > budget:
                break
            used += size
            stop += 1
        if stop == start + 1 and used > budget:
            # One source too big for a round: its own blocks.
            _, _, f = finish(scorer, raw_grid(scorer, table, rows[start], rows[start], batch))
            results.append(_result(lists[start], f))
        else:
            packed = pack_texts(source, table, np.concatenate(rows[start:stop]), batch)
            for k in range(start, stop):
                r = rows[k]
                out = np.zeros((3, scorer.pipeline.layers, len(r), len(r)), np.float32)
                grid_from_packed(scorer, packed, table, r, r, out)
                _, _, f = finish(scorer, out)
                results.append(_result(lists[k], f))
        start = stop
    return results
