"""SmoothQuant for int8 graphs: move activation outliers into the weights before quantising.

Bench-only code (``benches/int8_levers.py`` compares it with the package's per-token int8); it
is not part of the wheel.

Dynamic int8 quantisation gives each activation tensor one scale. When a few input channels of
a projection are far larger than the rest (the GELU outputs of early FFN layers, some LayerNorm
outputs), that scale leaves the other channels a handful of levels. SmoothQuant (Xiao et al.
2023) divides input channel ``j`` by ``s_j`` and multiplies row ``j`` of the weight by ``s_j``:
``(x / s) (s W) = x W`` exactly in real arithmetic, but the activations become flatter and the
weights (quantised per output channel, with more headroom) absorb the range. With
``s_j = max|x_j|^alpha / max|W_j|^(1 - alpha)`` the two share the difficulty.

Here the division is a ``Mul`` node by ``1/s`` in front of each smoothed projection (the
post-LayerNorm graphs feed the same LayerNorm output to the residual path, so it cannot be
folded into LayerNorm's gamma without changing the residual). ``max|x_j|`` comes from running
the fp32 graph on calibration batches (:func:`activation_maxima`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import onnx
from onnx import numpy_helper

SMOOTH_OPS = ("MatMul", "Attention")

DEFAULT_ALPHA = 0.5
"""Migration strength: 0 leaves activations alone, 1 moves all of their range to the weights."""


def smoothable_nodes(model: onnx.ModelProto, exclude: Iterable[str] = ()) -> list[onnx.NodeProto]:
    """Projections with a constant 2-D weight (``MatMul``, and the packed QKV of ``Attention``),
    not in ``exclude``."""
    skip = set(exclude)
    weights = {t.name: t for t in model.graph.initializer}
    out = []
    for node in model.graph.node:
        if node.op_type not in SMOOTH_OPS or node.name in skip or len(node.input) < 2:
            continue
        weight = weights.get(node.input[1])
        if weight is not None and len(weight.dims) == 2:
            out.append(node)
    return out


def activation_maxima(
    model: onnx.ModelProto,
    tensors: Sequence[str],
    batches: Iterable[tuple[np.ndarray, np.ndarray]],
) -> dict[str, np.ndarray]:
    """Per-channel ``max |x|`` of ``tensors`` over the real tokens of ``batches``.

    Parameters
    ----------
    model
        An fp32 encoder graph (not modified: a copy gets the extra outputs).
    tensors
        Names of float tensors shaped ``[batch, seq, channels]``.
    batches
        ``(input_ids, attention_mask)`` int64 pairs, ``[batch, seq]`` each.
    """
    import onnxruntime as ort

    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    existing = {o.name for o in probe.graph.output}
    for name in tensors:
        if name not in existing:
            probe.graph.output.append(
                onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None)
            )
    options = ort.SessionOptions()
    options.log_severity_level = 3
    # No fusions: they could swallow the tensors asked for.
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(
        probe.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    del probe
    maxima: dict[str, np.ndarray] = {}
    for input_ids, mask in batches:
        outputs = session.run(list(tensors), {"input_ids": input_ids, "attention_mask": mask})
        real = mask.astype(bool)
        for name, value in zip(tensors, outputs):
            peak = np.abs(value[real]).max(axis=0)
            maxima[name] = peak if name not in maxima else np.maximum(maxima[name], peak)
    return maxima


def smooth(
    model: onnx.ModelProto,
    maxima: dict[str, np.ndarray],
    nodes: Sequence[onnx.NodeProto],
    alpha: float = DEFAULT_ALPHA,
) -> int:
    """Smooth ``nodes`` of ``model`` in place with the activation ``maxima`` of their inputs;
    returns how many were smoothed."""
    weights = {t.name: t for t in model.graph.initializer}
    before: dict[str, onnx.NodeProto] = {}
    done = 0
    for node in nodes:
        peak_x = maxima.get(node.input[0])
        tensor = weights[node.input[1]]
        w = numpy_helper.to_array(tensor)
        if peak_x is None or peak_x.shape != (w.shape[0],):
            continue
        peak_w = np.abs(w).max(axis=1)
        s = np.power(np.maximum(peak_x, 1e-5), alpha) / np.power(
            np.maximum(peak_w, 1e-5), 1 - alpha
        )
        s = np.clip(s, 1e-4, 1e4).astype(np.float32)
        tensor.CopyFrom(numpy_helper.from_array((w * s[:, None]).astype(np.float32), tensor.name))
        inv_name = f"{node.name}/smooth_scale"
        model.graph.initializer.append(
            numpy_helper.from_array((1.0 / s).astype(np.float32), inv_name)
        )
        smoothed = f"{node.name}/smoothed_input"
        mul = onnx.helper.make_node(
            "Mul", [node.input[0], inv_name], [smoothed], name=f"{node.name}/smooth"
        )
        node.input[0] = smoothed
        before[node.name] = mul
        done += 1
    if before:
        ordered = []
        for node in model.graph.node:
            if node.name in before:
                ordered.append(before[node.name])
            ordered.append(node)
        del model.graph.node[:]
        model.graph.node.extend(ordered)
    return done
