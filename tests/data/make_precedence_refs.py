"""Make ``precedence_refs.json``: the token ids transformers 4.57.6 gives (bert_score 0.3.13's
``sent_encode`` call, slow and fast tokenizers) where a checkpoint's files disagree (issue 59):
``special_tokens_map.json`` against ``tokenizer_config.json`` with and without
``added_tokens_decoder``, and ``added_tokens.json`` beside it. Each case is a copy of a tiny
checkpoint with the edits listed in the JSON (the test makes the same copy).

Run in a venv with transformers 4.57 (no torch needed), from the repository root:
``python tests/data/make_precedence_refs.py``.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import transformers
from make_length_refs import sent_encode
from precedence_cases import TINY, make_case
from transformers import AutoTokenizer

HERE = Path(__file__).resolve().parent
TEXTS = [
    "the cat sat on the mat",
    "A new <extra> token, and [MASK] here.",
    "",
    "An <EXTRA> [mask] The CAT",
]


def template(single: list[str], ids: dict[str, int]) -> dict:
    """A ``TemplateProcessing`` post-processor framing one text (``$A``) with ``single``'s
    special tokens (of ``ids``)."""
    return {
        "type": "TemplateProcessing",
        "single": [
            {"Sequence": {"id": "A", "type_id": 0}}
            if piece == "$A"
            else {"SpecialToken": {"id": piece, "type_id": 0}}
            for piece in single
        ],
        "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {t: {"id": t, "ids": [i], "tokens": [t]} for t, i in ids.items()},
    }


def with_added(family: str, content: str, token_id: int, special: bool = False) -> dict:
    """The tiny ``family``'s ``added_tokens_decoder`` with ``content`` added at ``token_id``."""
    config = json.loads((TINY / family / "tokenizer_config.json").read_text())
    decoder = dict(config["added_tokens_decoder"])
    decoder[str(token_id)] = {
        "content": content,
        "lstrip": False,
        "normalized": False,
        "rstrip": False,
        "single_word": False,
        "special": special,
    }
    return decoder


CASES = {
    # special_tokens_map.json names another SEP; tokenizer_config.json has added_tokens_decoder
    "bert/map-sep-with-decoder": ["bert", {"special_tokens_map.json": {"sep_token": "[MASK]"}}, []],
    # the same without added_tokens_decoder: the legacy layout, where the map overrides
    "bert/map-sep-legacy": [
        "bert",
        {"special_tokens_map.json": {"sep_token": "[MASK]"}},
        ["added_tokens_decoder"],
    ],
    "roberta/map-cls-with-decoder": [
        "roberta",
        {"special_tokens_map.json": {"cls_token": "</s>"}},
        [],
    ],
    "roberta/map-cls-legacy": [
        "roberta",
        {"special_tokens_map.json": {"cls_token": "</s>"}},
        ["added_tokens_decoder"],
    ],
    # the fast classes of RoBERTa, BART and MPNet frame an empty text with bos and eos
    "bart/map-cls-legacy": [
        "bart",
        {"special_tokens_map.json": {"cls_token": "</s>"}},
        ["added_tokens_decoder"],
    ],
    "mpnet/map-cls-legacy": [
        "mpnet",
        {"special_tokens_map.json": {"cls_token": "</s>"}},
        ["added_tokens_decoder"],
    ],
    # added_tokens.json beside added_tokens_decoder: not read; without it: read
    # (config.json's vocab_size: an embedding table with rows for the added ids, as a model
    # resized for them has; the tokenizer refuses a text with an id past the table)
    "bert/added-json-with-decoder": ["bert", {"added_tokens.json": {"<extra>": 1500}}, []],
    "bert/added-json-legacy": [
        "bert",
        {"added_tokens.json": {"<extra>": 1500}, "config.json": {"vocab_size": 1512}},
        ["added_tokens_decoder"],
    ],
    # an added token saved with an id past the vocabulary (1,500 lines of vocab.txt): the slow
    # class keeps the saved id, a fast one converted from vocab.txt appends it (1500), a fast
    # one from tokenizer.json too
    "bert/added-past-vocabulary": [
        "bert",
        {
            "tokenizer_config.json": {"added_tokens_decoder": with_added("bert", "<extra>", 1507)},
            "config.json": {"vocab_size": 1512},
        },
        [],
    ],
    "bert/added-past-vocabulary-no-json": [
        "bert",
        {
            "tokenizer_config.json": {"added_tokens_decoder": with_added("bert", "<extra>", 1507)},
            "tokenizer.json": None,
            "config.json": {"vocab_size": 1512},
        },
        [],
    ],
    # the same past a SentencePiece model's pieces: the slow classes keep the saved id (this
    # package gave the unknown piece's id, silently), the fast conversion appends (1000)
    "t5/added-past-pieces": [
        "t5",
        {
            "tokenizer_config.json": {"added_tokens_decoder": with_added("t5", "<extra>", 1002)},
            "config.json": {"vocab_size": 1010},
        },
        [],
    ],
    "deberta-v3/added-past-pieces": [
        "deberta-v3",
        {
            "tokenizer_config.json": {
                "added_tokens_decoder": with_added("deberta-v3", "<extra>", 1002)
            },
            "config.json": {"vocab_size": 1010},
        },
        [],
    ],
    "albert/added-past-pieces": [
        "albert",
        {
            "tokenizer_config.json": {
                "added_tokens_decoder": with_added("albert", "<extra>", 1002)
            },
            "config.json": {"vocab_size": 1010},
        },
        [],
    ],
    # the slow BERT-style classes lower-case the text before splitting out added tokens: an
    # added <extra> matches <EXTRA>, an added <EXTRA> (neither named nor normalized) never does
    "bert/added-lowercased-first": [
        "bert",
        {
            "tokenizer_config.json": {
                "added_tokens_decoder": with_added("bert", "<extra>", 1507, special=True)
            },
            "config.json": {"vocab_size": 1512},
        },
        [],
    ],
    "bert/added-upper-content": [
        "bert",
        {
            "tokenizer_config.json": {"added_tokens_decoder": with_added("bert", "<EXTRA>", 1507)},
            "config.json": {"vocab_size": 1512},
        },
        [],
    ],
    "mpnet/added-lowercased-first": [
        "mpnet",
        {
            "tokenizer_config.json": {"added_tokens_decoder": with_added("mpnet", "<extra>", 1507)},
            "config.json": {"vocab_size": 1512},
        },
        [],
    ],
    # tokenizer.json's post-processor: the fast tokenizer's frame (the slow one builds its own)
    "bert/post-processor-two-seps": [
        "bert",
        {
            "tokenizer.json": {
                "post_processor": template(
                    ["[CLS]", "$A", "[SEP]", "[SEP]"], {"[CLS]": 2, "[SEP]": 3}
                )
            }
        },
        [],
    ],
    "modernbert/post-processor-swapped": [
        "modernbert",
        {
            "tokenizer.json": {
                "post_processor": template(["[SEP]", "$A", "[CLS]"], {"[CLS]": 1, "[SEP]": 2})
            }
        },
        [],
    ],
    "roberta/post-processor-cls": [
        "roberta",
        {
            "tokenizer.json": {
                "post_processor": {
                    "type": "RobertaProcessing",
                    "sep": ["</s>", 2],
                    "cls": ["</s>", 2],
                    "trim_offsets": True,
                    "add_prefix_space": False,
                }
            }
        },
        [],
    ],
}


def main() -> None:
    out = {
        "origin": f"tests/data/make_precedence_refs.py, transformers {transformers.__version__}",
        "texts": TEXTS,
        "cases": {},
    }
    for name, (family, edits, drop) in CASES.items():
        with tempfile.TemporaryDirectory() as tmp:
            folder = make_case(Path(tmp), family, edits, drop)
            ids = {}
            for fast in (False, True):
                tokenizer = AutoTokenizer.from_pretrained(str(folder), use_fast=fast)
                ids["fast" if fast else "slow"] = [sent_encode(tokenizer, t) for t in TEXTS]
            out["cases"][name] = {"family": family, "edits": edits, "drop": drop, "ids": ids}
    (HERE / "precedence_refs.json").write_text(json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
