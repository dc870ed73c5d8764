"""Texts past 128, 256 and 512 tokens, on checkpoints whose tokenizer declares no
``model_max_length`` (issue 59): transformers 4.57 then gives ``int(1e30)`` and bert_score
encodes the whole text; ProphetNet and XLM-ProphetNet were truncated here at their position
table (128 and 256 tokens: F 0.6859 against bert_score's 0.7392 on a 451-token text). Their
model clamps position ids to the table's last row, so any length runs.

References: ``data/length_refs.json``, made by ``data/make_length_refs.py`` with transformers
4.57.6 (bert_score 0.3.13's ``sent_encode`` call)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from conftest import DATA, MORE
from rust_bertscore import BERTScorer

REFS = json.loads((DATA / "length_refs.json").read_text())


@pytest.mark.parametrize("key", sorted(REFS["families"]))
def test_the_whole_text_is_encoded_as_bert_score_encodes_it(key: str) -> None:
    family, kind = key.split("/")
    scorer = BERTScorer(
        model_type=str(MORE / family), num_layers=1, use_fast_tokenizer=kind == "fast"
    )
    expected = REFS["families"][key]["ids"]
    assert max(len(ids) for ids in expected) > 512
    assert scorer.tokenizer.max_length is None
    got = scorer.pipeline.tokens.tokenize(REFS["texts"]).ids
    assert [list(map(int, ids)) for ids in got] == expected


def test_a_long_prophetnet_text_is_scored_whole() -> None:
    scorer = BERTScorer(model_type=str(MORE / "prophetnet"), num_layers=1)
    text = REFS["texts"][-1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no truncation warning
        _, _, F = scorer.score([text], [REFS["texts"][0]])
    assert np.isfinite(F).all()


@pytest.mark.parametrize("family", ["modernbert", "qwen3", "gemma3"])
def test_a_rotary_model_runs_past_max_position_embeddings(family: str, tmp_path) -> None:
    """transformers computes ModernBERT's, Qwen3's and Gemma3's rotary angles from the position
    ids, whatever ``max_position_embeddings`` says, and bert_score truncates at the tokenizer's
    ``model_max_length`` only: a checkpoint declaring 16 positions scores a 150-word text whole,
    with the vectors of the same checkpoint declaring its usual table (F 0.088 apart when it was
    cut at 16 tokens)."""
    import shutil

    from conftest import TINY

    changed = tmp_path / family
    shutil.copytree(TINY / family, changed)
    config = json.loads((changed / "config.json").read_text())
    config["max_position_embeddings"] = 16
    (changed / "config.json").write_text(json.dumps(config))
    long_text, other = REFS["texts"][0], "the committee said again"
    whole = BERTScorer(model_type=str(TINY / family), num_layers=2)
    short = BERTScorer(model_type=str(changed), num_layers=2)
    ids = short.pipeline.encode_ids([long_text])[0]
    assert len(ids) > 128 and ids == whole.pipeline.encode_ids([long_text])[0]
    got = short.pipeline.text_vectors([long_text], [ids], 8)[0]
    want = whole.pipeline.text_vectors([long_text], [ids], 8)[0]
    assert got.shape == want.shape and np.abs(got - want).max() < 1e-5
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no truncation warning
        scores = short.score([long_text], [other])
    assert np.allclose(scores, whole.score([long_text], [other]), atol=1e-6)
