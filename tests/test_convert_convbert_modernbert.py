"""ConvBERT and ModernBERT on the reference set's tiny checkpoints (tests/data/reference/tiny/):
token ids exact, PyTorch's hidden states, bert_score 0.3.13's scores (cases3.json for both,
convbert_cases.json for ConvBERT too), int8, all_layers, export and alignment.

ConvBERT's reference cases are bert_score's at batch_size=1: in PyTorch a ConvBERT text's vectors
depend on the padding its batch gives it, and bert_score's batches on PYTHONHASHSEED (its own
batch-8 scores move by up to 0.06 between seeds); the graph gives each text the vectors it has
alone, which bert_score gives with batch_size=1.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

import rust_bertscore as rb
from conftest import TINY, assert_scores_match, load_cases
from rust_bertscore.convert import build_model, export_onnx, int8_fp32_nodes, load_config
from rust_bertscore.convert.checkpoint import WeightStore
from rust_bertscore.errors import RustBertScoreWarning
from rust_bertscore.models.export import export_model
from rust_bertscore.stages.tokenization import TextTokenizer

FAMILIES = ("convbert", "modernbert")
REL_TOL = 1e-4
"""Hidden states: max |got - PyTorch| / max |PyTorch| per layer. Measured 4.6e-5 (ConvBERT layer 3)
and 7.7e-6 (ModernBERT): PyTorch's own float32 forward is as far from a float64 forward of these
random-weight models (docs/encoders.md)."""
CASES3 = [c for c in load_cases(TINY / "cases3.json") if c["model_dir"] in FAMILIES]
CONVBERT_CASES = load_cases(TINY / "convbert_cases.json")


def reference(family: str) -> list[tuple[np.ndarray, np.ndarray | None]]:
    with np.load(TINY / family / "hidden_states.npz") as z:
        return [
            (z[f"ids_{i}"], z[f"hidden_{i}"] if f"hidden_{i}" in z.files else None)
            for i in range(4)
        ]


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


def layer_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    x = x.astype(np.float64)
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight


@pytest.mark.parametrize("family", FAMILIES)
def test_ids_are_bert_scores(family: str) -> None:
    """The reference texts (cases3's first three candidates and the empty text)."""
    texts = [*CASES3[0]["cands"][:3], ""]
    tok = TextTokenizer(TINY / family, load_config(TINY / family))
    assert tok.encode(texts) == [ids.tolist() for ids, _ in reference(family)]


def test_modernbert_empty_text_has_no_tokens() -> None:
    tok = TextTokenizer(TINY / "modernbert", load_config(TINY / "modernbert"))
    assert tok.tokenizer_class.name == "PreTrainedTokenizerFast"
    assert tok.empty_ids == [] and tok.encode(["  "]) == [[]]
    assert tok.special_ids == {tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")}
    assert tok.max_length == 8192


@pytest.mark.parametrize("family", FAMILIES)
def test_all_hidden_states_match_pytorch(family: str) -> None:
    """Each text alone and all in one padded batch: the same states."""
    model = build_model(TINY / family, None, all_layers=True)
    ref = [(ids, h) for ids, h in reference(family) if h is not None]
    batched = run(model, [ids for ids, _ in ref])
    for row, (ids, hidden) in enumerate(ref):
        alone = run(model, [ids])[:, 0]
        for layer in range(4):
            assert_close(alone[layer], hidden[layer])
            assert_close(batched[layer, row, : len(ids)], hidden[layer])


def test_modernbert_truncated_output_is_final_normed() -> None:
    """bert_score's truncated ModernBERT returns final_norm(hidden[L]), not hidden[L]."""
    config = load_config(TINY / "modernbert")
    weight = WeightStore(TINY / "modernbert").get("final_norm.weight", (64,))
    for layer in range(4):
        model = build_model(TINY / "modernbert", layer)
        for ids, hidden in reference("modernbert"):
            if hidden is None:
                continue
            got = run(model, [ids])[0]
            assert_close(got, layer_norm(hidden[layer], weight, config["norm_eps"]))
            if layer:  # hidden[0] is layer-normed already (and the norms' weights are ones)
                assert float(np.abs(got - hidden[layer]).max()) > 0.1


@pytest.mark.parametrize("case", CASES3, ids=[c["name"] for c in CASES3])
def test_cases3(case: dict) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RustBertScoreWarning)  # empty texts
        got = rb.score(
            case["cands"], case["refs"], model_type=str(TINY / case["model_dir"]), **case["kwargs"]
        )
    assert_scores_match(got, case["expected"], 1e-5)


def test_modernbert_long_case_is_long() -> None:
    case = next(c for c in CASES3 if c["name"].endswith("_long"))
    tok = TextTokenizer(TINY / "modernbert", load_config(TINY / "modernbert"))
    assert max(len(ids) for ids in tok.encode(case["cands"] + case["refs"])) > 300


@pytest.mark.parametrize("case", CONVBERT_CASES, ids=[c["name"] for c in CONVBERT_CASES])
def test_convbert_cases(case: dict) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RustBertScoreWarning)
        got = rb.score(
            case["cands"], case["refs"], model_type=str(TINY / "convbert"), **case["kwargs"]
        )
    assert_scores_match(got, case["expected"], 1e-5)


def test_convbert_scores_do_not_depend_on_batch_size() -> None:
    case = CONVBERT_CASES[0]
    kwargs = {k: v for k, v in case["kwargs"].items() if k != "batch_size"}
    scorer = rb.BERTScorer(model_type=str(TINY / "convbert"), **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RustBertScoreWarning)
        one = scorer.score(case["cands"], case["refs"], batch_size=1)
        many = rb.BERTScorer(model_type=str(TINY / "convbert"), **kwargs).score(
            case["cands"], case["refs"], batch_size=32
        )
    for a, b in zip(one, many):
        np.testing.assert_allclose(a, b, atol=2e-6)


@pytest.mark.parametrize("family", FAMILIES)
def test_int8_keeps_the_first_ffn_outputs_fp32(family: str) -> None:
    names = int8_fp32_nodes(build_model(TINY / family, 3))
    want = "encoder.layer.{i}.output.dense" if family == "convbert" else "layers.{i}.mlp.Wo"
    assert names == [f"{want.format(i=i)}/MatMul" for i in range(2)]


@pytest.mark.parametrize("family", FAMILIES)
def test_int8_and_all_layers_score(family: str) -> None:
    case = next(c for c in CASES3 if c["model_dir"] == family)
    cands, refs = case["cands"][:8], case["refs"][:8]
    model_type = str(TINY / family)
    fp32 = rb.score(cands, refs, model_type=model_type, num_layers=2)
    int8 = rb.score(
        cands, refs, model_type=model_type, num_layers=2, precision="int8", runtime="onnxruntime"
    )
    assert float(np.max(np.abs(int8[2] - fp32[2]))) < 0.05
    every = rb.score(cands, refs, model_type=model_type, num_layers=2, all_layers=True)
    assert every[2].shape == (4, 8)
    if family == "convbert":  # no final norm: row 2 of all_layers is layer 2
        np.testing.assert_allclose(every[2][2], fp32[2], atol=1e-5)


@pytest.mark.parametrize("family", FAMILIES)
def test_export_and_fused_flag(tmp_path: Path, family: str) -> None:
    """``fused`` is ignored (no fused variant) and the exported graph scores as the scorer."""
    graph = export_onnx(TINY / family, tmp_path / "g.onnx", 2, fused=True)
    assert all(n.domain != "com.microsoft" for n in ort_model(graph).graph.node)
    info = export_model(str(TINY / family), tmp_path / "out" / "m.onnx", 2)
    assert info.num_layers == 2 and info.model_type == family
    case = next(c for c in CASES3 if c["model_dir"] == family)
    a = rb.score(case["cands"][:4], case["refs"][:4], model_type=str(tmp_path / "out" / "m.onnx"))
    b = rb.score(case["cands"][:4], case["refs"][:4], model_type=str(TINY / family), num_layers=2)
    np.testing.assert_allclose(a[2], b[2], atol=1e-6)


def ort_model(path: Path):
    import onnx

    return onnx.load(str(path))


@pytest.mark.parametrize("family", FAMILIES)
def test_alignment_and_similarity(family: str) -> None:
    scorer = rb.BERTScorer(model_type=str(TINY / family), num_layers=2)
    alignment = scorer.align("The elephants went home.", "Elephants are going home.")
    assert len(alignment.candidate.tokens) > 0
    sim = scorer.similarity_matrix("The elephants went home.", "Elephants are going home.")
    assert np.isfinite(np.asarray(sim.matrix)).all()


def test_modernbert_default_layer_is_the_last_with_a_warning() -> None:
    with pytest.warns(RustBertScoreWarning, match="no tuned layer"):
        scorer = rb.BERTScorer(model_type=str(TINY / "modernbert"))
    assert scorer.num_layers == 3


def test_listing_beyond_bert_scores_table(capsys: pytest.CaptureFixture[str]) -> None:
    from rust_bertscore.cli import main

    models = rb.supported_models(beyond_table=True)
    # 140 of bert_score's table; beyond it, 6 of issues 20 and 31 (ModernBERT, Qwen3-Embedding,
    # EmbeddingGemma) and 8 remote-code encoders of issue 51 (nomic, GTE, arctic, jina-v3)
    assert len(models) == 154 and [m.in_bert_score for m in models].count(False) == 14
    modern = {m.name: m for m in models if not m.in_bert_score}
    assert modern["answerdotai/ModernBERT-base"].convertible
    assert modern["answerdotai/ModernBERT-large"].default_layer == 28
    conv = {m.name: m for m in rb.supported_models() if m.model_type == "convbert"}
    assert len(conv) == 3 and all(m.convertible for m in conv.values())
    assert main(["models", "--beyond-table", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["models"]) == 1 + 154 and data["total"] == 140  # the default model first
