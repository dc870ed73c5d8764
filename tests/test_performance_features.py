"""What the fast pipeline adds, tested for what it does (no timing): the fused-attention graph,
token-budget batches and zero-copy packing, int8's accuracy bound and its cache entry, the
embedding cache's reuse and bound, and bounded memory while scoring many pairs."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rust_bertscore as rb
from conftest import FAMILIES, REFERENCE, TINY, load_cases
from rust_bertscore import convert, encoder, scores
from rust_bertscore.embeddings import EmbeddingCache
from rust_bertscore.models import graph_cache as model_cache
from rust_bertscore.models.loading import load_runtime

BERT = str(TINY / "bert")
WMT_CASE = next(c for c in load_cases(REFERENCE / "cases.json") if c["name"] == "plain_L6")
CANDS, REFS = WMT_CASE["cands"], WMT_CASE["refs"]  # 200 WMT pairs


def _session(path: Path) -> ort.InferenceSession:
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def _feeds(pad_id: int, lengths: list[int], seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    mask = (np.arange(max(lengths)) < np.asarray(lengths)[:, None]).astype(np.int64)
    ids = np.where(mask == 1, rng.integers(5, 60, size=mask.shape), pad_id)
    return {"input_ids": ids.astype(np.int64), "attention_mask": mask}


# ---- the fused-attention graph ------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
def test_fused_attention_graph_matches_standard_graph(family: str, tmp_path: Path) -> None:
    plain = convert.export_onnx(TINY / family, tmp_path / "plain.onnx", None, all_layers=True)
    fused = convert.export_onnx(
        TINY / family, tmp_path / "fused.onnx", None, all_layers=True, fused=True
    )
    ops = {n.op_type for n in onnx.load(str(fused)).graph.node}
    assert "Attention" in ops and "Softmax" not in ops
    assert "Attention" not in {n.op_type for n in onnx.load(str(plain)).graph.node}
    pad = int(convert.load_config(TINY / family).get("pad_token_id") or 0)
    feeds = _feeds(pad, [9, 3, 6, 1])
    want = _session(plain).run(None, feeds)[0]
    got = _session(fused).run(None, feeds)[0]
    real = feeds["attention_mask"].astype(bool)
    assert np.max(np.abs(got[:, real] - want[:, real])) < 1e-5


def test_cached_graph_is_fused_and_keyed_by_version(minilm_dir: Path) -> None:
    runtime = load_runtime(str(minilm_dir), 6)
    graph = Path(runtime.encoder.session._model_path)
    manifest = json.loads((graph.parent / "manifest.json").read_text())
    assert manifest["converter_version"] == convert.CONVERTER_VERSION
    assert manifest["policy"] == model_cache.GRAPH_VARIANT
    assert "Attention" in {n.op_type for n in onnx.load(str(graph)).graph.node}


# ---- batches and packing ------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(1, 600), max_size=80),
    st.integers(1, 70),
    st.integers(1, 5000),
)
def test_plan_batches_covers_in_order_within_budget(
    lengths: list[int], batch_size: int, max_tokens: int
) -> None:
    sorted_lengths = np.sort(np.asarray(lengths, dtype=np.int64))[::-1]
    spans = encoder.plan_batches(sorted_lengths, batch_size, max_tokens)
    covered = [i for lo, hi in spans for i in range(lo, hi)]
    assert covered == list(range(len(lengths)))
    for lo, hi in spans:
        assert 1 <= hi - lo <= batch_size
        assert (hi - lo) * sorted_lengths[lo] <= max_tokens or hi - lo == 1


def test_plan_batches_rejects_bad_sizes() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        encoder.plan_batches(np.array([3]), 0, 10)
    with pytest.raises(ValueError, match="max_tokens"):
        encoder.plan_batches(np.array([3]), 1, 0)


@pytest.mark.parametrize("all_layers", [False, True])
def test_embed_packed_is_embed_back_to_back(all_layers: bool) -> None:
    runtime = load_runtime(BERT, 2 if not all_layers else None, all_layers=all_layers)
    ids = runtime.tokenizer.encode(["a cup of tea", "", "the road to the sea and back", "hi"])
    enc = runtime.encoder
    packed = enc.embed_packed(ids, batch_size=2, extra_rows=5)
    lengths = [len(t) for t in ids]
    assert packed.offsets[-1] == sum(lengths)
    assert packed.data.shape[-2] == sum(lengths) + 5
    assert sorted(packed.order.tolist()) == [0, 1, 2, 3]
    assert [lengths[i] for i in packed.order] == sorted(lengths, reverse=True)
    for j, i in enumerate(packed.order):
        lo, hi = packed.offsets[j], packed.offsets[j + 1]
        piece = packed.data[:, lo:hi] if all_layers else packed.data[lo:hi]
        alone = enc.run([ids[i]])  # one text, no padding
        want = alone[:, 0] if all_layers else alone[0]
        np.testing.assert_allclose(piece, want, atol=2e-5)
        np.testing.assert_allclose(enc.embed(ids, 3)[i], piece, atol=2e-5)


def test_token_budget_gives_the_same_scores() -> None:
    big = rb.BERTScorer(model_type=BERT, cache_bytes=0)
    want = big.score(CANDS[:40], REFS[:40])
    small = rb.BERTScorer(model_type=BERT, cache_bytes=0)
    small._runtime.encoder.max_tokens, old = 16, small._runtime.encoder.max_tokens
    try:
        got = small.score(CANDS[:40], REFS[:40], batch_size=3)
    finally:
        small._runtime.encoder.max_tokens = old
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, atol=1e-6)


# ---- int8 ---------------------------------------------------------------------------------------


def test_int8_within_bound_of_fp32(minilm_dir: Path) -> None:
    fp32 = rb.BERTScorer(model_type=str(minilm_dir), cache_bytes=0)
    int8 = rb.BERTScorer(model_type=str(minilm_dir), cache_bytes=0, precision="int8")
    F32 = fp32.score(CANDS, REFS)[2].astype(np.float64)
    F8 = int8.score(CANDS, REFS)[2].astype(np.float64)
    # Seen on these 200 pairs: mean 0.0077, max 0.030, r 0.9987 (3,003 WMT pairs: 0.0076).
    assert np.mean(np.abs(F8 - F32)) <= 0.01
    assert np.corrcoef(F8, F32)[0, 1] > 0.995
    assert int8.precision == "int8" and int8.hash.endswith("_int8")


def test_int8_graph_keeps_policy_nodes_in_fp32(minilm_dir: Path) -> None:
    int8 = load_runtime(str(minilm_dir), 6, precision="int8")
    fp32 = load_runtime(str(minilm_dir), 6)
    path8 = Path(int8.encoder.session._model_path)
    assert path8.parent != Path(fp32.encoder.session._model_path).parent  # its own cache entry
    manifest = json.loads((path8.parent / "manifest.json").read_text())
    assert manifest["precision"] == "int8"
    assert convert.INT8_POLICY in manifest["policy"]
    nodes = {n.name: n.op_type for n in onnx.load(str(path8)).graph.node}
    keep = ["encoder.layer.0.output.dense/MatMul", "encoder.layer.1.output.dense/MatMul"]
    assert all(nodes[name] == "MatMul" for name in keep)
    assert "encoder.layer.2.output.dense/MatMul" not in nodes  # quantised
    assert "QAttention" in nodes.values()


def test_int8_fp32_nodes_per_family(tmp_path: Path) -> None:
    for family, name in (
        ("bert", "encoder.layer.{i}.output.dense/MatMul"),
        ("distilbert", "transformer.layer.{i}.ffn.lin2/MatMul"),
    ):
        model = convert.build_model(TINY / family, 3, fused=True)
        assert convert.int8_fp32_nodes(model) == [name.format(i=0), name.format(i=1)]
        assert convert.int8_fp32_nodes(model, layers=0) == []


# ---- the embedding cache ------------------------------------------------------------------------


def test_cache_reuse_gives_identical_scores() -> None:
    fresh = rb.BERTScorer(model_type=BERT, cache_bytes=0)
    cached = rb.BERTScorer(model_type=BERT, cache_bytes=64 << 20)
    system_a, system_b = CANDS[:50], CANDS[50:100]
    refs = REFS[:50]
    for system in (system_a, system_b, system_a):
        want = fresh.score(system, refs)
        got = cached.score(system, refs)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, atol=1e-6)
    # Second call: every reference was a hit; the third: everything was.
    assert cached.cache.hits >= len(set(refs)) + len(set(system_a + refs))
    assert len(fresh.cache) == 0 and fresh.cache.nbytes == 0


def test_cache_reuse_all_layers_and_multi_ref() -> None:
    refs = [[r, r + " again"] for r in REFS[:20]]
    fresh = rb.BERTScorer(model_type=BERT, all_layers=True, cache_bytes=0)
    cached = rb.BERTScorer(model_type=BERT, all_layers=True)
    for system in (CANDS[:20], CANDS[20:40]):
        for g, w in zip(cached.score(system, refs), fresh.score(system, refs)):
            assert g.shape == w.shape == (4, 20)
            np.testing.assert_allclose(g, w, atol=1e-6)
    assert cached.cache.hits > 0


def test_cache_is_bounded_and_lru() -> None:
    cache = EmbeddingCache(1000)
    a, b, c = (np.zeros(50, np.float32) for _ in range(3))  # 200 bytes each
    cache.put("a", a)
    cache.put("b", b)
    cache.put("c", c)
    assert cache.get("a") is a  # now most recent
    cache.put("d", np.zeros(100, np.float32))  # 400 bytes: total 1000
    assert cache.nbytes == 1000 and len(cache) == 4
    cache.put("e", np.zeros(50, np.float32))  # evicts the least recent: "b"
    assert cache.get("b") is None and cache.get("a") is not None
    assert cache.nbytes <= 1000
    cache.put("huge", np.zeros(1000, np.float32))  # bigger than the bound: not kept
    assert cache.get("huge") is None and cache.nbytes <= 1000
    cache.put("a", np.zeros(10, np.float32))  # replacing re-counts
    assert cache.nbytes == sum(v.nbytes for v in cache._items.values())
    assert cache.hits == 2 and cache.misses == 2
    cache.clear()
    assert len(cache) == 0 and cache.nbytes == 0 and cache.hits == 0
    with pytest.raises(ValueError, match=">= 0"):
        EmbeddingCache(-1)
    with pytest.raises(TypeError):
        EmbeddingCache(1.5)  # type: ignore[arg-type]


def test_scorer_cache_stays_within_its_bound() -> None:
    bound = 40_000  # a few dozen tiny-model texts
    scorer = rb.BERTScorer(model_type=BERT, cache_bytes=bound)
    scorer.score(CANDS, REFS)
    assert 0 < scorer.cache.nbytes <= bound
    # Entries own their memory: none is a view pinning a whole round's array.
    assert all(v.base is None for v in scorer.cache._items.values())
    assert scorer.cache.nbytes == sum(v.nbytes for v in scorer.cache._items.values())


# ---- bounded memory -----------------------------------------------------------------------------


def test_rounds_cut_pairs_by_token_budget() -> None:
    tokens = np.array([5, 5, 5, 20, 1, 1, 1])
    assert list(scores._rounds(tokens, 10)) == [(0, 2), (2, 3), (3, 4), (4, 7)]
    assert list(scores._rounds(tokens, 1000)) == [(0, 7)]
    assert list(scores._rounds(np.array([], dtype=np.int64), 10)) == []


def test_scorer_holds_only_the_round_in_flight(monkeypatch: pytest.MonkeyPatch) -> None:
    cands, refs = CANDS * 2, REFS[::-1] * 2  # 400 pairs, texts repeat across rounds
    want = rb.BERTScorer(model_type=BERT, cache_bytes=0).score(cands, refs)
    scorer = rb.BERTScorer(model_type=BERT, cache_bytes=0)
    rows_per_call: list[int] = []
    embed_packed = scorer._runtime.encoder.embed_packed

    def spy(ids, batch_size, **kw):
        out = embed_packed(ids, batch_size, **kw)
        rows_per_call.append(out.data.shape[-2])
        return out

    hidden = scorer._runtime.encoder.hidden_size
    budget_rows = 600
    monkeypatch.setattr(scorer._runtime.encoder, "embed_packed", spy)
    monkeypatch.setattr(scores, "CHUNK_BYTES", budget_rows * 4 * hidden)
    monkeypatch.setattr(scores, "PAIRS_PER_CHUNK", 64)
    tracemalloc.start()
    try:
        got = scorer.score(cands, refs)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, atol=1e-6)
    assert len(rows_per_call) > 10
    assert max(rows_per_call) <= budget_rows
    # All 800 texts' vectors at once would be ~sum(rows) * 4 * hidden bytes; NumPy's peak
    # stays near one round's.
    total_bytes = sum(rows_per_call) * 4 * hidden
    assert peak < total_bytes / 3
