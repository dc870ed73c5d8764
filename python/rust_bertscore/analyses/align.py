"""Token alignments: the data behind a BERTScore, pair by pair.

For each pair, every token of the candidate and of the reference with its weight and its best
match on the other side (greedy matching over the cosine similarity matrix, as in the heatmap of
``rust-bertscore show``): the candidate's matches give P, the reference's give R.

bert_score scores pairs in consecutive batches of ``batch_size`` and pads each side of a batch to
its longest text; padded similarities are 0, so a token whose best cosine is negative counts as
0 when the other side of its pair is shorter than the longest text on that side of its batch
(the *padding floor*). A pair aligned alone is never floored; in :func:`align_pairs` each side
says whether it was (``floored``) in a ``score()`` call with the same pairs and ``batch_size``,
and every token gives its best cosine both raw (``cosine``) and as scored (``scored``).

The scorer's options apply as in ``score()``: with ``long_texts="window"`` a long text has every
token, with its vector from the windows; a token left out by ``exclude_punctuation`` or
``exclude_special_tokens`` is listed, flagged ``excluded``, weighs 0, has no match (``match``
-1, ``cosine`` and ``scored`` NaN) and is no token's match; P, R and F (F-beta with ``beta``) are
``score()``'s.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _core
from ..engine.settings import batch_size_or
from ..errors import InputTypeError, InputValueError
from ..stages.text import check_text, pair_texts

if TYPE_CHECKING:
    from ..engine.settings import RefsArg
    from .seams import Scorer


@dataclass(frozen=True)
class TokenMatch:
    """One token and its best match on the other side of its pair.

    Attributes
    ----------
    position : int
        The token's position in its text (0 = the leading special token).
    token : str
        Readable text of the token (decoded alone: no ``Ġ``/``▁`` marker; WordPiece keeps ``##``).
    piece : str
        The vocabulary string of the token.
    id : int
        Token id.
    weight : float
        The token's weight in the score (0 for special tokens and excluded tokens; IDF when the
        scorer uses it).
    match : int
        Position of the most similar token of the other text (special tokens included; tokens
        excluded by the scorer's options never); -1 for an excluded token.
    cosine : float
        Cosine similarity with that token (the raw best); NaN for an excluded token.
    scored : float
        The value the score counts: ``max(cosine, 0)`` when the side is floored, else ``cosine``.
    excluded : bool
        Left out of matching by ``exclude_punctuation`` / ``exclude_special_tokens``.

    Examples
    --------
    >>> from rust_bertscore import BERTScorer
    >>> a = BERTScorer().align("the cat sat", "a cat sat")
    >>> t = a.candidate.tokens[2]
    >>> t.token, a.reference.tokens[t.match].token, round(t.weight, 1), t.cosine > 0.9
    ('cat', 'cat', 1.0, True)
    >>> sorted(t.to_dict())
    ['cosine', 'excluded', 'id', 'match', 'piece', 'position', 'scored', 'token', 'weight']
    """

    position: int
    token: str
    piece: str
    id: int
    weight: float
    match: int
    cosine: float
    scored: float
    excluded: bool = False

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the fields (an excluded token's NaN cosines as None)."""
        return {
            "position": self.position,
            "token": self.token,
            "piece": self.piece,
            "id": self.id,
            "weight": self.weight,
            "match": self.match,
            "cosine": None if self.excluded else self.cosine,
            "scored": None if self.excluded else self.scored,
            "excluded": self.excluded,
        }


@dataclass(frozen=True)
class SideAlignment:
    """One side (candidate or reference) of an aligned pair.

    Attributes
    ----------
    text : str
        The text as given.
    tokens : tuple of TokenMatch
        Every token, special tokens included; a candidate token's ``match`` is a reference
        position, a reference token's a candidate position.
    floored : bool
        Whether bert_score's padding floor applied to this side in the call (see the module
        docstring); always False for a pair aligned alone.

    Examples
    --------
    >>> from rust_bertscore import BERTScorer
    >>> a = BERTScorer().align("the cat sat", "a cat sat")
    >>> [t.token for t in a.candidate.tokens], a.candidate.floored
    (['[CLS]', 'the', 'cat', 'sat', '[SEP]'], False)
    >>> round(a.candidate.weighted_mean(), 4) == round(a.P, 4)
    True
    """

    text: str
    tokens: tuple[TokenMatch, ...]
    floored: bool

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the fields."""
        return {
            "text": self.text,
            "floored": self.floored,
            "tokens": [t.to_dict() for t in self.tokens],
        }

    def weighted_mean(self, scored: bool = True) -> float:
        """The weighted mean best cosine of this side's scored tokens (its P or R before
        rescaling); 0 when every token weighs 0."""
        tokens = [t for t in self.tokens if not t.excluded and t.match >= 0]
        weights = np.array([t.weight for t in tokens], dtype=np.float64)
        values = np.array([t.scored if scored else t.cosine for t in tokens], np.float64)
        total = weights.sum()
        return float((weights * values).sum() / total) if total > 0 else 0.0


@dataclass(frozen=True)
class Alignment:
    """The token alignment of one candidate/reference pair and its scores.

    Attributes
    ----------
    candidate : SideAlignment
        Candidate tokens matched to reference tokens (gives P).
    reference : SideAlignment
        Reference tokens matched to candidate tokens (gives R).
    P, R, F : float
        The pair's scores as ``score()`` gives them in the same call (same pairs, ``batch_size``
        and scorer settings; rescaled when ``rescaled``). With several references per candidate
        ``score()`` reports each of P, R and F maxed over the candidate's references: the max of
        these records' values.
    index : int
        The candidate's index in the call.
    ref_index : int or None
        The reference's index within the candidate's reference group; None when each candidate
        has one reference given as a str.
    rescaled : bool
        Whether P, R and F are rescaled with a baseline (token cosines never are).
    hash : str
        The scorer's settings string.

    Examples
    --------
    >>> from rust_bertscore import BERTScorer
    >>> scorer = BERTScorer()
    >>> a = scorer.align("the cat sat", "a cat sat")
    >>> P, R, F = scorer.score(["the cat sat"], ["a cat sat"])
    >>> round(a.F, 4) == round(float(F[0]), 4), a.index, a.ref_index, a.to_dict()["F1"] == a.F
    (True, 0, None, True)
    """

    candidate: SideAlignment
    reference: SideAlignment
    P: float
    R: float
    F: float
    index: int
    ref_index: int | None
    rescaled: bool
    hash: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the fields (``F`` as ``"F1"``, like the CLI's JSON)."""
        return {
            "index": self.index,
            "ref_index": self.ref_index,
            "P": self.P,
            "R": self.R,
            "F1": self.F,
            "rescaled": self.rescaled,
            "hash": self.hash,
            "candidate": self.candidate.to_dict(),
            "reference": self.reference.to_dict(),
        }


def floored_sides(
    cand_lengths: Sequence[int], ref_lengths: Sequence[int], batch_size: int
) -> tuple[np.ndarray, np.ndarray]:
    """Which sides bert_score's padding floor touches, from token counts (specials included).

    Pairs go in consecutive batches of ``batch_size``. A candidate is floored when its
    reference is shorter than the longest reference of its batch (its rows meet padded
    columns); a reference when its candidate is shorter than the longest candidate of the batch.

    Returns
    -------
    (cand_floored, ref_floored) : bool arrays, one entry per pair

    The rule is the kernel's (``_core.pad_floor_flags``: the precision side is the candidate's,
    the recall side the reference's), the one ``score()`` applies.

    >>> from rust_bertscore.analyses.align import floored_sides
    >>> cand, ref = floored_sides([5, 3, 4], [2, 6, 6], batch_size=2)
    >>> cand.tolist(), ref.tolist()
    ([True, False, False], [False, True, False])
    """
    lc = np.asarray(cand_lengths, dtype=np.int64)
    lr = np.asarray(ref_lengths, dtype=np.int64)
    return _core.pad_floor_flags(lc, lr, batch_size)


@contextlib.contextmanager
def tokens_memo(scorer: Scorer) -> Iterator[None]:
    """Within the block, the scorer tokenises each text once (its ``pipeline.tokens.memo``):
    the alignment's tokens are the ones its ``score()`` call scores, without a second
    tokenisation. A memo set already (the scoring server's) is left as it is.

    >>> from rust_bertscore import BERTScorer
    >>> from rust_bertscore.analyses.align import tokens_memo
    >>> scorer = BERTScorer()
    >>> with tokens_memo(scorer):
    ...     ids = scorer.pipeline.tokens.tokenize(["the cat sat"]).ids
    ...     "the cat sat" in scorer.pipeline.tokens.memo
    True
    >>> scorer.pipeline.tokens.memo is None
    True
    """
    tokens = scorer.pipeline.tokens
    if tokens.memo is not None:
        yield
        return
    tokens.memo = {}
    try:
        yield
    finally:
        tokens.memo = None


def _side(
    text: str,
    ids: Sequence[int],
    weights: np.ndarray,
    best: np.ndarray,
    cosines: np.ndarray,
    floored: bool,
    scorer: Scorer,
    keep: np.ndarray | None = None,
    names: dict[int, tuple[str, str]] | None = None,
) -> SideAlignment:
    """``best``, ``cosines``: each token's best match on the other side and its cosine, from
    ``_core.align_ragged`` (-1 and NaN for a token with none); ``keep``: this side's scored
    tokens (None: all); ``names``: the readable text and vocabulary string of ids seen before
    in the call (filled here)."""
    tokenizer = scorer.tokenizer
    if names is None:
        names = {}
    for token_id in ids:
        if token_id not in names:
            names[token_id] = (
                tokenizer.token_text(int(token_id)),
                tokenizer.id_to_token(int(token_id)),
            )
    excluded = np.zeros(len(ids), dtype=bool)
    if keep is not None:
        excluded = ~np.asarray(keep, dtype=bool)
        weights = np.where(excluded, 0.0, weights)
    cosines = cosines.astype(np.float64)
    scored = np.maximum(cosines, 0.0) if floored else cosines
    # Python numbers once per side (tolist), not per token: the report aligns every segment.
    tokens = tuple(
        TokenMatch(k, *names[token_id], int(token_id), w, m, c, v, e)
        for k, (token_id, w, m, c, v, e) in enumerate(
            zip(
                ids,
                np.asarray(weights, np.float64).tolist(),
                np.asarray(best, np.int64).tolist(),
                cosines.tolist(),
                scored.tolist(),
                excluded.tolist(),
            )
        )
    )
    return SideAlignment(text=text, tokens=tokens, floored=floored)


def align_pairs(
    scorer: Scorer, cands: Sequence[str], refs: RefsArg, batch_size: int | None = None
) -> list[Alignment]:
    """Token alignments of every (candidate, reference) pair, as ``scorer.score`` scores them.

    Parameters
    ----------
    scorer : Scorer
        Gives the model, layer, weights (IDF when it uses it) and rescaling.
    cands, refs
        As for :meth:`BERTScorer.score` (several references per candidate give one record per
        reference).
    batch_size : int, optional
        The ``batch_size`` of the ``score()`` call to mirror (default: the scorer's); it decides
        which sides are floored.

    Returns
    -------
    list of Alignment
        One per pair, in order (candidate by candidate, its references in order).

    Examples
    --------
    >>> from rust_bertscore import BERTScorer
    >>> from rust_bertscore.analyses.align import align_pairs
    >>> records = align_pairs(BERTScorer(), ["the cat sat"], [["a cat sat", "dogs run"]])
    >>> [(r.index, r.ref_index) for r in records], records[0].F > records[1].F
    ([(0, 0), (0, 1)], True)
    """
    if scorer.all_layers:
        raise InputValueError(
            "align needs a scorer with all_layers=False: an alignment is of one layer's tokens"
        )
    batch = batch_size_or(scorer.batch_size, batch_size)
    paired = pair_texts(cands, refs)
    pipeline = scorer.pipeline
    weights = pipeline.weights_for(scorer.idf)
    if not paired.cands:
        return []
    texts: dict[str, int] = {}
    cand_idx = [texts.setdefault(t, len(texts)) for t in paired.cands]
    ref_idx = [texts.setdefault(t, len(texts)) for t in paired.refs]
    unique = list(texts)
    with tokens_memo(scorer):
        # The tokens score() scores (whole with windows; exclusions in ``keep``), their vectors.
        tokenized = pipeline.tokens.tokenize(unique)
        ids, keep = tokenized.ids, tokenized.keep
        data, offsets, slot = pipeline.vectors(unique, ids, batch)
        # P, R and F exactly as score() gives them for these pairs (the pairs flattened, in
        # order), from the same tokens (the memo) and vectors (the cache).
        P, R, F = scorer.score(paired.cands, paired.refs, batch_size=batch)
    lengths = tokenized.lengths().tolist()  # what the padding floor compares
    cand_floored, ref_floored = floored_sides(
        [lengths[i] for i in cand_idx], [lengths[i] for i in ref_idx], batch
    )
    if scorer.batch_independent:  # scored as if alone: no floor
        cand_floored[:] = False
        ref_floored[:] = False
    if paired.group_offsets is None:
        index = list(range(len(paired.cands)))
        ref_index: list[int | None] = [None] * len(paired.cands)
    else:
        index, ref_index = [], []
        bounds = paired.group_offsets
        for i in range(len(bounds) - 1):
            index.extend([i] * (bounds[i + 1] - bounds[i]))
            ref_index.extend(range(bounds[i + 1] - bounds[i]))

    # Every pair's best matches in one kernel call (the scorer's similarities; excluded tokens
    # are no match and have none).
    slots = np.asarray(slot, dtype=np.int64)
    offsets = np.asarray(offsets, dtype=np.int64)
    keep_rows = None
    if keep is not None:
        keep_rows = np.ones(int(offsets[-1]), dtype=bool)
        for t, flags in enumerate(keep):
            keep_rows[offsets[slots[t]] : offsets[slots[t] + 1]] = flags
    cm, cc, co, rm, rc, ro = _core.align_ragged(
        data, offsets, slots[cand_idx], slots[ref_idx], keep_rows
    )

    out = []
    names: dict[int, tuple[str, str]] = {}
    rescaled, settings = scorer.rescale_with_baseline, scorer.hash
    for k, (ci, ri) in enumerate(zip(cand_idx, ref_idx)):
        c, r = slice(co[k], co[k + 1]), slice(ro[k], ro[k + 1])
        out.append(
            Alignment(
                candidate=_side(
                    paired.cands[k],
                    ids[ci],
                    weights.weights(ids[ci]),
                    cm[c],
                    cc[c],
                    bool(cand_floored[k]),
                    scorer,
                    None if keep is None else keep[ci],
                    names,
                ),
                reference=_side(
                    paired.refs[k],
                    ids[ri],
                    weights.weights(ids[ri]),
                    rm[r],
                    rc[r],
                    bool(ref_floored[k]),
                    scorer,
                    None if keep is None else keep[ri],
                    names,
                ),
                P=float(P[k]),
                R=float(R[k]),
                F=float(F[k]),
                index=index[k],
                ref_index=ref_index[k],
                rescaled=rescaled,
                hash=settings,
            )
        )
    return out


def align_one(scorer: Scorer, cand: str, ref: str) -> Alignment:
    """The token alignment of one pair, scored alone (never floored).

    Examples
    --------
    >>> from rust_bertscore import BERTScorer
    >>> from rust_bertscore.analyses.align import align_one
    >>> a = align_one(BERTScorer(), "the cat sat", "a cat sat")
    >>> [(t.token, a.reference.tokens[t.match].token) for t in a.candidate.tokens[2:4]]
    [('cat', 'cat'), ('sat', 'sat')]
    """
    for name, text in (("cand", cand), ("ref", ref)):
        if not isinstance(text, str):
            raise InputTypeError(
                f"{name} must be a str, got {type(text).__name__}: use align_batch() for "
                "collections of texts"
            )
    cand = check_text(cand, "cand")
    ref = check_text(ref, "ref")
    return align_pairs(scorer, [cand], [ref])[0]
