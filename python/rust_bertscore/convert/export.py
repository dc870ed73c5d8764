"""``export_onnx``: a checkpoint's graph (built by ``registry.build_model``) written atomically."""

from __future__ import annotations

import os
from pathlib import Path

from ..catalog.configs import load_config
from ..support.atomic import write_files_atomic
from . import writer
from .checkpoint import float32_bytes
from .graph import streaming_weights
from .registry import build_model

CONVERTER_VERSION = "3"
"""Version of the graphs written here; bump it whenever they change (part of the cache key)."""


def export_onnx(
    model_dir: str | os.PathLike[str],
    out_path: str | os.PathLike[str],
    num_layers: int | None,
    *,
    all_layers: bool = False,
    external_data: bool | None = None,
    fused: bool = False,
    task: str | None = None,
) -> Path:
    """Convert a checkpoint to an ONNX encoder graph and write it atomically.

    Parameters
    ----------
    model_dir
        Hugging Face checkpoint directory: ``config.json`` and ``model.safetensors`` (or shards
        listed in ``model.safetensors.index.json``); without those, PyTorch's
        ``pytorch_model.bin`` (or its shards), read without torch (:func:`weight_files`).
    out_path
        Where to write the ``.onnx`` file (parent directories are created).
    num_layers
        Number of transformer layers to keep, ``0 <= num_layers <= depth``; the graph outputs
        ``hidden_state``, hidden state ``num_layers``. Ignored (may be None) with ``all_layers``.
    all_layers
        Build the whole model and output ``hidden_states`` = hidden states ``0..depth``.
    external_data
        Store the weights in ``<out_path name>.data`` beside the graph. Default: only when the
        checkpoint's tensors, in float32, exceed :data:`~.writer.EXTERNAL_DATA_THRESHOLD` bytes.
        With external data the weights are streamed: each goes to the file as the graph is
        built, so converting holds about one tensor at a time, not the whole model.
    fused
        Write self-attention as ONNX Runtime's fused ``com.microsoft.Attention`` (what the
        scorer runs: faster, same numbers within 1e-5) rather than standard ONNX ops, which any
        ONNX runtime can load. DeBERTa graphs have no fused variant and ignore it.
    task
        A LoRA checkpoint's task adapter to merge into the weights (jina-embeddings-v3's
        ``lora_adaptations``); None: the base weights. Another model refuses a task.

    Returns
    -------
    pathlib.Path
        ``out_path``.

    Raises
    ------
    ValueError
        For an unsupported ``model_type`` or ``num_layers`` outside ``0..depth``.
    CheckpointError
        (a ValueError) For a corrupt or truncated weight file, a missing tensor or a shape that
        disagrees with ``config.json``; the message names the file and the tensor.
    FileNotFoundError
        If ``config.json`` or the weights are missing.

    Examples
    --------
    >>> from rust_bertscore import DEFAULT_MODEL
    >>> from rust_bertscore.models.files import resolve_model
    >>> model_dir = resolve_model(DEFAULT_MODEL).model_dir  # all-MiniLM-L6-v2's checkpoint
    >>> import pathlib, tempfile
    >>> import numpy as np, onnxruntime as ort
    >>> from rust_bertscore.convert import export_onnx
    >>> ids = np.array([[101, 4937, 102]], dtype=np.int64)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = export_onnx(model_dir, pathlib.Path(tmp) / "minilm-l1.onnx", 1)
    ...     session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    ...     out = session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})
    >>> out[0].shape
    (1, 3, 384)
    """
    config = load_config(model_dir)
    doc = (
        f"rust_bertscore.convert {CONVERTER_VERSION}: model_type={config.get('model_type')!r}, "
        + ("" if task is None else f"task={task!r}, ")
        + ("all hidden states" if all_layers else f"hidden state {num_layers}")
        + (", fused attention" if fused else "")
    )
    external = (
        float32_bytes(model_dir) > writer.EXTERNAL_DATA_THRESHOLD
        if external_data is None
        else external_data
    )
    if not external:
        held = writer.HeldWeights()  # the weights written from the builder's arrays
        with streaming_weights(held):
            model = build_model(
                model_dir, num_layers, all_layers=all_layers, doc=doc, fused=fused, task=task
            )
        return write_files_atomic(
            out_path, lambda path: writer.save_model(model, path, False, held)
        )

    def write(path: Path) -> None:
        data = writer.ExternalDataFile(path.with_name(f"{path.name}.data"))
        with data, streaming_weights(data):
            model = build_model(
                model_dir, num_layers, all_layers=all_layers, doc=doc, fused=fused, task=task
            )
        writer.save_model(model, path, True)

    return write_files_atomic(out_path, write)
