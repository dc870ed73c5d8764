"""rust-bertscore: BERTScore (Zhang et al., ICLR 2020) with a Rust core and an ONNX Runtime
encoder. Same numbers as bert_score 0.3.13, without PyTorch.

>>> from rust_bertscore import score
>>> P, R, F = score(["The cat sat on the mat."], ["A cat was sitting on the mat."])
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    from .plot import plot_example

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


def __getattr__(name: str) -> object:
    # plot_example (bert_score's) is loaded on first use: importing the package loads no
    # plotting code.
    if name == "plot_example":
        from .plot import plot_example

        return plot_example
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
