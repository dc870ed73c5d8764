"""The T5 / mT5 / ByT5 encoder graphs against PyTorch's hidden states (tests/data/reference/tiny).

The tiny checkpoints have random weights scaled up (``initializer_factor=4``): T5's residual
stream is not normalised between blocks, so hidden states reach a few thousand and attention,
unscaled, is nearly one-hot. Float32 rounding then moves a few tokens' hidden states by up to
~2e-3 of their norm between any two float32 implementations (PyTorch is 9e-4 from a float64 run
on one token, a float32 numpy encoder 2e-3), while most tokens agree to ~1e-6. So the parity
checks bound each token's error relative to its norm twice: the worst token (5e-3; a bucket off
by one at the max distance moves it by 7e-3 to 0.6) and, over all hidden states, the median token
(5e-6; an epsilon of 1e-3 instead of 1e-6 moves it by 8e-6 to 3e-5).
"""

from __future__ import annotations

import json
import math
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from safetensors.numpy import load_file, save_file

from conftest import TINY
from encoder_reference import (
    config_facts,
    edit_config,
    load_reference,
    padded_batch,
    run,
    run_one,
    save_checkpoint,
    session,
)
from rust_bertscore import convert
from rust_bertscore.convert import (
    SUPPORTED_FAMILIES,
    CheckpointError,
    build_model,
    export_onnx,
    model_family,
    quantize_int8,
)
from rust_bertscore.convert.families.t5 import feed_forward, relative_buckets
from rust_bertscore.models.export import export_model

FAMILIES = ("t5", "mt5", "byt5")
REL_TOL = 5e-3  # worst token's |got - expected| / |expected| (see the module docstring)
MEDIAN_TOL = 5e-6  # the median token's, over all 4 hidden states (layer 0 exact)
EPS = 1e-6  # layer_norm_epsilon of the tiny configs


# ---- helpers ------------------------------------------------------------------------------------


def rel_err(got: np.ndarray, want: np.ndarray) -> float:
    """The largest per-token error relative to the reference vector's norm."""
    diff = np.linalg.norm(got.astype(np.float64) - want, axis=-1)
    return float((diff / np.linalg.norm(want.astype(np.float64), axis=-1)).max())


def median_err(got: np.ndarray, want: np.ndarray) -> float:
    """The median per-token error relative to the reference vector's norm."""
    diff = np.linalg.norm(got.astype(np.float64) - want, axis=-1)
    return float(np.median(diff / np.linalg.norm(want.astype(np.float64), axis=-1)))


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per-token cosine similarity of two ``[..., hidden]`` arrays."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    return (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)


def rms_norm(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """T5LayerNorm in float64, written from its definition: w * x / sqrt(mean(x^2) + eps)."""
    x = x.astype(np.float64)
    return weight * x / np.sqrt((x * x).mean(-1, keepdims=True) + EPS)


def final_norm_weight(family: str) -> np.ndarray:
    return load_file(str(TINY / family / "model.safetensors"))["encoder.final_layer_norm.weight"]


@pytest.fixture(scope="module")
def all_layers() -> dict[tuple[str, bool], ort.InferenceSession]:
    return {
        (fam, fused): session(build_model(TINY / fam, None, all_layers=True, fused=fused))
        for fam in FAMILIES
        for fused in (False, True)
    }


# ---- configuration ------------------------------------------------------------------------------


def test_registered() -> None:
    assert "t5" in SUPPORTED_FAMILIES
    for fam in FAMILIES:
        assert config_facts(TINY / fam) == ("t5", 3, None)  # relative positions: no table, no limit
    assert model_family({"model_type": "mt5"}) == "t5"


def test_feed_forward_proj() -> None:
    # transformers' T5Config: "gated-gelu" means the tanh approximation, other names verbatim.
    assert feed_forward("relu") == (False, "relu")
    assert feed_forward("gated-gelu") == (True, "gelu_new")
    assert feed_forward("gated-silu") == (True, "silu")
    assert feed_forward("gelu") == (False, "gelu")
    for bad in ("fancy-relu", "gated-gelu-x", "", None):
        with pytest.raises(CheckpointError, match="feed_forward_proj"):
            feed_forward(bad)


def _bucket(r: int, num_buckets: int, max_distance: int) -> int:
    """T5's bidirectional bucket, from Mesh TensorFlow's description, in float64."""
    half = num_buckets // 2
    base = half if r > 0 else 0
    n = abs(r)
    exact = half // 2
    if n < exact:
        return base + n
    log_part = math.log(n / exact) / math.log(max_distance / exact) * (half - exact)
    return base + min(exact + int(log_part), half - 1)


@pytest.mark.parametrize(("num_buckets", "max_distance"), [(32, 64), (32, 128), (64, 256)])
def test_relative_buckets(num_buckets: int, max_distance: int) -> None:
    rel = np.arange(-3 * max_distance, 3 * max_distance + 1)
    got = relative_buckets(rel, num_buckets, max_distance)
    want = [_bucket(int(r), num_buckets, max_distance) for r in rel]
    assert got.tolist() == want


def test_relative_buckets_by_hand() -> None:
    # 32 buckets, max distance 128 (t5-small): keys before the query take buckets 0..15, after
    # it 16..31; distances 0..7 are exact, then bucket 8 + floor(8 log(n / 8) / log 16): 8..11 -> 8,
    # 16..22 -> 10, 64..90 -> 14, 91.. -> 15 (91 > 8 * 16^(7/8) = 90.5).
    cases = {0: 0, -1: 1, 1: 17, -7: 7, 7: 23, -8: 8, -11: 8, -12: 9, -16: 10, -22: 10}
    cases |= {-23: 11, -32: 12, -64: 14, -90: 14, -91: 15, -127: 15, -5000: 15, 64: 30, 5000: 31}
    rel = np.array(list(cases))
    assert dict(zip(cases, relative_buckets(rel, 32, 128).tolist())) == cases


# ---- parity with PyTorch ------------------------------------------------------------------------


@pytest.mark.parametrize("fused", [False, True], ids=["onnx-ops", "fused"])
@pytest.mark.parametrize("family", FAMILIES)
def test_all_hidden_states_match_pytorch(
    all_layers: dict[tuple[str, bool], ort.InferenceSession], family: str, fused: bool
) -> None:
    sess = all_layers[family, fused]
    refs = load_reference(family)
    for ids, expected in refs:
        got = run_one(sess, ids)[:, 0]
        assert got.shape == expected.shape  # 4 = embeddings + 3 blocks, whatever num_layers
        np.testing.assert_allclose(got[0], expected[0], rtol=0, atol=1e-6)  # a plain lookup
        assert rel_err(got, expected) < REL_TOL
        assert median_err(got, expected) < MEDIAN_TOL


@pytest.mark.parametrize("fused", [False, True], ids=["onnx-ops", "fused"])
@pytest.mark.parametrize("family", FAMILIES)
def test_padding_does_not_change_real_tokens(
    all_layers: dict[tuple[str, bool], ort.InferenceSession], family: str, fused: bool
) -> None:
    sess = all_layers[family, fused]
    refs = load_reference(family)
    for pad in (0, 1):  # the pad id, and an id that means something (</s>)
        ids, mask = padded_batch([ids for ids, _ in refs], pad, extra=5)
        batch = run(sess, ids, mask)
        for row, (tokens, _) in enumerate(refs):
            alone = run_one(sess, tokens)[:, 0]
            assert rel_err(batch[:, row, : len(tokens)], alone) < 1e-5


@pytest.mark.parametrize("family", FAMILIES)
def test_truncated_model_ends_with_the_final_norm(family: str) -> None:
    """bert_score keeps ``encoder.block[:L]`` of a T5EncoderModel, whose forward still applies
    ``final_layer_norm``: the output at L is the final norm of hidden state L (not hidden[L] of
    the whole model, except at L = depth, where transformers' last hidden state is normed)."""
    weight = final_norm_weight(family)
    refs = load_reference(family)
    for layer in range(4):
        sess = session(build_model(TINY / family, layer, fused=layer % 2 == 1))
        for ids, hidden in refs:
            got = run_one(sess, ids)[0]
            assert rel_err(got, rms_norm(hidden[layer], weight)) < REL_TOL
            if 0 < layer < 3:  # hidden states of thousands, normed to about ten
                assert rel_err(got, hidden[layer]) > 0.5
            if layer == 3:
                assert rel_err(got, hidden[3]) < REL_TOL


def test_relu_and_gated_gelu_differ() -> None:
    """t5 (relu) and mt5 (gated-gelu) have different FFNs; a graph that ignored the config
    would give one of them the other's structure and fail to load its weights."""
    t5 = {n.op_type for n in build_model(TINY / "t5", 3).graph.node}
    mt5 = {n.op_type for n in build_model(TINY / "mt5", 3).graph.node}
    assert "Relu" in t5 and "Tanh" not in t5
    assert "Tanh" in mt5 and "Relu" not in mt5


def test_dense_act_fn_in_config_json_decides(tmp_path: Path) -> None:
    """transformers' T5Config derives ``dense_act_fn`` and ``is_gated_act`` from
    ``feed_forward_proj``, then sets every other config.json field as given, so what
    config.json writes wins (``dense_act_fn`` was ignored here: 3.8e-3 on F). t5 (relu, and
    ``dense_act_fn: relu`` written) with ``dense_act_fn: gelu_new`` runs gelu_new: the graph of
    ``feed_forward_proj: gelu_new`` with nothing written beside it."""
    base = json.loads((TINY / "t5" / "config.json").read_text())
    assert base["dense_act_fn"] == "relu" and base["is_gated_act"] is False
    derived = {k: v for k, v in base.items() if k not in ("dense_act_fn", "is_gated_act")}
    configs = {
        "dense": {**base, "dense_act_fn": "gelu_new"},
        "proj": {**derived, "feed_forward_proj": "gelu_new"},
    }
    outputs = {}
    ids = load_reference("t5")[0][0]
    for name, config in configs.items():
        folder = tmp_path / name
        shutil.copytree(TINY / "t5", folder)
        (folder / "config.json").write_text(json.dumps(config))
        outputs[name] = run_one(session(build_model(folder, 3)), ids)
    relu = run_one(session(build_model(TINY / "t5", 3)), ids)
    np.testing.assert_array_equal(outputs["dense"], outputs["proj"])
    assert rel_err(outputs["dense"], relu) > 1e-3


# ---- Hub layouts --------------------------------------------------------------------------------


def _hub_checkpoint(family: str, dst: Path, *, keep_shared: bool, shards: int) -> Path:
    """The tiny encoder saved as T5ForConditionalGeneration checkpoints are: with a decoder and
    an LM head to ignore, the embeddings as ``shared`` and/or ``encoder.embed_tokens``."""
    dst.mkdir()
    shutil.copy(TINY / family / "config.json", dst / "config.json")
    weights = load_file(str(TINY / family / "model.safetensors"))
    rng = np.random.default_rng(0)
    table = weights.pop("shared.weight")
    if keep_shared:
        weights["shared.weight"] = table
    weights["encoder.embed_tokens.weight"] = table
    # The decoder and the head have the encoder's names under decoder.*: random values that
    # would wreck the output if any were read.
    for key, value in list(weights.items()):
        if key.startswith("encoder.block."):
            fake = rng.standard_normal(value.shape).astype(np.float32) * 100
            weights["decoder." + key.removeprefix("encoder.")] = fake
    weights["decoder.embed_tokens.weight"] = rng.standard_normal(table.shape).astype(np.float32)
    weights["lm_head.weight"] = rng.standard_normal(table.shape).astype(np.float32)
    return save_checkpoint(weights, dst, shards)


@pytest.mark.parametrize(
    ("keep_shared", "shards"), [(True, 1), (True, 3), (False, 2)], ids=["single", "sharded", "tied"]
)
@pytest.mark.parametrize("family", ["t5", "mt5"])
def test_hub_layouts(tmp_path: Path, family: str, keep_shared: bool, shards: int) -> None:
    model_dir = _hub_checkpoint(family, tmp_path / "hub", keep_shared=keep_shared, shards=shards)
    if family == "mt5":
        edit_config(model_dir, model_type="mt5", architectures=["MT5ForConditionalGeneration"])
    sess = session(build_model(model_dir, None, all_layers=True, fused=True))
    for ids, expected in load_reference(family):
        got = run_one(sess, ids)[:, 0]
        assert rel_err(got, expected) < REL_TOL
        assert median_err(got, expected) < MEDIAN_TOL


def test_missing_tensor_is_named(tmp_path: Path) -> None:
    model_dir = tmp_path / "broken"
    model_dir.mkdir()
    shutil.copy(TINY / "mt5" / "config.json", model_dir / "config.json")
    weights = load_file(str(TINY / "mt5" / "model.safetensors"))
    del weights["encoder.block.1.layer.1.DenseReluDense.wi_1.weight"]
    save_file(weights, str(model_dir / "model.safetensors"))
    with pytest.raises(CheckpointError, match=r"block\.1\.layer\.1\.DenseReluDense\.wi_1"):
        build_model(model_dir, 3)
    build_model(model_dir, 1)  # blocks past num_layers are not read


def test_bad_config_is_named(tmp_path: Path) -> None:
    model_dir = tmp_path / "bad"
    shutil.copytree(TINY / "t5", model_dir)
    config = json.loads((model_dir / "config.json").read_text())
    config["feed_forward_proj"] = "gated-gelu"  # but the weights have a plain wi
    del config["is_gated_act"], config["dense_act_fn"]  # written, they would decide
    (model_dir / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="wi_0"):
        build_model(model_dir, 1)
    config["d_model"] = "64"
    (model_dir / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="d_model"):
        build_model(model_dir, 1)


def test_num_layers_out_of_range() -> None:
    with pytest.raises(ValueError, match=r"0\.\.3"):
        build_model(TINY / "t5", 4)


# ---- export, int8 -------------------------------------------------------------------------------


def test_export_all_layers_and_int8(tmp_path: Path) -> None:
    fp32 = export_onnx(TINY / "mt5", tmp_path / "mt5.onnx", None, all_layers=True, fused=True)
    int8 = quantize_int8(fp32, tmp_path / "mt5.int8.onnx")
    nodes = {n.name: n.op_type for n in onnx.load(str(int8)).graph.node}
    # QAttention has no attention_bias input: the biased attention must stay fp32.
    assert "QAttention" not in nodes.values()
    assert sum(op == "Attention" for op in nodes.values()) == 3
    keep = convert.int8_fp32_nodes(onnx.load(str(fp32)))
    assert keep == [f"encoder.block.{i}.layer.1.DenseReluDense.wo/MatMul" for i in (0, 1)]
    assert all(nodes[name] == "MatMul" for name in keep)
    assert "encoder.block.2.layer.1.DenseReluDense.wo/MatMul" not in nodes  # quantised
    got, want = session(int8), session(fp32)
    cos = [
        cosines(run_one(got, ids)[-1, 0], run_one(want, ids)[-1, 0])
        for ids, _ in load_reference("mt5")
    ]
    assert np.median(np.concatenate(cos)) > 0.95  # int8 of random weights: close, not equal


def test_int8_keeps_biased_attention_fp32(tmp_path: Path) -> None:
    """Without ``qkv_hidden_sizes`` (optional when heads * d_kv = d_model) ORT's quantizer
    would rewrite T5's Attention as QAttention, dropping its position bias: quantize_int8 must
    keep it fp32 even when asked to quantise everything."""
    model = build_model(TINY / "t5", 3, fused=True)
    for node in model.graph.node:
        if node.op_type == "Attention":
            kept = [a for a in node.attribute if a.name != "qkv_hidden_sizes"]
            del node.attribute[:]
            node.attribute.extend(kept)
    src = tmp_path / "t5.onnx"
    onnx.save(model, str(src))
    before = session(src)
    dst = quantize_int8(src, tmp_path / "t5.int8.onnx", nodes_to_exclude=[])
    ops = [n.op_type for n in onnx.load(str(dst)).graph.node]
    assert "QAttention" not in ops and ops.count("Attention") == 3
    assert "MatMulInteger" in ops or "DynamicQuantizeMatMul" in ops  # the rest is quantised
    after = session(dst)
    ids = load_reference("t5")[0][0]
    assert np.median(cosines(run_one(after, ids)[0], run_one(before, ids)[0])) > 0.9


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_export_model(tmp_path: Path, precision: str) -> None:
    out = tmp_path / "out" / "t5.onnx"
    info = export_model(str(TINY / "t5"), out, 2, precision=precision)
    assert info.num_layers == 2 and info.depth == 3 and info.model_type == "t5"
    sess = session(out)
    weight = final_norm_weight("t5")
    for ids, hidden in load_reference("t5"):
        got = run_one(sess, ids)[0]
        want = rms_norm(hidden[2], weight)
        if precision == "fp32":
            assert rel_err(got, want) < REL_TOL
        else:
            # random weights with activations of thousands quantise badly: a smoke test
            assert np.median(cosines(got, want)) > 0.8


# ---- ByT5 end to end ----------------------------------------------------------------------------


def byt5_ids(text: str) -> list[int]:
    """ByT5's ids as bert_score's sent_encode gives them: UTF-8 bytes + 3 (after <pad>, </s>,
    <unk>), cut to model_max_length (128) with </s> (1) last; the empty text is just </s>."""
    text = text.strip()
    return [*(b + 3 for b in text.encode("utf-8")[:127]), 1]


def bert_score_numpy(
    sess: ort.InferenceSession, case: dict, all_layers: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """bert_score 0.3.13's score() in numpy, written from its description: flatten
    multi-reference groups, IDF from the references (ln((M + 1) / (df + 1))) or weight 1 (T5
    has no CLS/SEP to zero), cosine greedy matching in batches of ``batch_size`` pairs where
    padded similarities count as 0 in the maxima, P = R = 0 for a text of exactly 2 tokens, the
    best F of each group."""
    kwargs = case["kwargs"]
    cands, refs, groups = case["cands"], case["refs"], None
    if not isinstance(refs[0], str):
        groups, flat_c, flat_r = [], [], []
        for cand, group in zip(cands, refs):
            groups.append((len(flat_r), len(flat_r) + len(group)))
            flat_c += [cand] * len(group)
            flat_r += group
        cands, refs = flat_c, flat_r
    df: Counter[int] = Counter()
    for ref in refs:
        df.update(set(byt5_ids(ref)))

    def weights(text: str) -> np.ndarray:
        ids = byt5_ids(text)
        if not kwargs.get("idf"):
            return np.ones(len(ids))
        return np.array([math.log((len(refs) + 1) / (df[t] + 1)) for t in ids])

    def embed(text: str) -> np.ndarray:  # ([layers,] tokens, hidden), unit vectors
        out = run_one(sess, np.array(byt5_ids(text), dtype=np.int64))
        out = out[:, 0] if all_layers else out[0]
        return out / np.linalg.norm(out, axis=-1, keepdims=True)

    cache = {text: embed(text) for text in set(refs + cands)}
    rows = []
    size = kwargs.get("batch_size", 64)
    for start in range(0, len(refs), size):
        batch = list(zip(cands[start : start + size], refs[start : start + size]))
        width_c = max(len(byt5_ids(c)) for c, _ in batch)
        width_r = max(len(byt5_ids(r)) for _, r in batch)
        for cand, ref in batch:
            h, r = cache[cand], cache[ref]
            sim = np.zeros((*h.shape[:-2], width_c, width_r))
            sim[..., : h.shape[-2], : r.shape[-2]] = h @ np.swapaxes(r, -1, -2)
            wh, wr = weights(cand), weights(ref)
            with np.errstate(invalid="ignore", divide="ignore"):
                p = (sim.max(-1)[..., : len(wh)] * wh / wh.sum()).sum(-1)
                rc = (sim.max(-2)[..., : len(wr)] * wr / wr.sum()).sum(-1)
                f = np.nan_to_num(2 * p * rc / (p + rc))
            if len(wh) == 2 or len(wr) == 2:
                p, rc = np.zeros_like(p), np.zeros_like(rc)
            rows.append((p, rc, f))
    p, r, f = (np.array([row[k] for row in rows]) for k in range(3))
    if groups:
        p, r, f = (np.array([x[a:b].max(0) for a, b in groups]) for x in (p, r, f))
    return (p.T, r.T, f.T) if all_layers else (p, r, f)


BYT5_CASES = [
    case
    for case in json.loads((TINY / "cases2.json").read_text())["cases"]
    if case["name"].startswith("byt5_")
]


@pytest.mark.parametrize("case", BYT5_CASES, ids=[c["name"] for c in BYT5_CASES])
def test_byt5_scores_match_bert_score(case: dict) -> None:
    """The ByT5 graph scored with bert_score's algorithm and hand-made byte ids gives
    bert_score's P/R/F (cases2.json) within 1e-5: the encoder is right end to end, including
    the final norm after layer L and all_layers' rows."""
    all_layers = bool(case["kwargs"].get("all_layers"))
    layer = None if all_layers else case["kwargs"]["num_layers"]
    sess = session(build_model(TINY / "byt5", layer, all_layers=all_layers, fused=True))
    got = bert_score_numpy(sess, case, all_layers)
    for key, values in zip("PRF", got):
        want = np.array(case["expected"][key], dtype=np.float64)
        assert values.shape == want.shape
        np.testing.assert_allclose(values, want, rtol=0, atol=1e-5, err_msg=key)


# ---- other shapes: attention width != d_model, other buckets, gated-silu ------------------------


def _numpy_t5(weights: dict[str, np.ndarray], config: dict, ids: np.ndarray) -> np.ndarray:
    """A float64 T5 encoder written from transformers' modeling_t5.py: hidden states 0..depth,
    the last one after the final norm."""
    heads, d_kv, eps = config["num_heads"], config["d_kv"], config["layer_norm_epsilon"]

    def rms(x: np.ndarray, w: np.ndarray) -> np.ndarray:
        return w * x / np.sqrt((x * x).mean(-1, keepdims=True) + eps)

    w = {k: v.astype(np.float64) for k, v in weights.items()}
    n = len(ids)
    rel = np.arange(n)[None, :] - np.arange(n)[:, None]
    buckets = np.vectorize(_bucket)(
        rel, config["relative_attention_num_buckets"], config["relative_attention_max_distance"]
    )
    bias = w["encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"][buckets]
    bias = bias.transpose(2, 0, 1)
    x = w["shared.weight"][ids]
    states = [x]
    for i in range(config["num_layers"]):
        p = f"encoder.block.{i}.layer."
        h = rms(x, w[p + "0.layer_norm.weight"])
        q, k, v = (
            (h @ w[f"{p}0.SelfAttention.{t}.weight"].T).reshape(n, heads, d_kv).transpose(1, 0, 2)
            for t in "qkv"
        )
        s = q @ k.transpose(0, 2, 1) + bias
        probs = np.exp(s - s.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        ctx = (probs @ v).transpose(1, 0, 2).reshape(n, heads * d_kv)
        x = x + ctx @ w[p + "0.SelfAttention.o.weight"].T
        h = rms(x, w[p + "1.layer_norm.weight"])
        gate = h @ w[p + "1.DenseReluDense.wi_0.weight"].T
        act = gate / (1 + np.exp(-gate))  # silu
        x = (
            x
            + (act * (h @ w[p + "1.DenseReluDense.wi_1.weight"].T))
            @ w[p + "1.DenseReluDense.wo.weight"].T
        )
        states.append(x)
    states[-1] = rms(states[-1], w["encoder.final_layer_norm.weight"])
    return np.stack(states)


def test_narrow_attention_other_buckets_gated_silu(tmp_path: Path) -> None:
    config = {
        "model_type": "t5",
        "d_model": 32,
        "num_heads": 4,
        "d_kv": 4,  # attention width 16, half of d_model
        "d_ff": 48,
        "num_layers": 2,
        "vocab_size": 50,
        "feed_forward_proj": "gated-silu",
        "relative_attention_num_buckets": 16,
        "relative_attention_max_distance": 20,
        "layer_norm_epsilon": 1e-5,
    }
    rng = np.random.default_rng(7)

    def rand(*shape: int, scale: float = 0.3) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    weights = {"shared.weight": rand(50, 32, scale=1.0)}
    weights["encoder.final_layer_norm.weight"] = 1 + rand(32)
    weights["encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"] = rand(16, 4)
    for i in range(2):
        p = f"encoder.block.{i}.layer."
        for t in "qkv":
            weights[f"{p}0.SelfAttention.{t}.weight"] = rand(16, 32)
        weights[f"{p}0.SelfAttention.o.weight"] = rand(32, 16)
        weights[f"{p}0.layer_norm.weight"] = 1 + rand(32)
        weights[f"{p}1.layer_norm.weight"] = 1 + rand(32)
        weights[f"{p}1.DenseReluDense.wi_0.weight"] = rand(48, 32)
        weights[f"{p}1.DenseReluDense.wi_1.weight"] = rand(48, 32)
        weights[f"{p}1.DenseReluDense.wo.weight"] = rand(32, 48)
    model_dir = tmp_path / "narrow"
    model_dir.mkdir()
    (model_dir / "config.json").write_text(json.dumps(config))
    save_file(weights, str(model_dir / "model.safetensors"))
    texts = [rng.integers(0, 50, size=n) for n in (1, 7, 30, 45)]  # past max_distance 20
    for fused in (False, True):
        sess = session(build_model(model_dir, None, all_layers=True, fused=fused))
        ids, mask = padded_batch(texts, 0, extra=5)
        batch = run(sess, ids, mask)
        for row, tokens in enumerate(texts):
            want = _numpy_t5(weights, config, tokens)
            assert rel_err(run_one(sess, tokens)[:, 0], want) < 1e-5
            assert rel_err(batch[:, row, : len(tokens)], want) < 1e-5
