"""bert_score 0.3.13's fast-tokenizer path (``use_fast_tokenizer=True``) on the tiny families.

Run by hand, only in a side venv with torch (CPU), transformers 4.57.6, bert-score 0.3.13,
sentencepiece, protobuf and sacremoses (never by pytest, never imported by the package)::

    python tests/data/make_fast_refs.py tests/data/reference/tiny \
        tests/data/fast_tokenizer_refs.json
    python tests/data/make_fast_refs.py \
        tests/data/reference/more_families tests/data/fast_tokenizer_refs_more.json cases.json

(the second: the further families that ``reference/make_more_families.py`` made, with the pairs
of their ``cases.json``).

For every tiny family it records:

- ``texts`` (top level): every text, once; a family's ``texts`` are indices into it.
- ``ids``: what bert_score's ``sent_encode`` gives with the tokenizer
  ``AutoTokenizer.from_pretrained(dir, use_fast=True)`` returns (bert_score's
  ``get_tokenizer(model_type, use_fast=True)``), for the texts of ``slow_tokenizer_ids.json``
  (the cases' texts and the edge cases) and the family's own case texts; ``tokenizer_class`` the
  class transformers gave (a slow class where transformers has no fast one: ByT5, XLM). Where
  ``sent_encode`` raises, ``{"error": ..., "plain_ids": ...}``: the message, and the ids of
  ``tokenizer.encode(text.strip())`` without bert_score's ``max_length``/``truncation``
  arguments where that works (a tokenizer with no ``model_max_length`` makes transformers' fast
  tokenizer raise ``OverflowError`` on ``max_length=int(1e30)``).
- ``cases``: ``bert_score.score(cands, refs, model_type=dir, use_fast_tokenizer=True, **kwargs)``
  P/R/F for the same pairs, layers and options as the slow-path references (``tiny/cases*.json``:
  a case here has the name of its pairs there), or ``bert_score_error`` (the exception's type
  and message) where bert_score itself fails.
"""

from __future__ import annotations

import contextlib
import json
import sys
import traceback
from pathlib import Path

import bert_score
import tokenizers
import torch
import transformers
from bert_score.utils import get_tokenizer, sent_encode

CASE_FILES = ("cases.json", "cases2.json", "cases3.json", "cases4.json")


def tolist(x: object) -> object:
    if isinstance(x, torch.Tensor):
        return x.tolist()
    if isinstance(x, (list, tuple)):
        return [tolist(v) for v in x]
    return x


def main(tiny: Path, out: Path, slow_ids: Path, case_files: tuple[str, ...]) -> None:
    torch.manual_seed(0)
    edge_texts = json.loads(slow_ids.read_text(encoding="utf-8"))["texts"]
    cases = []
    for name in case_files:
        cases.extend(json.loads((tiny / name).read_text(encoding="utf-8"))["cases"])
    families: dict[str, dict] = {}
    for case in cases:
        fam = families.setdefault(case["model_dir"], {"texts": list(edge_texts), "cases": []})
        refs = [r for group in case["refs"] for r in ([group] if isinstance(group, str) else group)]
        for t in [*case["cands"], *refs]:
            if t not in fam["texts"]:
                fam["texts"].append(t)
    for family, fam in sorted(families.items()):
        model_dir = str(tiny / family)
        try:
            tok = get_tokenizer(model_dir, use_fast=True)
            fam["tokenizer_class"] = type(tok).__name__
            fam["model_max_length"] = min(int(tok.model_max_length), 2**63)
            ids: list[object] = []
            for t in fam["texts"]:
                try:
                    ids.append(list(sent_encode(tok, t)))
                except Exception as e:
                    entry: dict[str, object] = {"error": f"{type(e).__name__}: {e}"}
                    # the fast tokenizer's ids without bert_score's truncation arguments
                    with contextlib.suppress(Exception):  # where that fails too: none
                        entry["plain_ids"] = list(tok.encode(t.strip()))
                    ids.append(entry)
            fam["ids"] = ids
        except Exception as e:
            fam["tokenizer_error"] = f"{type(e).__name__}: {e}"
        for case in cases:
            if case["model_dir"] != family:
                continue
            entry = {k: case[k] for k in ("name", "model_dir", "cands", "refs", "kwargs")}
            try:
                P, R, F = bert_score.score(
                    case["cands"],
                    case["refs"],
                    model_type=model_dir,
                    device="cpu",
                    use_fast_tokenizer=True,
                    **case["kwargs"],
                )
                entry["expected"] = {"P": tolist(P), "R": tolist(R), "F": tolist(F)}
            except Exception as e:
                entry["bert_score_error"] = f"{type(e).__name__}: {e}"
                traceback.print_exc()
            fam["cases"].append(entry)
        print(family, fam.get("tokenizer_class"), fam.get("tokenizer_error"), flush=True)
    texts: list[str] = []
    index: dict[str, int] = {}
    for fam in families.values():
        for t in fam["texts"]:
            index.setdefault(t, len(texts))
            if len(texts) == index[t]:
                texts.append(t)
        fam["texts"] = [index[t] for t in fam["texts"]]
        for entry in fam["cases"]:  # the pairs are those of tiny/cases*.json, by name
            del entry["cands"], entry["refs"]
    meta = {
        "bert_score": "0.3.13",
        "transformers": transformers.__version__,
        "tokenizers": tokenizers.__version__,
        "torch": torch.__version__,
        "note": "bert_score.score(..., use_fast_tokenizer=True) and sent_encode with "
        "get_tokenizer(dir, use_fast=True) on the reference set's tiny checkpoints",
    }
    out.write_text(
        json.dumps(
            {"meta": meta, "texts": texts, "families": families}, ensure_ascii=False, indent=None
        ),
        encoding="utf-8",
    )


if __name__ == "__main__":
    here = Path(__file__).resolve().parent
    main(
        Path(sys.argv[1]),
        Path(sys.argv[2]),
        here / "reference" / "tiny" / "slow_tokenizer_ids.json",
        tuple(sys.argv[3:]) or CASE_FILES,
    )
