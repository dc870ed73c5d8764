"""What bert_score 0.3.13 gives under transformers 5 on the tiny families (docs/switching.md).

Run by hand, never by pytest, never imported by the package. ``run`` once in a venv with
transformers 4.57.6 and once in one with transformers 5.x (both: bert-score 0.3.13 from PyPI,
torch CPU, sentencepiece, protobuf, sacremoses), then ``compare``::

    python tests/data/check_transformers5.py run tests/data/reference/tiny /tmp/t457.json
    python tests/data/check_transformers5.py run tests/data/reference/tiny /tmp/t5.json
    python tests/data/check_transformers5.py compare /tmp/t457.json /tmp/t5.json \
        tests/data/transformers5_check.json

``run`` calls ``bert_score.score`` (``use_fast_tokenizer=False``, CPU) with the arguments of every
case of the reference set's ``tiny/cases*.json``, twice: on all the case's pairs, and on the pairs
whose candidate and references are not empty or whitespace only (so that a stack on which
bert_score raises on those still gets compared). It records F or the error, and bert_score's
``sent_encode`` ids of a few probe texts. ``compare`` gives, per family, the errors and the
largest |F(5) - F(4.57)| over the cases (NaN where both are NaN counts as equal), and the probe
texts whose ids differ.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

CASE_FILES = ("cases.json", "cases2.json", "cases3.json", "cases4.json")
PROBES = [
    "",
    "   ",
    "Hello world.",
    "the cat sat on the mat",
    "Ünïcödé ÀÉÎ ß ﬁ",
    "Price: 1,000,000 and 9, 10,",
    "Café naïve déjà vu",
]


def _is_blank(text: str) -> bool:
    return not text.strip()


def _nonblank(case: dict) -> tuple[list[str], list]:
    cands, refs = [], []
    for cand, ref in zip(case["cands"], case["refs"], strict=True):
        group = [ref] if isinstance(ref, str) else ref
        if _is_blank(cand) or any(_is_blank(r) for r in group):
            continue
        cands.append(cand)
        refs.append(ref)
    return cands, refs


def run(tiny: Path, out: Path) -> None:
    import bert_score
    import tokenizers
    import torch
    import transformers
    from bert_score.utils import get_tokenizer, sent_encode

    def score(cands: list[str], refs: list, family: str, kwargs: dict) -> dict:
        try:
            _, _, F = bert_score.score(
                cands, refs, model_type=str(tiny / family), device="cpu", **kwargs
            )
            return {"F": F.tolist()}
        except Exception as e:
            return {"error": f"{type(e).__name__}: {e}"[:300]}

    result: dict = {
        "meta": {
            "bert_score": "0.3.13",
            "transformers": transformers.__version__,
            "tokenizers": tokenizers.__version__,
            "torch": torch.__version__,
        },
        "families": {},
    }
    for name in CASE_FILES:
        for case in json.loads((tiny / name).read_text(encoding="utf-8"))["cases"]:
            family = case["model_dir"]
            fam = result["families"].setdefault(family, {"cases": {}})
            cands, refs = _nonblank(case)
            fam["cases"][case["name"]] = {
                "all": score(case["cands"], case["refs"], family, case["kwargs"]),
                "nonblank": score(cands, refs, family, case["kwargs"]),
            }
    for family, fam in sorted(result["families"].items()):
        tok = get_tokenizer(str(tiny / family), use_fast=False)
        fam["tokenizer_class"] = type(tok).__name__
        fam["probes"] = {}
        for text in PROBES:
            try:
                fam["probes"][text] = list(sent_encode(tok, text))
            except Exception as e:
                fam["probes"][text] = f"{type(e).__name__}: {e}"[:200]
        print(family, fam["tokenizer_class"], flush=True)
    out.write_text(json.dumps(result, ensure_ascii=False), encoding="utf-8")


def _flat(x: object) -> list[float]:
    if isinstance(x, list):
        return [v for item in x for v in _flat(item)]
    return [float(x)]  # type: ignore[arg-type]


def _max_diff(got: object, want: object) -> float:
    a, b = _flat(got), _flat(want)
    if len(a) != len(b):
        return math.inf
    worst = 0.0
    for g, w in zip(a, b):
        if math.isnan(g) and math.isnan(w):
            continue
        if math.isnan(g) or math.isnan(w):
            return math.inf
        worst = max(worst, abs(g - w))
    return worst


def compare(old_path: Path, new_path: Path, out: Path) -> None:
    old = json.loads(old_path.read_text(encoding="utf-8"))
    new = json.loads(new_path.read_text(encoding="utf-8"))
    summary: dict = {"meta": {"old": old["meta"], "new": new["meta"]}, "families": {}}
    for family, fam in sorted(new["families"].items()):
        before = old["families"][family]
        errors = sorted({c["all"]["error"] for c in fam["cases"].values() if "error" in c["all"]})
        diffs = {}
        for key in ("all", "nonblank"):
            values = [
                _max_diff(c[key]["F"], before["cases"][name][key]["F"])
                for name, c in fam["cases"].items()
                if "F" in c[key] and "F" in before["cases"][name][key]
            ]
            diffs[key] = max(values) if values else None
        probes = {
            text: {"4.57": before["probes"][text], "5": ids}
            for text, ids in fam["probes"].items()
            if ids != before["probes"][text]
        }
        summary["families"][family] = {
            "tokenizer_class": {"4.57": before["tokenizer_class"], "5": fam["tokenizer_class"]},
            "errors_on_all_pairs": errors,
            "max_abs_dF_all_pairs": diffs["all"],
            "max_abs_dF_nonblank_pairs": diffs["nonblank"],
            "probes_with_other_ids": probes,
        }
        print(family, errors[:1], diffs, sorted(probes), flush=True)
    out.write_text(json.dumps(summary, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(Path(sys.argv[2]), Path(sys.argv[3]))
    else:
        compare(Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]))
