"""``BERTScorer.embed``'s records: the data behind every score, one text at a time, and
:func:`embed_texts`, which makes them from a scoring pipeline."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ..stages.embeddings import TokenWeights
    from .pipeline import ScoringPipeline


@dataclass(frozen=True)
class TextEmbedding:
    """One text as a scorer scores it.

    Attributes
    ----------
    text : str
        The text.
    tokens : list of str
        Every token's vocabulary string (word markers such as ``##``/``Ġ``/``▁`` kept), special
        tokens included, in order.
    ids : np.ndarray
        int64 ``(T,)``: the token ids the encoder gets (whole with ``long_texts="window"``).
    special : np.ndarray
        bool ``(T,)``: the special tokens the text is encoded with (the template's positions).
    excluded : np.ndarray
        bool ``(T,)``: the tokens the scorer leaves out of matching (``exclude_punctuation``,
        ``exclude_special_tokens``); all False without exclusions.
    vectors : np.ndarray
        float32 ``(T, hidden)`` at the scorer's layer, as the encoder gives them (not
        normalised); ``(layers + 1, T, hidden)`` with ``all_layers``.
    weights : np.ndarray
        float32 ``(T,)``: each token's weight (IDF, or 1 with special tokens 0), before
        exclusions; the scorer averages over the tokens not excluded, weighted by these.

    Examples
    --------
    A pair's precision recomputed with NumPy from its two records (one pair alone: no batch
    padding floor applies):

    >>> import numpy as np
    >>> from rust_bertscore import BERTScorer
    >>> scorer = BERTScorer()
    >>> cand, ref = scorer.embed(["The cat sat on the mat.", "A cat was sitting on the mat."])
    >>> len(cand), cand.tokens[:3], cand.special.tolist()[:2], bool(cand.excluded.any())
    (9, ['[CLS]', 'the', 'cat'], [True, False], False)
    >>> def unit(v):
    ...     return v / np.linalg.norm(v, axis=1, keepdims=True)
    >>> best = (unit(cand.vectors) @ unit(ref.vectors).T).max(axis=1)
    >>> P = (best * cand.weights).sum() / cand.weights.sum()
    >>> (P_scored,), _, _ = scorer.score([cand.text], [ref.text])
    >>> print(f"{P:.4f}", bool(abs(P - P_scored) < 1e-5))
    0.9186 True
    """

    text: str
    tokens: list[str]
    ids: np.ndarray
    special: np.ndarray
    excluded: np.ndarray
    vectors: np.ndarray
    weights: np.ndarray

    def __len__(self) -> int:
        return len(self.ids)


def text_embeddings(
    texts: Sequence[str],
    ids: Sequence[Sequence[int]],
    tokens: Sequence[list[str]],
    special: Sequence[np.ndarray],
    keep: Sequence[np.ndarray] | None,
    vectors: Sequence[np.ndarray],
    weights: Sequence[np.ndarray],
) -> list[TextEmbedding]:
    """Assemble the records of ``texts`` (each vectors array is copied: it owns its memory)."""
    out = []
    for i, text in enumerate(texts):
        n = len(ids[i])
        excluded = np.zeros(n, dtype=bool) if keep is None else ~keep[i]
        out.append(
            TextEmbedding(
                text=text,
                tokens=list(tokens[i]),
                ids=np.asarray(ids[i], dtype=np.int64),
                special=np.asarray(special[i], dtype=bool),
                excluded=excluded,
                vectors=np.array(vectors[i], dtype=np.float32, copy=True),
                weights=np.asarray(weights[i], dtype=np.float32),
            )
        )
    return out


def embed_texts(
    pipeline: ScoringPipeline, texts: Sequence[str], weights: TokenWeights, batch_size: int
) -> list[TextEmbedding]:
    """Each text as ``pipeline`` scores it (``BERTScorer.embed``): token strings and ids of its
    ``tokens``, the special and excluded tokens, the vectors (float32, as the encoder gives
    them, through the pipeline's cache and store) and ``weights``' weight of each token.

    Examples
    --------
    >>> from rust_bertscore import BERTScorer
    >>> from rust_bertscore.engine.text_embedding import embed_texts
    >>> pipeline = BERTScorer(exclude_special_tokens=True).pipeline
    >>> (emb,) = embed_texts(pipeline, ["the cat sat"], pipeline.uniform, 64)
    >>> emb.tokens, emb.excluded.tolist(), emb.vectors.shape
    (['[CLS]', 'the', 'cat', 'sat', '[SEP]'], [True, False, False, False, True], (5, 384))
    """
    tokenized = pipeline.tokens.tokenize(texts)
    data, offsets, slot = pipeline.vectors(texts, tokenized.ids, batch_size)
    tok = pipeline.tokenizer
    return text_embeddings(
        texts,
        tokenized.ids,
        [[tok.id_to_token(t) for t in ids] for ids in tokenized.ids],
        [pipeline.tokens.special(ids) for ids in tokenized.ids],
        tokenized.keep,
        [data[..., offsets[j] : offsets[j + 1], :] for j in slot],
        [weights.weights(ids) for ids in tokenized.ids],
    )
