"""Make ``default_rope_refs.json``: the inverse frequencies transformers 4.57.6 computes for its
default RoPE (``modeling_rope_utils._compute_default_rope_parameters``, torch's float32 ``pow``)
at the thetas and head sizes of the rotary families this package converts in graph (ModernBERT's
global 160,000 and local 10,000; Qwen3's and Gemma3's 1,000,000 and 10,000), as float32 bit
patterns (issue 59: NumPy's float32 ``power`` is up to 2 steps off torch's).

Run in a side venv with torch and transformers 4.57 (never the project's)::

    /tmp/torchvenv/bin/python tests/data/make_default_rope_refs.py
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers import PretrainedConfig
from transformers.modeling_rope_utils import _compute_default_rope_parameters

CASES = [(160000.0, 64), (10000.0, 64), (1000000.0, 128), (10000.0, 256), (1000000.0, 256)]


def main() -> None:
    out = {
        "origin": f"tests/data/make_default_rope_refs.py, transformers {transformers.__version__}, "
        f"torch {torch.__version__} ({torch.backends.cpu.get_cpu_capability()})",
        "cases": [],
    }
    for theta, head_dim in CASES:
        config = PretrainedConfig(
            rope_theta=theta, head_dim=head_dim, hidden_size=head_dim, num_attention_heads=1
        )
        inv_freq, _ = _compute_default_rope_parameters(config, "cpu")
        bits = inv_freq.to(torch.float32).numpy().astype(np.float32).view(np.uint32)
        out["cases"].append({"theta": theta, "head_dim": head_dim, "bits": bits.tolist()})
    path = Path(__file__).resolve().parent / "default_rope_refs.json"
    path.write_text(json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
