"""An exported ``.onnx`` graph and its ``<graph>.onnx.json`` record, tied by the digest of the
graph's own bytes (``graph_sha256``): part of the model identity (:mod:`.identity`).

``rust-bertscore export`` writes the record last, with the layer, the checkpoint's weights
digest and ``graph_sha256``. :func:`export_record` reads it back and refuses a graph whose bytes
are not those the record was written for (:class:`GraphRecordMismatchError`), so a graph swapped
in beside another's record never runs under the record's layer and weights.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path
from typing import Any

from ..errors import InputValueError, ModelLoadError, warn
from ..support.atomic import write_text_atomic
from ..support.boundary import NO_CAP, open_stream
from ..support.digests import file_stamp, graph_files
from ..support.inputs import read_json_object, read_memo
from .choices import PRECISIONS

__all__ = [
    "GraphRecordMismatchError",
    "export_record",
    "export_record_path",
    "graph_file_digest",
    "graph_files",
]


class GraphRecordMismatchError(ModelLoadError):
    """An ``.onnx`` graph whose bytes are not those its ``<graph>.onnx.json`` record was written
    for (another graph copied over it, or the record copied beside another graph).

    >>> from rust_bertscore.models.graph_record import GraphRecordMismatchError
    >>> from rust_bertscore import ModelLoadError
    >>> issubclass(GraphRecordMismatchError, ModelLoadError)
    True
    """


def export_record_path(graph: Path) -> Path:
    """The JSON record ``rust-bertscore export`` writes beside a graph (layer, model, precision,
    weights digest, the graph's own digest).

    >>> from pathlib import Path
    >>> from rust_bertscore.models.graph_record import export_record_path
    >>> export_record_path(Path("m/model.onnx")).name
    'model.onnx.json'
    """
    return graph.with_name(graph.name + ".json")


def graph_file_digest(graph: Path) -> str:
    """SHA-256 hex digest of an ``.onnx`` graph's bytes and its external data's, memoised under
    ``$RUST_BERTSCORE_CACHE/fingerprints/`` by each file's ``support.digests.file_stamp``.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from rust_bertscore.models.graph_record import graph_file_digest
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     graph = Path(tmp) / "g.onnx"
    ...     _ = graph.write_bytes(b"not really a graph")
    ...     len(graph_file_digest(graph))
    64
    """
    from .graph_cache import cache_root  # the converter (onnx) loads here: not at import

    files = graph_files(graph)
    try:
        stamp = [file_stamp(p) for p in files]
    except OSError as error:
        raise ModelLoadError(f"{graph}: cannot be read ({error})") from None
    key = hashlib.sha256(json.dumps(["graph", stamp]).encode()).hexdigest()[:32]
    memo = cache_root() / "fingerprints" / f"{key}.json"
    saved = read_memo(memo) or {}  # damaged or replaced: hashed again
    if saved.get("stamp") == stamp and isinstance(saved.get("graph_sha256"), str):
        return str(saved["graph_sha256"])
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.removeprefix(graph.name).encode() + b"\0")
        with open_stream(path, max_bytes=NO_CAP, error=ModelLoadError) as f:
            while chunk := f.read(8 << 20):
                digest.update(chunk)
    value = digest.hexdigest()
    with contextlib.suppress(OSError):  # read-only: hashed again next time
        write_text_atomic(memo, json.dumps({"stamp": stamp, "graph_sha256": value}))
    return value


def export_record(graph: Path) -> dict[str, Any]:
    """The record beside an exported ``graph`` (``{}`` without one), checked against the graph.

    Raises
    ------
    GraphRecordMismatchError
        When the record names another graph's digest (``graph_sha256``).
    InputValueError
        When the record is not a bounded JSON object with an integer ``num_layers`` and a known
        ``precision``.
    ModelLoadError
        When the record cannot be read.

    A record written before it carried ``graph_sha256`` cannot be checked: it is used for the
    layer, with a warning, but its ``weights_digest`` is not believed (the signature names the
    graph's initializers).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from rust_bertscore.models.graph_record import export_record
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     export_record(Path(tmp) / "model.onnx")
    {}
    """
    path = export_record_path(graph)
    try:
        info = read_json_object(path, error=InputValueError)  # bounded: size, UTF-8, depth
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise ModelLoadError(f"cannot read {path}: {e}") from e
    layers = info.get("num_layers")
    if "num_layers" in info and (isinstance(layers, bool) or not isinstance(layers, int)):
        raise InputValueError(f"{path}: key 'num_layers' must be an integer, got {layers!r:.80}")
    if "precision" in info and info["precision"] not in PRECISIONS:
        raise InputValueError(
            f"{path}: key 'precision' must be one of {PRECISIONS}, got {info['precision']!r:.80}"
        )
    recorded = info.get("graph_sha256")
    if recorded is None:
        warn(
            f"{path} does not record the digest of {graph.name} (written before "
            "rust-bertscore recorded it): its layer is used but cannot be checked against the "
            "graph; export again to tie them"
        )
        return {k: v for k, v in info.items() if k != "weights_digest"}
    actual = graph_file_digest(graph)
    if recorded != actual:
        raise GraphRecordMismatchError(
            f"{graph} is not the graph {path.name} was written for (graph_sha256 "
            f"{str(recorded)[:16]}..., the file's {actual[:16]}...): the record's layer and "
            "weights would describe another graph. Export again, or remove the record to run "
            "the graph as an unrecorded one"
        )
    return info
