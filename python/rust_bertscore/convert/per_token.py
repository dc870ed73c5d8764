"""int8 projections with one activation scale per token (row) instead of one per tensor.

ONNX Runtime's dynamic quantisation gives a whole batch of activations one scale, so a token
with large values coarsens every other token's levels; on BERTScore's token vectors that is
most of int8's error (measured: weights alone in int8 move F by 0.0009 on average, weights and
per-tensor activations by 0.0117; docs/performance.md). Here each MatMul with a constant weight
``W [K, O]`` becomes::

    x2  = Reshape(x, [-1, K])
    s   = max(ReduceMax(x2), -ReduceMin(x2), eps) / 127    # one scale per token, [N, 1]
    xq  = QuantizeLinear(x2, s, 128, axis=0)               # uint8, symmetric about 128
    acc = MatMulIntegerToFloat(xq, Wq, 1, w_scale, 128)    # u8 x s8 GEMM, per-column scale
    y   = Reshape(acc * s, [..., O])

with ``Wq`` int8 per output column (symmetric, 7 bits: :data:`WEIGHT_LEVELS`). ONNX Runtime's
``MatMulIntegerToFloat`` takes only a scalar activation scale, hence the separate ``* s``.
The row maximum of ``|x|`` is taken as ``max(ReduceMax(x), -ReduceMin(x))``: the same value
without writing ``|x|`` out (the per-token graph ran 0.81x the per-tensor int8 graph's speed
with ``Abs``, 0.85x without, on all-MiniLM-L6-v2).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import onnx
from onnx import helper, numpy_helper

from .graph import MS_DOMAIN

WEIGHT_LEVELS = 63
"""Weights are quantised to ``[-63, 63]`` (7 bits). The activations are unsigned (``x / s + 128``
in ``[1, 255]``), and CPUs without AVX-512 VNNI multiply u8 x s8 pairs with ``vpmaddubsw``, whose
int16 sum of two products saturates past 32,767: with 8-bit weights (``2 * 255 * 127``) results
came out wrong by up to 25% on this machine's ONNX Runtime; with 7 bits (``2 * 255 * 63 =
32,130``) the integer GEMM is exact on every CPU."""


def per_token_matmuls(
    model: onnx.ModelProto, exclude: Iterable[str] = (), base_dir: str = ""
) -> int:
    """Rewrite every ``MatMul`` with a constant 2-D weight (not in ``exclude``) of ``model`` in
    place as a per-token int8 projection; returns how many were rewritten.

    Weights held in an external data file (``model`` loaded without it) are read from
    ``base_dir`` one at a time, so the fp32 weights are never all in memory."""
    skip = set(exclude)
    graph = model.graph
    weights = {t.name: t for t in graph.initializer}
    shared: dict[str, np.ndarray] = {
        "pt/eps": np.array(1e-8, np.float32),
        "pt/inv127": np.array(1.0 / 127.0, np.float32),
        "pt/one": np.array(1.0, np.float32),
        "pt/zp_u8": np.array(128, np.uint8),
        "pt/zero_f": np.array(0.0, np.float32),
        "pt/zp_f": np.array(128.0, np.float32),
        "pt/shape_lead_start": np.array([0], np.int64),  # Shape(x)[:-1]
        "pt/shape_lead_end": np.array([-1], np.int64),
        "pt/neg1": np.array([-1], np.int64),
    }
    added: dict[str, np.ndarray] = {}
    quantised: dict[str, tuple[str, str]] = {}  # weight name -> (int8 weight, scales) names
    drop: set[str] = set()
    ordered: list[onnx.NodeProto] = []
    done = 0
    for node in graph.node:
        tensor = weights.get(node.input[1]) if node.op_type == "MatMul" else None
        if tensor is None or len(tensor.dims) != 2 or node.name in skip:
            ordered.append(node)
            continue
        k, o = (int(d) for d in tensor.dims)
        p = f"{node.name}/pt"
        if tensor.name not in quantised:  # ALBERT's layers share one weight: quantise it once
            w = numpy_helper.to_array(tensor, base_dir).astype(np.float32)
            tensor.ClearField("raw_data")  # free the fp32 weight now, not after the whole graph
            tensor.ClearField("float_data")
            w_scale = np.maximum(np.abs(w).max(axis=0), 1e-12) / WEIGHT_LEVELS
            w_q = np.clip(np.round(w / w_scale), -WEIGHT_LEVELS, WEIGHT_LEVELS).astype(np.int8)
            added[f"{p}/wq"] = w_q
            added[f"{p}/wscale"] = w_scale.astype(np.float32)
            quantised[tensor.name] = (f"{p}/wq", f"{p}/wscale")
        wq_name, wscale_name = quantised[tensor.name]
        added[f"{p}/shape2"] = np.array([-1, k], np.int64)
        added[f"{p}/last"] = np.array([o], np.int64)
        drop.add(tensor.name)
        x, y = node.input[0], node.output[0]
        ordered += [
            helper.make_node("Reshape", [x, f"{p}/shape2"], [f"{p}/x2"], name=f"{p}/reshape"),
            helper.make_node(
                "ReduceMax", [f"{p}/x2"], [f"{p}/rmax"], name=f"{p}/rmax", axes=[1], keepdims=1
            ),
            helper.make_node(
                "ReduceMin", [f"{p}/x2"], [f"{p}/rmin"], name=f"{p}/rmin", axes=[1], keepdims=1
            ),
            helper.make_node("Neg", [f"{p}/rmin"], [f"{p}/nmin"], name=f"{p}/nmin"),
            helper.make_node(
                "Max", [f"{p}/rmax", f"{p}/nmin", "pt/eps"], [f"{p}/amax_eps"], name=f"{p}/max"
            ),
            helper.make_node("Mul", [f"{p}/amax_eps", "pt/inv127"], [f"{p}/s"], name=f"{p}/s"),
            helper.make_node("Reshape", [f"{p}/s", "pt/neg1"], [f"{p}/s1"], name=f"{p}/s1"),
            helper.make_node("Mul", [f"{p}/s1", "pt/zero_f"], [f"{p}/z0"], name=f"{p}/z0"),
            helper.make_node("Add", [f"{p}/z0", "pt/zp_f"], [f"{p}/zf"], name=f"{p}/zf"),
            helper.make_node(
                "Cast", [f"{p}/zf"], [f"{p}/zp"], name=f"{p}/zp", to=onnx.TensorProto.UINT8
            ),
            helper.make_node(
                "QuantizeLinear",
                [f"{p}/x2", f"{p}/s1", f"{p}/zp"],
                [f"{p}/xq"],
                name=f"{p}/q",
                axis=0,
            ),
            helper.make_node(
                "MatMulIntegerToFloat",
                [f"{p}/xq", wq_name, "pt/one", wscale_name, "pt/zp_u8"],
                [f"{p}/acc"],
                name=f"{p}/gemm",
                domain=MS_DOMAIN,
            ),
            helper.make_node("Mul", [f"{p}/acc", f"{p}/s"], [f"{p}/y2"], name=f"{p}/rescale"),
            helper.make_node("Shape", [x], [f"{p}/xshape"], name=f"{p}/xshape"),
            helper.make_node(
                "Slice",
                [f"{p}/xshape", "pt/shape_lead_start", "pt/shape_lead_end"],
                [f"{p}/lead"],
                name=f"{p}/lead",
            ),
            helper.make_node(
                "Concat", [f"{p}/lead", f"{p}/last"], [f"{p}/yshape"], name=f"{p}/yshape", axis=0
            ),
            helper.make_node("Reshape", [f"{p}/y2", f"{p}/yshape"], [y], name=f"{p}/out"),
        ]
        done += 1
    if not done:
        return 0
    for index in reversed(range(len(graph.initializer))):
        if graph.initializer[index].name in drop:
            del graph.initializer[index]
    arrays = {**shared, **added}
    del added
    for name in list(arrays):  # each array dropped once its tensor is made: never held twice
        graph.initializer.append(numpy_helper.from_array(arrays.pop(name), name))
    del graph.node[:]
    graph.node.extend(ordered)
    if not any(op.domain == MS_DOMAIN for op in model.opset_import):
        model.opset_import.append(helper.make_opsetid(MS_DOMAIN, 1))
    return done
