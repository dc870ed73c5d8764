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
from .compare import Comparison
from .errors import DeviceNotAvailableError, ModelNotFoundError, RustBertScoreError
from .hf_evaluate import evaluate_module
from .model_listing import ModelInfo, supported_models
from .registry import DEFAULT_MODEL, LANG2MODEL, MODEL2LAYERS
from .scores import BERTScorer, score
from .show import plot_example
from .stats import (
    BootstrapCI,
    PairedBootstrap,
    PairedPermutation,
    bootstrap_ci,
    paired_bootstrap,
    paired_permutation,
)

__all__ = [
    "DEFAULT_MODEL",
    "LANG2MODEL",
    "MODEL2LAYERS",
    "BERTScorer",
    "BootstrapCI",
    "Comparison",
    "DeviceNotAvailableError",
    "ModelInfo",
    "ModelNotFoundError",
    "PairedBootstrap",
    "PairedPermutation",
    "RustBertScoreError",
    "__version__",
    "bootstrap_ci",
    "dot",
    "evaluate_module",
    "get_num_threads",
    "l2_norm",
    "normalize",
    "paired_bootstrap",
    "paired_permutation",
    "pairwise_embeddings",
    "plot_example",
    "score",
    "score_embeddings",
    "set_num_threads",
    "supported_models",
]
