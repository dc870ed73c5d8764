"""The persistent embedding store: token vectors kept on disk, shared by processes and runs.

``BERTScorer(store=DIR)`` (also ``score(..., store=DIR)``, the CLI's ``--store DIR`` and the
Ray/Spark operators) looks every text up here before encoding it and appends what it encodes.
Entries are keyed by what determines the vectors (``keys.py``); the format is in
``records.py``, the files and their locking in ``segments.py``.
"""

from __future__ import annotations

import os
from typing import Union

from ..errors import InputTypeError, InputValueError
from .keys import graph_fingerprint, key_space, text_key, text_keys
from .segments import DEFAULT_STORE_BYTES, EmbeddingStore, StoreInfo

StoreArg = Union[str, "os.PathLike[str]", EmbeddingStore, None]
"""What ``store=`` takes: a directory, an :class:`EmbeddingStore`, or None (no store)."""


def open_store(store: StoreArg) -> EmbeddingStore | None:
    """An :class:`EmbeddingStore` for ``store`` (a directory or a store), or None."""
    if store is None or isinstance(store, EmbeddingStore):
        return store
    if isinstance(store, (str, os.PathLike)):
        if not str(store):
            raise InputValueError("store must be a directory path, got an empty string")
        return EmbeddingStore(store)
    raise InputTypeError(
        f"store must be a directory path or an EmbeddingStore, got {type(store).__name__}"
    )


__all__ = [
    "DEFAULT_STORE_BYTES",
    "EmbeddingStore",
    "StoreArg",
    "StoreInfo",
    "graph_fingerprint",
    "key_space",
    "open_store",
    "text_key",
    "text_keys",
]
