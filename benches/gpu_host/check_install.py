"""GPU host: the ``rust-bertscore-gpu`` wheel as installed there: ONNX Runtime's providers, the
distributions, the device a default scorer picks, its scores against the CPU's, the warnings.
Usage: ``python check_install.py TINY_CHECKPOINT`` (prints JSON)."""

from __future__ import annotations

import importlib.metadata as metadata
import json
import sys
import warnings

import onnxruntime as ort

import rust_bertscore as rb


def main() -> int:
    names = sorted(
        {
            d.metadata["Name"]
            for d in metadata.distributions()
            if any(k in (d.metadata["Name"] or "").lower() for k in ("onnxruntime", "bertscore"))
        }
    )
    out: dict = {
        "onnxruntime": ort.__version__,
        "providers": ort.get_available_providers(),
        "dists": names,
        "rust_bertscore": rb.__version__,
    }
    pair = (["the cat sat on the mat"], ["a cat sat on a mat"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scorer = rb.BERTScorer(model_type=sys.argv[1])
        out["device"], out["hash"] = scorer.device, scorer.hash
        out["F"] = scorer.score(*pair)[2].tolist()
        out["overlaps"] = scorer.pipeline.overlaps
        cpu = rb.BERTScorer(model_type=sys.argv[1], device="cpu")
        out["F_cpu"] = cpu.score(*pair)[2].tolist()
    out["warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught]
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
