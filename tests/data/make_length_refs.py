"""Make ``length_refs.json``: bert_score 0.3.13's token ids (``bert_score.utils.sent_encode``'s
call, transformers 4.57.6, slow and fast tokenizers) of texts past 128, 256 and 512 tokens, for
the tiny checkpoints whose tokenizer declares no ``model_max_length`` (issue 59: ProphetNet was
truncated at its position table, 128 tokens, where bert_score encodes the whole text).

Run in a venv with transformers 4.57 (torch is not needed: ``sent_encode`` is reproduced here
as bert_score 0.3.13 calls the tokenizer), from the repository root:
``python tests/data/make_length_refs.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import transformers
from transformers import AutoTokenizer, GPT2Tokenizer, RobertaTokenizer

HERE = Path(__file__).resolve().parent
FAMILIES = HERE / "reference" / "more_families"
WORDS = [
    "the",
    "committee",
    "said",
    "on",
    "tuesday",
    "that",
    "its",
    "members",
    "would",
    "review",
    "all",
    "proposals",
    "again",
]


def text(n_words: int) -> str:
    return " ".join(WORDS[i % len(WORDS)] for i in range(n_words))


def sent_encode(tokenizer, sent: str) -> list[int]:
    """bert_score 0.3.13's ``sent_encode`` for transformers >= 4."""
    sent = sent.strip()
    if sent == "":
        return tokenizer.build_inputs_with_special_tokens([])
    kwargs = {
        "add_special_tokens": True,
        "max_length": tokenizer.model_max_length,
        "truncation": True,
    }
    if isinstance(tokenizer, (GPT2Tokenizer, RobertaTokenizer)):
        kwargs["add_prefix_space"] = True
    return tokenizer.encode(sent, **kwargs)


def main() -> None:
    texts = [text(n) for n in (150, 300, 600)]
    out = {
        "origin": f"tests/data/make_length_refs.py, transformers {transformers.__version__}",
        "texts": texts,
        "families": {},
    }
    for family in ("prophetnet", "xlm-prophetnet"):
        for fast in (False, True):
            tokenizer = AutoTokenizer.from_pretrained(str(FAMILIES / family), use_fast=fast)
            out["families"][f"{family}/{'fast' if fast else 'slow'}"] = {
                "model_max_length": str(tokenizer.model_max_length),
                "ids": [sent_encode(tokenizer, t) for t in texts],
            }
    (HERE / "length_refs.json").write_text(json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
