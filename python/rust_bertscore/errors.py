"""The package's own exception classes (bad arguments raise the built-in ValueError/TypeError)."""

from __future__ import annotations


class RustBertScoreError(Exception):
    """Base class of errors that are neither bad arguments nor plain file errors."""


class ModelNotFoundError(RustBertScoreError, FileNotFoundError):
    """A model could not be found locally and could not be downloaded."""


class DeviceNotAvailableError(RustBertScoreError, ValueError):
    """The requested device has no ONNX Runtime execution provider here."""


class ModelLoadError(RustBertScoreError, ValueError):
    """A model file exists but cannot be used: a corrupt graph, or a tokenizer that does not
    match the model's vocabulary."""
