"""The heatmap of one candidate/reference pair (bert_score's ``plot_example`` and
``bert-score-show``) from model settings: builds a :class:`BERTScorer` and draws its
:meth:`BERTScorer.similarity_matrix` (drawing: :mod:`rust_bertscore.analyses.heatmap`).

Plotting needs matplotlib (``pip install rust-bertscore[plot]``) and uses its Agg renderer,
without pyplot.
"""

from __future__ import annotations

from ..analyses.heatmap import (
    ANNOTATE_MAX_TOKENS,
    PLOT_EXTRA_HINT,
    plot_similarity,
    require_matplotlib,
    save_example,
)
from ..analyses.similarity import SimilarityMatrix
from ..scoring.scorer import BERTScorer

__all__ = [
    "ANNOTATE_MAX_TOKENS",
    "PLOT_EXTRA_HINT",
    "SimilarityMatrix",
    "plot_example",
    "plot_similarity",
    "require_matplotlib",
    "save_example",
    "similarity_matrix",
]


def similarity_matrix(
    candidate: str,
    reference: str,
    model_type: str | None = None,
    num_layers: int | None = None,
    lang: str | None = None,
    rescale_with_baseline: bool = False,
    baseline_path: str | None = None,
    device: str | None = None,
    precision: str = "fp32",
    batch_size: int = 64,
    use_fast_tokenizer: bool = False,
    revision: str | None = None,
    runtime: str = "auto",
) -> SimilarityMatrix:
    """Cosine similarities of the tokens of ``candidate`` and ``reference``, and their P/R/F1:
    :meth:`BERTScorer.similarity_matrix` of a scorer with these settings.

    Parameters are those of :func:`rust_bertscore.score` (no IDF: the plot uses uniform
    weights, as bert_score's).

    Raises
    ------
    ValueError
        For an empty text, or rescaling without ``lang`` or ``baseline_path``, or a missing
        baseline file.
    """
    if model_type is None and lang is not None:
        lang = lang.lower()  # as bert_score, where the model is picked from lang
    scorer = BERTScorer(
        model_type=model_type,
        num_layers=num_layers,
        batch_size=batch_size,
        device=device,
        lang=lang,
        rescale_with_baseline=rescale_with_baseline,
        baseline_path=baseline_path,
        precision=precision,
        cache_bytes=0,
        use_fast_tokenizer=use_fast_tokenizer,
        revision=revision,
        runtime=runtime,
    )
    return scorer.similarity_matrix(candidate, reference)


def plot_example(
    candidate: str,
    reference: str,
    model_type: str | None = None,
    num_layers: int | None = None,
    lang: str | None = None,
    rescale_with_baseline: bool = False,
    baseline_path: str | None = None,
    use_fast_tokenizer: bool = False,
    fname: str = "",
) -> SimilarityMatrix:
    """bert_score's ``plot_example``: the heatmap of one pair, saved to ``fname`` if given.

    Returns the :class:`SimilarityMatrix`, which Jupyter shows as the heatmap (its
    ``_repr_png_``), as bert_score's figure shows there (drawn without pyplot).

    Examples
    --------
    >>> import os, tempfile
    >>> from rust_bertscore import plot_example
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     out = os.path.join(tmp, "pair.png")
    ...     m = plot_example("the cat sat", "a cat sat", fname=out)
    ...     print(os.path.isfile(out), m.model_type)
    True sentence-transformers/all-MiniLM-L6-v2
    """
    require_matplotlib()
    sim = similarity_matrix(
        candidate,
        reference,
        model_type=model_type,
        num_layers=num_layers,
        lang=lang,
        rescale_with_baseline=rescale_with_baseline,
        baseline_path=baseline_path,
        use_fast_tokenizer=use_fast_tokenizer,
    )
    return save_example(sim, fname)
