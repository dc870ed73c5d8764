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
from .analyses.comparison import Comparison
from .analyses.mbr import MBRResult
from .analyses.similarity import SimilarityMatrix
from .analyses.stats import (
    BootstrapCI,
    PairedBootstrap,
    PairedPermutation,
    bootstrap_ci,
    paired_bootstrap,
    paired_permutation,
)
from .catalog.listing import ModelInfo, model_info, supported_models
from .catalog.registry import DEFAULT_MODEL, LANG2MODEL, MODEL2LAYERS
from .engine.text_embedding import TextEmbedding
from .errors import (
    CheckpointError,
    DeviceNotAvailableError,
    DistributedInputError,
    EncoderMemoryError,
    InputTypeError,
    InputValueError,
    KernelError,
    KernelTypeError,
    ModelLoadError,
    ModelNotFoundError,
    RustBertScoreError,
    RustBertScoreWarning,
    ScorerClosedError,
    ThreadPoolError,
)
from .models.caches import clear_cache
from .scoring.api import score
from .scoring.metric import BERTScoreMetric
from .scoring.scorer import BERTScorer
from .store import EmbeddingStore

if TYPE_CHECKING:
    from .integrations.hf_evaluate import evaluate_module
    from .integrations.plot import plot_example
    from .integrations.reward import bertscore_reward

__all__ = [
    "DEFAULT_MODEL",
    "LANG2MODEL",
    "MODEL2LAYERS",
    "BERTScoreMetric",
    "BERTScorer",
    "BootstrapCI",
    "CheckpointError",
    "Comparison",
    "DeviceNotAvailableError",
    "DistributedInputError",
    "EmbeddingStore",
    "EncoderMemoryError",
    "InputTypeError",
    "InputValueError",
    "KernelError",
    "KernelTypeError",
    "MBRResult",
    "ModelInfo",
    "ModelLoadError",
    "ModelNotFoundError",
    "PairedBootstrap",
    "PairedPermutation",
    "RustBertScoreError",
    "RustBertScoreWarning",
    "ScorerClosedError",
    "SimilarityMatrix",
    "TextEmbedding",
    "ThreadPoolError",
    "__version__",
    "bertscore_reward",
    "bootstrap_ci",
    "clear_cache",
    "dot",
    "evaluate_module",
    "get_num_threads",
    "l2_norm",
    "model_info",
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


def __getattr__(name: str) -> object:
    # Integrations are loaded on first use: importing the package loads no plotting code and
    # no evaluate module (``tests/test_layout.py``), and the reward function's module only when
    # it is asked for.
    if name == "plot_example":
        from .integrations.plot import plot_example

        return plot_example
    if name == "evaluate_module":
        from .integrations.hf_evaluate import evaluate_module

        return evaluate_module
    if name == "bertscore_reward":
        from .integrations.reward import bertscore_reward

        return bertscore_reward
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
