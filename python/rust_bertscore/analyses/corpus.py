"""Corpus-wide statistics that scoring in pieces needs: document frequencies for IDF, token
lengths of pairs, and the longest candidate and reference of every bert_score scoring batch
(its padding floor).

Used by the streaming command line (``cli_batches``, ``cli_score``) and by the distributed
engines (``rust_bertscore.distributed``); they compute the statistics over the whole input
first, so that each piece can then be scored with the numbers one ``score()`` call would give.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from .. import _core

if TYPE_CHECKING:
    from ..stages.scored_tokens import ScoredTokens


class Encodes(Protocol):
    """What :func:`document_frequencies` needs: ``TextTokenizer`` or ``ScoredTokens``."""

    @property
    def vocab_size(self) -> int: ...

    def encode(self, texts: Sequence[str]) -> list[list[int]]: ...


def document_frequencies(
    tokenizer: Encodes, ref_chunks: Iterable[list[str]], progress: object = None
) -> tuple[np.ndarray, int]:
    """Count, for every token id, the references whose token ids contain it.

    Returns
    -------
    (df, m) : (np.ndarray, int)
        ``df[id]`` = number of references holding ``id`` (special tokens included, as
        bert_score counts them); ``m`` = number of references.
    """
    df = np.zeros(max(tokenizer.vocab_size, 1), dtype=np.int64)
    m = 0
    for chunk in ref_chunks:
        ids = tokenizer.encode(chunk)
        lengths = np.fromiter((len(t) for t in ids), np.int64, len(ids))
        flat = np.fromiter((i for t in ids for i in t), np.int64, int(lengths.sum()))
        top = int(flat.max()) + 1 if len(flat) else 0
        if top > len(df):
            df = np.concatenate([df, np.zeros(top - len(df), dtype=np.int64)])
        # One count per (reference, id): unique keys doc * size + id.
        docs = np.repeat(np.arange(len(ids), dtype=np.int64), lengths)
        keys = np.unique(docs * len(df) + flat)
        df += np.bincount(keys % len(df), minlength=len(df))
        m += len(ids)
        if progress is not None:
            progress.update(len(ids))  # type: ignore[attr-defined]
    return df, m


def idf_dict(df: np.ndarray, m: int) -> defaultdict[int, float]:
    """bert_score's ``get_idf_dict`` from counts: ``ln((m+1)/(df+1))``, unseen ids ``ln(m+1)``
    (the kernel's IDF: ``_core.idf_from_frequencies``, ``_core.idf_default``)."""
    unseen = _core.idf_default(m)
    out: defaultdict[int, float] = defaultdict(lambda: unseen)
    seen = np.flatnonzero(df)
    values = _core.idf_from_frequencies(np.asarray(df, dtype=np.int64)[seen], m)
    out.update(zip(seen.tolist(), values.tolist()))
    return out


def pair_lengths(
    tokens: ScoredTokens, cands: Sequence[str], refs: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    """Token counts (special tokens included) of each pair's candidate and reference, as the
    scorer counts them (whole texts with ``long_texts="window"``, after exclusions)."""
    texts = list(dict.fromkeys([*cands, *refs]))
    lengths = dict(zip(texts, tokens.lengths(texts).tolist()))
    return (
        np.fromiter((lengths[t] for t in cands), np.int64, len(cands)),
        np.fromiter((lengths[t] for t in refs), np.int64, len(refs)),
    )


class BatchMaxima:
    """The longest candidate and reference of every scoring batch, from a first pass."""

    def __init__(self, batch_size: int) -> None:
        self.batch_size = batch_size
        self._cand: list[int] = []
        self._ref: list[int] = []
        self.pairs = 0

    def add(self, cand_lengths: np.ndarray, ref_lengths: np.ndarray) -> None:
        """Take the next pairs' lengths, in input order."""
        for c, r in zip(cand_lengths.tolist(), ref_lengths.tolist()):
            batch = self.pairs // self.batch_size
            if batch == len(self._cand):
                self._cand.append(c)
                self._ref.append(r)
            else:
                self._cand[batch] = max(self._cand[batch], c)
                self._ref[batch] = max(self._ref[batch], r)
            self.pairs += 1

    def floors(
        self, start: int, cand_lengths: np.ndarray, ref_lengths: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Floor flags (precision side, recall side) of the pairs from flattened index
        ``start`` on, with these lengths (the kernel's rule: ``_core.pad_floor_flags_at``)."""
        positions = start + np.arange(len(cand_lengths), dtype=np.int64)
        return self.floors_at(positions, cand_lengths, ref_lengths)

    @classmethod
    def from_arrays(cls, batch_size: int, cand_max: np.ndarray, ref_max: np.ndarray) -> BatchMaxima:
        """Maxima computed elsewhere (e.g. aggregated by an engine): entry ``b`` of each array
        is the longest candidate/reference (in tokens) of scoring batch ``b``."""
        out = cls(batch_size)
        out._cand = np.asarray(cand_max, dtype=np.int64).tolist()
        out._ref = np.asarray(ref_max, dtype=np.int64).tolist()
        out.pairs = len(out._cand) * batch_size
        return out

    @property
    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """The longest candidate and reference of each batch, as int64 arrays."""
        return np.asarray(self._cand, dtype=np.int64), np.asarray(self._ref, dtype=np.int64)

    def floors_at(
        self, positions: np.ndarray, cand_lengths: np.ndarray, ref_lengths: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Floor flags (precision side, recall side) of pairs at flattened ``positions`` (any
        order), with these lengths: the kernel's ``_core.pad_floor_flags_at``, the rule
        ``score()`` applies through ``_core.pad_floor_flags``."""
        positions = np.asarray(positions, dtype=np.int64)
        batch = positions // self.batch_size
        if len(batch) and int(batch.max()) >= len(self._cand):
            raise ValueError(
                f"flattened pair {int(batch.max()) * self.batch_size} is past the "
                f"{len(self._cand)} scoring batches of the first pass"
            )
        cand_max, ref_max = self.arrays
        return _core.pad_floor_flags_at(
            positions,
            np.asarray(cand_lengths, dtype=np.int64),
            np.asarray(ref_lengths, dtype=np.int64),
            cand_max,
            ref_max,
            self.batch_size,
        )
