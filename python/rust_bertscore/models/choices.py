"""What a scorer may ask of its encoder: the precisions and the runtimes, and which go together
(docs/cpu_precisions.md)."""

from __future__ import annotations

from ..errors import InputValueError

PRECISIONS = ("fp32", "tf32", "fp16", "int8", "bf16")
"""A scorer's ``precision``: float32 (on CUDA without TF32), float32 with CUDA's TF32 GEMMs
(the fp32 graph; the CPU has no TF32 and computes fp32), the float16 graph
(``convert.to_fp16``), the int8 graph (``convert.quantize_int8``; on OpenVINO NNCF's), bfloat16
(OpenVINO only, on a CPU with BF16)."""

BACKENDS = ("onnxruntime", "openvino")
"""A scorer's ``runtime``: ONNX Runtime (the default: bert_score's numbers) or OpenVINO (CPU
only; fp32, bf16 and int8; the ``[openvino]`` extra). docs/cpu_precisions.md."""

OPENVINO_PRECISIONS = ("fp32", "bf16", "int8")
"""The precisions ``runtime="openvino"`` runs."""


def check_backend(runtime: object, precision: str = "fp32", device: str | None = None) -> str:
    """``runtime`` if it is one of :data:`BACKENDS` and runs ``precision`` on ``device``, else
    InputValueError saying why: bf16 only on OpenVINO (ONNX Runtime has no bf16 GEMM on x86),
    OpenVINO only on the CPU and not in fp16 or tf32.

    Examples
    --------
    >>> from rust_bertscore.models.choices import check_backend
    >>> check_backend("openvino", "int8")
    'openvino'
    >>> check_backend("onnxruntime", "bf16")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rust_bertscore.errors.InputValueError: precision='bf16' needs runtime='openvino': ...
    """
    if runtime not in BACKENDS:
        names = ", ".join(repr(b) for b in BACKENDS)
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
