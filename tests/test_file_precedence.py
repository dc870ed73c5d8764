"""Where a checkpoint's tokenizer files disagree, the files transformers 4.57 reads decide
(issue 59): ``special_tokens_map.json`` and ``added_tokens.json`` only without
``added_tokens_decoder`` in ``tokenizer_config.json`` (the legacy layout, where the map then
overrides the config's names). This package took the map first whatever the layout (F 0.8159
against bert_score's 0.8373).

References: ``data/precedence_refs.json``, made by ``data/make_precedence_refs.py`` with
transformers 4.57.6 (bert_score 0.3.13's ``sent_encode`` call), slow and fast."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conftest import DATA
from rust_bertscore.stages.tokenization.tokenizer import TextTokenizer

sys.path.insert(0, str(DATA))
from precedence_cases import make_case  # the references' own copies

REFS = json.loads((DATA / "precedence_refs.json").read_text())
CASES = [
    pytest.param(name, kind, id=f"{name}-{kind}")
    for name in sorted(REFS["cases"])
    for kind in ("slow", "fast")
]


@pytest.mark.parametrize(("name", "kind"), CASES)
def test_the_files_transformers_reads_decide(name: str, kind: str, tmp_path: Path) -> None:
    case = REFS["cases"][name]
    folder = make_case(tmp_path, case["family"], case["edits"], case["drop"])
    config = json.loads((folder / "config.json").read_text())
    tokenizer = TextTokenizer(folder, config, fast=kind == "fast")
    assert tokenizer.encode(REFS["texts"]) == case["ids"][kind]


def _with_rows(tmp_path: Path, rows: int, token_id: int = 1507) -> Path:
    """The bert case with an added token saved at ``token_id`` (1507: past vocab.txt's 1,500
    lines), on a model whose embedding table has ``rows`` rows (extra rows random)."""
    import numpy as np
    from safetensors.numpy import load_file, save_file

    from conftest import TINY

    case = REFS["cases"]["bert/added-past-vocabulary"]
    edits = json.loads(json.dumps(case["edits"]))
    decoder = edits["tokenizer_config.json"]["added_tokens_decoder"]
    decoder[str(token_id)] = decoder.pop("1507")
    folder = make_case(tmp_path, case["family"], edits, case["drop"])
    weights = load_file(str(TINY / "bert" / "model.safetensors"))
    key = next(k for k in weights if "word_embeddings" in k)
    table = weights[key]
    extra = np.random.default_rng(0).standard_normal((rows - len(table), table.shape[1]))
    weights[key] = np.concatenate([table, 0.02 * extra.astype(np.float32)])[:rows]
    save_file(weights, str(folder / "model.safetensors"))
    config = json.loads((folder / "config.json").read_text())
    config["vocab_size"] = rows
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_an_added_token_past_the_vocabulary_is_scored(tmp_path: Path) -> None:
    """A model whose table (1,512 rows) is larger than its vocabulary: the slow path gives the
    saved id 1507 and scores it with that row, where ONNX Runtime failed on the batch."""
    import numpy as np

    from rust_bertscore import BERTScorer

    scorer = BERTScorer(model_type=str(_with_rows(tmp_path, 1512)), num_layers=2)
    text = REFS["texts"][1]
    assert 1507 in scorer.pipeline.encode_ids([text])[0]
    assert np.isfinite(np.asarray(scorer.score([text], ["a new token here"]))).all()


def test_an_added_token_past_the_table_is_refused_in_its_text(tmp_path: Path) -> None:
    """1,504 rows: the model has no row 1507 (bert_score's fails too); texts without the token
    score, the one with it is refused naming the text, the token and the table."""
    from rust_bertscore import BERTScorer
    from rust_bertscore.errors import InputValueError

    scorer = BERTScorer(model_type=str(_with_rows(tmp_path, 1504)), num_layers=2)
    scorer.score(["the cat sat"], ["a cat sat"])
    with pytest.raises(InputValueError, match=r"text 1 .*'<extra>' \(id 1507\).*1504 rows"):
        scorer.score(["the cat sat", REFS["texts"][1]], ["a cat sat", "a cat"])


def test_a_saved_id_of_billions_costs_no_memory(tmp_path: Path) -> None:
    """An added token saved at id 4,000,000,000: tables by token id (IDF, weights) stop at the
    model's 1,512 rows instead of 4e9 entries (the process was killed for memory); the text
    with the token is refused, the others score."""
    from rust_bertscore import BERTScorer
    from rust_bertscore.errors import InputValueError

    folder = _with_rows(tmp_path, 1512, token_id=4_000_000_000)
    scorer = BERTScorer(model_type=str(folder), num_layers=2, idf=True, idf_sents=["a b", "c"])
    assert scorer.tokenizer.vocab_size == 1512
    scorer.score(["the cat sat"], ["a cat sat"])
    with pytest.raises(InputValueError, match=r"id 4000000000\), past the 1512 rows"):
        scorer.score([REFS["texts"][1]], ["a cat"])
