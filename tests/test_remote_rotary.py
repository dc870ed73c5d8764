"""The rotary tables of the remote-code families (nomic-bert, GTE "new", jina-v3) against tables
dumped from their own modeling code under torch (tests/data/make_remote_rotary_refs.py, run in a
side venv; no torch here): the inverse frequencies and the angles bitwise, ``cos``/``sin`` within
one float32 step (issue 59 item 5). The angles of the graphs are ONNX Runtime's float32 ``Mul``
of the positions and these frequencies, then ``Cos``/``Sin``: run here as the graphs run them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from rust_bertscore.convert.families.gte import gte_inv_freq
from rust_bertscore.convert.families.nomic_bert import NomicSpec, ntk_inv_freq
from rust_bertscore.convert.families.rope import rope_tables
from rust_bertscore.convert.families.torch_math import sleef_powf, torch_pow
from rust_bertscore.errors import CheckpointError

REFS = np.load(Path(__file__).parent / "data" / "remote_rotary_refs.npz")
CONFIGS: dict[str, dict[str, Any]] = json.loads(str(REFS["configs"]))
ORT_TRIG_STEPS = 2
"""ONNX Runtime's float32 ``Cos``/``Sin`` against torch's, in float32 steps."""


def ref(name: str, key: str) -> np.ndarray:
    return np.asarray(REFS[f"{name}/{key}"])


def steps(a: np.ndarray, b: np.ndarray) -> int:
    """The largest distance between ``a`` and ``b`` in float32 steps (same signs here)."""
    ia, ib = a.astype(np.float32).view(np.int32), b.astype(np.float32).view(np.int32)
    return int(np.abs(ia.astype(np.int64) - ib.astype(np.int64)).max())


def nomic_spec(config: dict[str, Any], n_positions: int) -> NomicSpec:
    factor = config.get("rotary_scaling_factor")
    return NomicSpec(
        hidden=config["head_dim"],
        heads=1,
        vocab=8,
        intermediate=8,
        n_positions=n_positions,
        eps=1e-12,
        activation="swiglu",
        qkv_bias=False,
        fc1_bias=False,
        fc2_bias=False,
        rotary_dim=int(config["head_dim"] * config["rotary_emb_fraction"]),
        base=float(config["rotary_emb_base"]),
        scaling_factor=float(factor) if factor else None,
        max_trained=config.get("max_trained_positions", 2048),
        type_vocab=0,
    )


def package_inv_freq(name: str) -> np.ndarray:
    """The frequencies this package's graph multiplies the positions by for ``name``'s config."""
    config = CONFIGS[name]
    family, seqlen = config["family"], config["seqlen"]
    if family == "nomic" and config.get("rotary_scaling_factor"):
        return ntk_inv_freq(nomic_spec(config, seqlen))[seqlen]  # the row the graph gathers
    if family == "gte":
        return gte_inv_freq(config["rope_theta"], config["head_dim"], config["rope_scaling"])
    if family == "jina":  # jina_spec: gte_inv_freq(rotary_emb_base, head_dim, None)
        return gte_inv_freq(float(config["rotary_emb_base"]), config["head_dim"], None)
    raise AssertionError(name)


def graph_angles(positions: np.ndarray, inv_freq: np.ndarray) -> tuple[np.ndarray, ...]:
    """Angles, cos and sin as the families' graphs compute them: ``Cast`` positions, ``Mul`` by
    the frequency weight, ``Cos``, ``Sin`` (ONNX Runtime, float32, CPU)."""
    pos = helper.make_tensor_value_info("pos", TensorProto.INT64, [None, 1])
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [None, None]) for n in "acs"]
    nodes = [
        helper.make_node("Cast", ["pos"], ["pos_f"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["pos_f", "inv"], ["a"]),
        helper.make_node("Cos", ["a"], ["c"]),
        helper.make_node("Sin", ["a"], ["s"]),
    ]
    weight = numpy_helper.from_array(inv_freq.astype(np.float32), "inv")
    graph = helper.make_graph(nodes, "rope", [pos], outs, [weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return tuple(session.run(None, {"pos": positions[:, None].astype(np.int64)}))


GRAPH_TABLES = [n for n in CONFIGS if n != "nomic_plain"]


@pytest.mark.parametrize("name", GRAPH_TABLES)
def test_inverse_frequencies_match_the_remote_code(name: str) -> None:
    got, want = package_inv_freq(name), ref(name, "inv_freq")
    assert got.dtype == np.float32 and got.shape == want.shape
    # bitwise, gte_mixed_b too: its `exp` (torch's: MKL's VML) is taken correctly rounded here,
    # which torch's gives on these 32 values (in general it may differ by a step)
    np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32), err_msg=name)


@pytest.mark.parametrize("name", GRAPH_TABLES)
def test_graph_angles_and_tables_match_the_remote_code(name: str) -> None:
    positions = ref(name, "positions")
    angles, cos, sin = graph_angles(positions, package_inv_freq(name))
    np.testing.assert_array_equal(angles.view(np.int32), ref(name, "angles").view(np.int32))
    exact_cos = np.cos(angles.astype(np.float64)).astype(np.float32)
    exact_sin = np.sin(angles.astype(np.float64)).astype(np.float32)
    assert steps(exact_cos, ref(name, "cos")) <= 1 and steps(exact_sin, ref(name, "sin")) <= 1
    # ONNX Runtime's own float32 Cos/Sin: measured 2 steps from torch's at one element (position
    # 4095 of nomic_ntk_8192, angle 291 rad), 1 elsewhere
    assert steps(cos, ref(name, "cos")) <= ORT_TRIG_STEPS, name
    assert steps(sin, ref(name, "sin")) <= ORT_TRIG_STEPS, name


def test_nomic_static_tables_match_the_remote_code() -> None:
    """Without ``rotary_scaling_factor`` the nomic graph slices ``rope_tables``: its cos/sin are
    the correctly rounded cosines of the remote code's own angles, within a step of torch's."""
    config = CONFIGS["nomic_plain"]
    dim = int(config["head_dim"] * config["rotary_emb_fraction"])
    cos, sin = rope_tables(float(config["rotary_emb_base"]), dim, config["seqlen"])
    positions, angles = ref("nomic_plain", "positions"), ref("nomic_plain", "angles")
    half = dim // 2
    want_cos = np.cos(angles.astype(np.float64)).astype(np.float32)
    want_sin = np.sin(angles.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(cos[positions, :half], want_cos)
    np.testing.assert_array_equal(sin[positions, :half], want_sin)
    np.testing.assert_array_equal(cos[positions, half:], want_cos)
    assert steps(cos[positions, :half], ref("nomic_plain", "cos")) <= 1
    assert steps(sin[positions, :half], ref("nomic_plain", "sin")) <= 1


def test_the_dynamic_ntk_rows_follow_the_length() -> None:
    """Rows up to ``max_trained_positions`` keep the base; each longer length its own base."""
    config = CONFIGS["nomic_ntk_8192"]
    table = ntk_inv_freq(nomic_spec(config, 8192))
    np.testing.assert_array_equal(table[2048], table[0])
    np.testing.assert_array_equal(table[2048], ref("nomic_ntk_2048", "inv_freq"))
    assert (table[2049] < table[2048])[1:].all() and (table[8192] < table[3000])[1:].all()


def test_sleef_powf_handles_the_exact_cases() -> None:
    x = np.array([1.0, 7.0, 10000.0, 2.0], dtype=np.float32)
    y = np.array([0.37, 0.0, 0.5, -1.0], dtype=np.float32)
    assert sleef_powf(x, y).tolist() == [1.0, 1.0, 100.0, 0.5]
    with pytest.raises(ValueError, match="positive and finite"):
        sleef_powf(np.array([-2.0], dtype=np.float32), np.array([0.5], dtype=np.float32))


def test_torch_pow_takes_sleef_on_whole_blocks_only() -> None:
    """Torch's kernel: SLEEF on each whole block of 32 elements, libm on the tail."""
    base = np.float32(1454737.090918241)  # a base whose 20th power differs between the two
    exponents = np.arange(0, 48, 2, dtype=np.float32) / np.float32(48)
    tail = torch_pow(base, exponents)  # 24 elements: all libm
    np.testing.assert_array_equal(
        tail, np.power(np.float64(base), exponents.astype(np.float64)).astype(np.float32)
    )
    long_exponents = np.arange(0, 80, 2, dtype=np.float32) / np.float32(80)
    mixed = torch_pow(base, long_exponents)
    np.testing.assert_array_equal(mixed[:32], sleef_powf(np.full(32, base), long_exponents[:32]))


@pytest.mark.parametrize(
    "scaling",
    [
        {"type": "ntk", "factor": 0.5},  # new-impl: plain tables up to its limit, NTK past it
        {"type": "ntk", "factor": float("nan")},
        {"type": "ntk", "factor": 2.0, "mixed_b": "0.7"},
    ],
)
def test_gte_refuses_scalings_whose_tables_it_cannot_follow(scaling: dict[str, Any]) -> None:
    with pytest.raises(CheckpointError, match="rope_scaling"):
        gte_inv_freq(10000.0, 64, scaling)


def test_transformers_default_rope_frequencies_are_torchs() -> None:
    """ModernBERT, Qwen3 and Gemma3 (transformers' default RoPE, computed in the graph from
    these frequencies): bit for bit torch's float32 ``pow`` (NumPy's missed 2 to 26 of them)."""
    from rust_bertscore.convert.families.rope import inverse_frequencies

    refs = json.loads((Path(__file__).parent / "data" / "default_rope_refs.json").read_text())
    for case in refs["cases"]:
        got = inverse_frequencies(case["theta"], case["head_dim"]).view(np.uint32)
        assert got.tolist() == case["bits"], (case["theta"], case["head_dim"])
