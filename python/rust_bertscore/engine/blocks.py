"""Scoring one block of pairs: its texts tokenised together, then scored in rounds by the kernel.

:meth:`~rust_bertscore.engine.pipeline.ScoringPipeline.score_pairs` cuts a call's pairs into
blocks (``rounds.block_step``) and hands each to a :class:`BlockScorer`. A block's distinct texts
are tokenised once, their weights checked (``rules.check_weights``) and its padding-floor flags
taken: the explicit ones given, else the kernel's ``pad_floor_flags`` over ``floor_batch``'s
batches. The block is then scored in rounds of at most ``budget`` token rows (``rounds.rounds``):
a round fetches the vectors of its own texts only, drops the excluded tokens, calls the kernel's
``score_ragged`` and gives the pairs with a weightless side bert_score's numbers
(``rules.weightless_sides``, ``rules.score_weightless``). Last come F-beta and bert_score's zero
P and R of a pair with an empty side.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from .. import _core
from ..stages.embeddings import TokenWeights
from ..stages.options import f_beta
from ..stages.scored_tokens import ScoredTokens, TokenizedTexts
from ..stages.text import PairedTexts
from ..stages.token_filter import drop_rows
from .rounds import rounds
from .rules import check_weights, score_weightless, warn_empty, weightless_sides
from .vectors import CallMemo


class Progress(Protocol):
    """What the pipeline calls on a progress bar: ``update(pairs)`` and ``close()``."""

    def update(self, n: int) -> object: ...

    def close(self) -> object: ...


def tqdm_progress(total: int) -> Progress:
    """The default progress bar (tqdm), for ``total`` pairs."""
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="scoring", unit="pair")  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Block:
    """One block's distinct texts, tokenised and weighed, and its pairs as indices into them
    (what :meth:`BlockScorer.prepare` hands to the rounds)."""

    start: int  # index of the block's first pair in the call
    stop: int  # one past its last pair
    texts: list[str]
    tokenized: TokenizedTexts
    weights: list[np.ndarray]  # per text, excluded tokens dropped
    weightless: np.ndarray  # per text: its weights sum to 0 (or are NaN)
    cand: np.ndarray  # per pair: index of its candidate in ``texts``
    ref: np.ndarray
    pair_tokens: np.ndarray  # per pair: its candidate's and reference's tokens
    two: np.ndarray  # per pair: a side is bert_score's empty text
    floor_p: np.ndarray | None  # per pair: padding-floor flags, None: no floor
    floor_r: np.ndarray | None


@dataclass(frozen=True)
class RoundVectors:
    """One round's vectors, as :meth:`BlockScorer.fetch` gives them to
    :meth:`BlockScorer.score_round`: ``needed`` are the block's texts of the round (sorted),
    ``inverse`` each pair side's index into them (candidates, then references), and text
    ``needed[i]`` is rows ``offsets[slot[i]]:offsets[slot[i] + 1]`` of ``data``."""

    needed: np.ndarray
    inverse: np.ndarray
    data: np.ndarray
    offsets: np.ndarray
    slot: np.ndarray


def _distinct_texts(
    cands: Sequence[str], refs: Sequence[str]
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The distinct texts of ``cands`` and ``refs`` (first seen first) and each pair's index of
    its candidate and of its reference in them."""
    texts: dict[str, int] = {}
    cand_idx = np.fromiter((texts.setdefault(t, len(texts)) for t in cands), np.int64, len(cands))
    ref_idx = np.fromiter((texts.setdefault(t, len(texts)) for t in refs), np.int64, len(refs))
    return list(texts), cand_idx, ref_idx


@dataclass
class BlockScorer:
    """Scores blocks of one call's pairs into ``out``, each in rounds (see
    :meth:`~rust_bertscore.engine.pipeline.ScoringPipeline.score_pairs`).

    Parameters
    ----------
    tokens : ScoredTokens
        The tokens scored (the pipeline's ``tokens``: cut or windowed, exclusions).
    vectors : callable
        ``vectors(texts, ids, batch_size, memo)`` gives ``(data, offsets, slot)``, the texts'
        vectors packed for the kernel (the pipeline's ``vectors``).
    all_layers : bool
        ``data`` has a leading layer axis (one score per layer).
    beta : float
        F is F-beta (1.0: bert_score's F1).
    paired : PairedTexts
        The call's pairs.
    weights : TokenWeights
        Token weights (uniform or IDF).
    batch_size : int
        Texts per encoder call at most.
    floor_batch : int or None
        bert_score's padding floor over batches of that many pairs; None: no floor.
    budget : int
        Token rows per round at most (``rounds.round_budget``).
    out : np.ndarray
        float32 (3, layers, pairs): P, R, F of every pair, written block by block.
    cut : set of str
        Texts cut to the model's maximum length are added to it.
    warned : set of str
        The empty-text warnings given in this call (each once).
    progress : Progress, optional
        Updated with the pairs of every round.
    memo : CallMemo, optional
        The call's memo of texts that come again.

    Examples
    --------
    >>> import numpy as np
    >>> from rust_bertscore import BERTScorer
    >>> from rust_bertscore.engine.blocks import BlockScorer
    >>> from rust_bertscore.stages.text import pair_texts
    >>> pipeline = BERTScorer().pipeline
    >>> paired = pair_texts(["the cat sat", "a dog"], ["a cat sat", "the dog"])
    >>> out = np.zeros((3, 1, 2), np.float32)
    >>> blocks = BlockScorer(
    ...     pipeline.tokens, pipeline.vectors, False, 1.0, paired, pipeline.uniform,
    ...     batch_size=64, floor_batch=64, budget=4096, out=out,
    ... )
    >>> blocks.score(0, 2, floors=None)
    >>> expected = pipeline.score_pairs(paired, pipeline.uniform, batch_size=64, floor_batch=64)
    >>> bool(np.array_equal(out[:, 0, :], expected))
    True
    """

    tokens: ScoredTokens
    vectors: Callable[
        [Sequence[str], Sequence[list[int]], int, CallMemo | None],
        tuple[np.ndarray, np.ndarray, np.ndarray],
    ]
    all_layers: bool
    beta: float
    paired: PairedTexts
    weights: TokenWeights
    batch_size: int
    floor_batch: int | None
    budget: int
    out: np.ndarray
    cut: set[str] = field(default_factory=set)
    warned: set[str] = field(default_factory=set)
    progress: Progress | None = None
    memo: CallMemo | None = None

    def score(
        self, block: int, block_stop: int, floors: tuple[np.ndarray, np.ndarray] | None
    ) -> None:
        """Score pairs ``[block, block_stop)`` into :attr:`out`; ``floors``: their explicit
        padding-floor flags (P side, R side), which replace those of ``floor_batch``.

        One stage after the other: :meth:`prepare`, then :meth:`fetch` and :meth:`score_round`
        for each of :meth:`round_spans`, then :meth:`finish` (``engine.overlap`` runs the same
        stages with each round's fetch on a worker thread)."""
        b = self.prepare(block, block_stop, floors)
        for lo, hi in self.round_spans(b):
            self.score_round(b, lo, hi, self.fetch(b, lo, hi))
        self.finish(b)

    def prepare(
        self, block: int, block_stop: int, floors: tuple[np.ndarray, np.ndarray] | None
    ) -> Block:
        """Pairs ``[block, block_stop)`` tokenised, weighed and given their floor flags."""
        texts, cand_idx, ref_idx = _distinct_texts(
            self.paired.cands[block:block_stop], self.paired.refs[block:block_stop]
        )
        tokenized = self.tokens.tokenize(texts)
        self.cut.update(texts[i] for i in tokenized.cut)
        warn_empty(tokenized.empty, cand_idx, ref_idx, self.warned)
        text_weights = [self.weights.weights(t) for t in tokenized.ids]
        check_weights(text_weights, texts)
        if tokenized.keep is not None:  # excluded tokens: dropped from both sides (token_filter)
            text_weights = [w[k] for w, k in zip(text_weights, tokenized.keep)]
        lengths = tokenized.lengths()
        floor_p: np.ndarray | None = None  # no floor: batch-independent
        floor_r: np.ndarray | None = None
        if floors is not None:
            floor_p, floor_r = floors
        elif self.floor_batch is not None:
            floor_p, floor_r = _core.pad_floor_flags(
                lengths[cand_idx], lengths[ref_idx], self.floor_batch
            )
        return Block(
            start=block,
            stop=block_stop,
            texts=texts,
            tokenized=tokenized,
            weights=text_weights,
            weightless=np.fromiter((not w.sum() > 0 for w in text_weights), bool, len(texts)),
            cand=cand_idx,
            ref=ref_idx,
            pair_tokens=lengths[cand_idx] + lengths[ref_idx],
            two=tokenized.empty[cand_idx] | tokenized.empty[ref_idx],
            floor_p=floor_p,
            floor_r=floor_r,
        )

    def round_spans(self, b: Block) -> list[tuple[int, int]]:
        """The block's rounds: ``[lo, hi)`` runs of its pairs within :attr:`budget` token rows."""
        return list(rounds(b.pair_tokens, self.budget))

    def fetch(self, b: Block, lo: int, hi: int) -> RoundVectors:
        """The vectors of the texts of pairs ``[lo, hi)`` of ``b`` (the memo, cache, store or
        encoder); the memo is told of the round here, so rounds must be fetched in order."""
        needed, inverse = np.unique(
            np.concatenate([b.cand[lo:hi], b.ref[lo:hi]]), return_inverse=True
        )
        round_texts = [b.texts[i] for i in needed]
        full, full_offsets, slot = self.vectors(
            round_texts, [b.tokenized.ids[i] for i in needed], self.batch_size, self.memo
        )
        if self.memo is not None:
            uses = np.bincount(inverse.reshape(-1), minlength=len(needed))
            self.memo.after_round(round_texts, uses, full, full_offsets, slot, self.all_layers)
        return RoundVectors(needed, inverse.reshape(-1), full, full_offsets, slot)

    def score_round(self, b: Block, lo: int, hi: int, fetched: RoundVectors) -> None:
        """Score pairs ``[lo, hi)`` of block ``b`` from their round's vectors ``fetched``."""
        needed, slot = fetched.needed, fetched.slot
        by_slot = needed[np.argsort(slot)]
        data, offsets = fetched.data, fetched.offsets
        keep = b.tokenized.keep
        if keep is not None:
            data, offsets = drop_rows(data, offsets, [keep[i] for i in by_slot])
        packed_weights = np.concatenate([b.weights[i] for i in by_slot])
        local = slot[fetched.inverse]
        local_cand, local_ref = local[: hi - lo], local[hi - lo :]
        round_floors = (
            None if b.floor_p is None else b.floor_p[lo:hi],
            None if b.floor_r is None else b.floor_r[lo:hi],
        )
        nan_sides = weightless_sides(
            b.weightless[b.cand[lo:hi]], b.weightless[b.ref[lo:hi]], b.two[lo:hi]
        )
        unit = None  # the weightless texts' weights set to 1, for score_weightless
        if nan_sides is not None:
            flags = np.repeat(b.weightless[by_slot], np.diff(offsets))
            unit = np.where(flags, 1.0, packed_weights).astype(np.float32)
        span = slice(b.start + lo, b.start + hi)
        for layer, vectors in enumerate(data if self.all_layers else data[None]):
            p, r, f = _core.score_ragged(
                vectors,
                offsets,
                packed_weights,
                local_cand,
                local_ref,
                floor_precision=round_floors[0],
                floor_recall=round_floors[1],
            )
            if nan_sides is not None and unit is not None:
                score_weightless((p, r, f), nan_sides, vectors, offsets, unit, local, round_floors)
            self.out[0, layer, span] = p
            self.out[1, layer, span] = r
            self.out[2, layer, span] = f
        if self.progress is not None:
            self.progress.update(hi - lo)

    def finish(self, b: Block) -> None:
        """After the last round of ``b``: F-beta, and bert_score's zero P and R of a pair with
        an empty side."""
        if self.beta != 1.0:
            span = slice(b.start, b.stop)
            self.out[2, :, span] = f_beta(self.out[0, :, span], self.out[1, :, span], self.beta)
        # bert_score zeroes P and R (not F) of a pair with a 2-token side ("empty")
        self.out[:2, :, b.start + np.flatnonzero(b.two)] = 0.0
