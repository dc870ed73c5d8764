"""The similarity matrix behind one candidate/reference score (what bert_score's
``plot_example`` draws), computed through a :class:`BERTScorer`.

The matrix holds the cosine similarity of every candidate token vector with every reference
token vector, from the tokens and encoder the scorer uses. P, R and F1 are greedy matching over
it with bert_score's uniform weights (special tokens weigh 0), computed by the scorer's kernel on
the same vectors, so they equal ``score([candidate], [reference])`` (of a scorer without IDF).

The scorer's options apply as in ``score()``: with ``long_texts="window"`` a long text has every
token, its vectors from the windows; tokens left out by ``exclude_punctuation`` /
``exclude_special_tokens`` are absent from the matrix (rows, columns, tokens and weights), and a
text left with no content token is refused (``ValueError``); F is F-beta with ``beta``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .. import _core
from ..engine.settings import make_hash
from ..errors import InputValueError
from ..stages.embeddings import pack
from ..stages.options import f_beta
from ..stages.rescale import rescale
from ..stages.text import check_text
from .heatmap import heatmap_png

if TYPE_CHECKING:
    from .seams import Scorer

_WORD_MARKERS = ("Ġ", "▁")


@dataclass(frozen=True)
class SimilarityMatrix:
    """Token similarities of one candidate/reference pair and the scores they give.

    Attributes
    ----------
    cand_tokens, ref_tokens : list of str
        Display strings of every token scored, special tokens included (unless excluded).
    matrix : np.ndarray
        float32 (len(cand_tokens), len(ref_tokens)): cosine similarities, rescaled with the F
        baseline when ``rescaled`` (as bert_score's plot does).
    cand_weights, ref_weights : np.ndarray
        Token weights (0 for special tokens).
    P, R, F : float
        BERTScore of the pair (rescaled when ``rescaled``).
    model_type : str
    num_layers : int
    rescaled : bool
    hash : str
        The settings string, as ``score(..., return_hash=True)`` gives it.

    In Jupyter it shows as its heatmap, drawn as bert_score's ``plot_example`` draws it
    (:meth:`_repr_png_`, with matplotlib: the ``[plot]`` extra; without it, its text repr).

    Examples
    --------
    >>> from rust_bertscore import BERTScorer
    >>> m = BERTScorer().similarity_matrix("the cat sat", "a cat sat")
    >>> m.cand_tokens, m.matrix.shape, m.matrix.dtype
    (['[CLS]', 'the', 'cat', 'sat', '[SEP]'], (5, 5), dtype('float32'))
    >>> m.cand_matches.tolist()[2:4], m.cand_content.tolist()
    ([2, 3], [1, 2, 3])
    >>> m._repr_png_()[:4]  # what Jupyter displays
    b'\\x89PNG'
    """

    cand_tokens: list[str]
    ref_tokens: list[str]
    matrix: np.ndarray
    cand_weights: np.ndarray
    ref_weights: np.ndarray
    P: float
    R: float
    F: float
    model_type: str
    num_layers: int
    rescaled: bool
    hash: str

    @property
    def cand_matches(self) -> np.ndarray:
        """For each candidate token, the reference token it is matched to (precision)."""
        return self.matrix.argmax(axis=1)

    @property
    def ref_matches(self) -> np.ndarray:
        """For each reference token, the candidate token it is matched to (recall)."""
        return self.matrix.argmax(axis=0)

    @property
    def cand_content(self) -> np.ndarray:
        """Indices of the candidate tokens that count (weight > 0)."""
        return np.flatnonzero(self.cand_weights > 0)

    @property
    def ref_content(self) -> np.ndarray:
        """Indices of the reference tokens that count (weight > 0)."""
        return np.flatnonzero(self.ref_weights > 0)

    def _repr_png_(self) -> bytes | None:
        """The heatmap as PNG bytes, for IPython's display (None without matplotlib: IPython
        then shows the text repr). Drawn on a figure of its own; pyplot is not touched."""
        return heatmap_png(self)


def _display(token: str) -> str:
    for marker in _WORD_MARKERS:
        if token.startswith(marker) and len(token) > 1:
            return token[len(marker) :]
    return token


def _normalise(v: np.ndarray) -> np.ndarray:
    v = v.astype(np.float64)
    norms = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.where(norms > 0, norms, 1.0)


def compute_similarity_matrix(scorer: Scorer, candidate: str, reference: str) -> SimilarityMatrix:
    """The :class:`SimilarityMatrix` of one pair with ``scorer``'s model, layer and rescaling
    (uniform weights, as bert_score's plot).

    Raises
    ------
    ValueError
        For an empty text (or one left with no content token by the scorer's exclusions), a
        scorer with ``all_layers``, or rescaling with a missing baseline.

    Examples
    --------
    >>> from rust_bertscore import BERTScorer
    >>> from rust_bertscore.analyses.similarity import compute_similarity_matrix
    >>> scorer = BERTScorer()
    >>> m = compute_similarity_matrix(scorer, "the cat sat", "a cat sat")
    >>> P, R, F = scorer.score(["the cat sat"], ["a cat sat"])
    >>> round(m.F, 4) == round(float(F[0]), 4), m.rescaled
    (True, False)
    """
    candidate = check_text(candidate, "candidate")
    reference = check_text(reference, "reference")
    for name, text in (("candidate", candidate), ("reference", reference)):
        if not text.strip():
            raise InputValueError(f"the {name} is empty: there is no token to show")
    if scorer.all_layers:
        raise InputValueError(
            "a similarity matrix is of one layer: use a scorer with all_layers=False"
        )
    tokenizer = scorer.tokenizer
    pipeline = scorer.pipeline
    # Encoded as score([candidate], [reference]) encodes them: the distinct texts, one batch.
    texts = [candidate] if candidate == reference else [candidate, reference]
    # The tokens score() scores (whole with windows) and their vectors.
    tokenized = pipeline.tokens.tokenize(texts)
    ids = tokenized.ids
    rows = pipeline.text_vectors(texts, ids, scorer.batch_size)
    keep = tokenized.keep or [np.ones(len(t), dtype=bool) for t in ids]
    if tokenized.keep is not None:
        for name, k in (("candidate", 0), ("reference", -1)):
            if tokenized.empty[k]:
                raise InputValueError(
                    f"the {name} has no token left once {_exclusions(scorer)} leaves tokens "
                    "out: similarity_matrix/plot_example have nothing to show (score() gives "
                    "such a pair P = R = 0, bert_score's empty-text rule)"
                )
    cand_vec, ref_vec = rows[0][keep[0]], rows[-1][keep[-1]]
    cand_ids = [t for t, k in zip(ids[0], keep[0]) if k]
    ref_ids = [t for t, k in zip(ids[-1], keep[-1]) if k]
    weights = pipeline.uniform
    wc, wr = weights.weights(cand_ids), weights.weights(ref_ids)
    sim = _normalise(cand_vec) @ _normalise(ref_vec).T
    # The scores come from the scorer's kernel, on the same vectors.
    packed = pack([cand_vec, ref_vec], [wc, wr])
    one, zero = np.ones(1, dtype=np.int64), np.zeros(1, dtype=np.int64)
    prf = _core.score_ragged(packed.data, packed.offsets, packed.weights, zero, one)
    rescaled = scorer.rescale_with_baseline
    values = list(prf)
    if scorer.options.beta != 1.0:
        values[2] = f_beta(values[0], values[1], scorer.options.beta)
    if rescaled:
        base = scorer.baseline_vals
        assert base is not None  # a scorer's missing baseline raises
        values = [rescale(x, b) for x, b in zip(values, base)]
        sim = rescale(sim, base[2])
    p, r, f = (float(np.asarray(x).reshape(-1)[0]) for x in values)
    return SimilarityMatrix(
        cand_tokens=[_display(tokenizer.id_to_token(i)) for i in cand_ids],
        ref_tokens=[_display(tokenizer.id_to_token(i)) for i in ref_ids],
        matrix=sim.astype(np.float32),
        cand_weights=wc,
        ref_weights=wr,
        P=p,
        R=r,
        F=f,
        model_type=scorer.model_type,
        num_layers=scorer.num_layers,
        rescaled=rescaled,
        hash=make_hash(
            scorer.model_type,
            scorer.num_layers,
            False,
            rescaled,
            scorer.use_custom_baseline,
            scorer.precision,
            options=scorer.options,
            use_fast_tokenizer=scorer.use_fast_tokenizer,
            device=scorer.device,
        ),
    )


def _exclusions(scorer: Scorer) -> str:
    """The exclusion options a scorer sets, as keyword arguments."""
    names = ("exclude_punctuation", "exclude_special_tokens")
    return " and ".join(f"{n}=True" for n in names if getattr(scorer.options, n))
