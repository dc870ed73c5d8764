"""What a scorer may ask of its encoder: the precisions and the runtimes, and which go together
(docs/cpu_precisions.md)."""

from __future__ import annotations

from ..errors import InputValueError
from .fast_path import read_host

PRECISIONS = ("fp32", "tf32", "fp16", "int8", "bf16")
"""A scorer's ``precision``: float32 (on CUDA without TF32), float32 with CUDA's TF32 GEMMs
(the fp32 graph; the CPU has no TF32 and computes fp32), the float16 graph
(``convert.to_fp16``), the int8 graph (``convert.quantize_int8``; on OpenVINO int8 weights and
per-token int8 activations), bfloat16 (OpenVINO only, on a CPU with BF16)."""

BACKENDS = ("onnxruntime", "openvino")
"""What runs a scorer's encoder: ONNX Runtime (bert_score's numbers in fp32; CPU and CUDA) or
OpenVINO (CPU only; fp32, bf16 and int8; the ``[openvino]`` extra). docs/cpu_precisions.md."""

RUNTIME_CHOICES = ("auto", *BACKENDS)
"""What a scorer's ``runtime`` may ask for: one of :data:`BACKENDS`, or ``"auto"`` (the
default; :func:`auto_backend`)."""

SPEED_PRECISIONS = ("int8", "bf16")
"""The precisions a user picks for speed on the CPU, where ``runtime="auto"`` prefers OpenVINO."""

OPENVINO_PRECISIONS = ("fp32", "bf16", "int8")
"""The precisions ``runtime="openvino"`` runs."""


def auto_backend(
    precision: str, device: str | None = None, *, openvino_problem: str | bool | None = False
) -> str:
    """What ``runtime="auto"`` runs: ONNX Runtime for fp32, tf32 and fp16 (bert_score's numbers;
    CUDA), and for any precision on CUDA; OpenVINO for ``"int8"`` and ``"bf16"`` on the CPU when
    it is installed (with NNCF, for int8) and its CPU plugin reports the capability (``INT8``,
    ``BF16``); else ONNX Runtime's int8, or, for bf16, an error saying what is missing. On a
    CPU without VNNI or AMX, int8 runs on ONNX Runtime (OpenVINO's measured slower than fp32
    there too, and costs a quantisation; the scorer warns either way).

    ``device=None`` counts as the CPU unless ONNX Runtime offers CUDA (it would pick it).
    ``openvino_problem`` stands in for
    :func:`~rust_bertscore.stages.openvino_encoder.openvino_problem` (None: OpenVINO runs it).

    Examples
    --------
    >>> from rust_bertscore.models.choices import auto_backend
    >>> auto_backend("fp32")
    'onnxruntime'
    >>> auto_backend("int8", "cpu", openvino_problem=None)
    'openvino'
    >>> auto_backend("int8", "cpu", openvino_problem="OpenVINO is not installed")
    'onnxruntime'
    """
    if precision not in SPEED_PRECISIONS:
        return "onnxruntime"
    on_cpu = device is None or str(device).strip().lower() == "cpu"
    if device is None:
        from ..stages.devices import CUDA_PROVIDER, onnxruntime

        on_cpu = CUDA_PROVIDER not in onnxruntime().get_available_providers()
    if not on_cpu:
        return "onnxruntime"  # check_backend then says what CUDA runs
    if precision == "int8" and not read_host().has("int8"):
        # without VNNI or AMX both runtimes' int8 ran slower than fp32 (the scorer warns);
        # ONNX Runtime's graph at least costs no NNCF quantisation
        return "onnxruntime"
    if openvino_problem is False:
        from ..stages.openvino_encoder import openvino_problem as probe

        openvino_problem = probe(precision)
    if openvino_problem is None:
        return "openvino"
    if precision == "bf16":
        raise InputValueError(
            f"precision='bf16' runs on OpenVINO's CPU plugin, and here {openvino_problem}"
        )
    return "onnxruntime"


def check_backend(runtime: object, precision: str = "fp32", device: str | None = None) -> str:
    """The backend that runs ``precision`` on ``device`` for ``runtime``: ``runtime`` itself
    if it is one of :data:`BACKENDS` and runs them, :func:`auto_backend`'s choice for
    ``"auto"``, else InputValueError saying why: bf16 only on OpenVINO (ONNX Runtime has no bf16
    GEMM on x86), OpenVINO only on the CPU and not in fp16 or tf32.

    Examples
    --------
    >>> from rust_bertscore.models.choices import check_backend
    >>> check_backend("openvino", "int8")
    'openvino'
    >>> check_backend("auto", "fp32")
    'onnxruntime'
    >>> check_backend("onnxruntime", "bf16")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rust_bertscore.errors.InputValueError: precision='bf16' needs runtime='openvino': ...
    """
    if runtime == "auto":
        runtime = auto_backend(precision, device)
    if runtime not in BACKENDS:
        names = ", ".join(repr(b) for b in RUNTIME_CHOICES)
        raise InputValueError(f"runtime must be one of {names}, got {runtime!r}")
    if runtime == "onnxruntime":
        if precision == "bf16":
            raise InputValueError(
                "precision='bf16' needs runtime='openvino': ONNX Runtime's CPU provider has no "
                "bf16 GEMM on x86 (and its CUDA path runs fp16)"
            )
        return "onnxruntime"
    if precision not in OPENVINO_PRECISIONS:
        names = ", ".join(repr(p) for p in OPENVINO_PRECISIONS)
        raise InputValueError(
            f"runtime='openvino' runs precision {names}, not {precision!r} (fp16 and tf32 are "
            "for CUDA, on runtime='onnxruntime')"
        )
    if device is not None and str(device).strip().lower() != "cpu":
        raise InputValueError(
            f"runtime='openvino' runs on the CPU only, got device={device!r}: pass device='cpu' "
            "(or None), or runtime='onnxruntime' for CUDA"
        )
    return "openvino"


def check_precision(precision: object) -> str:
    """``precision`` if it is one of :data:`PRECISIONS`, else ValueError naming them.

    Examples
    --------
    >>> from rust_bertscore.models.choices import check_precision
    >>> check_precision("fp16")
    'fp16'
    """
    if precision not in PRECISIONS:
        names = ", ".join(repr(p) for p in PRECISIONS)
        raise InputValueError(f"precision must be one of {names}, got {precision!r}")
    return str(precision)
