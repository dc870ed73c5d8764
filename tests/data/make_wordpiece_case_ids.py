"""Token ids of transformers 4.57's slow and fast BertTokenizer on the tiny BERT with the
tokenizer_config.json case settings changed (do_lower_case false; strip_accents false)."""

import json
import shutil
import sys
from pathlib import Path

import transformers
from transformers import AutoTokenizer

src = Path(sys.argv[1])
out = {}
TEXTS = ["The Cat sat on the MAT.", "Héllo Wörld, ÇA va?", "naïve café RÉSUMÉ 東京"]
for name, change in {
    "cased": {"do_lower_case": False},
    "lower-keep-accents": {"do_lower_case": True, "strip_accents": False},
}.items():
    d = Path("/tmp/wpcase") / name
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(src, d)
    cfg = json.loads((d / "tokenizer_config.json").read_text())
    cfg.update(change)
    (d / "tokenizer_config.json").write_text(json.dumps(cfg))
    row = {"change": change}
    for fast in (False, True):
        tok = AutoTokenizer.from_pretrained(str(d), use_fast=fast)
        row["fast" if fast else "slow"] = [tok.encode(t) for t in TEXTS]
    out[name] = row
print(json.dumps({"transformers": transformers.__version__, "texts": TEXTS, "cases": out}))
