"""Stage 3, encoder: run the ONNX graph on ONNX Runtime and hand back each text's token vectors."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnxruntime as ort

from .errors import DeviceNotAvailableError, RustBertScoreError

CUDA_PROVIDER = "CUDAExecutionProvider"
CPU_PROVIDER = "CPUExecutionProvider"


def select_providers(device: str | None) -> list[str | tuple[str, dict]]:
    """ONNX Runtime execution providers for ``device``.

    ``None`` picks CUDA when this onnxruntime build offers it, else the CPU; ``"cuda"`` or
    ``"cuda:N"`` require CUDA; ``"cpu"`` forces the CPU.
    """
    available = ort.get_available_providers()
    if device is None:
        return [CUDA_PROVIDER, CPU_PROVIDER] if CUDA_PROVIDER in available else [CPU_PROVIDER]
    if not isinstance(device, str):
        raise TypeError(f"device must be None, 'cpu' or 'cuda[:N]', got {device!r}")
    name, _, index = device.strip().lower().partition(":")
    if name == "cpu":
        return [CPU_PROVIDER]
    if name == "cuda":
        if CUDA_PROVIDER not in available:
            raise DeviceNotAvailableError(
                f"device={device!r} needs ONNX Runtime's CUDA execution provider, which this "
                f"onnxruntime build does not offer (it has {available}); install onnxruntime-gpu "
                "(`pip install onnxruntime-gpu`) or use device='cpu'"
            )
        if index and not index.isdigit():
            raise ValueError(f"device {device!r}: expected 'cuda' or 'cuda:N'")
        options = {"device_id": int(index)} if index else {}
        return [(CUDA_PROVIDER, options), CPU_PROVIDER]
    raise ValueError(f"unknown device {device!r}: expected None, 'cpu', 'cuda' or 'cuda:N'")


class Encoder:
    """An ONNX Runtime session over a converted encoder graph.

    The graph takes ``input_ids`` and ``attention_mask`` (int64, batch x seq) and returns
    ``hidden_state`` (batch x seq x hidden) or, for all layers, ``hidden_states``
    (layers+1 x batch x seq x hidden).

    Parameters
    ----------
    graph : path
        The ``.onnx`` file.
    device : str or None
        See :func:`select_providers`.
    num_threads : int or None
        ONNX Runtime's intra-op threads; None lets it use every physical core.
    pad_id : int
        The id written into padding positions (masked out, so any valid id will do).
    """

    def __init__(
        self,
        graph: str | Path,
        *,
        device: str | None = None,
        num_threads: int | None = None,
        pad_id: int = 0,
    ) -> None:
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if num_threads:
            options.intra_op_num_threads = int(num_threads)
        options.log_severity_level = 3
        providers = select_providers(device)
        try:
            self.session = ort.InferenceSession(str(graph), options, providers=providers)
        except Exception as e:  # onnxruntime raises its own untyped errors
            raise RustBertScoreError(f"ONNX Runtime cannot load {graph}: {e}") from e
        outputs = [o.name for o in self.session.get_outputs()]
        if "hidden_states" in outputs:
            self.output_name, self.all_layers = "hidden_states", True
        elif "hidden_state" in outputs:
            self.output_name, self.all_layers = "hidden_state", False
        else:
            raise RustBertScoreError(
                f"{graph} is not a rust-bertscore encoder graph: it has outputs {outputs}, "
                "expected 'hidden_state' or 'hidden_states'"
            )
        self.pad_id = int(pad_id)
        self.providers = self.session.get_providers()

    def run(self, batch: Sequence[Sequence[int]]) -> np.ndarray:
        """Encode one padded batch; returns the graph's float32 output."""
        width = max(len(ids) for ids in batch)
        input_ids = np.full((len(batch), width), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, ids in enumerate(batch):
            input_ids[row, : len(ids)] = ids
            mask[row, : len(ids)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        try:
            (out,) = self.session.run([self.output_name], feeds)
        except MemoryError:
            raise MemoryError(
                f"out of memory encoding a batch of {len(batch)} texts of up to {width} tokens: "
                "use a smaller batch_size"
            ) from None
        except Exception as e:
            if "alloc" in str(e).lower() or "memory" in str(e).lower():
                raise MemoryError(
                    f"out of memory encoding a batch of {len(batch)} texts of up to {width} "
                    f"tokens: use a smaller batch_size ({e})"
                ) from e
            raise RustBertScoreError(f"ONNX Runtime failed on a batch: {e}") from e
        return out

    def embed(self, id_lists: Sequence[Sequence[int]], batch_size: int) -> list[np.ndarray]:
        """Token vectors of every text, longest first in batches of ``batch_size``.

        Returns one float32 array per text, in input order: (tokens x hidden), or
        (layers+1 x tokens x hidden) for an all-layers graph.
        """
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        order = sorted(range(len(id_lists)), key=lambda i: len(id_lists[i]), reverse=True)
        result: list[np.ndarray | None] = [None] * len(id_lists)
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            out = self.run([id_lists[i] for i in chunk])
            for row, i in enumerate(chunk):
                n = len(id_lists[i])
                piece = out[:, row, :n] if self.all_layers else out[row, :n]
                result[i] = np.ascontiguousarray(piece, dtype=np.float32)
        return result  # type: ignore[return-value]
