"""NomicBERT (``model_type`` "nomic_bert", nomic-embed-text v1/v1.5) on the tiny checkpoints
made by tests/data/reference/make_nomic.py with the remote modeling code (in a side venv; none of
that code is imported here): bert_score's ids, the remote code's hidden states of every layer,
padding in batches, the dynamic NTK rotary of ``rotary_scaling_factor``, bert_score 0.3.13's
scores (idf, multi-reference, texts up to the context length), int8, refusals and the listing.
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import rust_bertscore as rb
from conftest import REFERENCE, assert_scores_match, load_cases
from rust_bertscore.convert import build_model, int8_fp32_nodes, load_config
from rust_bertscore.errors import CheckpointError, RustBertScoreWarning
from rust_bertscore.stages.tokenization import TextTokenizer

NOMIC = REFERENCE / "nomic"
FAMILIES = ("nomic", "nomic-v15")
REL_TOL = 1e-5
"""Hidden states: max |got - remote code| / max(|remote|, 1) per layer (measured 6.5e-7)."""
CASES = load_cases(NOMIC / "cases.json")


def reference(name: str) -> list[tuple[np.ndarray, np.ndarray]]:
    with np.load(NOMIC / name / "hidden_states.npz") as z:
        return [(z[f"ids_{i}"], z[f"hidden_{i}"]) for i in range(4)]


def run(model, rows: list[np.ndarray]) -> np.ndarray:
    sess = ort.InferenceSession(model.SerializeToString())
    width = max(len(r) for r in rows)
    ids = np.zeros((len(rows), width), np.int64)
    mask = np.zeros_like(ids)
    for i, r in enumerate(rows):
        ids[i, : len(r)], mask[i, : len(r)] = r, 1
    return sess.run(None, {"input_ids": ids, "attention_mask": mask})[0]


def assert_close(got: np.ndarray, want: np.ndarray) -> None:
    scale = max(float(np.abs(want).max()), 1.0)
    assert float(np.abs(got - want).max()) / scale < REL_TOL


def with_config(tmp_path: Path, name: str, **changes: object) -> Path:
    out = tmp_path / f"{name}_changed"
    shutil.copytree(NOMIC / name, out)
    config = {**load_config(out), **changes}
    (out / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return out


@pytest.mark.parametrize("name", FAMILIES)
def test_ids_are_bert_scores(name: str) -> None:
    tok = TextTokenizer(NOMIC / name, load_config(NOMIC / name))
    ref = reference(name)
    texts = [*CASES[0]["cands"][:3], CASES[4]["cands"][0]]
    assert tok.encode(texts) == [ids.tolist() for ids, _ in ref]
    assert len(ref[3][0]) == tok.max_length == 128  # the long text fills the context


@pytest.mark.parametrize("name", FAMILIES)
def test_all_hidden_states_match_the_remote_code(name: str) -> None:
    """Each text alone and all four in one padded batch (17 to 128 tokens)."""
    model = build_model(NOMIC / name, None, all_layers=True)
    ref = reference(name)
    batched = run(model, [ids for ids, _ in ref])
    assert batched.shape[0] == 4
    for row, (ids, hidden) in enumerate(ref):
        alone = run(model, [ids])[:, 0]
        for layer in range(4):
            assert_close(alone[layer], hidden[layer])
            assert_close(batched[layer, row, : len(ids)], hidden[layer])


@pytest.mark.parametrize("name", FAMILIES)
def test_truncated_graph_outputs_that_layer(name: str) -> None:
    for layer in range(4):
        model = build_model(NOMIC / name, layer)
        for ids, hidden in reference(name)[:2]:
            assert_close(run(model, [ids])[0], hidden[layer])


def test_rotary_scaling_changes_only_texts_past_the_trained_length(tmp_path: Path) -> None:
    """v1.5's dynamic NTK base applies past max_trained_positions (24 here): without
    rotary_scaling_factor the 17-token text keeps its states and the longer ones do not."""
    plain = build_model(with_config(tmp_path, "nomic-v15", rotary_scaling_factor=None), 3)
    scaled = build_model(NOMIC / "nomic-v15", 3)
    for ids, _ in reference("nomic-v15"):
        diff = float(np.abs(run(plain, [ids]) - run(scaled, [ids])).max())
        assert diff < 1e-5 if len(ids) <= 24 else diff > 1e-2, (len(ids), diff)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_bert_score_cases(case: dict) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RustBertScoreWarning)  # empty texts
        got = rb.score(
            case["cands"], case["refs"], model_type=str(NOMIC / case["model_dir"]), **case["kwargs"]
        )
    assert_scores_match(got, case["expected"], 1e-5)


@pytest.mark.parametrize("batch_size", [1, 3, 64])
def test_batching_does_not_change_long_scores(batch_size: int) -> None:
    case = next(c for c in CASES if c["name"] == "nomic-v15_long")
    got = rb.score(
        case["cands"],
        case["refs"],
        model_type=str(NOMIC / "nomic-v15"),
        num_layers=3,
        batch_size=batch_size,
    )
    assert_scores_match(got, case["expected"], 1e-5)


def test_int8_keeps_the_first_ffn_outputs() -> None:
    names = int8_fp32_nodes(build_model(NOMIC / "nomic", 3))
    assert names == [f"encoder.layers.{i}.mlp.fc2/MatMul" for i in range(2)]
    case = CASES[0]
    cands, refs = case["cands"][:8], case["refs"][:8]
    fp32 = rb.score(cands, refs, model_type=str(NOMIC / "nomic"), num_layers=2)
    int8 = rb.score(cands, refs, model_type=str(NOMIC / "nomic"), num_layers=2, precision="int8")
    assert 0 < float(np.max(np.abs(int8[2] - fp32[2]))) < 0.05


def test_default_layer_is_the_last_with_a_warning() -> None:
    with pytest.warns(RustBertScoreWarning, match="no tuned layer"):
        scorer = rb.BERTScorer(model_type=str(NOMIC / "nomic"))
    assert scorer.num_layers == 3


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"prenorm": True}, "prenorm"),
        ({"rotary_emb_interleaved": True}, "rotary_emb_interleaved"),
        ({"rotary_emb_scale_base": 512}, "rotary_emb_scale_base"),
        ({"activation_function": "relu"}, "activation_function"),
        ({"rotary_emb_fraction": 0.3}, "rotary dimension"),
        ({"rotary_scaling_factor": "2"}, "rotary_scaling_factor"),
    ],
)
def test_refused_configurations(tmp_path: Path, change: dict, message: str) -> None:
    with pytest.raises(CheckpointError, match=message):
        build_model(with_config(tmp_path, "nomic", **change), 1)


def test_listing_names_the_nomic_models(capsys: pytest.CaptureFixture[str]) -> None:
    from rust_bertscore.cli import main

    beyond = {m.name: m for m in rb.supported_models(beyond_table=True) if not m.in_bert_score}
    for name in ("nomic-ai/nomic-embed-text-v1", "nomic-ai/nomic-embed-text-v1.5"):
        info = beyond[name]
        assert (info.model_type, info.default_layer, info.convertible) == ("nomic_bert", 12, True)
        assert rb.model_info(name).model_type == "nomic_bert"
    assert main(["models", "--beyond-table"]) == 0
    assert "nomic-ai/nomic-embed-text-v1.5" in capsys.readouterr().out


def test_remote_code_of_another_architecture_is_refused(tmp_path: Path) -> None:
    """A config whose auto_map names a class the converter does not reimplement, or one whose
    model_type disagrees with its class, is refused: converted by its model_type alone it
    would give other states."""
    other = {
        "model_type": "xlm-roberta",
        "auto_map": {"AutoModel": "someorg/code--modeling_custom.XLMRobertaCustom"},
    }
    with pytest.raises(rb.RustBertScoreError, match=r"XLMRobertaCustom.*never runs"):
        rb.convert.model_family(other)
    mislabeled = {**load_config(NOMIC / "nomic"), "model_type": "bert"}
    with pytest.raises(rb.RustBertScoreError, match="auto_map"):
        rb.convert.model_family(mislabeled)
    assert rb.convert.model_family(load_config(NOMIC / "nomic")) == "nomic_bert"


def _long_context_copy(tmp_path: Path, name: str) -> Path:
    """The tiny model with nomic-embed-text's 8,192-token context (rotary: no table to grow)."""
    out = with_config(tmp_path, name, n_positions=8192)
    tok_config = json.loads((out / "tokenizer_config.json").read_text(encoding="utf-8"))
    tok_config["model_max_length"] = 8192
    (out / "tokenizer_config.json").write_text(json.dumps(tok_config), encoding="utf-8")
    return out


@pytest.mark.parametrize("name", FAMILIES)
def test_texts_of_thousands_of_tokens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """Documents of 1,500-3,000 tokens: a token budget smaller than one text (it goes alone),
    the default budget (two per call), batch sizes and the store all give the scores of each
    pair scored alone; every text is scored whole (no truncation below 8,192)."""
    model_dir = str(_long_context_copy(tmp_path, name))
    words = " ".join(CASES[0]["cands"] + CASES[0]["refs"]).split()
    rng = np.random.default_rng(51)
    docs = [" ".join(rng.choice(words, size=n)) for n in (1500, 2200, 1800, 2600)]
    cands, refs = docs[:2], docs[2:]
    tok = TextTokenizer(model_dir, load_config(model_dir))
    lengths = [len(ids) for ids in tok.encode(docs)]
    assert min(lengths) > 1500 and max(lengths) < 8192
    alone = np.array(
        [
            [v[0] for v in rb.score([c], [r], model_type=model_dir, num_layers=3)]
            for c, r in zip(cands, refs)
        ]
    ).T
    got = rb.score(cands, refs, model_type=model_dir, num_layers=3, batch_size=64)
    np.testing.assert_allclose(np.array(got), alone, atol=1e-5)
    monkeypatch.setenv("RUST_BERTSCORE_MAX_TOKENS", "1000")
    small = rb.score(
        cands, refs, model_type=model_dir, num_layers=3, batch_size=1, store=tmp_path / "store"
    )
    np.testing.assert_allclose(np.array(small), alone, atol=1e-5)
    again = rb.score(cands, refs, model_type=model_dir, num_layers=3, store=tmp_path / "store")
    np.testing.assert_allclose(np.array(again), alone, atol=1e-5)


@pytest.mark.parametrize("name", FAMILIES)
def test_fp16_keeps_the_rotary_angles_in_float32(name: str) -> None:
    """precision="fp16": scores finite and near fp32, and nothing on the rotary path (positions,
    frequencies, angles, cos/sin) is rounded to float16 (angles of thousands of positions would
    be noise)."""
    from rust_bertscore.convert.fp16 import to_fp16

    graph = to_fp16(build_model(NOMIC / name, 3))
    half = {t.name for t in graph.graph.initializer if t.data_type == onnx.TensorProto.FLOAT16}
    assert half and not any(n.startswith("rope/") for n in half)
    casts = [n for n in graph.graph.node if n.op_type == "Cast" and n.input[0].startswith("rope/")]
    assert not any(a.i == onnx.TensorProto.FLOAT16 for n in casts for a in n.attribute)
    case = CASES[0]
    model_type = str(NOMIC / name)
    f16 = rb.score(
        case["cands"][:12], case["refs"][:12], model_type=model_type, num_layers=3, precision="fp16"
    )
    f32 = rb.score(case["cands"][:12], case["refs"][:12], model_type=model_type, num_layers=3)
    assert np.isfinite(f16[2]).all() and float(np.abs(f16[2] - f32[2]).max()) < 0.01
