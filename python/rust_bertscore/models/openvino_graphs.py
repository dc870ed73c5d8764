"""The graphs ``runtime="openvino"`` runs, cached beside ONNX Runtime's (docs/caches.md).

- fp32 and bf16 run the converter's graph of standard ONNX ops
  (``convert.export_onnx(fused=False)``): OpenVINO's import of the fused
  ``com.microsoft.Attention`` the ONNX Runtime graphs use computes something else.
- int8 runs the fp32 graph with int8 weights (``nncf.compress_weights``, INT8_ASYM: a scale
  and zero point per output channel), saved as OpenVINO IR (``model.xml`` + ``model.bin``);
  the CPU plugin quantises the activations per token at run time
  (``openvino_encoder.DYNAMIC_QUANTIZATION_GROUP``). Nothing is calibrated.

Entries live under ``<cache>/openvino/<key>/``; the key names the weights' digest, family,
layers, converter version, the graph's kind and its policy (for int8: how the weights are
compressed, the activation group, NNCF's and OpenVINO's versions). As in :mod:`.graph_cache`,
files are written atomically and the manifest last, with the SHA-256 of every file of the entry
(``model.onnx`` and its external data, or ``model.xml`` and ``model.bin``): an entry is used
only when they match, hashed once per process; a cache that cannot be written builds the graph
in memory after one warning.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from .. import convert
from ..catalog.lora_tasks import graph_family, lora_task
from ..errors import InputValueError, ModelLoadError, RustBertScoreError, warn, warn_user
from ..stages.openvino_encoder import (
    DYNAMIC_QUANTIZATION_GROUP,
    OpenVINOEncoder,
    check_bf16,
    openvino,
)
from ..stages.telemetry import telemetry_off
from ..support.atomic import write_text_atomic
from ..support.boundary import library_path
from ..support.digests import file_sha256s, graph_files, sha256s_match
from ..support.inputs import MAX_GRAPH_BYTES, read_memo
from ..support.read_record import opened_files
from .files import ModelFiles
from .graph_cache import (
    CACHE_WRITE_ERRNOS,
    cache_root,
    discard_unless_unchanged,
    weights_fingerprint,
    weights_key_and_stamp,
)

OPENVINO_GRAPH = "standard-ops"
"""The ONNX graph OpenVINO runs (``convert.export_onnx(fused=False)``): part of every key."""

NNCF_POLICY = (
    f"nncf-compress-weights|int8_asym|dynamic-quantization-group={DYNAMIC_QUANTIZATION_GROUP}"
)
"""How the int8 model is made and run: ``nncf.compress_weights(mode=INT8_ASYM)`` (every
MatMul's weights and the embeddings in int8, per output channel), activations quantised per
token in groups of :data:`DYNAMIC_QUANTIZATION_GROUP` channels by the CPU plugin. It replaced
``nncf.quantize(model_type=TRANSFORMER)`` (static: one activation scale per tensor, fitted on
300 calibration texts), which moved F by 0.0066 on average on all-mpnet-base-v2, twice the
0.003 bound, and took minutes to calibrate a 110M model (docs/cpu_precisions.md)."""

NNCF_HINT = "pip install 'rust-bertscore[openvino]'"

LOOSER_FAMILIES = {"t5": 5e-5}
"""Converter families whose OpenVINO fp32 scores are further than 1e-5 from bert_score's, with
the bound measured on the tiny reference cases: T5 (t5, mT5, ByT5) 3.5e-5. T5 does not scale
its attention scores: on the tiny checkpoint they reach 1.2e3, so the GEMMs' last-bit rounding
(2.8e-7 relative, OpenVINO's against ONNX Runtime's) moves them by 3e-4 and the softmax turns
that into 3e-5 (openvino 2026.4.1). Loading one warns."""


def nncf() -> Any:
    """The ``nncf`` module, imported when an int8 OpenVINO graph is built; ImportError naming
    the extra when it is not installed."""
    try:
        with telemetry_off():  # NNCF picks its telemetry at import (stages/telemetry.py)
            import nncf
    except ImportError:
        raise ImportError(
            f"runtime='openvino' with precision='int8' quantises with NNCF, which is not "
            f"installed: {NNCF_HINT}"
        ) from None
    return nncf


def graph_kind(precision: str) -> str:
    """The graph a precision runs on OpenVINO: int8 its own, fp32 and bf16 the fp32 graph (bf16
    is an inference hint).

    >>> from rust_bertscore.models.openvino_graphs import graph_kind
    >>> graph_kind("bf16"), graph_kind("int8")
    ('fp32', 'int8')
    """
    if precision not in ("fp32", "bf16", "int8"):
        raise InputValueError(f"OpenVINO runs fp32, bf16 or int8, not {precision!r}")
    return "int8" if precision == "int8" else "fp32"


def openvino_policy(kind: str) -> str:
    """What a cached OpenVINO graph of ``kind`` is: part of its key and manifest."""
    if kind == "fp32":
        return OPENVINO_GRAPH
    versions = f"nncf {nncf().__version__}|openvino {openvino().get_version()}"
    return f"{OPENVINO_GRAPH}|{NNCF_POLICY}|{versions}"


def quantize(graph: Path | bytes) -> Any:
    """The int8 model of the fp32 ``graph`` (:data:`NNCF_POLICY`), an ``openvino.Model``."""
    import io

    lib = nncf()
    core = openvino().Core()
    if isinstance(graph, bytes):
        model = core.read_model(io.BytesIO(graph))
    else:
        with library_path(
            graph, max_bytes=MAX_GRAPH_BYTES, error=ModelLoadError, pin=False
        ) as name:
            model = core.read_model(name)
    # NNCF's progress bars go to stdout, where the command line writes scores: to stderr.
    with contextlib.redirect_stdout(sys.stderr), telemetry_off():
        return lib.compress_weights(model, mode=lib.CompressWeightsMode.INT8_ASYM)


def entry_key(fingerprint: str, family: str, layers: str, kind: str) -> str:
    text = f"{fingerprint}|{family}|{layers}|{convert.CONVERTER_VERSION}|{kind}|" + (
        openvino_policy(kind)
    )
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _entry_files(entry: Path, kind: str) -> list[Path]:
    if kind == "fp32":
        return [entry / "model.onnx"]
    return [entry / "model.xml", entry / "model.bin"]


def _stored_files(paths: list[Path]) -> list[Path]:
    """The files of an entry as they lie on disk: the IR's two, or the ONNX graph and its
    external data when it has any."""
    return graph_files(paths[0]) if len(paths) == 1 else paths


def _valid(files: list[Path], manifest: Path) -> bool:
    """Whether the manifest names the entry's sizes and the digests of its files; one written
    before digests were recorded does not."""
    meta = read_memo(manifest)
    try:
        if meta is None or [f.stat().st_size for f in files] != meta.get("sizes"):
            return False
    except OSError:
        return False
    return sha256s_match(_stored_files(files), meta.get("sha256"))


def openvino_graph_path(
    files: ModelFiles,
    config: dict,
    num_layers: int,
    *,
    all_layers: bool,
    kind: str,
) -> Path:
    """The cached graph OpenVINO runs for ``kind`` (``"fp32"``: the standard-op ONNX graph;
    ``"int8"``: NNCF's model as IR, ``model.xml``), built once."""
    family = graph_family(config)  # with a LoRA task: "<family>@<task>"
    layers = "all" if all_layers else str(num_layers)
    # The files' fingerprint and the values' digest, and the files' stamp when hashed.
    weights, stamp = weights_key_and_stamp(files.model_dir)
    fingerprint = weights.split("|", 1)[0]
    entry = cache_root() / "openvino" / entry_key(weights, family, layers, kind)
    paths, manifest = _entry_files(entry, kind), entry / "manifest.json"
    if _valid(paths, manifest):
        return paths[0]
    entry.mkdir(parents=True, exist_ok=True)
    with opened_files() as opened:
        source = _build_entry(files, config, num_layers, all_layers, kind, entry, paths)
    # Weights rewritten while converting: the graph may be another checkpoint's.
    fp32_key = entry_key(weights, family, layers, "fp32")
    discard_unless_unchanged(files.model_dir, stamp, opened, paths, source, fp32_key)
    meta = {
        "model": files.name,
        "revision": files.revision,
        "family": family,
        "layers": layers,
        "precision": kind,
        "runtime": "openvino",
        "policy": openvino_policy(kind),
        "converter_version": convert.CONVERTER_VERSION,
        "weights_sha256": fingerprint,
        "sizes": [p.stat().st_size for p in paths],
        "sha256": file_sha256s(_stored_files(paths)),  # what a later process checks
    }
    write_text_atomic(manifest, json.dumps(meta, indent=1))
    return paths[0]


def _build_entry(
    files: ModelFiles,
    config: dict,
    num_layers: int,
    all_layers: bool,
    kind: str,
    entry: Path,
    paths: list[Path],
) -> Path | None:
    """Write the entry's graph files (``paths``); for int8, the fp32 graph it was made from."""
    if kind == "fp32":
        convert.export_onnx(
            files.model_dir,
            paths[0],
            num_layers,
            all_layers=all_layers,
            fused=False,
            task=lora_task(config),
        )
        return None
    source = openvino_graph_path(files, config, num_layers, all_layers=all_layers, kind="fp32")
    model = quantize(source)
    with tempfile.TemporaryDirectory(dir=entry, prefix=".build-") as tmp:
        openvino().save_model(model, str(Path(tmp) / "model.xml"), compress_to_fp16=False)
        os.replace(Path(tmp) / "model.bin", paths[1])  # the weights first, the xml after
        os.replace(Path(tmp) / "model.xml", paths[0])
    return source


def openvino_graph(
    files: ModelFiles,
    config: dict,
    num_layers: int,
    *,
    all_layers: bool,
    precision: str,
) -> tuple[Path | bytes | Any, str | None]:
    """The graph OpenVINO runs for ``precision`` and, for one held in memory, what names it:
    :func:`openvino_graph_path`, or (when the cache cannot be written, after one
    ``RustBertScoreWarning``) the graph built in memory."""
    kind = graph_kind(precision)
    try:
        path = openvino_graph_path(
            files,
            config,
            num_layers,
            all_layers=all_layers,
            kind=kind,
        )
        return path, None
    except OSError as error:
        if error.errno not in CACHE_WRITE_ERRNOS:
            raise
        reason = error.strerror or str(error)
    warn(
        f"cannot write the OpenVINO graph of {files.name} to the model cache {cache_root()} "
        f"({reason}): building it in memory, again in every new process; free space there "
        "or set RUST_BERTSCORE_CACHE to a writable directory with room"
    )
    graph = convert.build_model(
        files.model_dir, num_layers, all_layers=all_layers, fused=False, task=lora_task(config)
    ).SerializeToString()
    if kind == "fp32":
        return graph, None
    layers = "all" if all_layers else str(num_layers)
    fingerprint = weights_fingerprint(files.model_dir)
    digest = "openvino:" + entry_key(fingerprint, graph_family(config), layers, kind)
    return quantize(graph), digest


def invalidate(graph: Path | bytes | Any) -> None:
    """Drop a cache entry found damaged (OpenVINO could not load it)."""
    if isinstance(graph, Path):
        with contextlib.suppress(OSError):
            (graph.parent / "manifest.json").unlink()


def openvino_encoder(
    files: ModelFiles,
    config: dict,
    num_layers: int,
    all_layers: bool,
    precision: str,
    pad_id: int,
) -> OpenVINOEncoder:
    """The OpenVINO encoder of a checkpoint at ``precision`` (what ``load_runtime`` opens for
    ``runtime="openvino"``). An exported ``.onnx`` is refused (its fused attention computes
    something else on OpenVINO), as is bf16 on a CPU without it (:func:`check_bf16`)."""
    if files.onnx_path is not None:
        raise InputValueError(
            f"runtime='openvino' cannot run {files.onnx_path}: it runs the graphs it converts "
            "from a checkpoint (standard ONNX ops), and an exported graph's fused attention "
            "(com.microsoft.Attention) computes something else on OpenVINO; pass the model's "
            "checkpoint directory or Hub id, or use runtime='onnxruntime'"
        )
    graph_kind(precision)
    openvino()  # not installed: the extra's hint, before any work
    if precision == "bf16":
        check_bf16()
    family = convert.model_family(config)
    if precision == "fp32" and family in LOOSER_FAMILIES:
        warn_user(
            f"{files.name}: {family} encoders on OpenVINO give F within about "
            f"{LOOSER_FAMILIES[family]:.0e} of bert_score, not 1e-5; use runtime='onnxruntime' "
            "for bert_score's numbers"
        )
    for attempt in (1, 2):
        graph, digest = openvino_graph(
            files,
            config,
            num_layers,
            all_layers=all_layers,
            precision=precision,
        )
        try:
            return OpenVINOEncoder(graph, precision=precision, pad_id=pad_id, digest=digest)
        except RustBertScoreError:
            if attempt == 2 or not isinstance(graph, Path):
                raise
            invalidate(graph)  # a damaged cache entry: built again, once
    raise AssertionError("unreachable")  # pragma: no cover
