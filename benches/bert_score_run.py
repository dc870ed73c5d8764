#!/usr/bin/env python3
"""Time bert_score 0.3.13 on one set of pairs; run by ``benches/compare.py`` in the bench venv.

This script imports torch and bert_score, so it runs under the interpreter of a separate venv
(``make bench-compare`` builds ``.venv-bench``), never the package's. It reads candidates and
references (one per line), loads a ``bert_score.BERTScorer`` and scores a few pairs to warm up,
then times one ``score`` call over all of them and writes the F values (float64, ``.npy``) and
a JSON line with the seconds, the versions and torch's thread count to stdout.

With ``--device cuda`` it runs on the GPU (PyTorch's defaults: TF32 off for matmuls) and the JSON
line adds the peak GPU memory PyTorch allocated (``peak_gpu_mib``).

Usage: ``python bert_score_run.py MODEL_DIR NUM_LAYERS CANDS REFS OUT_NPY [--batch-size N]
[--device cpu|cuda]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_dir")
    parser.add_argument("num_layers", type=int)
    parser.add_argument("cands")
    parser.add_argument("refs")
    parser.add_argument("out_npy")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()

    import bert_score
    import numpy as np
    import torch
    import transformers

    with open(args.cands, encoding="utf-8") as f:
        cands = [line.rstrip("\n") for line in f]
    with open(args.refs, encoding="utf-8") as f:
        refs = [line.rstrip("\n") for line in f]
    if len(cands) != len(refs):
        print(f"{args.cands} and {args.refs} differ in length", file=sys.stderr)
        return 2

    t0 = time.perf_counter()
    scorer = bert_score.BERTScorer(
        model_type=args.model_dir,
        num_layers=args.num_layers,
        batch_size=args.batch_size,
        device=args.device,
    )
    scorer.score(cands[:16], refs[:16], batch_size=args.batch_size)
    load = time.perf_counter() - t0
    t0 = time.perf_counter()
    _, _, F = scorer.score(cands, refs, batch_size=args.batch_size)
    if args.device.startswith("cuda"):
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    np.save(args.out_npy, F.numpy().astype(np.float64))
    info = {
        "seconds": seconds,
        "load_and_warmup_seconds": load,
        "pairs": len(cands),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "bert_score": getattr(bert_score, "__version__", "?"),
        "torch_threads": torch.get_num_threads(),
        "device": args.device,
    }
    if args.device.startswith("cuda"):
        info["peak_gpu_mib"] = torch.cuda.max_memory_allocated() / 2**20
        info["gpu"] = torch.cuda.get_device_name()
    print(json.dumps(info))
    return 0


if __name__ == "__main__":
    sys.exit(main())
