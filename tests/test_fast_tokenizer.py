"""``use_fast_tokenizer=True`` against bert_score 0.3.13's fast path on every tiny family.

``tests/data/fast_tokenizer_refs.json`` (the reference set's tiny families) and
``fast_tokenizer_refs_more.json`` (the further families of ``reference/more_families``), made
by ``tests/data/make_fast_refs.py`` with transformers 4.57.6: bert_score's ``sent_encode`` ids
with the tokenizer ``AutoTokenizer.from_pretrained(dir, use_fast=True)`` gives, and
``bert_score.score(..., use_fast_tokenizer=True)`` on the pairs, layers and options of the
slow-path cases. Where transformers converts a SentencePiece model to a fast tokenizer (T5,
mT5, mBART, mBART-50, XLNet, DeBERTa-v3, Pegasus, BigBird) the ids are not always the slow
tokenizer's; where it has no fast class (ByT5, XLM, Bertweet, ProphetNet, XLM-ProphetNet)
bert_score's fast path is its slow one. Where bert_score's fast tokenizer fails (on a text: the
tiny MPNet's WordPiece has no ``[UNK]`` in its vocabulary; on loading: BlenderbotSmall), the
reference records the error and this package must raise a clear one.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import rust_bertscore as rb
from conftest import DATA, MORE, TINY, assert_scores_match, load_cases
from rust_bertscore.catalog.configs import load_config
from rust_bertscore.stages.tokenization import TextTokenizer

TOLERANCE = 1e-5


def _load(refs_file: str, root: Path, pair_files: tuple[str, ...]) -> tuple[dict, dict]:
    refs = json.loads((DATA / refs_file).read_text(encoding="utf-8"))
    pairs = {c["name"]: c for name in pair_files for c in load_cases(root / name)}
    return refs, pairs


REFS, PAIRS = _load(
    "fast_tokenizer_refs.json", TINY, ("cases.json", "cases2.json", "cases3.json", "cases4.json")
)
MORE_REFS, MORE_PAIRS = _load("fast_tokenizer_refs_more.json", MORE, ("cases.json",))
FAMILIES: dict[str, dict] = REFS["families"]
"""The reference set's tiny families (``reference/tiny``)."""
ALL: dict[tuple[Path, str], tuple[dict, list[str]]] = {
    **{(TINY, f): (v, REFS["texts"]) for f, v in REFS["families"].items()},
    **{(MORE, f): (v, MORE_REFS["texts"]) for f, v in MORE_REFS["families"].items()},
}
"""Every family with bert_score's fast-path ids: the tiny ones and the further families that
``reference/make_more_families.py`` made (``reference/more_families``)."""
CASES = [(TINY, c, PAIRS[c["name"]]) for fam in FAMILIES.values() for c in fam["cases"]] + [
    (MORE, c, MORE_PAIRS[c["name"]]) for fam in MORE_REFS["families"].values() for c in fam["cases"]
]
TEXTS: list[str] = REFS["texts"]

CONVERTED = ("t5", "mt5", "mbart", "mbart-50", "xlnet", "deberta-v3")
"""Families without tokenizer.json: transformers builds their fast tokenizer from the
SentencePiece model."""


def test_the_reference_covers_every_tiny_family() -> None:
    on_disk = {p.name for p in TINY.iterdir() if (p / "config.json").is_file()}
    assert set(FAMILIES) == on_disk
    assert REFS["meta"]["transformers"] == "4.57.6"
    assert {f: FAMILIES[f]["tokenizer_class"] for f in ("byt5", "xlm")} == {
        "byt5": "ByT5Tokenizer",
        "xlm": "XLMTokenizer",
    }


@pytest.mark.parametrize("key", sorted(ALL), ids=[f for _, f in sorted(ALL)])
def test_ids_are_bert_scores_fast_ids(key: tuple[Path, str]) -> None:
    root, family = key
    ref, texts = ALL[key]
    if "tokenizer_error" in ref:  # bert_score's fast tokenizer does not load: a clear error
        with pytest.raises(rb.InputValueError, match="use_fast_tokenizer"):
            TextTokenizer(root / family, load_config(root / family), fast=True)
        return
    tokenizer = TextTokenizer(root / family, load_config(root / family), fast=True)
    for index, want in zip(ref["texts"], ref["ids"]):
        text = texts[index]
        if isinstance(want, dict):  # bert_score's fast path fails on this text: so does ours
            with pytest.raises(rb.InputValueError, match=r"cannot encode text 0|OverflowError"):
                tokenizer.encode([text])
            if "plain_ids" in want:  # the fast tokenizer's ids without bert_score's truncation
                content = tokenizer.encode_content([text])[0]
                assert tokenizer.build(content, truncate=False) == want["plain_ids"], text[:60]
            continue
        if tokenizer.max_length is not None and len(want) > tokenizer.max_length:
            # a slow tokenizer without model_max_length (Bertweet): bert_score does
            # not truncate, while this package truncates to the model's position table
            # (TextTokenizer.max_length): the untruncated ids are bert_score's
            content = tokenizer.encode_content([text])[0]
            assert tokenizer.build(content, truncate=False) == want, text[:60]
            continue
        assert tokenizer.encode([text]) == [want], text[:60]


@pytest.mark.parametrize("family", [f for f in CONVERTED if f != "deberta-v3"])
def test_converted_ids_are_not_the_slow_ones(family: str) -> None:
    """The converted tokenizer is not the slow one in disguise: some reference text gets other
    ids from bert_score's slow path (the tiny models' README says so), and ours follow.
    (DeBERTa-v3's converted tokenizer gives its slow ids on every reference text.)"""
    ref = FAMILIES[family]
    slow = TextTokenizer(TINY / family, load_config(TINY / family))
    texts = [TEXTS[i] for i in ref["texts"]]
    differ = [t for t, want in zip(texts, ref["ids"]) if slow.encode([t]) != [want]]
    assert differ, f"{family}: bert_score's fast ids equal its slow ids on every text"


@pytest.mark.parametrize("family", ["albert", "deberta-v2"])
def test_sentencepiece_conversion_matches_the_shipped_tokenizer_json(
    family: str, tmp_path: Path
) -> None:
    """ALBERT's and DeBERTa-v2's tiny checkpoints ship the tokenizer.json transformers
    converted: without it, the tokenizer built here from the SentencePiece model gives the
    same ids as bert_score's fast path."""
    copy = tmp_path / family
    shutil.copytree(TINY / family, copy, ignore=shutil.ignore_patterns("*.safetensors", "*.npz"))
    (copy / "tokenizer.json").unlink()
    tokenizer = TextTokenizer(copy, load_config(copy), fast=True)
    ref = FAMILIES[family]
    for index, want in zip(ref["texts"], ref["ids"]):
        assert tokenizer.encode([TEXTS[index]]) == [want], TEXTS[index][:60]


@pytest.mark.parametrize("entry", CASES, ids=[c["name"] for _, c, _ in CASES])
def test_scores_are_bert_scores_fast_path(entry: tuple[Path, dict, dict]) -> None:
    root, case, pairs = entry
    assert pairs["kwargs"] == case["kwargs"]
    model_dir = str(root / case["model_dir"])
    args = (pairs["cands"], pairs["refs"])
    if "bert_score_error" in case and "bert_score_error" in pairs:
        # bert_score fails on its slow path too (SqueezeBERT's encoder.layers): not the
        # tokenizer's doing; test_parity_more_families.py covers what this package gives
        assert case["bert_score_error"] == pairs["bert_score_error"]
        return
    if "bert_score_error" in case:  # bert_score's fast path fails: ours says why
        with pytest.raises(rb.RustBertScoreError, match="use_fast_tokenizer"):
            rb.score(*args, model_type=model_dir, use_fast_tokenizer=True, **case["kwargs"])
        return
    got = rb.score(*args, model_type=model_dir, use_fast_tokenizer=True, **case["kwargs"])
    assert_scores_match(got, case["expected"], TOLERANCE)
