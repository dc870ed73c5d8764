"""The scoring package's leaf: argument checks, constants and the settings hash.

Every other module of ``scoring`` (and the analyses built on it) imports these; this module
imports nothing of the package but its version (``ScoringOptions`` only for type checking).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .._version import __version__
from ..errors import InputTypeError, InputValueError

if TYPE_CHECKING:
    from ..stages.options import ScoringOptions

Scores = tuple[np.ndarray, np.ndarray, np.ndarray]
"""(P, R, F): float32 arrays of shape (N,), or (layers + 1, N) with ``all_layers``."""

RefsArg = Sequence[str] | Sequence[Sequence[str]]
"""One reference per candidate, or a list of references per candidate."""

DEFAULT_CACHE_BYTES = 512 * 1024 * 1024
"""Default bound of a scorer's cache of encoded texts (bytes)."""

SCORE_BATCH_SIZE = 64
"""bert_score's default scoring batch (pairs), which decides its padding floor."""

PAIRS_PER_CHUNK = 2048
"""Most pairs scored per round: only their texts' embeddings are held at once."""

CHUNK_BYTES = 128 * 1024 * 1024
"""About the most bytes of token vectors a round holds (long texts make rounds of fewer pairs)."""


def check_flag(name: str, value: object) -> bool:
    """``value`` as a bool; TypeError naming ``name`` for anything but True/False."""
    if not isinstance(value, (bool, np.bool_)):
        raise InputTypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_batch_size(batch_size: object) -> int:
    """``batch_size`` as a positive int; TypeError/ValueError otherwise."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)):
        raise InputTypeError(f"batch_size must be a positive int, got {batch_size!r}")
    if batch_size < 1:
        raise InputValueError(f"batch_size must be a positive int, got {batch_size}")
    return int(batch_size)


def batch_size_or(default: int, batch_size: object) -> int:
    """``default`` when ``batch_size`` is None, else ``batch_size`` checked (see
    :func:`check_batch_size`)."""
    return default if batch_size is None else check_batch_size(batch_size)


def make_hash(
    model_type: str,
    num_layers: int,
    idf: bool,
    rescale_with_baseline: bool,
    use_custom_baseline: bool,
    precision: str = "fp32",
    batch_independent: bool = False,
    options: ScoringOptions | None = None,
    use_fast_tokenizer: bool = False,
    device: str = "cpu",
    revision: str | None = None,
    runtime: str = "onnxruntime",
) -> str:
    """The settings string bert_score prints, naming this package and its version, the
    precision when not fp32, the runtime when not ONNX Runtime (``_openvino``), the device when
    CUDA (``_cuda``: ``device=None`` may pick it), the options other than bert_score's
    (:meth:`ScoringOptions.hash_suffix`) and a Hub revision other than the default branch
    (``_revision=v2``).

    ``model_type`` is named as the user gave it, as bert_score names it, with the layer scored:
    ``FacebookAI/roberta-large_L17...`` for today's Hub id of roberta-large (its table layer),
    what bert_score prints for that id with ``num_layers=17``.

    Examples
    --------
    >>> from rust_bertscore.engine.settings import make_hash
    >>> make_hash("roberta-large", 17, False, False, False, "fp16", device="cuda").endswith(
    ...     "(rust-bertscore)_fp16_cuda"
    ... )
    True
    >>> make_hash("all-MiniLM-L6-v2", 6, False, False, False, "int8", runtime="openvino")[-14:]
    '_int8_openvino'
    """
    msg = (
        f"{model_type}_L{num_layers}{'_idf' if idf else '_no-idf'}"
        f"_version={__version__}(rust-bertscore)"
    )
    if rescale_with_baseline:
        msg += "-custom-rescaled" if use_custom_baseline else "-rescaled"
    if use_fast_tokenizer:
        msg += "_fast-tokenizer"  # bert_score's get_hash
    if precision != "fp32":
        msg += f"_{precision}"
    if runtime != "onnxruntime":
        msg += f"_{runtime}"
    if device == "cuda":
        msg += "_cuda"
    if batch_independent:
        msg += "_batch-independent"
    if options is not None:
        msg += options.hash_suffix()
    if revision not in (None, "main"):
        msg += f"_revision={revision}"
    return msg
