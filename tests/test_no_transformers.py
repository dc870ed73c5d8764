"""The scores do not depend on an installed transformers: the package never imports it.

bert_score's numbers moved with transformers 5 (docs/switching.md, "bert_score under
transformers 5"); this package gives the transformers 4.57 numbers whatever is installed. A
``transformers`` package that raises when imported is put first on the path of a fresh
interpreter: scoring (slow tokenizers, and fast ones built from SentencePiece models) must
still work, give bert_score's transformers 4.57 figures, and leave ``transformers`` (and
``torch``) unimported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from conftest import DATA, TINY, load_cases

SCRIPT = """
import json, sys
import rust_bertscore as rb
cases = json.loads(sys.argv[1])
out = []
for case in cases:
    _, _, F = rb.score(case["cands"], case["refs"], model_type=case["model"], **case["kwargs"])
    out.append(F.tolist())
imported = sorted(m for m in ("transformers", "torch") if m in sys.modules)
print(json.dumps({"F": out, "imported": imported}))
"""


def _case(file: str, name: str) -> dict:
    return next(c for c in load_cases(TINY / file) if c["name"] == name)


def test_scores_do_not_depend_on_an_installed_transformers(tmp_path: Path) -> None:
    poison = tmp_path / "shadow" / "transformers"
    poison.mkdir(parents=True)
    (poison / "__init__.py").write_text(
        "raise ImportError('rust_bertscore imported transformers')\n", encoding="utf-8"
    )
    slow = _case("cases.json", "bert_num_layers3_idfTrue")
    fast_refs = json.loads((DATA / "fast_tokenizer_refs.json").read_text(encoding="utf-8"))
    fast = next(
        c for c in fast_refs["families"]["t5"]["cases"] if c["name"].startswith("t5_num_layers2")
    )
    fast_pairs = _case("cases2.json", fast["name"])
    cases = [
        {"model": str(TINY / "bert"), "cands": slow["cands"], "refs": slow["refs"],
         "kwargs": slow["kwargs"]},
        {"model": str(TINY / "t5"), "cands": fast_pairs["cands"], "refs": fast_pairs["refs"],
         "kwargs": {**fast_pairs["kwargs"], "use_fast_tokenizer": True}},
    ]  # fmt: skip
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(tmp_path / "shadow"), *filter(None, [env.get("PYTHONPATH")])]
    )
    # the shadow really is what `import transformers` finds in that interpreter
    probe = subprocess.run(
        [sys.executable, "-c", "import transformers"], env=env, capture_output=True, text=True
    )
    assert "rust_bertscore imported transformers" in probe.stderr
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(cases)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["imported"] == []
    for got, want in zip(result["F"], [slow["expected"]["F"], fast["expected"]["F"]]):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), atol=1e-5, rtol=0)
