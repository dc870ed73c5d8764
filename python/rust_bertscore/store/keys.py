"""Keys of the embedding store: what determines a text's token vectors.

A key is the SHA-256 of a *key space* (the encoder graph's fingerprint, the precision, the
layer or "all", the execution provider and onnxruntime's version) followed by the text's token
ids (little-endian int64). So a different model, checkpoint, converter version, layer,
precision or device never reuses an entry, and two texts that tokenise alike share one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import InputValueError
from ..support.atomic import write_text_atomic
from ..support.boundary import NO_CAP, open_stream
from ..support.inputs import read_memo

_CHUNK = 8 * 1024 * 1024


def _file_digest(paths: Sequence[Path]) -> str:
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.name.encode() + b"\0")
        with open_stream(path, max_bytes=NO_CAP, error=InputValueError) as f:
            while chunk := f.read(_CHUNK):
                digest.update(chunk)
    return digest.hexdigest()


def graph_fingerprint(graph: str | Path, memo_dir: Path | None = None) -> str:
    """A digest naming an encoder graph's content.

    A graph the converter cached (``models/graph_cache.py``) has a manifest beside it naming
    its weights' SHA-256, family, layers, converter version, precision and policy: its text is
    the fingerprint. Any other ``.onnx`` (an export, a user's graph) is hashed with its
    external-data file, if any; the digest is memoised under ``memo_dir`` by path, size and
    modification time.
    """
    graph = Path(graph)
    manifest = graph.parent / "manifest.json"
    if manifest.is_file():
        meta = read_memo(manifest)
        with contextlib.suppress(OSError):
            if meta is not None and meta.get("size") == graph.stat().st_size:
                return (
                    "manifest:"
                    + hashlib.sha256(json.dumps(meta, sort_keys=True).encode()).hexdigest()
                )
    files = [graph] + [p for p in (graph.with_name(graph.name + ".data"),) if p.is_file()]
    stamp = [[str(p.resolve()), p.stat().st_size, p.stat().st_mtime_ns] for p in files]
    memo = None
    if memo_dir is not None:
        memo_key = hashlib.sha256(json.dumps(stamp).encode()).hexdigest()[:32]
        memo = memo_dir / f"{memo_key}.json"
        saved = read_memo(memo)
        if (
            saved is not None
            and saved.get("stamp") == stamp
            and isinstance(saved.get("digest"), str)
        ):
            return str(saved["digest"])
    digest = "sha256:" + _file_digest(files)
    if memo is not None:
        with contextlib.suppress(OSError):  # read-only: hashed again next time
            write_text_atomic(memo, json.dumps({"stamp": stamp, "digest": digest}))
    return digest


def key_space(
    fingerprint: str,
    precision: str,
    layers: str,
    provider: str,
    runtime_version: str,
    extra: str = "",
) -> bytes:
    """The 32-byte digest every key of one model setting starts from.

    Parameters
    ----------
    fingerprint : str
        :func:`graph_fingerprint` of the encoder graph.
    precision : str
        ``"fp32"`` or ``"int8"``.
    layers : str
        The layer number, or ``"all"`` for an all-layers graph.
    provider : str
        The ONNX Runtime execution provider that runs the graph (CPU and CUDA round apart).
    runtime_version : str
        onnxruntime's version.
    extra : str
        Anything else that changes the vectors of given token ids (e.g. a windowing mode).
    """
    text = json.dumps(
        {
            "fingerprint": fingerprint,
            "precision": precision,
            "layers": layers,
            "provider": provider,
            "onnxruntime": runtime_version,
            "extra": extra,
        },
        sort_keys=True,
    )
    return hashlib.sha256(text.encode()).digest()


def text_key(space: bytes, ids: Sequence[int]) -> bytes:
    """The key of one text: SHA-256 of the key space and its token ids."""
    return hashlib.sha256(space + np.asarray(ids, dtype="<i8").tobytes()).digest()


def text_keys(space: bytes, id_lists: Sequence[Sequence[int]]) -> list[bytes]:
    """:func:`text_key` of every text."""
    return [text_key(space, ids) for ids in id_lists]
