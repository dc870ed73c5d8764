"""XLNet and XLM (bert_score's xlnet-base/large-cased and xlm-mlm-en-2048 / xlm-mlm-100-1280):
the graphs against PyTorch's hidden states, the slow tokenizers' ids, and bert_score 0.3.13's
scores (tests/data/reference/tiny/{xlnet,xlm} and tiny/cases3.json, from the reference set;
ids.json made by make_xlnet_xlm_ids.py with transformers 4.57.6's slow tokenizers)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import rust_bertscore as rb
from conftest import TINY, assert_scores_match, load_cases
from encoder_reference import (
    copy_checkpoint,
    edit_config,
    int8_runs,
    load_reference,
    outputs,
    pad_id,
    padding_invariance,
    resave,
    run_one,
    same_hidden_states,
    session,
    worst,
)
from rust_bertscore.convert import (
    CheckpointError,
    build_model,
    export_onnx,
    int8_fp32_nodes,
    load_config,
    max_positions,
    model_depth,
    model_family,
)
from rust_bertscore.stages.tokenization import TextTokenizer

FAMILIES = ("xlnet", "xlm")
TOL = 1e-4  # seen: 5.2e-5 (XLNet), 4.9e-5 (XLM), layer 3 of random-weight states of magnitude ~4
CASES = [c for c in load_cases(TINY / "cases3.json") if c["model_dir"] in FAMILIES]


def _tokenizer(family: str) -> TextTokenizer:
    return TextTokenizer(TINY / family, load_config(TINY / family))


# ---- graphs against PyTorch ----


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("layer", range(4))
@pytest.mark.parametrize("family", FAMILIES)
def test_truncated_graph_matches_pytorch(
    family: str, layer: int, fused: bool, tmp_path: Path
) -> None:
    refs = load_reference(family)
    sess = session(export_onnx(TINY / family, tmp_path / "enc.onnx", layer, fused=fused))
    alone, batched = outputs(sess, [ids for ids, _ in refs], pad=pad_id(TINY / family))
    want = [hidden[layer] for _, hidden in refs]
    assert worst(alone, want) <= TOL
    assert worst(batched, want) <= TOL


@pytest.mark.parametrize("family", FAMILIES)
def test_all_layers_match_pytorch(family: str, tmp_path: Path) -> None:
    refs = load_reference(family)
    path = export_onnx(TINY / family, tmp_path / "all.onnx", None, all_layers=True, fused=True)
    alone, batched = outputs(session(path), [ids for ids, _ in refs], pad=pad_id(TINY / family))
    assert alone[0].shape[0] == 4
    want = [hidden for _, hidden in refs]
    assert worst(alone, want) <= TOL and worst(batched, want) <= TOL


def test_xlnet_embeddings_are_the_word_table() -> None:
    """Hidden state 0 is the word embedding alone (no positions, no LayerNorm)."""
    from safetensors.numpy import load_file

    table = load_file(str(TINY / "xlnet" / "model.safetensors"))["word_embedding.weight"]
    for ids, hidden in load_reference("xlnet"):
        np.testing.assert_array_equal(hidden[0], table[ids])


@pytest.mark.parametrize("family", FAMILIES)
def test_real_tokens_ignore_padding(family: str, tmp_path: Path) -> None:
    """Random ids in padded columns change no real token's state (every layer), whatever the
    length of the other row: XLNet's relative positions follow the padded width."""
    vocab = int(load_config(TINY / family)["vocab_size"])
    for fused in (False, True):
        sess = session(
            export_onnx(TINY / family, tmp_path / f"a{fused}.onnx", None, all_layers=True)
        )
        assert padding_invariance(sess, family, vocab) <= 1e-4, fused


def test_xlm_zeroes_padded_positions(tmp_path: Path) -> None:
    """``tensor *= mask.unsqueeze(-1)`` after the embeddings and after every layer."""
    sess = session(export_onnx(TINY / "xlm", tmp_path / "a.onnx", None, all_layers=True))
    ids = load_reference("xlm")[0][0]
    padded = np.concatenate([ids, [2, 2, 2]])[None]
    mask = (np.arange(padded.shape[1]) < len(ids)).astype(np.int64)[None]
    out = sess.run(None, {"input_ids": padded, "attention_mask": mask})[0]
    assert np.all(out[:, 0, len(ids) :] == 0)
    assert np.all(np.abs(out[:, 0, : len(ids)]).max(axis=-1) > 0)


def test_xlnet_positions_are_relative(tmp_path: Path) -> None:
    """The position term matters (zeroing W_r changes the states) and XLNet takes any length:
    a text past every position table runs."""
    model_dir = copy_checkpoint("xlnet", tmp_path / "x")
    from safetensors.numpy import load_file, save_file

    weights = load_file(str(model_dir / "model.safetensors"))
    for i in range(3):
        weights[f"layer.{i}.rel_attn.r"] = np.zeros_like(weights[f"layer.{i}.rel_attn.r"])
    save_file(weights, str(model_dir / "model.safetensors"))
    assert same_hidden_states(model_dir, "xlnet", tmp_path) > 0.1
    sess = session(export_onnx(TINY / "xlnet", tmp_path / "long.onnx", 3))
    ids = np.tile(load_reference("xlnet")[2][0], 9)  # ~1,000 tokens
    assert np.isfinite(run_one(sess, ids)).all()


@pytest.mark.parametrize("family", FAMILIES)
def test_masked_lm_layout(family: str, tmp_path: Path) -> None:
    """``transformer.``-prefixed keys (XLNetLMHeadModel, XLMWithLMHeadModel, as on the Hub) with
    the LM head (NaN, never read), in two shards."""
    nan = np.full((4,), np.nan, np.float32)
    head = {"lm_loss.bias": nan} if family == "xlnet" else {"pred_layer.proj.bias": nan}
    model_dir = resave(
        TINY / family, tmp_path / "hub", lambda k: f"transformer.{k}", head, shards=2
    )
    assert same_hidden_states(model_dir, family, tmp_path) <= 1e-6


def test_configuration_facts() -> None:
    for family in FAMILIES:
        config = load_config(TINY / family)
        assert model_family(config) == family and model_depth(config) == 3
    assert max_positions(load_config(TINY / "xlnet")) is None  # relative positions only
    assert max_positions(load_config(TINY / "xlm")) == 128


@pytest.mark.parametrize(
    ("family", "changes", "message"),
    [
        ("xlnet", {"attn_type": "uni"}, "attn_type"),
        ("xlnet", {"bi_data": True}, "bi_data"),
        ("xlnet", {"d_head": 8}, "d_head"),
        ("xlm", {"causal": True}, "causal"),
        ("xlm", {"is_encoder": False}, "is_encoder"),
    ],
)
def test_unsupported_options_are_refused(
    family: str, changes: dict, message: str, tmp_path: Path
) -> None:
    model_dir = copy_checkpoint(family, tmp_path / "m")
    edit_config(model_dir, **changes)
    with pytest.raises(CheckpointError, match=message):
        build_model(model_dir, 1)


def test_xlm_sinusoidal_table_when_missing(tmp_path: Path) -> None:
    """``sinusoidal_embeddings`` with no stored table: XLM's create_sinusoidal_embeddings, which
    puts sin(pos / 10000^(2i/d)) in column 2i and cos in column 2i + 1."""
    from rust_bertscore.convert.families.xlm import sinusoidal_table

    table = sinusoidal_table(50, 8)
    pos, i = 7, 3
    assert table[pos, 2 * i] == pytest.approx(np.sin(pos / 10000 ** (2 * i / 8)), abs=1e-7)
    assert table[pos, 2 * i + 1] == pytest.approx(np.cos(pos / 10000 ** (2 * i / 8)), abs=1e-7)
    model_dir = resave(
        TINY / "xlm", tmp_path / "m", lambda k: None if k.startswith("position_") else k
    )
    with pytest.raises(CheckpointError, match="position_embeddings"):
        build_model(model_dir, 1)
    edit_config(model_dir, sinusoidal_embeddings=True)
    assert build_model(model_dir, 1) is not None


# ---- tokenizers ----


@pytest.mark.parametrize("family", FAMILIES)
def test_slow_tokenizer_ids(family: str) -> None:
    data = json.loads((TINY / family / "ids.json").read_text(encoding="utf-8"))
    tok = _tokenizer(family)
    assert tok.tokenizer_class.name == data["tokenizer_class"]
    assert tok.encode(data["texts"]) == data["ids"]


@pytest.mark.parametrize("family", FAMILIES)
def test_hidden_state_ids_are_the_tokenizers(family: str) -> None:
    """The ids the reference hidden states were computed on: the cases' first three
    candidates and the empty text."""
    cands = CASES[0 if family == "xlnet" else 3]["cands"]
    want = [ids.tolist() for ids, _ in load_reference(family)]
    assert _tokenizer(family).encode([*cands[:3], ""]) == want


def test_xlnet_frame_and_weights() -> None:
    """``X <sep> <cls>``: the special tokens at the end, both weigh 0."""
    tok = _tokenizer("xlnet")
    sep, cls = tok.token_to_id("<sep>"), tok.token_to_id("<cls>")
    assert tok.empty_ids == [sep, cls] and tok.special_ids == frozenset({sep, cls})
    assert tok.encode(["hello"])[0][-2:] == [sep, cls]


def test_xlm_frame_and_weights() -> None:
    """``<s> X </s>``; cls_token is ``</s>``, so only ``</s>`` weighs 0."""
    tok = _tokenizer("xlm")
    bos, eos = tok.token_to_id("<s>"), tok.token_to_id("</s>")
    assert tok.empty_ids == [bos, eos] and tok.special_ids == frozenset({eos})
    assert tok.cls_id == tok.sep_id == eos


@pytest.mark.parametrize("family", FAMILIES)
def test_class_defaults_without_tokenizer_config(family: str, tmp_path: Path) -> None:
    """A checkpoint with no tokenizer_config.json / special_tokens_map.json (as some Hub repos)
    gets the class's own special tokens: the same ids (bar truncation, which the tiny
    tokenizer_config.json sets)."""
    model_dir = copy_checkpoint(family, tmp_path / "m")
    (model_dir / "tokenizer_config.json").unlink()
    (model_dir / "special_tokens_map.json").unlink()
    tok = TextTokenizer(model_dir, load_config(model_dir))
    data = json.loads((TINY / family / "ids.json").read_text(encoding="utf-8"))
    short = [(t, ids) for t, ids in zip(data["texts"], data["ids"]) if len(ids) < 128]
    assert tok.encode([t for t, _ in short]) == [ids for _, ids in short]
    assert tok.special_ids == _tokenizer(family).special_ids
    assert tok.max_length == (None if family == "xlnet" else 128)


def test_xlm_needs_sacremoses(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "sacremoses", None)
    with pytest.raises(ImportError, match="pip install sacremoses"):
        _tokenizer("xlm")


def test_xlm_moses_steps() -> None:
    """Moses splits punctuation and clitics; XLM's table maps full-width punctuation to ASCII,
    then lowercases and drops accents."""
    from rust_bertscore.stages.tokenization.moses_bpe import XLMIds, replace_unicode_punct

    assert replace_unicode_punct("a，b。 c（１）…") == "a,b. c(1)..."
    words = XLMIds(TINY / "xlm", {}, {}).words("Café, DÉJÀ-vu don't")
    assert words == ["cafe", ",", "deja-vu", "don", "'t"]
    cased = XLMIds(TINY / "xlm", {}, {"do_lowercase_and_remove_accent": False})
    assert cased.words("Café, DÉJÀ-vu") == ["Café", ",", "DÉJÀ-vu"]


# ---- bert_score's scores ----


def test_every_case_is_here() -> None:
    assert sorted(c["model_dir"] for c in CASES) == ["xlm"] * 3 + ["xlnet"] * 3


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case(case: dict) -> None:
    model = str(TINY / case["model_dir"])
    got = rb.score(case["cands"], case["refs"], model_type=model, **case["kwargs"])
    assert_scores_match(got, case["expected"], 1e-5)


@pytest.mark.parametrize("family", FAMILIES)
def test_empty_texts(family: str) -> None:
    """An empty side scores P = R = 0 as bert_score (XLM's ``<s>`` weighs 1, so F is not 0;
    the cases hold bert_score's value)."""
    case = next(c for c in CASES if c["model_dir"] == family and c["kwargs"]["num_layers"] == 2)
    empty = [i for i, (c, r) in enumerate(zip(case["cands"], case["refs"])) if not c or not r]
    assert empty
    P, R, _ = rb.score(
        [case["cands"][i] for i in empty],
        [case["refs"][i] for i in empty],
        model_type=str(TINY / family),
        num_layers=2,
    )
    assert np.all(P == 0) and np.all(R == 0)


@pytest.mark.parametrize("family", FAMILIES)
def test_int8_runs_and_stays_close(family: str, tmp_path: Path) -> None:
    """The per-token int8 pass rewrites these graphs' projections; the int8 scores stay within
    0.03 of fp32 (seen: mean |dF| 0.003, max 0.011 on the cases' pairs)."""
    assert np.isfinite(int8_runs(family, tmp_path)).all()
    case = next(c for c in CASES if c["model_dir"] == family)
    model = str(TINY / family)
    fp32 = rb.score(case["cands"], case["refs"], model_type=model, num_layers=2)[2]
    int8 = rb.score(
        case["cands"],
        case["refs"],
        model_type=model,
        num_layers=2,
        precision="int8",
        runtime="onnxruntime",
    )
    assert float(np.max(np.abs(int8[2] - fp32))) <= 0.03


def test_int8_fp32_nodes() -> None:
    assert int8_fp32_nodes(build_model(TINY / "xlnet", 3)) == [
        "layer.0.ff.layer_2/MatMul",
        "layer.1.ff.layer_2/MatMul",
    ]
    assert int8_fp32_nodes(build_model(TINY / "xlm", 3, fused=True)) == [
        "ffns.0.lin2/MatMul",
        "ffns.1.lin2/MatMul",
    ]


@pytest.mark.parametrize("family", FAMILIES)
def test_align_equals_score(family: str) -> None:
    cand, ref = "Café naïve déjà vu", "the cafe was naive"
    scorer = rb.BERTScorer(model_type=str(TINY / family), num_layers=2)
    a = scorer.align(cand, ref)
    P, R, F = rb.score([cand], [ref], model_type=str(TINY / family), num_layers=2)
    np.testing.assert_array_equal(np.float32([a.P, a.R, a.F]), [P[0], R[0], F[0]])
    tokens = [t.token for t in a.candidate.tokens]
    # markers dropped (a bare "▁" piece, which is all marker, shows as itself)
    assert all(tokens) and not any(t.endswith("</w>") for t in tokens)
    assert not any(t.startswith("▁") and t != "▁" for t in tokens)
    weights = [t.weight for t in a.candidate.tokens]
    if family == "xlnet":  # <sep> <cls> at the end weigh 0
        assert weights[-2:] == [0.0, 0.0] and min(weights[:-2]) > 0
    else:  # <s> weighs as a word, </s> 0
        assert weights[-1] == 0.0 and min(weights[:-1]) > 0


def test_listing_marks_the_four_table_models_convertible() -> None:
    models = {m.name: m for m in rb.supported_models()}
    for name in ("xlnet-base-cased", "xlnet-large-cased", "xlm-mlm-en-2048", "xlm-mlm-100-1280"):
        assert models[name].convertible, name
        assert models[name].model_type == name.split("-")[0]
