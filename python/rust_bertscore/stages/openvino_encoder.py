"""Stage 3 on OpenVINO: the encoder graph run by OpenVINO's CPU plugin (``runtime="openvino"``).

:class:`OpenVINOEncoder` is an :class:`~rust_bertscore.stages.encoder.Encoder` whose session is
an :class:`OpenVINOSession`, an adapter offering what the encoder calls of an ONNX Runtime
session (``run``, ``get_outputs``, ``get_providers``): batching, packing and the output layout
are the encoder's. OpenVINO is imported when first used (the ``[openvino]`` extra).

It runs graphs of standard ONNX ops (``convert.export_onnx(fused=False)``) or OpenVINO models
(the int8 IR, with int8 weights): its import of ONNX Runtime's fused
``com.microsoft.Attention`` computes something else (hidden states off by up to 5.35 on
all-MiniLM-L6-v2, openvino 2026.4.1).
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

import numpy as np

from ..errors import InputValueError, ModelLoadError, RustBertScoreError, out_of_memory
from ..support.boundary import foreign_call, library_path
from ..support.inputs import MAX_GRAPH_BYTES
from .devices import default_max_tokens
from .encoder import Encoder, default_threads
from .telemetry import telemetry_off

OPENVINO_EXTRA_HINT = "pip install 'rust-bertscore[openvino]'"
"""How to install what ``runtime="openvino"`` needs (openvino, and nncf for int8)."""

OPENVINO_PROVIDER = "OpenVINO:CPU"
"""What :meth:`OpenVINOSession.get_providers` names: OpenVINO's CPU plugin (the store keys
vectors by it, apart from ONNX Runtime's)."""

INFERENCE_PRECISIONS = {"fp32": "f32", "int8": "f32", "bf16": "bf16"}
"""OpenVINO's ``INFERENCE_PRECISION_HINT`` for each precision. int8 keeps f32: its projections
run in int8 through dynamic quantisation (:data:`DYNAMIC_QUANTIZATION_GROUP`), which the CPU
plugin applies under an f32 hint only (under bf16 it turns the int8 weights into bf16), and the
rest of the model stays float32."""

DYNAMIC_QUANTIZATION_GROUP = 128
"""``DYNAMIC_QUANTIZATION_GROUP_SIZE`` of the int8 model: the CPU plugin quantises each token's
activations into a projection at run time, with a scale per group of this many channels, and
multiplies them with the int8 weights in int8. On all-mpnet-base-v2 (1,000 WMT pairs) the mean
|dF| against fp32 was 0.0022 with groups of 128 and 0.0019 with 64 (slower); with one scale
per tensor fitted on calibration texts (NNCF's static quantisation, the former policy) 0.0066
(docs/cpu_precisions.md)."""


def openvino() -> ModuleType:
    """The ``openvino`` module, imported on first use; ImportError naming the extra when it is
    not installed.

    Examples
    --------
    >>> from rust_bertscore.stages.openvino_encoder import openvino
    >>> hasattr(openvino(), "Core")
    True
    """
    try:
        with telemetry_off():  # OpenVINO's telemetry starts at import (stages/telemetry.py)
            import openvino
    except ImportError:
        raise ImportError(
            f"runtime='openvino' needs OpenVINO, which is not installed: {OPENVINO_EXTRA_HINT}"
        ) from None
    return openvino


def openvino_version() -> str:
    """OpenVINO's version, as the store keys vectors by it.

    >>> from rust_bertscore.stages.openvino_encoder import openvino_version
    >>> openvino_version().startswith("openvino ")
    True
    """
    return f"openvino {openvino().get_version()}"


def cpu_capabilities() -> list[str]:
    """What OpenVINO's CPU plugin says this processor computes in
    (``OPTIMIZATION_CAPABILITIES``: ``FP32``, ``INT8``, ``BF16`` where it has AVX512-BF16 or
    AMX, ...).

    >>> from rust_bertscore.stages.openvino_encoder import cpu_capabilities
    >>> "FP32" in cpu_capabilities()
    True
    """
    return [str(c) for c in openvino().Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")]


CAPABILITIES = {"int8": "INT8", "bf16": "BF16"}
"""The ``OPTIMIZATION_CAPABILITIES`` entry each speed precision needs of the CPU plugin."""


@functools.cache
def openvino_problem(precision: str) -> str | None:
    """Why OpenVINO cannot run ``precision`` on this machine, or None when it can: OpenVINO
    (and NNCF, for int8) installed, and the CPU plugin reporting the capability
    (:data:`CAPABILITIES`). Asked once per process (``runtime="auto"``).

    >>> from rust_bertscore.stages.openvino_encoder import openvino_problem
    >>> openvino_problem("int8") is None  # this project's test venv: openvino and nncf
    True
    """
    import importlib.util

    try:
        openvino()
    except ImportError:
        return f"OpenVINO is not installed ({OPENVINO_EXTRA_HINT})"
    try:
        has_nncf = importlib.util.find_spec("nncf") is not None
    except (ImportError, ValueError):  # a module set to None in sys.modules: blocked
        has_nncf = False
    if precision == "int8" and not has_nncf:
        return f"NNCF, which quantises for OpenVINO, is not installed ({OPENVINO_EXTRA_HINT})"
    wanted = CAPABILITIES.get(precision)
    try:
        capabilities = cpu_capabilities()
    except Exception as e:  # OpenVINO raises its own untyped errors
        return f"OpenVINO's CPU plugin did not load ({e})"
    if wanted is not None and wanted not in capabilities:
        return f"OpenVINO's CPU plugin reports no {wanted} on this CPU (it has {capabilities})"
    return None


def check_bf16(capabilities: Sequence[str] | None = None) -> None:
    """InputValueError, saying why, unless this CPU computes bf16 (``capabilities``: default
    :func:`cpu_capabilities`).

    >>> from rust_bertscore.stages.openvino_encoder import check_bf16
    >>> check_bf16(["FP32", "BF16"])  # no error
    >>> check_bf16(["FP32", "INT8"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rust_bertscore.errors.InputValueError: precision='bf16': this CPU has no bf16 ...
    """
    found = cpu_capabilities() if capabilities is None else list(capabilities)
    if "BF16" not in found:
        raise InputValueError(
            "precision='bf16': this CPU has no bf16 instructions (OpenVINO's CPU plugin "
            f"reports {', '.join(found)}; bf16 needs AVX512-BF16 or AMX): use precision='fp32', "
            "or 'int8' to go faster"
        )


ROW_BUCKETS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 14, 16, 20, 24, 28, 32)
"""Batch sizes OpenVINO is run at, up to 32 (then multiples of 8): a batch gets at most a
quarter more rows."""


def width_step(width: int) -> int:
    """The multiple a batch of ``width`` tokens is padded to: 4 up to 64 tokens, 8 up to 128,
    16 up to 256, then 64."""
    return 4 if width <= 64 else 8 if width <= 128 else 16 if width <= 256 else 64


def bucket_shape(rows: int, width: int) -> tuple[int, int]:
    """The padded batch shape OpenVINO runs a ``rows x width`` batch at.

    OpenVINO's CPU plugin prepares its kernels for each new input shape, once per compiled
    model, which made a first pass over a corpus about 25% slower than a warm one. Batches are
    padded to a few shapes instead: widths up to a multiple of :func:`width_step` (4 to 64
    tokens, then 8, 16, 64: fewer than that many padding columns); rows to :data:`ROW_BUCKETS`
    (at most a quarter more), then a multiple of 8. Padding is masked: a real token's state does
    not change (the fp32 parity tests hold at 1e-5). Steps of 4 rather than 8 on short texts
    pad WMT's 26-token texts by about half as much, and ran the bf16 and int8 passes 3-8%
    faster with the first pass unchanged (docs/cpu_precisions.md).

    Examples
    --------
    >>> from rust_bertscore.stages.openvino_encoder import bucket_shape
    >>> bucket_shape(1, 3), bucket_shape(7, 70), bucket_shape(33, 300)
    ((1, 4), (8, 72), (40, 320))
    """
    step = width_step(width)
    padded_width = -(-width // step) * step
    if rows <= ROW_BUCKETS[-1]:
        padded_rows = next(b for b in ROW_BUCKETS if b >= rows)
    else:
        padded_rows = -(-rows // 8) * 8
    return padded_rows, padded_width


class OutputInfo(NamedTuple):
    """One output of an :class:`OpenVINOSession`, as ONNX Runtime's ``NodeArg`` names it: its
    name and shape (an int per static dimension, a str per dynamic one)."""

    name: str
    shape: list[int | str]


class OpenVINOSession:
    """An OpenVINO compiled model behind the calls :class:`Encoder` makes of an ONNX Runtime
    session. Each thread runs its own infer request (one is not safe across threads).

    Parameters
    ----------
    model : path, bytes or openvino.Model
        An ONNX file or OpenVINO IR (``.xml``), a serialised ONNX graph, or a model in memory.
    precision : {"fp32", "bf16", "int8"}
        Sets ``INFERENCE_PRECISION_HINT`` (:data:`INFERENCE_PRECISIONS`), and for int8 (a model
        with int8 weights) ``DYNAMIC_QUANTIZATION_GROUP_SIZE``.
    num_threads : int or None
        ``INFERENCE_NUM_THREADS``; None: OpenVINO's default.

    Examples
    --------
    >>> from rust_bertscore import DEFAULT_MODEL
    >>> from rust_bertscore.convert import build_model
    >>> from rust_bertscore.models.files import resolve_model
    >>> from rust_bertscore.stages.openvino_encoder import OpenVINOSession
    >>> graph = build_model(resolve_model(DEFAULT_MODEL).model_dir, 1, fused=False)
    >>> session = OpenVINOSession(graph.SerializeToString(), num_threads=1)
    >>> ids = np.array([[101, 4937, 102]], dtype=np.int64)
    >>> out = session.run(["hidden_state"], {"input_ids": ids, "attention_mask": ids * 0 + 1})
    >>> session.get_outputs()[0].name, out[0].shape
    ('hidden_state', (1, 3, 384))
    """

    def __init__(
        self,
        model: str | Path | bytes | Any,
        precision: str = "fp32",
        num_threads: int | None = None,
    ) -> None:
        ov = openvino()
        core = ov.Core()
        if isinstance(model, bytes):
            import io

            model = core.read_model(io.BytesIO(model))
        elif isinstance(model, (str, Path)):
            where = f"OpenVINO cannot read {model}"
            with (
                library_path(
                    model, max_bytes=MAX_GRAPH_BYTES, error=ModelLoadError, pin=False
                ) as name,
                foreign_call(where, ModelLoadError),
            ):
                model = core.read_model(name)
        config: dict[str, Any] = {"INFERENCE_PRECISION_HINT": INFERENCE_PRECISIONS[precision]}
        if precision == "int8":
            config["DYNAMIC_QUANTIZATION_GROUP_SIZE"] = DYNAMIC_QUANTIZATION_GROUP
        if num_threads:
            config["INFERENCE_NUM_THREADS"] = int(num_threads)
        self.compiled = core.compile_model(model, "CPU", config)
        self._requests = threading.local()

    def _request(self) -> Any:
        request = getattr(self._requests, "request", None)
        if request is None:
            request = self._requests.request = self.compiled.create_infer_request()
        return request

    def run(
        self, names: Sequence[str], feeds: Mapping[str, np.ndarray], *, share: bool = False
    ) -> list[np.ndarray]:
        """The outputs named (all, for an empty list) on ``feeds``. ``share``: the inputs are
        read in place and the outputs are views of the thread's request buffers, which its next
        run overwrites (no copy either way); else the outputs are the caller's own."""
        results = self._request().infer(dict(feeds), share_inputs=share, share_outputs=share)
        outputs = self.compiled.outputs
        wanted = [o for o in outputs if not names or set(o.get_names()) & set(names)]
        return [np.asarray(results[o], dtype=np.float32) for o in wanted]

    def get_outputs(self) -> list[OutputInfo]:
        """The model's outputs: name and shape (ints where static)."""
        infos = []
        for output in self.compiled.outputs:
            shape: list[int | str] = [
                d.get_length() if d.is_static else "?" for d in output.get_partial_shape()
            ]
            # A tensor may carry several names: the graph's output name first.
            names = output.get_names()
            known = [n for n in ("hidden_states", "hidden_state") if n in names]
            infos.append(OutputInfo(known[0] if known else output.get_any_name(), shape))
        return infos

    def get_providers(self) -> list[str]:
        """``[OPENVINO_PROVIDER]``."""
        return [OPENVINO_PROVIDER]


class OpenVINOEncoder(Encoder):
    """An :class:`~rust_bertscore.stages.encoder.Encoder` on OpenVINO's CPU plugin.

    Parameters
    ----------
    graph : path, bytes or openvino.Model
        A graph of standard ONNX ops or an OpenVINO model (see :class:`OpenVINOSession`).
    precision : {"fp32", "bf16", "int8"}
        What ``graph`` is run in (``"int8"``: ``graph`` has int8 weights).
    num_threads : int or None
        Threads; None reads the package's setting (:func:`default_threads`), else OpenVINO's
        default (one per core).
    pad_id, max_tokens
        As :class:`Encoder`'s.
    digest : str, optional
        What names a graph held in memory (an ``openvino.Model``) for the embedding store.

    Examples
    --------
    >>> from rust_bertscore import DEFAULT_MODEL
    >>> from rust_bertscore.convert import build_model
    >>> from rust_bertscore.models.files import resolve_model
    >>> from rust_bertscore.stages.openvino_encoder import OpenVINOEncoder
    >>> graph = build_model(resolve_model(DEFAULT_MODEL).model_dir, 1, fused=False)
    >>> encoder = OpenVINOEncoder(graph.SerializeToString(), num_threads=1)
    >>> [v.shape for v in encoder.embed([[101, 4937, 102], [101, 102]], batch_size=8)]
    [(3, 384), (2, 384)]
    >>> encoder.device, encoder.backend
    ('cpu', 'openvino')
    """

    backend = "openvino"
    runtime_label = "OpenVINO"

    def __init__(
        self,
        graph: str | Path | bytes | Any,
        *,
        precision: str = "fp32",
        num_threads: int | None = None,
        pad_id: int = 0,
        max_tokens: int | None = None,
        digest: str | None = None,
    ) -> None:
        if precision not in INFERENCE_PRECISIONS:
            names = ", ".join(repr(p) for p in INFERENCE_PRECISIONS)
            raise InputValueError(f"OpenVINO runs precision {names}, got {precision!r}")
        if num_threads is None:
            num_threads = default_threads()
        self.provider_options = [OPENVINO_PROVIDER]
        if max_tokens is None:
            max_tokens = default_max_tokens(self.provider_options)
        if max_tokens < 1:
            raise InputValueError(f"max_tokens must be at least 1, got {max_tokens}")
        self.on_batch = None
        self.graph = Path(graph) if isinstance(graph, (str, Path)) else None
        in_file = self.graph is not None
        if isinstance(graph, bytes):
            digest = "sha256:" + hashlib.sha256(graph).hexdigest()
        self.graph_digest = None if in_file else (digest or "?")
        where = str(graph) if in_file else "the graph held in memory"
        try:
            self.session = OpenVINOSession(graph, precision, num_threads)  # type: ignore[assignment]
        except ImportError:
            raise
        except Exception as e:  # OpenVINO raises its own untyped errors
            raise ModelLoadError(f"OpenVINO cannot load {where}: {e}") from e
        self._attach(where, pad_id, max_tokens)
        self.tf32 = self.io_binding = False
        self.precision = precision

    @property
    def runtime_version(self) -> str:
        """OpenVINO's version (:func:`openvino_version`)."""
        return openvino_version()

    def _run(self, input_ids: np.ndarray, mask: np.ndarray, *, reuse: bool = False) -> np.ndarray:
        """One batch, padded to its :func:`bucket_shape` (masked rows and columns, cut off
        again); with ``reuse`` the output is a view of this thread's request buffer, valid until
        its next run (:meth:`Encoder.embed_packed` copies each batch's tokens out at once)."""
        rows, width = input_ids.shape
        padded_rows, padded_width = bucket_shape(rows, width)
        if (padded_rows, padded_width) != (rows, width):
            ids = np.full((padded_rows, padded_width), self.pad_id, dtype=np.int64)
            ids[:rows, :width] = input_ids
            full_mask = np.zeros((padded_rows, padded_width), dtype=np.int64)
            full_mask[:rows, :width] = mask
            full_mask[rows:, 0] = 1  # a padding row attends to one token, as a text would
            input_ids, mask = ids, full_mask
        session: OpenVINOSession = self.session  # type: ignore[assignment]
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        try:
            (out,) = session.run([self.output_name], feeds, share=reuse)
        except MemoryError:
            raise out_of_memory(rows, width) from None
        except Exception as e:  # OpenVINO raises its own untyped errors
            raise RustBertScoreError(f"{self.runtime_label} failed on a batch: {e}") from e
        if self.all_layers:
            return out[:, :rows, :width]
        return out[:rows, :width]
