"""The CPU precision paths that ``benches/cpu_precisions.py`` measures, each as a scorer.

Shipped paths are made through the public API (``BERTScorer(runtime=..., precision=...)``).
The others are bench-only variants, each an encoder swapped into a scorer of the same model
(``BERTScorer.use_encoder``), so tokenisation and the kernel are the same for every path:

- ``ort-int8-tensor``: ONNX Runtime's dynamic quantisation with one activation scale per tensor
  (the former ``precision="int8"``; ``convert.quantize_int8(activations="per-tensor")``).
- ``ort-int8-static``: ONNX Runtime's static QDQ quantisation (``quantize_static``: percentile
  calibration, per-channel weights, the projections' MatMuls only) of the *unfused* graph,
  whose shapes ONNX Runtime's shape inference can type (on the fused graph it quantised
  weights only).
- ``ort-int8-nbits``: ``MatMulNBits`` with 8-bit weights at ``accuracy_level=4`` (MLAS quantises
  activations per block and runs int8 GEMMs).
- ``ov-int8-static``: OpenVINO's former ``precision="int8"``, NNCF's static post-training
  quantisation (``nncf.quantize(model_type=TRANSFORMER)``: one scale per activation tensor,
  fitted on the calibration texts in padded batches of 32). Faster than the shipped int8 (int8
  weights, activations quantised per token at run time) and further from fp32: the bench
  keeps it to measure that trade-off per host (docs/cpu_precisions.md).

Calibration texts are the last 300 WMT references (:data:`CALIBRATION_LINES`); the benchmark's
pairs are taken before them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from benches.common import scorer_on_graph

if TYPE_CHECKING:
    from rust_bertscore import BERTScorer

CALIBRATION_LINES = 300
"""Calibration texts: the last this many lines of ``refs_long.txt`` (3,004 lines)."""

PATHS = {
    "ort-fp32": "ONNX Runtime fp32 (the default: bert_score's numbers)",
    "ort-int8": 'ONNX Runtime int8, one activation scale per token (precision="int8")',
    "ort-int8-tensor": "ONNX Runtime dynamic int8, one activation scale per tensor",
    "ort-int8-static": "ONNX Runtime static QDQ int8 (calibrated), unfused graph",
    "ort-int8-nbits": "ONNX Runtime MatMulNBits, 8-bit weights, accuracy_level 4",
    "ov-fp32": 'OpenVINO fp32 (runtime="openvino")',
    "ov-bf16": 'OpenVINO bf16 (runtime="openvino", precision="bf16")',
    "ov-int8": 'OpenVINO int8: int8 weights, activations per token (precision="int8")',
    "ov-int8-static": "OpenVINO int8, NNCF static post-training (the former precision='int8')",
}
"""Every path the bench knows, with what it is."""

OPENVINO_PATHS = ("ov-fp32", "ov-bf16", "ov-int8", "ov-int8-static")


def calibration_feeds(
    scorer: BERTScorer, texts: list[str], batch: int = 32, *, same_width: bool = False
) -> Iterator[dict]:
    """Padded ``{"input_ids", "attention_mask"}`` int64 batches of ``texts`` (the model's
    tokenizer, as the encoder sees them); with ``same_width`` every batch is padded to the
    longest text (ONNX Runtime's histogram calibrators stack batches)."""
    ids = scorer.runtime.tokenizer.encode(texts)
    pad = scorer.runtime.encoder.pad_id
    longest = max(len(r) for r in ids)
    for i in range(0, len(ids), batch):
        rows = ids[i : i + batch]
        width = longest if same_width else max(len(r) for r in rows)
        input_ids = np.full((len(rows), width), pad, np.int64)
        mask = np.zeros((len(rows), width), np.int64)
        for j, r in enumerate(rows):
            input_ids[j, : len(r)] = r
            mask[j, : len(r)] = 1
        yield {"input_ids": input_ids, "attention_mask": mask}


class OpenVinoSession:
    """The part of an ONNX Runtime session the encoder calls, over an OpenVINO compiled model
    (bench-only: the package's own is ``runtime="openvino"``)."""

    def __init__(self, model: Any, config: dict[str, Any]) -> None:
        import openvino as ov

        self.compiled = ov.Core().compile_model(model, "CPU", config)
        self._local = threading.local()

    def run(self, names: object, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        request = getattr(self._local, "request", None)
        if request is None:
            request = self._local.request = self.compiled.create_infer_request()
        out = request.infer(feeds)[self.compiled.output(0)]
        return [np.array(out, dtype=np.float32)]


def make_path(
    name: str,
    model_dir: Path,
    layer: int,
    calibration: list[str],
    tmp: Path,
    threads: int | None,
) -> BERTScorer:
    """A scorer on path ``name`` (see :data:`PATHS`) for ``model_dir`` at ``layer``; raises
    ``ImportError``/``TypeError``/``ValueError`` where this install cannot run it."""
    from rust_bertscore import BERTScorer

    def scorer(**kw: Any) -> BERTScorer:
        return BERTScorer(model_type=str(model_dir), num_layers=layer, cache_bytes=0, **kw)

    if name == "ort-fp32":
        return scorer()
    if name == "ort-int8":
        return scorer(precision="int8", runtime="onnxruntime")
    if name in ("ov-fp32", "ov-bf16", "ov-int8"):
        return scorer(runtime="openvino", precision=name.split("-")[1])
    base = scorer()
    if name == "ort-int8-tensor":
        from rust_bertscore import convert
        from rust_bertscore.models import graph_cache

        runtime = base.runtime
        source = graph_cache.converted_graph(runtime.files, runtime.config, layer)
        out = tmp / f"{model_dir.name}-{name}.onnx"
        return scorer_on_graph(base, convert.quantize_int8(source, out, activations="per-tensor"))
    plain = _plain_graph(model_dir, layer, tmp)
    if name == "ort-int8-static":
        return scorer_on_graph(base, _static_qdq(plain, base, calibration, tmp))
    if name == "ort-int8-nbits":
        return scorer_on_graph(base, _matmul_nbits(plain, tmp))
    if name == "ov-int8-static":
        import nncf
        import openvino as ov

        feeds = list(calibration_feeds(base, calibration, 32))
        quantized = nncf.quantize(
            ov.Core().read_model(str(plain)),
            nncf.Dataset(feeds),
            model_type=nncf.ModelType.TRANSFORMER,
            subset_size=len(feeds),
        )
        config: dict[str, Any] = {"INFERENCE_PRECISION_HINT": "f32"}
        if threads:
            config["INFERENCE_NUM_THREADS"] = threads
        return _on_openvino(scorer_on_graph(base, plain), quantized, config)
    raise ValueError(f"unknown path {name!r}: expected one of {', '.join(PATHS)}")


def _on_openvino(scorer: BERTScorer, model: Any, config: dict[str, Any]) -> BERTScorer:
    """``scorer`` (already on an encoder of its own) with that encoder's session on OpenVINO."""
    encoder = scorer.runtime.encoder
    encoder.session = OpenVinoSession(model, config)  # type: ignore[assignment]
    encoder.io_binding = False
    return scorer


def _plain_graph(model_dir: Path, layer: int, tmp: Path) -> Path:
    """The converter's unfused fp32 graph (standard ONNX ops only), made once per model."""
    from rust_bertscore import convert

    out = tmp / f"{model_dir.name}-L{layer}-plain.onnx"
    if not out.exists():
        convert.export_onnx(model_dir, out, layer, fused=False)
    return out


def _static_qdq(plain: Path, base: BERTScorer, calibration: list[str], tmp: Path) -> Path:
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    feeds = list(calibration_feeds(base, calibration, 20, same_width=True))  # 300 = 15 x 20

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.it = iter(feeds)

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.it, None)

    import onnx

    graph = onnx.load(str(plain), load_external_data=False).graph
    weights = {t.name for t in graph.initializer}
    projections = [n.name for n in graph.node if n.op_type == "MatMul" and n.input[1] in weights]
    out = tmp / f"{plain.stem}-static.onnx"
    quantize_static(
        str(plain),
        str(out),
        Reader(),
        quant_format=QuantFormat.QDQ,
        op_types_to_quantize=["MatMul"],
        nodes_to_quantize=projections,  # not the attention's activation x activation MatMuls
        per_channel=True,
        activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8,
        calibrate_method=CalibrationMethod.Percentile,
    )
    return out


def _matmul_nbits(plain: Path, tmp: Path) -> Path:
    import onnx
    from onnxruntime.quantization.matmul_nbits_quantizer import (
        DefaultWeightOnlyQuantConfig,
        MatMulNBitsQuantizer,
    )

    config = DefaultWeightOnlyQuantConfig(block_size=32, is_symmetric=True, bits=8)
    quantizer = MatMulNBitsQuantizer(onnx.load(str(plain)), accuracy_level=4, algo_config=config)
    quantizer.process()
    out = tmp / f"{plain.stem}-nbits.onnx"
    onnx.save(quantizer.model.model, str(out))
    return out
