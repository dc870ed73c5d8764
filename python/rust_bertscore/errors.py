"""The package's exceptions and warnings, in one place.

Every error the package raises on purpose derives from :class:`RustBertScoreError`. Bad
arguments are also the built-in they have always been, so ``except ValueError`` keeps working:

- :class:`KernelError` (``ValueError``): bad input to a Rust kernel (declared in the binding,
  ``rust_bertscore._core``, as polars declares its exceptions; the message names the pair,
  text or argument at fault);
- :class:`ThreadPoolError` (``RuntimeError``): the kernel's thread pool could not start;
- :class:`ModelNotFoundError` (``FileNotFoundError``): no local copy of a model and no download;
- :class:`ModelLoadError` (``ValueError``): a model's files exist but cannot be used;
- :class:`CheckpointError` (``ValueError``): a checkpoint the converter cannot read;
- :class:`DeviceNotAvailableError` (``ValueError``): no ONNX Runtime provider for the device;
- :class:`DistributedInputError` (``ValueError``): a dataset row an engine cannot score (the
  message names the row's global index);
- :class:`WorkerPythonError` (``RuntimeError``): an engine's Python workers (Spark's) run an
  interpreter that cannot import the package (the message names ``PYSPARK_PYTHON``).

Warnings (bert_score's messages, e.g. for empty texts or a missing baseline) are issued with
``warnings.warn`` as :class:`RustBertScoreWarning`, so they can be filtered or turned into errors.
"""

from __future__ import annotations

import warnings

from ._core import KernelError, RustBertScoreError, ThreadPoolError


class ModelNotFoundError(RustBertScoreError, FileNotFoundError):
    """A model could not be found locally and could not be downloaded."""


class DeviceNotAvailableError(RustBertScoreError, ValueError):
    """The requested device has no ONNX Runtime execution provider here."""


class ModelLoadError(RustBertScoreError, ValueError):
    """A model file exists but cannot be used: a corrupt graph, or a tokenizer that does not
    match the model's vocabulary."""


class CheckpointError(RustBertScoreError, ValueError):
    """A checkpoint that cannot be converted: unreadable, corrupt, incomplete or inconsistent."""


class DistributedInputError(RustBertScoreError, ValueError):
    """A row of a dataset scored on an engine (``rust_bertscore.distributed``) cannot be scored;
    the message names the row by its global index, and the column."""


class WorkerPythonError(RustBertScoreError, RuntimeError):
    """A distributed engine's Python workers cannot import rust-bertscore (their interpreter is
    not the one it is installed in); the message names the setting (``PYSPARK_PYTHON``) and the
    interpreter to give it."""


class RustBertScoreWarning(UserWarning):
    """A warning of rust-bertscore (bert_score's warnings, with bert_score's messages)."""


def warn(message: str, stacklevel: int = 3) -> None:
    """Issue ``message`` as a :class:`RustBertScoreWarning` (from the caller's caller)."""
    warnings.warn(message, RustBertScoreWarning, stacklevel=stacklevel)


__all__ = [
    "CheckpointError",
    "DeviceNotAvailableError",
    "DistributedInputError",
    "KernelError",
    "ModelLoadError",
    "ModelNotFoundError",
    "RustBertScoreError",
    "RustBertScoreWarning",
    "ThreadPoolError",
    "WorkerPythonError",
]
