"""All pairs: P, R and F of every candidate against every reference, on a scorer's model.

Built on the scorer's public seams (the tokens it scores, token weights, vector source) and the
kernel's ``pairwise_ragged``. Each pair is scored on its own, as ``score(...,
batch_independent=True)`` scores it, bert_score's special cases included: an "empty" side (2
tokens; with exclusions, nothing but special tokens left) gives P = R = 0, and a side whose
tokens all weigh 0 gives NaN on that side and F = 0. The scorer's options apply as in
``score()``: long texts whole in windows (the same vector source and store keys), excluded
tokens dropped from both sides (the remaining weights renormalise), F-beta.

Memory: the distinct texts are encoded once each. When their vectors do not fit in the
scorer's ``round_bytes``, the grid is computed by blocks of candidates and references that do,
and the vectors wait on disk in the scorer's store (or a temporary one) between blocks.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .. import _core
from ..engine.rounds import round_budget
from ..engine.rules import check_weights
from ..engine.settings import batch_size_or
from ..engine.vectors import VectorSource
from ..stages.options import f_beta
from ..stages.rescale import rescale
from ..stages.scored_tokens import warn_truncated
from ..stages.text import check_texts
from ..stages.token_filter import drop_rows
from ..store import EmbeddingStore

if TYPE_CHECKING:
    from ..engine.settings import Scores
    from .seams import Scorer


@dataclass(frozen=True)
class TextSet:
    """Distinct texts as the scorer scores them: token ids as encoded (cut, or whole with
    windows), which tokens are scored (None: all), the weights of the scored tokens, and the
    two flags of bert_score's special cases (empty; every weight 0).

    ``lengths`` counts every token row the encoder gives (what a block of vectors holds);
    ``cut`` lists the texts cut to the model's maximum length."""

    texts: list[str]
    ids: list[list[int]]
    keep: list[np.ndarray] | None
    weights: list[np.ndarray]
    lengths: np.ndarray
    two: np.ndarray
    weightless: np.ndarray
    cut: list[int]

    @classmethod
    def of(cls, scorer: Scorer, texts: list[str]) -> TextSet:
        tokenized = scorer.pipeline.tokens.tokenize(texts)
        ids, keep = tokenized.ids, tokenized.keep
        table = scorer.pipeline.weights_for(scorer.idf)
        weights = [table.weights(t) for t in ids]
        check_weights(weights, texts)
        if keep is not None:  # excluded tokens: dropped from both sides (token_filter)
            weights = [w[k] for w, k in zip(weights, keep)]
        lengths = np.fromiter((len(t) for t in ids), np.int64, len(ids))
        weightless = np.fromiter((not w.sum() > 0 for w in weights), bool, len(ids))
        return cls(texts, ids, keep, weights, lengths, tokenized.empty, weightless, tokenized.cut)


def distinct(texts: Sequence[str], index: dict[str, int]) -> np.ndarray:
    """Each text's number in ``index`` (new texts are added)."""
    return np.fromiter((index.setdefault(t, len(index)) for t in texts), np.int64, len(texts))


def budget_rows(scorer: Scorer) -> int:
    """Token rows of vectors (all layers counted) one block may hold: a scoring round's."""
    pipeline = scorer.pipeline
    hidden = pipeline.runtime.encoder.hidden_size or 1024
    return round_budget(scorer.round_bytes, hidden, pipeline.layers)


@dataclass(frozen=True)
class Packed:
    """Vectors of some texts of a :class:`TextSet`, packed for the kernel: text number ``t``
    is kernel text ``slot_of[t]``."""

    data: np.ndarray
    offsets: np.ndarray
    weights: np.ndarray | None
    unit_weights: np.ndarray
    slot_of: dict[int, int]


def pack_texts(source: VectorSource, texts: TextSet, rows: np.ndarray, batch_size: int) -> Packed:
    """Vectors of the distinct texts ``rows`` (numbers in ``texts``), from ``source``."""
    needed = np.unique(rows)
    data, offsets, slot = source.packed(
        [texts.texts[i] for i in needed], [texts.ids[i] for i in needed], batch_size
    )
    by_slot = needed[np.argsort(slot)]
    if texts.keep is not None:
        data, offsets = drop_rows(data, offsets, [texts.keep[i] for i in by_slot])
    weights = np.concatenate([texts.weights[i] for i in by_slot]) if len(by_slot) else None
    # As scoring.rules.score_weightless: a weightless side is NaN, F is 0, and the other side is
    # scored with the weightless texts' weights set to 1 (which changes no maximum).
    flags = np.repeat(texts.weightless[by_slot], np.diff(offsets))
    unit = np.where(flags, 1.0, weights if weights is not None else 1.0).astype(np.float32)
    return Packed(
        data, offsets, weights, unit, {int(t): int(slot[k]) for k, t in enumerate(needed)}
    )


def grid_from_packed(
    scorer: Scorer,
    packed: Packed,
    texts: TextSet,
    cand_rows: np.ndarray,
    ref_rows: np.ndarray,
    out: np.ndarray,
) -> None:
    """Raw P, R, F of texts ``cand_rows`` x ``ref_rows`` into ``out`` (shape (3, layers,
    len(cand_rows), len(ref_rows)))."""
    cands = np.fromiter((packed.slot_of[int(t)] for t in cand_rows), np.int64, len(cand_rows))
    refs = np.fromiter((packed.slot_of[int(t)] for t in ref_rows), np.int64, len(ref_rows))
    two = texts.two[cand_rows][:, None] | texts.two[ref_rows][None, :]
    nan_p = texts.weightless[cand_rows][:, None] & ~two
    nan_r = texts.weightless[ref_rows][None, :] & ~two
    redo = nan_p | nan_r
    layers = packed.data if scorer.all_layers else packed.data[None]
    for layer, vectors in enumerate(layers):
        p, r, f = _core.pairwise_ragged(vectors, packed.offsets, packed.weights, cands, refs)
        if redo.any():
            p2, r2, _ = _core.pairwise_ragged(
                vectors, packed.offsets, packed.unit_weights, cands, refs
            )
            p = np.where(redo, np.where(nan_p, np.float32(np.nan), p2), p)
            r = np.where(redo, np.where(nan_r, np.float32(np.nan), r2), r)
            f = np.where(redo, np.float32(0.0), f)
        if scorer.options.beta != 1.0:  # F-beta from P and R, as score() (0 where NaN)
            f = f_beta(p, r, scorer.options.beta)
        out[0, layer], out[1, layer], out[2, layer] = p, r, f
    # bert_score zeroes P and R (not F) of a pair with an empty side.
    out[:2, :, two] = 0.0


def grid(
    scorer: Scorer,
    source: VectorSource,
    texts: TextSet,
    cand_rows: np.ndarray,
    ref_rows: np.ndarray,
    batch_size: int,
    out: np.ndarray,
) -> None:
    """Raw P, R, F of texts ``cand_rows`` x ``ref_rows`` into ``out``, vectors from
    ``source``."""
    packed = pack_texts(source, texts, np.concatenate([cand_rows, ref_rows]), batch_size)
    grid_from_packed(scorer, packed, texts, cand_rows, ref_rows, out)


def blocks(rows: np.ndarray, lengths: np.ndarray, budget: int) -> Iterator[np.ndarray]:
    """Runs of ``rows`` whose token counts add up to at most ``budget`` (at least one each)."""
    start, total = 0, 0
    for k, row in enumerate(rows):
        n = int(lengths[row])
        if k > start and total + n > budget:
            yield rows[start:k]
            start, total = k, 0
        total += n
    if start < len(rows):
        yield rows[start:]


def raw_grid(
    scorer: Scorer,
    texts: TextSet,
    cand_rows: np.ndarray,
    ref_rows: np.ndarray,
    batch_size: int,
) -> np.ndarray:
    """Raw P, R, F (3, layers, cands, refs) of every pair of ``cand_rows`` x ``ref_rows``,
    by blocks within the scorer's ``round_bytes``."""
    out = np.zeros((3, scorer.pipeline.layers, len(cand_rows), len(ref_rows)), np.float32)
    if not out.size:
        return out
    budget = budget_rows(scorer)
    uc, c_inv = np.unique(cand_rows, return_inverse=True)
    ur, r_inv = np.unique(ref_rows, return_inverse=True)
    everything = np.union1d(uc, ur)
    source = scorer.pipeline.vector_source
    if texts.lengths[everything].sum() <= budget:
        sub = np.zeros((3, out.shape[1], len(uc), len(ur)), np.float32)
        grid(scorer, source, texts, uc, ur, batch_size, sub)
        out[:] = sub[:, :, c_inv][:, :, :, r_inv]
        return out
    with tempfile.TemporaryDirectory(prefix="rbs-pairwise-") as spill_dir:
        if source.store is None:
            # Vectors wait on disk between blocks, so that each text is encoded once.
            spill = EmbeddingStore(spill_dir, max_bytes=2**62)
            source = VectorSource(source.runtime, source.cache, spill, source.window)
        c_pos = {int(t): k for k, t in enumerate(uc)}
        r_pos = {int(t): k for k, t in enumerate(ur)}
        sub = np.zeros((3, out.shape[1], len(uc), len(ur)), np.float32)
        try:
            for cb in blocks(uc, texts.lengths, max(1, budget // 2)):
                for rb in blocks(ur, texts.lengths, max(1, budget // 2)):
                    part = np.zeros((3, out.shape[1], len(cb), len(rb)), np.float32)
                    grid(scorer, source, texts, cb, rb, batch_size, part)
                    ci = np.fromiter((c_pos[int(t)] for t in cb), np.int64, len(cb))
                    ri = np.fromiter((r_pos[int(t)] for t in rb), np.int64, len(rb))
                    sub[:, :, ci[:, None], ri[None, :]] = part
        finally:
            if source is not scorer.pipeline.vector_source:
                scorer.pipeline.vector_source.encoded += source.encoded
                if source.store is not None:
                    # Closed before the directory goes, on an error too (Windows cannot
                    # delete open files).
                    source.store.close()
    out[:] = sub[:, :, c_inv][:, :, :, r_inv]
    return out


def finish(scorer: Scorer, raw: np.ndarray) -> Scores:
    """P, R, F from a raw grid: rescaled when the scorer rescales; the layer axis dropped
    without ``all_layers``."""
    prf = [raw[k] for k in range(3)]
    if scorer.rescale_with_baseline and scorer.baseline_vals is not None:
        vals = np.asarray(scorer.baseline_vals, dtype=np.float64)
        rows = vals if scorer.all_layers else vals.reshape(1, 3)
        prf = [
            np.stack([rescale(s[layer], float(rows[layer, k])) for layer in range(len(s))])
            for k, s in enumerate(prf)
        ]
    if not scorer.all_layers:
        prf = [s[0] for s in prf]
    return prf[0], prf[1], prf[2]


def pairwise_scores(
    scorer: Scorer,
    cands: Sequence[str],
    refs: Sequence[str],
    batch_size: int | None = None,
) -> Scores:
    """P, R and F of every candidate against every reference.

    Parameters
    ----------
    scorer : Scorer
        Model, layer, weights (IDF or uniform) and rescaling.
    cands, refs : list of str
        Candidates (rows) and references (columns).
    batch_size : int, optional
        Most texts per encoder call (default: the scorer's).

    Returns
    -------
    (P, R, F) : tuple of np.ndarray
        float32 arrays of shape (len(cands), len(refs)), or (layers + 1, len(cands),
        len(refs)) with ``all_layers``. Entry ``[i, j]`` equals ``score([cands[i]],
        [refs[j]])`` of a ``batch_independent=True`` scorer (within float32 rounding).
    """
    cand_list = check_texts(cands, "cands")
    ref_list = check_texts(refs, "refs")
    batch = batch_size_or(scorer.batch_size, batch_size)
    index: dict[str, int] = {}
    cand_rows = distinct(cand_list, index)
    ref_rows = distinct(ref_list, index)
    texts = TextSet.of(scorer, list(index))
    warn_truncated(len(texts.cut), scorer.tokenizer.max_length)
    return finish(scorer, raw_grid(scorer, texts, cand_rows, ref_rows, batch))
