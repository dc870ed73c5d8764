"""Make ``tiny/convbert_cases.json``: bert_score 0.3.13's scores on the tiny ConvBERT with
``batch_size=1`` (run by hand in a venv with torch, transformers 4.57.6 and bert-score 0.3.13;
never by pytest).

ConvBERT's span-based dynamic convolution reads the hidden states of padded positions, so with
``batch_size > 1`` bert_score's scores depend on how its batches pad each text, and those
batches on ``PYTHONHASHSEED`` (bert_score orders texts by ``sorted(set(...), key=word count)``).
With ``batch_size=1`` no text is padded and the scores are deterministic: what the model gives
each text alone, the convention rust-bertscore's ConvBERT graph implements.

Usage: ``python make_convbert_cases.py <tiny checkpoints dir> <cases3.json> <out.json>``.
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import version
from pathlib import Path

import bert_score
import numpy as np


def main(tiny: str, cases3: str, out: str) -> None:
    source = json.loads(Path(cases3).read_text(encoding="utf-8"))["cases"]
    texts = next(c for c in source if c["model_dir"] == "convbert")
    cases = []
    for kwargs in (
        {"num_layers": 2, "idf": False},
        {"num_layers": 3, "idf": True},
        {"num_layers": 1, "all_layers": True},
        {"num_layers": 0, "idf": False},
    ):
        kwargs = {**kwargs, "batch_size": 1}
        P, R, F = bert_score.score(
            texts["cands"], texts["refs"], model_type=str(Path(tiny) / "convbert"), **kwargs
        )
        name = "convbert_" + "_".join(f"{k}{v}" for k, v in kwargs.items())
        expected = {k: np.asarray(v).tolist() for k, v in zip("PRF", (P, R, F))}
        cases.append(
            {
                "name": name,
                "model_dir": "convbert",
                "cands": texts["cands"],
                "refs": texts["refs"],
                "kwargs": kwargs,
                "expected": expected,
            }
        )
    meta = {
        "bert_score": version("bert-score"),  # its __version__ string says 0.3.12
        "transformers": version("transformers"),
        "torch": version("torch"),
        "note": "tiny ConvBERT, batch_size=1: no text padded (see make_convbert_cases.py)",
    }
    Path(out).write_text(json.dumps({"meta": meta, "cases": cases}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main(*sys.argv[1:4])
