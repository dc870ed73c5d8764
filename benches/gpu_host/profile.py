"""GPU host: where a CUDA call's time goes (``stage_times``: tokenise, the encoder's run, the
kernel, the Python around them) with the overlap off, and the same call's wall time with it on.
Usage: ``python profile.py OUT.json``."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import rust_bertscore as rb
from benches.common import wmt_pairs
from benches.stage_shares import stage_times


def main() -> int:
    pairs = wmt_pairs("profile")
    if pairs is None:
        return 1
    hyps, refs = pairs
    rows = []
    for shape, layer in (("roberta-large-shape", 17), ("minilm-random", 6)):
        for precision in ("fp32", "fp16"):
            scorer = rb.BERTScorer(
                model_type=f"/tmp/shapes/{shape}",
                num_layers=layer,
                device="cuda",
                precision=precision,
                cache_bytes=0,
            )
            scorer.pipeline.overlap = False
            scorer.score(hyps[:64], refs[:64])
            row: dict = {"shape": shape, "precision": precision, **stage_times(scorer, hyps, refs)}
            scorer.pipeline.overlap = True
            t0 = time.perf_counter()
            scorer.score(hyps, refs)
            row["total_overlap_on"] = time.perf_counter() - t0
            print(json.dumps(row), flush=True)
            rows.append(row)
    Path(sys.argv[1]).write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
