"""Stage 3 on OpenVINO: the encoder graph run by OpenVINO's CPU plugin (``runtime="openvino"``).

:class:`OpenVINOEncoder` is an :class:`~rust_bertscore.stages.encoder.Encoder` whose session is
an :class:`OpenVINOSession`, an adapter offering what the encoder calls of an ONNX Runtime
session (``run``, ``get_outputs``, ``get_providers``): batching, packing and the output layout
are the encoder's. OpenVINO is imported when first used (the ``[openvino]`` extra).

It runs graphs of standard ONNX ops (``convert.export_onnx(fused=False)``) or OpenVINO models
(NNCF's int8): its import of ONNX Runtime's fused ``com.microsoft.Attention`` computes
something else (hidden states off by up to 5.35 on all-MiniLM-L6-v2, openvino 2026.4.1).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

import numpy as np

from ..errors import InputValueError, ModelLoadError
from .devices import default_max_tokens
from .encoder import Encoder, default_threads
from .telemetry import telemetry_off

OPENVINO_EXTRA_HINT = "pip install 'rust-bertscore[openvino]'"
"""How to install what ``runtime="openvino"`` needs (openvino, and nncf for int8)."""

OPENVINO_PROVIDER = "OpenVINO:CPU"
"""What :meth:`OpenVINOSession.get_providers` names: OpenVINO's CPU plugin (the store keys
vectors by it, apart from ONNX Runtime's)."""

INFERENCE_PRECISIONS = {"fp32": "f32", "int8": "f32", "bf16": "bf16"}
"""OpenVINO's ``INFERENCE_PRECISION_HINT`` for each precision: the int8 model's quantised
operations run in int8 whatever the hint; the rest of it stays float32."""


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
        Sets ``INFERENCE_PRECISION_HINT`` (:data:`INFERENCE_PRECISIONS`).
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
            model = core.read_model(str(model))
        config: dict[str, Any] = {"INFERENCE_PRECISION_HINT": INFERENCE_PRECISIONS[precision]}
        if num_threads:
            config["INFERENCE_NUM_THREADS"] = int(num_threads)
        self.compiled = core.compile_model(model, "CPU", config)
        self._requests = threading.local()

    def _request(self) -> Any:
        request = getattr(self._requests, "request", None)
        if request is None:
            request = self._requests.request = self.compiled.create_infer_request()
        return request

    def run(self, names: Sequence[str], feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        """The outputs named (all, for an empty list) on ``feeds``; copies, as the request's
        buffers are reused by its next run."""
        results = self._request().infer(dict(feeds))
        outputs = self.compiled.outputs
        wanted = [o for o in outputs if not names or set(o.get_names()) & set(names)]
        return [np.array(results[o], dtype=np.float32, copy=True) for o in wanted]

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
        What ``graph`` is run in (``"int8"``: ``graph`` is NNCF's int8 model).
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
