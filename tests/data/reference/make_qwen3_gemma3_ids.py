"""Write ``tiny/<family>/ids.json`` for the tiny Qwen3 and Gemma3 checkpoints: the ids transformers
4.57.6's slow tokenizers (``Qwen2Tokenizer``, ``GemmaTokenizer``) give every text of their cases
plus edge cases, by bert_score 0.3.13's ``sent_encode`` rules.

Run by hand, never by pytest, in a venv with transformers==4.57.6, sentencepiece and protobuf
(no torch needed)::

    python tests/data/reference/make_qwen3_gemma3_ids.py

It reads the checkpoints and ``cases4.json`` from ``tests/data/reference/tiny/``.
"""

from __future__ import annotations

import json
from pathlib import Path

from transformers import AutoTokenizer

HERE = Path(__file__).resolve().parent / "tiny"
FAMILIES = ("qwen3", "gemma3")
EDGE = [
    "",
    "   ",
    "Café naïve déjà vu",
    "Cafe\u0301 composed by NFC",
    "ÀÉÎÕÜ façade Ångström",
    "CJK 中文字符 and emoji 🙂 here",
    "Numbers 1,234,567 and 9,8 then x, 12, 2026",
    "Tabs\tand\nnewlines  inside\r\n\r\nblank",
    "UPPER lower MiXeD",
    "Quotes ``like this'' and “curly” ‘ones’ «guillemets»",
    "Full-width （１２３） ，。！ punctuation…",
    "don't can't it's 'quoted' O'Neil DON'T I'M you'LL",
    "Special tokens <|endoftext|> and <|im_end|> inside",
    "<bos> bos <eos> eos <pad> pad <unk> unk",
    "a - b -- c --- d ... e",
    "Prices $5.00, 10% off & more @ home #tag",
    "x" * 300,
    " ".join(["word"] * 600),
]


def sent_encode(tok, text: str) -> list[int]:
    text = text.strip()
    if text == "":
        return tok.build_inputs_with_special_tokens([])
    return tok.encode(
        text, add_special_tokens=True, max_length=tok.model_max_length, truncation=True
    )


def main() -> None:
    cases = json.loads((HERE / "cases4.json").read_text(encoding="utf-8"))["cases"]
    for family in FAMILIES:
        tok = AutoTokenizer.from_pretrained(str(HERE / family), use_fast=False)
        texts: list[str] = []
        for case in cases:
            if case["model_dir"] == family:
                texts.extend(case["cands"])
                for ref in case["refs"]:
                    texts.extend(ref if isinstance(ref, list) else [ref])
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
