"""GPU host, in the background: the random-weight shapes and their converted fp32 and fp16
graphs, roberta-large's first (``run.sh``). Usage: ``python prep_shapes.py MINILM_DIR``."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from benches.common import wmt_pairs
from benches.gpu import convert_once
from benches.shapes import (
    DEBERTA_XLARGE_LAYER,
    ROBERTA_LARGE_LAYER,
    deberta_xlarge_shape,
    minilm_random_shape,
    roberta_large_shape,
)

ROOT = Path("/tmp/shapes")


def main() -> int:
    minilm = Path(sys.argv[1])
    pairs = wmt_pairs("prep")
    if pairs is None:
        return 1
    texts = pairs[0] + pairs[1]
    shapes = (
        ("roberta-large", lambda: roberta_large_shape(ROOT, texts), ROBERTA_LARGE_LAYER),
        ("minilm", lambda: minilm_random_shape(ROOT, minilm), 6),
        ("deberta-xlarge", lambda: deberta_xlarge_shape(ROOT, texts), DEBERTA_XLARGE_LAYER),
    )
    for name, make, layer in shapes:
        t0 = time.time()
        model = make()
        t1 = time.time()
        convert_once(model, layer, ["fp32", "fp16"])
        print(f"{name}: shape {t1 - t0:.1f} s, graphs {time.time() - t1:.1f} s", flush=True)
        (ROOT / f"{name}.ready").write_text("ok", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
