"""Stage 3, encoder: run the ONNX graph on ONNX Runtime and hand back each text's token vectors."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .. import _core
from ..errors import (
    InputValueError,
    ModelLoadError,
    ModelNotFoundError,
    RustBertScoreError,
    out_of_memory,
)
from ..support.boundary import foreign_call, library_path
from ..support.inputs import MAX_GRAPH_BYTES
from . import devices
from .arena import Arena
from .batches import (  # noqa: F401 - MIN_BATCH_TOKENS, MIN_FILL: re-exported
    MIN_BATCH_TOKENS,
    MIN_FILL,
    PackedStates,
    plan_batches,
)
from .devices import (  # noqa: F401 - CPU_PROVIDER, CUDA_PROVIDER: re-exported
    CPU_PROVIDER,
    CUDA_PROVIDER,
    onnxruntime,
    select_providers,
)

if TYPE_CHECKING:
    import onnxruntime as ort

DEFAULT_MAX_TOKENS = devices.DEFAULT_MAX_TOKENS
"""Padded tokens per encoder call on the CPU (see ``stages.devices``; CUDA's budget is
``devices.CUDA_MAX_TOKENS``)."""

DISABLED_OPTIMIZERS = ("SkipLayerNormFusion",)
"""ONNX Runtime fusions left out: its CPU SkipLayerNormalization kernel ran 5-10x slower than the
Add + LayerNormalization it replaces (onnxruntime 1.32, measured in docs/performance.md)."""

FP16_DISABLED_OPTIMIZERS = ("NchwcTransformer",)
"""Also left out for float16 graphs (``Encoder(fp16=True)``): the CPU provider's NCHWc layout
transformer crashed (segmentation fault, onnxruntime 1.32) building a session for the float16
DeBERTa graphs of ``convert.to_fp16``."""

THREADS_ENV = _core.NUM_THREADS_ENV
"""The package's thread setting (see ``_core``); also sizes the encoder's intra-op pool."""


def default_threads() -> int | None:
    """Intra-op threads: the package's one thread-count setting (:func:`set_num_threads`, else
    ``RUST_BERTSCORE_NUM_THREADS``, read by the kernel: ``_core.requested_num_threads``), else
    None (ONNX Runtime's default: one per physical core)."""
    return _core.requested_num_threads()


def session_options(num_threads: int | None) -> ort.SessionOptions:
    """ONNX Runtime settings for the encoder graphs.

    Every graph optimisation; sequential execution (the graph is a chain, parallelism comes from
    the intra-op pool inside each kernel); ``num_threads`` intra-op threads (None: one per
    physical core); no memory-pattern planning, which only pays for fixed input shapes.
    """
    rt = onnxruntime()
    options = rt.SessionOptions()
    options.graph_optimization_level = rt.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.execution_mode = rt.ExecutionMode.ORT_SEQUENTIAL
    options.enable_mem_pattern = False
    options.inter_op_num_threads = 1
    if num_threads:
        options.intra_op_num_threads = int(num_threads)
    options.log_severity_level = 3
    return options


def graph_output(outputs: Sequence[str], where: str) -> tuple[str, bool]:
    """The encoder output among a graph's ``outputs`` and whether it holds all layers;
    ``ModelLoadError`` naming ``where`` for a graph without one."""
    if "hidden_states" in outputs:
        return "hidden_states", True
    if "hidden_state" in outputs:
        return "hidden_state", False
    raise ModelLoadError(
        f"{where} is not a rust-bertscore encoder graph: it has outputs {list(outputs)}, "
        "expected 'hidden_state' or 'hidden_states'"
    )


class Encoder:
    """An ONNX Runtime session over a converted encoder graph.

    The graph takes ``input_ids`` and ``attention_mask`` (int64, batch x seq) and returns
    ``hidden_state`` (batch x seq x hidden) or, for all layers, ``hidden_states``
    (layers+1 x batch x seq x hidden).

    Parameters
    ----------
    graph : path or bytes
        The ``.onnx`` file, or a serialised graph (what the model cache hands over when it
        cannot write to disk).
    device : str or None
        See :func:`~rust_bertscore.stages.devices.select_providers`.
    num_threads : int or None
        ONNX Runtime's intra-op threads; None reads ``RUST_BERTSCORE_NUM_THREADS``, else uses
        one per physical core.
    pad_id : int
        The id written into padding positions (masked out, so any valid id will do).
    max_tokens : int, optional
        Padded tokens per encoder call; None: the device's budget
        (:func:`~rust_bertscore.stages.devices.default_max_tokens`).
    tf32 : bool
        Let CUDA run float32 MatMul/GEMM in TF32 (``precision="tf32"``); off by default.
    io_binding : bool, optional
        Run batches through ONNX Runtime's IO binding, the output written into a buffer reused
        from batch to batch; None: on CUDA only.
    fp16 : bool
        The graph is a float16 rewrite (``convert.to_fp16``): leave
        :data:`FP16_DISABLED_OPTIMIZERS` out as well.
    convolutions : bool
        The graph has ``Conv`` nodes (cuDNN on CUDA): on CUDA without TF32,
        :func:`~rust_bertscore.stages.devices.prepare_tf32` sets ``NVIDIA_TF32_OVERRIDE=0``
        for the process (with a warning naming ``model``) unless it is set already.
    model : str
        The model's name, for that warning.

    Attributes
    ----------
    provider_options : list
        The providers as passed to ONNX Runtime (with the CUDA options).
    backend : str
        The runtime that runs the graph: ``"onnxruntime"`` (``"openvino"`` for
        :class:`~rust_bertscore.stages.openvino_encoder.OpenVINOEncoder`).
    """

    backend = "onnxruntime"
    runtime_label = "ONNX Runtime"

    def __init__(
        self,
        graph: str | Path | bytes,
        *,
        device: str | None = None,
        num_threads: int | None = None,
        pad_id: int = 0,
        max_tokens: int | None = None,
        tf32: bool = False,
        io_binding: bool | None = None,
        fp16: bool = False,
        convolutions: bool = False,
        model: str = "",
    ) -> None:
        if num_threads is None:
            num_threads = default_threads()
        self.on_batch: Callable[[int], object] | None = None
        """Called with the number of texts after each batch of :meth:`embed_packed` (a
        progress bar's hook; the command line sets it)."""
        # What names the graph for the embedding store: its file, or the digest of its bytes.
        self.graph: Path | None = None if isinstance(graph, bytes) else Path(graph)
        self.graph_digest: str | None = (
            "sha256:" + hashlib.sha256(graph).hexdigest() if isinstance(graph, bytes) else None
        )
        options = session_options(num_threads)
        providers = select_providers(device, tf32=tf32)
        self.provider_options = providers
        devices.prepare_tf32(providers, tf32=tf32, convolutions=convolutions, model=model)
        if max_tokens is None:
            max_tokens = devices.default_max_tokens(providers)
        if max_tokens < 1:
            raise InputValueError(f"max_tokens must be at least 1, got {max_tokens}")
        # A graph in memory (serialised ModelProto) when the model cache cannot be written.
        where = "the graph converted in memory" if isinstance(graph, bytes) else str(graph)
        disabled = [*DISABLED_OPTIMIZERS, *(FP16_DISABLED_OPTIMIZERS if fp16 else ())]

        def session(source: str | bytes) -> ort.InferenceSession:
            # onnxruntime raises its own untyped errors
            with foreign_call(f"ONNX Runtime cannot load {where}", ModelLoadError):
                return onnxruntime().InferenceSession(  # boundary-exempt: bytes, or library_path's
                    source, options, providers=providers, disabled_optimizers=disabled
                )

        if isinstance(graph, bytes):
            self.session = session(graph)
        else:  # a FIFO or a directory never reaches ONNX Runtime; the name is handed over (not
            try:  # pinned), as the graph's external data is found beside it
                checked = library_path(
                    graph, max_bytes=MAX_GRAPH_BYTES, error=ModelLoadError, pin=False
                )
                with checked as name:
                    self.session = session(name)
            except FileNotFoundError:
                raise ModelNotFoundError(f"{graph}: no such graph file") from None
        self._attach(where, pad_id, max_tokens)
        self.tf32 = bool(tf32) and devices.uses_cuda(self.providers)
        self.io_binding = devices.uses_cuda(self.providers) if io_binding is None else io_binding

    def _attach(self, where: str, pad_id: int, max_tokens: int) -> None:
        """What every runtime's encoder reads off its open :attr:`session`: the output, the
        providers and the hidden size; and its padding id and token budget."""
        self.output_name, self.all_layers = graph_output(
            [o.name for o in self.session.get_outputs()], where
        )
        self.pad_id = int(pad_id)
        self.max_tokens = int(max_tokens)
        self.providers = self.session.get_providers()
        width = self.session.get_outputs()[0].shape[-1]
        self.hidden_size: int | None = width if isinstance(width, int) and width > 0 else None
        """The graph's hidden size, when it declares it (the converter's graphs do)."""
        self._buffers = threading.local()
        self._arena = Arena()
        self._clock = threading.Lock()
        self.run_seconds = 0.0
        """Seconds spent inside the runtime's run (ONNX Runtime's ``run``, OpenVINO's infer
        request), summed over every batch since the encoder was made; with :attr:`runs`, what
        the benches divide by a call's wall time (on CUDA: how much of it the GPU had work)."""
        self.runs = 0
        """Batches run so far."""

    @property
    def runtime_version(self) -> str:
        """The runtime's version, part of the embedding store's keys."""
        return str(onnxruntime().__version__)

    @property
    def device(self) -> str:
        """``"cuda"`` when the session runs on CUDA, else ``"cpu"``."""
        return "cuda" if devices.uses_cuda(self.providers) else "cpu"

    def _timed_run(
        self, input_ids: np.ndarray, mask: np.ndarray, reuse: bool = False
    ) -> np.ndarray:
        """:meth:`_run`, its time added to :attr:`run_seconds`."""
        start = time.perf_counter()
        try:
            return self._run(input_ids, mask, reuse=reuse)
        finally:
            elapsed = time.perf_counter() - start
            with self._clock:
                self.run_seconds += elapsed
                self.runs += 1

    def _run(self, input_ids: np.ndarray, mask: np.ndarray, *, reuse: bool = False) -> np.ndarray:
        """Run the graph on one padded batch; out-of-memory errors name the batch. ``reuse``:
        with IO binding, the output may live in a buffer the next ``reuse`` run overwrites."""
        rows, width = input_ids.shape
        try:
            if self.io_binding:
                return self._run_bound(input_ids, mask, reuse)
            feeds = {"input_ids": input_ids, "attention_mask": mask}
            (out,) = self.session.run([self.output_name], feeds)
        except MemoryError:
            raise out_of_memory(rows, width) from None
        except Exception as e:
            if "alloc" in str(e).lower() or "memory" in str(e).lower():
                raise out_of_memory(rows, width, str(e)[:300]) from e
            raise RustBertScoreError(f"{self.runtime_label} failed on a batch: {e}") from e
        return out

    def _run_bound(self, input_ids: np.ndarray, mask: np.ndarray, reuse: bool) -> np.ndarray:
        """One batch through IO binding: inputs copied to the device once, the output written
        into a host buffer (reused across batches of one thread when ``reuse``)."""
        binding = self.session.io_binding()
        binding.bind_cpu_input("input_ids", np.ascontiguousarray(input_ids))
        binding.bind_cpu_input("attention_mask", np.ascontiguousarray(mask))
        shape = self._output_shape(*input_ids.shape)
        if shape is None:  # the graph does not declare its output's size: ORT allocates
            binding.bind_output(self.output_name, "cpu")
            self.session.run_with_iobinding(binding)
            return binding.copy_outputs_to_cpu()[0]
        size = int(np.prod(shape))
        buffer = getattr(self._buffers, "out", None) if reuse else None
        if buffer is None or buffer.size < size:
            buffer = np.empty(size, dtype=np.float32)
            if reuse:
                self._buffers.out = buffer
        out = buffer[:size].reshape(shape)
        binding.bind_output(self.output_name, "cpu", 0, np.float32, list(shape), out.ctypes.data)
        self.session.run_with_iobinding(binding)
        return out

    def _output_shape(self, rows: int, width: int) -> tuple[int, ...] | None:
        """The output's shape for a ``rows x width`` batch, when the graph declares its sizes."""
        if self.hidden_size is None:
            return None
        if not self.all_layers:
            return (rows, width, self.hidden_size)
        states = self.session.get_outputs()[0].shape[0]
        if not isinstance(states, int) or states < 1:
            return None
        return (states, rows, width, self.hidden_size)

    def run(self, batch: Sequence[Sequence[int]]) -> np.ndarray:
        """Encode one padded batch; returns the graph's float32 output."""
        lengths = np.fromiter((len(ids) for ids in batch), np.int64, len(batch))
        mask = np.arange(int(lengths.max())) < lengths[:, None]
        input_ids = np.full(mask.shape, self.pad_id, dtype=np.int64)
        if lengths.sum():
            input_ids[mask] = np.concatenate([np.asarray(ids, np.int64) for ids in batch])
        return self._timed_run(input_ids, mask.astype(np.int64))

    def embed_packed(
        self,
        id_lists: Sequence[Sequence[int]],
        batch_size: int,
        *,
        extra_rows: int = 0,
    ) -> PackedStates:
        """Encode texts into one contiguous array, ready for the kernel without a copy.

        Texts are encoded longest first in batches of at most ``batch_size`` texts and
        :attr:`max_tokens` padded tokens, and each batch's real tokens are written straight to
        their place in the output (the one copy a token's vector makes). ``extra_rows``
        uninitialised token rows are added at the end (room for texts the caller has from
        elsewhere, such as a cache). On CUDA, a batch that runs out of device memory is split
        and :attr:`max_tokens` halved for the batches left.
        """
        if batch_size < 1:
            raise InputValueError(f"batch_size must be at least 1, got {batch_size}")
        n = len(id_lists)
        lengths = np.fromiter((len(ids) for ids in id_lists), np.int64, n)
        order = np.argsort(-lengths, kind="stable")
        sorted_lengths = lengths[order]
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(sorted_lengths, out=offsets[1:])
        flat = (
            np.concatenate([np.asarray(id_lists[i], np.int64) for i in order])
            if n and offsets[-1]
            else np.zeros(0, np.int64)
        )
        data: np.ndarray | None = None
        spans = plan_batches(sorted_lengths, batch_size, self.max_tokens)
        k = 0
        while k < len(spans):
            start, stop = spans[k]
            rows = sorted_lengths[start:stop]
            mask = np.arange(max(int(rows[0]), 1)) < rows[:, None]
            input_ids = np.full(mask.shape, self.pad_id, dtype=np.int64)
            lo, hi = offsets[start], offsets[stop]
            input_ids[mask] = flat[lo:hi]
            try:
                out = self._timed_run(input_ids, mask.astype(np.int64), reuse=True)
            except MemoryError:
                if stop - start < 2 or not devices.uses_cuda(self.providers):
                    raise
                # Device memory is what it is: halve the budget and re-plan what is left.
                self.max_tokens = max(1, mask.size // 2)
                spans = spans[:k] + [
                    (a + start, b + start)
                    for a, b in plan_batches(sorted_lengths[start:], batch_size, self.max_tokens)
                ]
                continue
            if self.on_batch is not None:
                self.on_batch(stop - start)
            if data is None:
                data = self._packed_array(out, int(offsets[-1]) + int(extra_rows))
            # Row by row: each text's real tokens are a prefix of its row.
            for row, n_tokens in enumerate(rows.tolist()):
                end = lo + n_tokens
                if self.all_layers:
                    data[:, lo:end] = out[:, row, :n_tokens]
                else:
                    data[lo:end] = out[row, :n_tokens]
                lo = end
            k += 1
        if data is None:  # no texts: learn the output's shape from a one-token run
            out = self._timed_run(np.full((1, 1), self.pad_id, np.int64), np.ones((1, 1), np.int64))
            data = self._packed_array(out, int(extra_rows))
        return PackedStates(data, offsets, order)

    def _packed_array(self, out: np.ndarray, rows: int) -> np.ndarray:
        """An uninitialised array for ``rows`` token rows of outputs shaped like ``out``, on
        memory an earlier call left and nothing holds any more where there is (:class:`Arena`:
        no page faults for a fresh array each round)."""
        if self.all_layers:
            return self._arena.take((out.shape[0], rows, out.shape[-1]))
        return self._arena.take((rows, out.shape[-1]))

    def embed(self, id_lists: Sequence[Sequence[int]], batch_size: int) -> list[np.ndarray]:
        """Token vectors of every text, in input order (encoded as :meth:`embed_packed`).

        Returns one float32 array per text: (tokens x hidden), or (layers+1 x tokens x hidden)
        for an all-layers graph. The arrays are views of one packed array.
        """
        packed = self.embed_packed(id_lists, batch_size)
        result: list[np.ndarray | None] = [None] * len(id_lists)
        offsets = packed.offsets
        for j, i in enumerate(packed.order):
            lo, hi = offsets[j], offsets[j + 1]
            result[i] = packed.data[:, lo:hi] if self.all_layers else packed.data[lo:hi]
        return result  # type: ignore[return-value]
