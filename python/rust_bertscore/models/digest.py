"""The digest of a model's weight values (the ``weights`` field of
:attr:`BERTScorer.signature <rust_bertscore.BERTScorer.signature>`), computed once per
checkpoint and kept in the model cache beside the converted graphs.

- A checkpoint: :func:`rust_bertscore.convert.digest.weights_digest` (canonical tensor names,
  dtype, shape and float32 bytes), cached under ``$RUST_BERTSCORE_CACHE/digests/`` by the
  checkpoint's file fingerprint (the graph cache's key), so it is read again only when the
  weight files change.
- An ``.onnx`` graph written by ``rust-bertscore export``: the digest of the checkpoint it was
  made from, which the export records in ``<graph>.onnx.json`` (``weights_digest``); an fp32
  export and its checkpoint name the same weights, and the precision field tells an int8 or
  fp16 export apart.
- Any other ``.onnx`` graph (no record, or one written before the record existed): the digest
  of the graph's initializers (:func:`rust_bertscore.convert.digest.graph_digest`), written
  ``onnx-<hex>`` so it is not mistaken for a checkpoint's.
"""

from __future__ import annotations

import contextlib
import functools
import json
from pathlib import Path

from ..support.atomic import write_text_atomic
from ..support.inputs import read_memo
from .files import ModelFiles
from .graph_cache import cache_root, weights_fingerprint
from .runtime import export_info_path

GRAPH_DIGEST_PREFIX = "onnx-"
"""Marks the digest of a graph's initializers (not of a checkpoint's weights)."""


def checkpoint_digest(model_dir: Path) -> str:
    """:func:`~rust_bertscore.convert.digest.weights_digest` of ``model_dir``, computed once per
    checkpoint: kept in the model cache by the weight files' fingerprint (a cache that cannot be
    written only costs a new computation next time).

    Examples
    --------
    >>> from rust_bertscore import DEFAULT_MODEL
    >>> from rust_bertscore.models.files import resolve_model
    >>> from rust_bertscore.models.digest import checkpoint_digest
    >>> checkpoint_digest(resolve_model(DEFAULT_MODEL).model_dir)[:16]
    '7babd26b2c0cac2f'
    """
    from ..convert.digest import DIGEST_VERSION, weights_digest

    fingerprint = weights_fingerprint(model_dir)
    memo = cache_root() / "digests" / f"{fingerprint[:32]}.json"
    saved = read_memo(memo)
    if (
        saved is not None
        and saved.get("fingerprint") == fingerprint
        and saved.get("version") == DIGEST_VERSION
        and isinstance(saved.get("digest"), str)
    ):
        return str(saved["digest"])
    digest = weights_digest(model_dir)
    record = {"fingerprint": fingerprint, "version": DIGEST_VERSION, "digest": digest}
    with contextlib.suppress(OSError):
        write_text_atomic(memo, json.dumps(record))
    return digest


def model_digest(files: ModelFiles) -> str:
    """The digest of the weights of the model ``files`` names (see the module docstring).

    Examples
    --------
    >>> from rust_bertscore import DEFAULT_MODEL
    >>> from rust_bertscore.models.files import resolve_model
    >>> from rust_bertscore.models.digest import model_digest
    >>> model_digest(resolve_model(DEFAULT_MODEL))[:16]
    '7babd26b2c0cac2f'
    """
    if files.onnx_path is None:
        return checkpoint_digest(files.model_dir)
    recorded = _recorded_digest(files.onnx_path)
    if recorded is not None:
        return recorded
    stat = files.onnx_path.stat()
    return GRAPH_DIGEST_PREFIX + _graph_digest(
        str(files.onnx_path.resolve()), stat.st_size, stat.st_mtime_ns
    )


def _recorded_digest(graph: Path) -> str | None:
    info = read_memo(export_info_path(graph))
    digest = info.get("weights_digest") if info is not None else None
    return digest if isinstance(digest, str) and digest else None


@functools.lru_cache(maxsize=8)
def _graph_digest(path: str, size: int, mtime_ns: int) -> str:
    # Keyed by the file's size and time too: a graph written again is digested again.
    from ..convert.digest import graph_digest

    return graph_digest(path)
