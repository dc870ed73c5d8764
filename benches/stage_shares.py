"""Where a scoring pass spends its time, and how near its encoder runs to its GEMM ceiling.

:func:`stage_times` scores once with timers around the stages' seams: the tokenizer's
``encode_content`` (what ``encode`` and the pipeline call), the encoder session's ``run`` (ONNX
Runtime's, or its ``run_with_iobinding`` on CUDA, or OpenVINO's infer), and every function of
the Rust kernel (``rust_bertscore._core``); what is left is the Python around them (batch
packing, copies, bookkeeping).
:func:`ceiling_fraction` divides the encoder's achieved GFLOP/s (padded FLOPs over the time in
``run``) by the GEMM ceiling of the instruction the path computes in
(``benches/gemm_limits.py``): fp32 by sgemm's, int8 by the int8 GEMM's, bf16 by the bf16 GEMM's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from benches.common import encoder_flops

if TYPE_CHECKING:
    from rust_bertscore import BERTScorer

CEILINGS = {
    "ort-fp32": "numpy-f32",
    "ov-fp32": "openvino-f32",
    "ort-int8": "openvino-int8",
    "ort-int8-tensor": "openvino-int8",
    "ort-int8-static": "openvino-int8",
    "ort-int8-nbits": "openvino-int8",
    "ov-int8": "openvino-int8",
    "ov-int8-static": "openvino-int8",
    "ov-bf16": "openvino-bf16",
}
"""The GEMM ceiling (a key of ``gemm_rates``) each path is held against: its own instruction's."""

STAGES = ("encoder", "tokenise", "kernel", "python")


def _timed(fn: Callable[..., Any], into: dict[str, float], stage: str) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            into[stage] += time.perf_counter() - t0

    return wrapper


def stage_times(scorer: BERTScorer, hyps: list[str], refs: list[str]) -> dict[str, float]:
    """Seconds of one ``scorer.score(hyps, refs)`` in each of :data:`STAGES`, and ``total``.

    The scorer should hold no cache of these texts (``cache_bytes=0``), so the pass encodes them.
    """
    from rust_bertscore import _core

    spent = dict.fromkeys(STAGES, 0.0)
    runtime = scorer.runtime
    session = runtime.encoder.session
    tokenizer = runtime.tokenizer
    kernel_names = [
        n for n in dir(_core) if not n.startswith("_") and callable(getattr(_core, n))
        and not isinstance(getattr(_core, n), type)
    ]  # fmt: skip
    originals = {n: getattr(_core, n) for n in kernel_names}
    session_run, encode = session.run, tokenizer.encode_content
    bound = getattr(session, "run_with_iobinding", None)  # ONNX Runtime's, with IO binding (CUDA)
    try:
        session.run = _timed(session_run, spent, "encoder")
        if bound is not None:
            session.run_with_iobinding = _timed(bound, spent, "encoder")
        # encode_content, not encode: the pipeline tokenises through it (encode calls it too).
        tokenizer.encode_content = _timed(encode, spent, "tokenise")  # type: ignore[method-assign]
        for name, fn in originals.items():
            setattr(_core, name, _timed(fn, spent, "kernel"))
        t0 = time.perf_counter()
        scorer.score(hyps, refs)
        total = time.perf_counter() - t0
    finally:
        for name, fn in originals.items():
            setattr(_core, name, fn)
        del session.run
        if bound is not None:
            del session.run_with_iobinding
        del tokenizer.encode_content
    spent["python"] = max(0.0, total - spent["encoder"] - spent["tokenise"] - spent["kernel"])
    spent["total"] = total
    return spent


def ceiling_fraction(
    path: str, scorer: BERTScorer, texts: list[str], encoder_s: float, gemm: dict[str, float]
) -> dict[str, float] | None:
    """The encoder's GFLOP/s on ``texts`` (padded, as the GEMMs compute them) in
    ``encoder_s`` seconds, its ceiling and the fraction; None without that ceiling."""
    ceiling = gemm.get(CEILINGS.get(path, ""))
    if not ceiling or encoder_s <= 0:
        return None
    _real, padded = encoder_flops(scorer, texts, 64)
    rate = padded / encoder_s / 1e9
    return {"gflops": rate, "ceiling": ceiling, "fraction": rate / ceiling}
