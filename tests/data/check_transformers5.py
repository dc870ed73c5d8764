"""What bert_score 0.3.13 gives under transformers 5 on the tiny families (docs/switching.md).

Run by hand, only in a side venv with torch (CPU), transformers 5.x and bert-score 0.3.13 from
PyPI (never by pytest, never imported by the package)::

    python tests/data/check_transformers5.py /work/shared/reference/tiny \
        tests/data/transformers5_check.json

For every case of the reference set's ``tiny/cases*.json`` (bert_score 0.3.13 with transformers
4.57.6, ``use_fast_tokenizer=False``) it calls ``bert_score.score`` with the same arguments and
records the largest |F - F(4.57)| (NaN where both are NaN counts as equal) or the error, and
for every family whether bert_score encodes the empty and the whitespace-only text, and the ids
its ``sent_encode`` gives for a few texts next to those of ``slow_tokenizer_ids.json`` and the
families' ``ids.json`` (transformers 4.57.6).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import bert_score
import tokenizers
import torch
import transformers
from bert_score.utils import get_tokenizer, sent_encode

CASE_FILES = ("cases.json", "cases2.json", "cases3.json", "cases4.json")


def flat(x: object) -> list[float]:
    if isinstance(x, list):
        return [v for item in x for v in flat(item)]
    return [float(x)]  # type: ignore[arg-type]


def max_diff(got: list[float], want: list[float]) -> float:
    worst = 0.0
    for g, w in zip(got, want, strict=True):
        if math.isnan(g) and math.isnan(w):
            continue
        if math.isnan(g) or math.isnan(w):
            return math.inf
        worst = max(worst, abs(g - w))
    return worst


def old_ids(here: Path) -> dict[str, dict[str, list[int]]]:
    """The transformers 4.57.6 slow ids this repository holds, by family and text."""
    out: dict[str, dict[str, list[int]]] = {}
    slow = json.loads((here / "reference/tiny/slow_tokenizer_ids.json").read_text("utf-8"))
    for family, entry in slow["families"].items():
        out[family] = dict(zip(slow["texts"], entry["ids"], strict=True))
    for path in (here / "reference/tiny").glob("*/ids.json"):
        data = json.loads(path.read_text("utf-8"))
        out.setdefault(path.parent.name, {}).update(zip(data["texts"], data["ids"], strict=True))
    return out


def main(tiny: Path, out: Path) -> None:
    here = Path(__file__).resolve().parent
    before = old_ids(here)
    probes = ["", "   ", "Hello world.", "Ünïcödé ÀÉÎ ß ﬁ", "Price: 1,000,000 and 9, 10,"]
    families: dict[str, dict] = {}
    for name in CASE_FILES:
        for case in json.loads((tiny / name).read_text(encoding="utf-8"))["cases"]:
            family = case["model_dir"]
            fam = families.setdefault(family, {"cases": {}})
            try:
                _, _, F = bert_score.score(
                    case["cands"],
                    case["refs"],
                    model_type=str(tiny / family),
                    device="cpu",
                    **case["kwargs"],
                )
                diff = max_diff(flat(F.tolist()), flat(case["expected"]["F"]))
                fam["cases"][case["name"]] = {"max_abs_dF": diff}
            except Exception as e:
                fam["cases"][case["name"]] = {"error": f"{type(e).__name__}: {e}"[:300]}
    for family, fam in sorted(families.items()):
        tok = get_tokenizer(str(tiny / family), use_fast=False)
        fam["tokenizer_class"] = type(tok).__name__
        fam["probes"] = {}
        for text in probes:
            try:
                ids: object = list(sent_encode(tok, text))
            except Exception as e:
                ids = f"{type(e).__name__}: {e}"[:200]
            fam["probes"][text] = {"ids": ids, "ids_4.57": before.get(family, {}).get(text)}
        diffs = [c["max_abs_dF"] for c in fam["cases"].values() if "max_abs_dF" in c]
        errors = [c["error"] for c in fam["cases"].values() if "error" in c]
        fam["max_abs_dF"] = max(diffs) if diffs else None
        print(family, fam["tokenizer_class"], fam["max_abs_dF"], errors[:1], flush=True)
    meta = {
        "bert_score": "0.3.13",
        "transformers": transformers.__version__,
        "tokenizers": tokenizers.__version__,
        "torch": torch.__version__,
        "against": "tiny/cases*.json: bert_score 0.3.13, transformers 4.57.6",
    }
    out.write_text(json.dumps({"meta": meta, "families": families}, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
