"""Write ``tiny/<family>/ids.json`` for the tiny XLNet and XLM checkpoints: the ids transformers
4.57.6's slow tokenizers give every text of the cases plus a few edge cases, by bert_score
0.3.13's ``sent_encode`` rules.

Run by hand, never by pytest, in a venv with transformers==4.57.6, sentencepiece and
sacremoses==0.2.0 (no torch needed)::

    python tests/data/reference/make_xlnet_xlm_ids.py

It reads the checkpoints and ``cases.json`` from ``tests/data/reference/tiny/`` (``cases3.json``).
"""

from __future__ import annotations

import json
from pathlib import Path

from transformers import AutoTokenizer

HERE = Path(__file__).resolve().parent / "tiny"
FAMILIES = ("xlnet", "xlm")
EDGE = [
    "",
    "   ",
    "Café naïve déjà vu",
    "ÀÉÎÕÜ façade Ångström",
    "CJK 中文字符 and emoji 🙂 here",
    "Numbers 1,234,567 and 9,8 then x, 12,",
    "Tabs\tand\nnewlines  inside",
    "UPPER lower MiXeD",
    "Quotes ``like this'' and “curly” ‘ones’ «guillemets»",
    "Full-width （１２３） ，。！ punctuation…",
    "don't can't it's 'quoted' O'Neil",
    "Ends with the end token </s>",
    "<s> bos <pad> pad <unk> unk",
    "<sep> sep <cls> cls <mask> mask <eod> <eop>",
    "<special0> and <special1> tokens",
    "a - b -- c --- d ... e",
    "Prices $5.00, 10% off & more @ home #tag",
    "x" * 300,
    " ".join(["word"] * 200),
]


def sent_encode(tok, text: str) -> list[int]:
    text = text.strip()
    if text == "":
        return tok.build_inputs_with_special_tokens([])
    return tok.encode(
        text, add_special_tokens=True, max_length=tok.model_max_length, truncation=True
    )


def main() -> None:
    cases = json.loads((HERE / "cases3.json").read_text(encoding="utf-8"))["cases"]
    for family in FAMILIES:
        tok = AutoTokenizer.from_pretrained(str(HERE / family), use_fast=False)
        texts: list[str] = []
        for case in cases:
            if case["model_dir"] == family:
                texts.extend(case["cands"] + case["refs"])
        texts = list(dict.fromkeys(texts + EDGE))
        data = {
            "tokenizer_class": type(tok).__name__,
            "texts": texts,
            "ids": [sent_encode(tok, t) for t in texts],
        }
        out = HERE / family / "ids.json"
        out.write_text(json.dumps(data, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"{out}: {len(texts)} texts")


if __name__ == "__main__":
    main()
