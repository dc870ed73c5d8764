"""Export a checkpoint as the ONNX graph the scorer runs, ready for ``model_type="model.onnx"``.

Writes, in the directory of the output file:

- ``<name>.onnx``: the encoder truncated at layer ``num_layers`` (int8-quantised with
  ``precision="int8"``), plus ``<name>.onnx.data`` for weights past protobuf's 2 GiB;
- the tokenizer files and ``config.json`` of the checkpoint;
- ``<name>.onnx.json``: ``{"num_layers", "model", "precision", "all_layers": false, ...}``,
  which tells the scorer the layer (see :func:`rust_bertscore.models.identity.export_record_path`),
  ``weights_digest``, the checkpoint's weights digest, which the scorer's signature names,
  and ``graph_sha256``, the digest of the graph's bytes, which ties the record to this graph
  (:mod:`rust_bertscore.models.identity`: a graph that does not match is refused). It is
  written last: a graph without it is an unfinished export.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from .. import convert
from .._version import __version__
from ..errors import InputValueError, RustBertScoreError
from ..stages.tokenization.tokenizer import TOKENIZER_FILES as VOCABULARY_FILES
from ..stages.tokenization.tokenizer import TextTokenizer
from ..support.atomic import copy_file_atomic, write_text_atomic
from ..support.inputs import read_memo
from .files import resolve_model
from .graph_record import export_record_path, graph_file_digest
from .identity import checkpoint_digest
from .runtime import check_layer, default_layer

TOKENIZER_SETTINGS_FILES = (
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "merges.txt",
)
"""Files beside the vocabulary that change the token ids."""
TOKENIZER_FILES = tuple(sorted({*VOCABULARY_FILES, *TOKENIZER_SETTINGS_FILES}))
"""Tokenizer files copied beside the graph when the checkpoint has them (with every other
file the tokenizer's loader reads: :func:`tokenizer_files_read`)."""

PRECISIONS = ("fp32", "fp16", "int8")


@dataclass(frozen=True)
class ExportInfo:
    """What ``<graph>.onnx.json`` records about an exported graph."""

    num_layers: int
    model: str
    precision: str
    all_layers: bool
    model_type: str
    depth: int
    converter_version: str
    rust_bertscore_version: str
    weights_digest: str
    revision: str | None = None
    graph_sha256: str = ""


def _same_json(a: Path, b: Path) -> bool:
    first, second = read_memo(a), read_memo(b)
    return first is not None and first == second


def tokenizer_files_read(model_dir: Path, config: dict) -> set[str]:
    """The names (in ``model_dir``) of the files the slow and the fast tokenizer read at load
    (``TextTokenizer.files_read``): Bertweet's ``bpe.codes`` as much as any vocabulary."""
    names: set[str] = set()
    for fast in (False, True):
        try:
            names.update(TextTokenizer(model_dir, config, fast=fast).files_read)
        except RustBertScoreError:
            continue  # scoring would fail the same way: nothing more to copy
    return names


def export_model(
    model: str,
    out_path: str | os.PathLike[str],
    num_layers: int | None = None,
    *,
    precision: str = "fp32",
    force: bool = False,
    revision: str | None = None,
) -> ExportInfo:
    """Convert ``model`` to an ONNX graph at ``out_path`` with its tokenizer and config.

    Parameters
    ----------
    model : str
        Hugging Face model id or checkpoint directory (safetensors weights, or PyTorch ``.bin``
        ones).
    out_path : path
        The ``.onnx`` file to write; its directory receives the tokenizer files and
        ``config.json``.
    num_layers : int, optional
        Layer whose output the graph returns (0 = embeddings). Default: bert_score's tuned layer
        for the model, else its last layer.
    precision : {"fp32", "fp16", "int8"}
        ``"int8"`` quantises the projections to int8 with per-token activation scales (as
        ``score(precision="int8")``); ``"fp16"`` writes the float16 graph of
        ``score(precision="fp16")``. (TF32 is a CUDA setting, not a graph: run an fp32 export
        with ``precision="tf32"``.)
    force : bool
        Write into a directory that already holds another model's ``config.json``.
    revision : str, optional
        The Hub branch, tag or commit of ``model`` (default: ``main``), as ``score()`` takes it.

    Returns
    -------
    ExportInfo
        What was recorded in ``<out_path>.json``.

    Raises
    ------
    ValueError
        For a bad ``out_path`` or ``precision``, a layer out of range, an ``.onnx`` model, a
        LoRA task (``@<task>``, not exported), or a directory holding another model.
    ModelNotFoundError
        When ``model`` cannot be found.
    """
    if precision not in PRECISIONS:
        raise InputValueError(f"precision must be 'fp32', 'fp16' or 'int8', got {precision!r}")
    out = Path(out_path)
    if out.suffix != ".onnx":
        raise InputValueError(f"the output must be an .onnx file name, got {str(out)!r}")
    if out.is_dir():
        raise InputValueError(f"{out} is a directory: give the .onnx file to write")
    files = resolve_model(model, revision)
    if files.onnx_path is not None:
        raise InputValueError(f"{model} is already an ONNX graph: export takes a checkpoint")
    if files.task is not None:
        # The exported directory's config.json would not name the task, so the graph loaded
        # back would carry the task's weights under the base model's identity.
        raise InputValueError(
            f"{model}: exporting a LoRA task ('@{files.task}') is not supported; score with "
            "the model id and its task, or export the base weights (no suffix)"
        )
    config = files.config()
    family = convert.model_family(config)
    depth = convert.model_depth(config)
    if num_layers is not None:
        check_layer(model, num_layers, depth)
    out_dir = out.parent
    existing = out_dir / "config.json"
    src_config = files.model_dir / "config.json"
    if not force and existing.is_file() and not _same_json(existing, src_config):
        raise InputValueError(
            f"{out_dir} already holds another model's config.json: export to an empty "
            "directory (a directory holds one model's tokenizer and config), or pass --force"
        )
    # After the checks: a model without a tuned layer warns only for an export that happens.
    layer = default_layer(model, depth, config) if num_layers is None else num_layers
    layer = check_layer(model, layer, depth)
    out_dir.mkdir(parents=True, exist_ok=True)
    info_path = export_record_path(out)
    info_path.unlink(missing_ok=True)  # an old record must not describe the new graph
    if precision == "fp32":
        convert.export_onnx(files.model_dir, out, layer)
    else:
        with tempfile.TemporaryDirectory(prefix=f".{out.name}.", dir=out_dir) as tmp:
            # From the fused graph, as the scorer's own int8 graph is (its attention stays fp32).
            fp32 = convert.export_onnx(files.model_dir, Path(tmp) / "fp32.onnx", layer, fused=True)
            if precision == "fp16":
                convert.convert_fp16(fp32, out)
            else:
                convert.quantize_int8(fp32, out, activations=convert.INT8_ACTIVATIONS)
    read = tokenizer_files_read(files.model_dir, config)
    for name in sorted({"config.json", *TOKENIZER_FILES, *read}):
        src = files.model_dir / name
        if src.is_file():
            (out_dir / name).parent.mkdir(parents=True, exist_ok=True)
            copy_file_atomic(src, out_dir / name)
    info = ExportInfo(
        num_layers=layer,
        model=model,
        precision=precision,
        all_layers=False,
        model_type=str(config.get("model_type", family)),
        depth=depth,
        converter_version=convert.CONVERTER_VERSION,
        rust_bertscore_version=__version__,
        weights_digest=checkpoint_digest(files.model_dir),
        revision=files.revision,
        graph_sha256=graph_file_digest(out),
    )
    write_text_atomic(info_path, json.dumps(asdict(info), indent=1) + "\n")
    return info
