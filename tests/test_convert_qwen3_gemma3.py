"""Qwen3 (Qwen3-Embedding's architecture) and bidirectional Gemma3 (EmbeddingGemma's) on the
reference set's tiny checkpoints (tests/data/reference/tiny/{qwen3,gemma3}): the slow tokenizers'
ids exact, PyTorch's hidden states, bert_score 0.3.13's scores (cases4.json), the final norm,
causality, Gemma3's window, int8, export, the default layer and the model listing.
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

import rust_bertscore as rb
from conftest import TINY, assert_scores_match, load_cases
from rust_bertscore.convert import build_model, export_onnx, int8_fp32_nodes, load_config
from rust_bertscore.convert.checkpoint import WeightStore
from rust_bertscore.errors import CheckpointError, RustBertScoreWarning
from rust_bertscore.stages.tokenization import TextTokenizer

FAMILIES = ("qwen3", "gemma3")
REL_TOL = 1e-5
"""Hidden states: max |got - PyTorch| / max(|PyTorch|, 1) per layer. Measured 7.8e-7 (Qwen3,
whose random residual stream grows to ~200) and 2.8e-7 (Gemma3)."""
CASES4 = load_cases(TINY / "cases4.json")


def reference(family: str) -> list[tuple[np.ndarray, np.ndarray]]:
    with np.load(TINY / family / "hidden_states.npz") as z:
        return [(z[f"ids_{i}"], z[f"hidden_{i}"]) for i in range(3)]


def run(model, rows: list[np.ndarray]) -> np.ndarray:
    sess = ort.InferenceSession(model.SerializeToString())
    width = max(max(len(r) for r in rows), 1)
    ids = np.zeros((len(rows), width), np.int64)
    mask = np.zeros_like(ids)
    for i, r in enumerate(rows):
        ids[i, : len(r)], mask[i, : len(r)] = r, 1
    return sess.run(None, {"input_ids": ids, "attention_mask": mask})[0]


def assert_close(got: np.ndarray, want: np.ndarray) -> None:
    scale = max(float(np.abs(want).max()), 1.0)
    assert float(np.abs(got - want).max()) / scale < REL_TOL


def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    x = x.astype(np.float64)
    return x / np.sqrt((x**2).mean(-1, keepdims=True) + eps) * weight


@pytest.mark.parametrize("family", FAMILIES)
def test_ids_are_the_slow_tokenizers(family: str) -> None:
    """Every text of the cases and edge cases (digits, contractions, NFC, CJK, emoji, special
    tokens in the text, truncation) as transformers 4.57.6's slow tokenizer encodes them."""
    data = json.loads((TINY / family / "ids.json").read_text(encoding="utf-8"))
    tok = TextTokenizer(TINY / family, load_config(TINY / family))
    assert tok.tokenizer_class.name == data["tokenizer_class"]
    assert tok.encode(data["texts"]) == data["ids"]
    ref = reference(family)
    assert tok.encode(CASES4[0]["cands"][:3]) == [ids.tolist() for ids, _ in ref]


def test_qwen3_reads_the_vocabulary_files_not_its_tokenizer_json() -> None:
    """The tiny tokenizer.json splits words by GPT-2's pattern, not Qwen2's: read, it would give
    other ids (digits one by one in Qwen2)."""
    from tokenizers import Tokenizer

    text = "Numbers 1,234,567 and 2026"
    plain = Tokenizer.from_file(str(TINY / "qwen3" / "tokenizer.json"))
    tok = TextTokenizer(TINY / "qwen3", load_config(TINY / "qwen3"))
    assert tok.encode([text])[0] != plain.encode(text, add_special_tokens=False).ids


def test_special_tokens_and_empty_texts() -> None:
    qwen = TextTokenizer(TINY / "qwen3", load_config(TINY / "qwen3"))
    assert qwen.encode(["", "  "]) == [[], []] and qwen.special_ids == frozenset()
    gemma = TextTokenizer(TINY / "gemma3", load_config(TINY / "gemma3"))
    bos, eos = gemma.token_to_id("<bos>"), gemma.token_to_id("<eos>")
    assert (bos, eos) == (2, 1)
    assert gemma.encode([""]) == [[bos, eos]] and gemma.special_ids == frozenset()
    assert gemma.max_length == 512 and qwen.max_length == 512


@pytest.mark.parametrize("family", FAMILIES)
def test_all_hidden_states_match_pytorch(family: str) -> None:
    """Each text alone and all in one padded batch; the last state is final-normed, as
    transformers records it."""
    model = build_model(TINY / family, None, all_layers=True)
    ref = reference(family)
    batched = run(model, [ids for ids, _ in ref])
    for row, (ids, hidden) in enumerate(ref):
        alone = run(model, [ids])[:, 0]
        for layer in range(4):
            assert_close(alone[layer], hidden[layer])
            assert_close(batched[layer, row, : len(ids)], hidden[layer])


@pytest.mark.parametrize("family", FAMILIES)
def test_truncated_output_is_final_normed(family: str) -> None:
    """bert_score's truncated model returns norm(hidden[L]); hidden[3] is normed already."""
    config = load_config(TINY / family)
    weight = WeightStore(TINY / family).get("norm.weight", (64,))
    weight = weight + 1.0 if family == "gemma3" else weight
    for layer in range(4):
        model = build_model(TINY / family, layer)
        for ids, hidden in reference(family):
            got = run(model, [ids])[0]
            want = (
                hidden[3] if layer == 3 else rms_norm(hidden[layer], weight, config["rms_norm_eps"])
            )
            assert_close(got, want)
            if layer < 3:
                assert float(np.abs(got - hidden[layer]).max()) > 0.1


def test_qwen3_is_causal_and_gemma3_is_not() -> None:
    """A Qwen3 token's states do not depend on later tokens; a Gemma3 token's do."""
    for family, causal in (("qwen3", True), ("gemma3", False)):
        model = build_model(TINY / family, None, all_layers=True)
        ids = reference(family)[0][0]
        prefix = run(model, [ids[:10]])[:, 0]
        whole = run(model, [ids])[:, 0, :10]
        same = np.allclose(prefix, whole, atol=1e-4 * max(float(np.abs(whole).max()), 1.0))
        assert same == causal, family


def _with_window(tmp_path: Path, window: int) -> Path:
    out = tmp_path / f"gemma3_w{window}"
    shutil.copytree(TINY / "gemma3", out)
    config = load_config(out)
    config["sliding_window"] = window
    (out / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return out


def test_gemma3_window_is_what_transformers_makes_of_the_config(tmp_path: Path) -> None:
    """config.json says 5; transformers attends with 5 // 2 + 1 = 3 (|q - k| < 3): 4 gives the
    same window and the same states, 6 (a window of 4) other states."""
    ids = reference("gemma3")[0][0]
    base = run(build_model(TINY / "gemma3", 1), [ids])
    same = run(build_model(_with_window(tmp_path, 4), 1), [ids])
    wider = run(build_model(_with_window(tmp_path, 6), 1), [ids])
    np.testing.assert_array_equal(base, same)
    assert float(np.abs(base - wider).max()) > 1e-3


@pytest.mark.parametrize("case", CASES4, ids=[c["name"] for c in CASES4])
def test_cases4(case: dict) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RustBertScoreWarning)  # empty texts
        got = rb.score(
            case["cands"], case["refs"], model_type=str(TINY / case["model_dir"]), **case["kwargs"]
        )
    assert_scores_match(got, case["expected"], 1e-5)


@pytest.mark.parametrize("family", FAMILIES)
def test_long_case_passes_the_window(family: str) -> None:
    case = next(c for c in CASES4 if c["model_dir"] == family and c["name"].endswith("_long"))
    tok = TextTokenizer(TINY / family, load_config(TINY / family))
    assert max(len(ids) for ids in tok.encode(case["cands"])) > 100


@pytest.mark.parametrize("family", FAMILIES)
def test_int8_and_export(tmp_path: Path, family: str) -> None:
    names = int8_fp32_nodes(build_model(TINY / family, 3))
    assert names == [f"layers.{i}.mlp.down_proj/MatMul" for i in range(2)]
    case = CASES4[0]
    cands, refs = case["cands"][:8], case["refs"][:8]
    model_type = str(TINY / family)
    fp32 = rb.score(cands, refs, model_type=model_type, num_layers=2)
    int8 = rb.score(
        cands, refs, model_type=model_type, num_layers=2, precision="int8", runtime="onnxruntime"
    )
    diff = float(np.max(np.abs(int8[2] - fp32[2])))
    assert 0 < diff < 0.05
    graph = export_onnx(TINY / family, tmp_path / "g.onnx", 2, fused=True)
    import onnx

    assert all(n.domain != "com.microsoft" for n in onnx.load(str(graph)).graph.node)


@pytest.mark.parametrize("family", FAMILIES)
def test_default_layer_is_the_last_with_a_warning(family: str) -> None:
    with pytest.warns(RustBertScoreWarning, match="no tuned layer"):
        scorer = rb.BERTScorer(model_type=str(TINY / family))
    assert scorer.num_layers == 3


def test_refused_configurations(tmp_path: Path) -> None:
    causal = tmp_path / "causal"
    shutil.copytree(TINY / "gemma3", causal)
    config = load_config(causal)
    config["use_bidirectional_attention"] = False
    (causal / "config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(CheckpointError, match="use_bidirectional_attention"):
        build_model(causal, 1)
    yarn = tmp_path / "yarn"
    shutil.copytree(TINY / "qwen3", yarn)
    config = load_config(yarn)
    config["rope_scaling"] = {"rope_type": "yarn", "factor": 4.0}
    (yarn / "config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(CheckpointError, match="rope_scaling"):
        build_model(yarn, 1)


def test_listing_names_the_embedding_models(capsys: pytest.CaptureFixture[str]) -> None:
    from rust_bertscore.cli import main

    beyond = {m.name: m for m in rb.supported_models(beyond_table=True) if not m.in_bert_score}
    want = {
        "Qwen/Qwen3-Embedding-0.6B": ("qwen3", 28),
        "Qwen/Qwen3-Embedding-4B": ("qwen3", 36),
        "Qwen/Qwen3-Embedding-8B": ("qwen3", 36),
        "google/embeddinggemma-300m": ("gemma3_text", 24),
    }
    for name, (model_type, layer) in want.items():
        info = beyond[name]
        assert (info.model_type, info.default_layer, info.convertible) == (model_type, layer, True)
    assert main(["models", "--beyond-table"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in want)


def test_external_export_streams_the_weights(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With external data every large weight is in the .data file before the graph is written
    (the builder never holds them), and the graph computes what the in-memory one does."""
    from rust_bertscore.convert import writer

    largest: list[int] = []
    real_save = writer.save_model

    def spy(model, path: Path, external: bool) -> None:
        largest.append(max(len(t.raw_data) for t in model.graph.initializer))
        real_save(model, path, external)

    monkeypatch.setattr(writer, "save_model", spy)
    out = export_onnx(TINY / "qwen3", tmp_path / "q.onnx", 3, external_data=True)
    assert largest and largest[0] < writer.EXTERNAL_MIN_BYTES
    assert (tmp_path / "q.onnx.data").stat().st_size > 500_000 > out.stat().st_size
    ids = reference("qwen3")[0][0][None]
    feed = {"input_ids": ids.astype(np.int64), "attention_mask": np.ones_like(ids, np.int64)}
    streamed = ort.InferenceSession(str(out)).run(None, feed)[0]
    np.testing.assert_array_equal(streamed, run(build_model(TINY / "qwen3", 3), [ids[0]]))


@pytest.mark.parametrize("int8_external", [False, True])
def test_int8_of_a_streamed_graph(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, int8_external: bool
) -> None:
    """quantize_int8 reads an external-data graph's weights one at a time and copies the fp32
    ones it keeps (the embedding table) from that file: the int8 graph is the one quantised
    from the same graph held in one file, whether it is written in one file or with its own
    external data."""
    from rust_bertscore.convert import quantize_int8, writer

    inline = export_onnx(TINY / "gemma3", tmp_path / "a" / "g.onnx", 3)
    streamed = export_onnx(TINY / "gemma3", tmp_path / "b" / "g.onnx", 3, external_data=True)
    want = quantize_int8(inline, tmp_path / "a" / "g8.onnx")
    if int8_external:
        monkeypatch.setattr(writer, "EXTERNAL_DATA_THRESHOLD", 0)
    got = quantize_int8(streamed, tmp_path / "b" / "g8.onnx")
    assert (tmp_path / "b" / "g8.onnx.data").is_file() == int8_external
    ids = reference("gemma3")[1][0][None].astype(np.int64)
    feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
    a = ort.InferenceSession(str(want)).run(None, feed)[0]
    b = ort.InferenceSession(str(got)).run(None, feed)[0]
    np.testing.assert_array_equal(a, b)
    if not int8_external:
        assert got.read_bytes() == want.read_bytes()
