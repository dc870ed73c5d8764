"""rust-bertscore: BERTScore (Zhang et al., ICLR 2020) with a Rust core and an ONNX Runtime
encoder. Same numbers as bert_score 0.3.13, without PyTorch.

>>> from rust_bertscore import score
>>> P, R, F = score(["The cat sat on the mat."], ["A cat was sitting on the mat."])
"""

from __future__ import annotations

from ._core import (
    dot,
    get_num_threads,
    l2_norm,
    normalize,
    pairwise_embeddings,
    score_embeddings,
    set_num_threads,
)
from ._version import __version__
from .errors import (
    CheckpointError,
    DeviceNotAvailableError,
    KernelError,
    ModelLoadError,
    ModelNotFoundError,
    RustBertScoreError,
    RustBertScoreWarning,
    ThreadPoolError,
)
from .hf_evaluate import evaluate_module
from .models.listing import ModelInfo, supported_models
from .models.registry import DEFAULT_MODEL, LANG2MODEL, MODEL2LAYERS
from .scores import BERTScorer, score
from .similarity import SimilarityMatrix

__all__ = [
    "DEFAULT_MODEL",
    "LANG2MODEL",
    "MODEL2LAYERS",
    "BERTScorer",
    "CheckpointError",
    "DeviceNotAvailableError",
    "KernelError",
    "ModelInfo",
    "ModelLoadError",
    "ModelNotFoundError",
    "RustBertScoreError",
    "RustBertScoreWarning",
    "SimilarityMatrix",
    "ThreadPoolError",
    "__version__",
    "dot",
    "evaluate_module",
    "get_num_threads",
    "l2_norm",
    "normalize",
    "pairwise_embeddings",
    "plot_example",
    "score",
    "score_embeddings",
    "set_num_threads",
    "supported_models",
]


def plot_example(
    candidate: str,
    reference: str,
    model_type: str | None = None,
    num_layers: int | None = None,
    lang: str | None = None,
    rescale_with_baseline: bool = False,
    baseline_path: str | None = None,
    fname: str = "",
) -> SimilarityMatrix:
    """bert_score's ``plot_example``: the similarity heatmap of one pair, saved to ``fname``.

    Needs matplotlib (``pip install rust-bertscore[plot]``); the plotting code is loaded only
    when this is called. See :func:`rust_bertscore.plot.plot_example`.
    """
    from .plot import plot_example as _plot_example

    return _plot_example(
        candidate,
        reference,
        model_type=model_type,
        num_layers=num_layers,
        lang=lang,
        rescale_with_baseline=rescale_with_baseline,
        baseline_path=baseline_path,
        fname=fname,
    )
