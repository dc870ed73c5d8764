"""The on-disk cache of converted encoder graphs.

A checkpoint is converted to ONNX once per (weights, layer, family, converter version,
precision and its policy) and kept under ``$RUST_BERTSCORE_CACHE`` (default
``~/.cache/rust-bertscore``). The weights are keyed by their files' digest and the digest of
their values as the converter reads them (:func:`weights_key`), not by name or path: two Hub
revisions of a model with different weights get two entries, revisions with the same weights
share one (the manifest records the revision that made it).
Entries are written atomically and carry a manifest written last, with the SHA-256 of the
graph's bytes (and of its external data, when it has any); an entry is used only when those
digests match the files on disk, and rebuilt otherwise: a missing or damaged manifest, one
written before digests were recorded, or a graph replaced by another (of the same size, too).
Each process hashes a graph once (``support.digests.file_sha256``; docs/caches.md gives the
cost), so a graph changed between two processes is never run under another's key.
Several processes may share the cache: the worst that happens is that two of them convert the
same model at once, and the last ``os.replace`` wins with an identical file (on Windows, where a
graph another process has open cannot be replaced, the first: the later one uses the entry it
finds complete).

A cache that cannot be written (a full disk, a read-only directory, no permission) does not stop
scoring: :func:`encoder_graph` converts the graph in memory and issues one
``RustBertScoreWarning`` naming the cache directory and ``RUST_BERTSCORE_CACHE``.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .. import convert
from ..catalog.lora_tasks import graph_family, lora_task
from ..convert.checkpoint import fingerprinted_files
from ..convert.values import DIGEST_VERSION, weights_digest
from ..errors import CheckpointError, InputValueError, warn
from ..support.atomic import write_text_atomic
from ..support.digests import (
    file_sha256s,
    file_stamp,
    graph_files,
    sha256s_match,
    stamp_identity,
)
from ..support.inputs import read_memo
from ..support.read_record import Opened, opened_files
from .files import ModelFiles

PRECISIONS = ("fp32", "int8", "fp16")
"""The graphs the cache holds. ``precision="tf32"`` runs the fp32 graph (TF32 is a CUDA provider
option, not a graph): :func:`graph_precision`."""


def graph_precision(precision: str) -> str:
    """The cached graph a scorer's ``precision`` runs: the fp32 graph for ``"tf32"``.

    Examples
    --------
    >>> from rust_bertscore.models.graph_cache import graph_precision
    >>> graph_precision("tf32"), graph_precision("fp16")
    ('fp32', 'fp16')
    """
    return "fp32" if precision == "tf32" else precision


def cache_root() -> Path:
    """``$RUST_BERTSCORE_CACHE``, or ``~/.cache/rust-bertscore``."""
    env = os.environ.get("RUST_BERTSCORE_CACHE")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(base) / "rust-bertscore"


def _is_sha256(value: object) -> bool:
    """Whether ``value`` is 64 lowercase hex digits (what a memo of a digest must hold: it
    names cache files and is split on ``|``)."""
    return (
        isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)
    )


def files_stamp(model_dir: Path) -> list[list]:
    """What the fingerprint memo keys on: the ``support.digests.file_stamp`` of each file the
    fingerprint hashes (``convert.checkpoint.fingerprinted_files``); a file that cannot be
    stat'ed is a ``CheckpointError`` naming it (not a cache error)."""
    return [stamp for _, stamp in _stamped_files(model_dir)]


def _stamped_files(model_dir: Path) -> list[tuple[Path, list]]:
    """(path, ``file_stamp``) of each file the fingerprint hashes (:func:`files_stamp`)."""
    stamped: list[tuple[Path, list]] = []
    for path in fingerprinted_files(model_dir):
        try:
            stamped.append((path, file_stamp(path)))
        except OSError as error:  # missing, dangling or a symlink loop
            raise CheckpointError(f"{path}: cannot be read ({error})") from None
    return stamped


def _fingerprint_memo(model_dir: Path) -> tuple[Path, list, str | None]:
    """(memo path, stamp, memoised fingerprint or None) of the checkpoint's files
    (:func:`files_stamp`)."""
    stamp = files_stamp(model_dir)
    memo_key = hashlib.sha256(json.dumps(stamp).encode()).hexdigest()[:32]
    memo = cache_root() / "fingerprints" / f"{memo_key}.json"
    saved = read_memo(memo)
    if saved is not None and saved.get("stamp") == stamp and _is_sha256(saved.get("digest")):
        return memo, stamp, str(saved["digest"])
    return memo, stamp, None


def check_unchanged(
    model_dir: Path, stamp: list, what: str, opened: Sequence[tuple[str, list[int]]] = ()
) -> None:
    """Raise ``CheckpointError`` when the checkpoint's files no longer have ``stamp``, or when a
    file ``opened`` under one of their paths (``read_record.opened_files``) was another file
    than the one stamped: they changed while they were being ``what`` (hashed, converted), so
    what was read may be another checkpoint's (a folder swapped and put back, a snapshot's
    link re-pointed) and is not kept."""
    current = _stamped_files(model_dir)
    changed = [Path(entry[0]).name for entry, (_, now) in zip(stamp, current) if entry != now]
    if len(current) != len(stamp):
        changed.append("the list of weight files")
    expected: dict[str, list[int]] = {}
    for (path, _), entry in zip(current, stamp):
        expected[os.path.abspath(path)] = expected[str(entry[0])] = stamp_identity(entry)
    changed += [Path(path).name for path, seen in opened if expected.get(path, seen) != seen]
    if changed:
        raise CheckpointError(
            f"{model_dir}: {', '.join(sorted(set(changed)))} changed while the checkpoint was "
            f"being {what}; no graph was cached, try again once the files are written"
        )


def discard_unless_unchanged(
    model_dir: Path,
    stamp: list,
    opened: Sequence[tuple[str, list[int]]],
    built: Sequence[Path],
    source: Path | None,
    fp32_key: str,
) -> None:
    """After a conversion: :func:`check_unchanged` (``"converted"``), and for a graph made
    from an fp32 graph (``source``: int8, fp16), that graph must be the entry ``fp32_key`` of
    the same weights. Otherwise the graph may be another checkpoint's: the ``built`` files
    are removed and ``CheckpointError`` raised."""
    try:
        check_unchanged(model_dir, stamp, "converted", opened)
        if source is not None and source.parent.name != fp32_key:
            raise CheckpointError(
                f"{model_dir}: the weights changed while the checkpoint was being "
                "converted (its fp32 graph is another's); no graph was cached, try again"
            )
    except CheckpointError:
        for path in built:
            path.unlink(missing_ok=True)
        raise


def weights_fingerprint(model_dir: Path) -> str:
    """A digest of the checkpoint's weight files (``convert.weights_fingerprint``: safetensors,
    or PyTorch ``.bin`` files where there are none), memoised by their :func:`files_stamp`."""
    memo, stamp, memoised = _fingerprint_memo(model_dir)
    if memoised is not None:
        return memoised
    return _remember_fingerprint(memo, stamp, convert.weights_fingerprint(model_dir))


def _remember_fingerprint(memo: Path, stamp: list, digest: str) -> str:
    with contextlib.suppress(OSError):  # a read-only cache only costs a re-hash next time
        write_text_atomic(memo, json.dumps({"stamp": stamp, "digest": digest}))
    return digest


def weights_key(model_dir: Path) -> str:
    """What a cached graph's key says of the weights: the files' fingerprint
    (:func:`weights_fingerprint`) and the digest of the weight values the converter reads
    (``convert.values.weights_digest``), ``"<fingerprint>|<value digest>"``.

    The value digest is computed once per fingerprint and kept under
    ``$RUST_BERTSCORE_CACHE/digests/`` (the record the scorer's signature reads too); a graph is
    found again only for weights that read as the same values.

    Examples
    --------
    >>> from rust_bertscore import DEFAULT_MODEL
    >>> from rust_bertscore.models.files import resolve_model
    >>> from rust_bertscore.models.graph_cache import weights_key
    >>> fingerprint, values = weights_key(resolve_model(DEFAULT_MODEL).model_dir).split("|")
    >>> len(fingerprint), values[:16]
    (64, '7babd26b2c0cac2f')
    """
    return weights_key_and_stamp(model_dir)[0]


def weights_key_and_stamp(model_dir: Path) -> tuple[str, list[list]]:
    """:func:`weights_key`, and the :func:`files_stamp` of the files it was taken from (a
    conversion that follows must find the files with that stamp still)."""
    stamp_memo, stamp, fingerprint = _fingerprint_memo(model_dir)
    if fingerprint is None:
        # Weights new to this cache: both digests are needed, so they are taken side by side
        # (hashlib hashes without the GIL; on 2 cores roberta-large's two passes over 1.4 GB
        # take the time of one).
        with ThreadPoolExecutor(max_workers=1) as pool, opened_files() as opened:
            values = pool.submit(_digest_and_opened, model_dir)
            files_digest = convert.weights_fingerprint(model_dir)
            digest, digest_opened = values.result()
        check_unchanged(model_dir, stamp, "hashed", [*opened, *digest_opened])
        fingerprint = _remember_fingerprint(stamp_memo, stamp, files_digest)
        _remember_digest(fingerprint, digest)
        return f"{fingerprint}|{digest}", stamp
    saved = read_memo(_digest_memo(fingerprint)) or {}  # damaged or replaced: digested again
    if (
        saved.get("fingerprint") == fingerprint
        and saved.get("version") == DIGEST_VERSION
        and _is_sha256(saved.get("digest"))
    ):
        return f"{fingerprint}|{saved['digest']}", stamp
    digest, opened = _digest_and_opened(model_dir)
    check_unchanged(model_dir, stamp, "hashed", opened)
    _remember_digest(fingerprint, digest)
    return f"{fingerprint}|{digest}", stamp


def _digest_and_opened(model_dir: Path) -> tuple[str, Opened]:
    """``weights_digest`` of ``model_dir`` and the files it opened (in its own thread's
    context)."""
    with opened_files() as opened:
        return weights_digest(model_dir), opened


def _digest_memo(fingerprint: str) -> Path:
    """Where the values' digest of the weights with file ``fingerprint`` is memoised."""
    return cache_root() / "digests" / f"{fingerprint[:32]}.json"


def _remember_digest(fingerprint: str, digest: str) -> None:
    record = {"fingerprint": fingerprint, "version": DIGEST_VERSION, "digest": digest}
    with contextlib.suppress(OSError):  # a read-only cache only costs a new digest next time
        write_text_atomic(_digest_memo(fingerprint), json.dumps(record))


GRAPH_VARIANT = "fused-attention"
"""The kind of graph cached for the scorer (see ``convert.export_onnx(fused=True)``)."""


def precision_policy(precision: str) -> str:
    """What a cached graph of ``precision`` is, beyond the converter version: part of its key."""
    if precision == "fp32":
        return GRAPH_VARIANT
    if precision == "fp16":
        return f"{GRAPH_VARIANT}|{convert.FP16_POLICY}"
    return f"{GRAPH_VARIANT}|{convert.INT8_POLICY}"


def entry_key(fingerprint: str, family: str, layers: str, precision: str) -> str:
    text = (
        f"{fingerprint}|{family}|{layers}|{convert.CONVERTER_VERSION}|{precision}|"
        f"{precision_policy(precision)}"
    )
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _valid(graph: Path, manifest: Path) -> bool:
    """Whether the entry's manifest names ``graph``'s size and the digests of its files (the
    graph and its external data): a manifest without digests (written before they were
    recorded) does not."""
    meta = read_memo(manifest)
    try:
        if meta is None or not graph.is_file() or graph.stat().st_size != meta.get("size"):
            return False
    except OSError:
        return False
    return sha256s_match(graph_files(graph), meta.get("sha256"))


def converted_graph(
    files: ModelFiles,
    config: dict,
    num_layers: int,
    *,
    all_layers: bool = False,
    precision: str = "fp32",
) -> Path:
    """Path of the ONNX graph for ``files`` at ``num_layers`` (or all layers), converting once.

    Parameters
    ----------
    files : ModelFiles
        A checkpoint (not a ready ``.onnx``).
    config : dict
        Its ``config.json``.
    num_layers : int
        Keep layers 1..num_layers; ignored with ``all_layers``.
    all_layers : bool
        Output every hidden state of the whole model.
    precision : {"fp32", "int8", "fp16"}
        ``"int8"`` quantises the fp32 graph's projections to int8 with one activation scale
        per token (``convert.INT8_ACTIVATIONS``, ``convert.INT8_POLICY``); ``"fp16"`` rewrites
        the fp32 graph in float16 with float32 norms, softmax and residual stream
        (``convert.to_fp16``, ``convert.FP16_POLICY``). Each is cached under its own key.
    """
    if precision not in PRECISIONS:
        raise InputValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    family = graph_family(config)  # with a LoRA task: "<family>@<task>"
    layers = "all" if all_layers else str(num_layers)
    # The files' fingerprint and the values' digest, and the files' stamp when they were
    # hashed: the conversion must read the same files.
    weights, stamp = weights_key_and_stamp(files.model_dir)
    fingerprint, values = weights.split("|")
    key = entry_key(weights, family, layers, precision)
    entry = cache_root() / "onnx" / key
    graph, manifest = entry / "model.onnx", entry / "manifest.json"
    if _valid(graph, manifest):
        return graph
    entry.mkdir(parents=True, exist_ok=True)
    try:
        with opened_files() as opened:
            source = _build(files, config, num_layers, all_layers, precision, graph)
    except PermissionError:
        if _valid(graph, manifest):  # Windows: another process built it first and has it open
            return graph
        raise
    # Weights rewritten while converting: the graph may be another checkpoint's. int8 and
    # fp16 are made from the fp32 graph of the same key, or not at all.
    fp32_key = entry_key(weights, family, layers, "fp32")
    discard_unless_unchanged(files.model_dir, stamp, opened, graph_files(graph), source, fp32_key)
    meta = {
        "model": files.name,
        "revision": files.revision,
        "family": family,
        "layers": layers,
        "precision": precision,
        "policy": precision_policy(precision),
        "converter_version": convert.CONVERTER_VERSION,
        "weights_sha256": fingerprint,
        "weights_digest": values,
        "size": graph.stat().st_size,
        "sha256": file_sha256s(graph_files(graph)),  # what a later process checks
    }
    write_text_atomic(manifest, json.dumps(meta, indent=1))
    return graph


def _build(
    files: ModelFiles, config: dict, num_layers: int, all_layers: bool, precision: str, graph: Path
) -> Path | None:
    """Convert into ``graph``; for int8 and fp16, the fp32 graph they were made from."""
    if precision == "fp32":
        convert.export_onnx(
            files.model_dir,
            graph,
            num_layers,
            all_layers=all_layers,
            fused=True,
            task=lora_task(config),
        )
        return None
    if precision == "fp16":
        source = converted_graph(files, config, num_layers, all_layers=all_layers)
        convert.convert_fp16(source, graph)
        return source
    source = converted_graph(files, config, num_layers, all_layers=all_layers)
    convert.quantize_int8(source, graph, activations=convert.INT8_ACTIVATIONS)
    return source


CACHE_WRITE_ERRNOS = frozenset(
    code
    for code in (
        errno.ENOSPC,
        getattr(errno, "EDQUOT", None),
        errno.EROFS,
        errno.EACCES,
        errno.EPERM,
        # a cache path that is, or lies under, something other than a directory
        errno.ENOTDIR,
        errno.EEXIST,
        # a directory planted where a cache file goes; a path under a folder that cannot
        # hold one (/proc/self)
        errno.EISDIR,
        errno.ENOENT,
        errno.ELOOP,
        errno.ENAMETOOLONG,
    )
    if code is not None
)
"""What a cache that cannot be written raises: full disk or quota, read-only, no permission, a
path through a regular file."""


def encoder_graph(
    files: ModelFiles,
    config: dict,
    num_layers: int,
    *,
    all_layers: bool = False,
    precision: str = "fp32",
) -> Path | bytes:
    """:func:`converted_graph`, or, when the cache cannot be written, the graph converted in
    memory (serialised, for ``Encoder``) after one ``RustBertScoreWarning`` that names the cache
    directory and ``RUST_BERTSCORE_CACHE``. Other errors (a missing or corrupt checkpoint) are
    raised as they are."""
    try:
        return converted_graph(
            files, config, num_layers, all_layers=all_layers, precision=precision
        )
    except OSError as error:
        if error.errno not in CACHE_WRITE_ERRNOS:
            raise
        reason = error.strerror or str(error)
    warn(
        f"cannot write the converted graph of {files.name} to the model cache {cache_root()} "
        f"({reason}): converting it in memory, again in every new process; free space there "
        "or set RUST_BERTSCORE_CACHE to a writable directory with room"
    )
    return graph_in_memory(files, num_layers, all_layers=all_layers, precision=precision)


def graph_in_memory(
    files: ModelFiles, num_layers: int, *, all_layers: bool = False, precision: str = "fp32"
) -> bytes:
    """The graph :func:`converted_graph` would cache, built in memory and serialised: the same
    fused fp32 graph, its per-token int8 rewrite (``convert.INT8_ACTIVATIONS``) or its float16
    rewrite (``convert.to_fp16``)."""
    if precision not in PRECISIONS:
        raise InputValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    model = convert.build_model(
        files.model_dir, num_layers, all_layers=all_layers, fused=True, task=files.task
    )
    if precision == "int8":
        from ..convert.per_token import per_token_matmuls

        if convert.INT8_ACTIVATIONS != "per-token":  # pragma: no cover - a policy change
            raise NotImplementedError(f"in-memory int8 for {convert.INT8_ACTIVATIONS!r}")
        per_token_matmuls(model, ())
    elif precision == "fp16":
        convert.to_fp16(model)
    try:
        return model.SerializeToString()
    except ValueError as error:  # protobuf's 2 GB limit
        raise OSError(
            errno.EFBIG,
            f"the graph of {files.name} is too large to hold in memory as one protobuf "
            f"({error}); make room in the model cache {cache_root()} or set "
            "RUST_BERTSCORE_CACHE to a writable directory with room",
        ) from None


def invalidate(graph: Path | bytes) -> None:
    """Drop a cache entry found damaged (ONNX Runtime could not load it); nothing to drop for a
    graph held in memory."""
    if isinstance(graph, bytes):
        return
    with contextlib.suppress(OSError):
        (graph.parent / "manifest.json").unlink()
