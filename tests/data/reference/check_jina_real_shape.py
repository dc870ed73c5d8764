"""A one-off check, run by hand in the side venv (writes nothing under tests/data): the remote
XLMRobertaLoRA code at jina-embeddings-v3's real width (hidden 1,024, 16 heads, FFN 4,096, rotary
base 20,000, five adapters of rank 4; 2 layers of random weights) on one 3,000-token text, base
weights and text-matching, saved to /tmp/jina_real/ref.npz with the checkpoint in
/tmp/jina_real/jina_real. Then, in the package's venv, ``build_model(dir, None, all_layers=True,
task=...)`` on ONNX Runtime is compared with it layer by layer (docs/models.md gives the figures).

    python check_jina_real_shape.py <dir with the remote .py files>
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file
from transformers import AutoConfig, AutoModel
from transformers.utils import HF_MODULES_CACHE

sys.path.insert(0, str(Path(__file__).parent))
import make_jina as mj

WORK = Path("/tmp/jina_real")


def main(code: Path) -> None:
    d = WORK / "jina_real"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    modules = Path(HF_MODULES_CACHE) / "transformers_modules" / d.name
    modules.mkdir(parents=True, exist_ok=True)
    for f in code.glob("*.py"):
        shutil.copy(f, d / f.name)
        shutil.copy(f, modules / f.name)
    tiny = Path(__file__).parent / "tiny" / "bert"
    for f in ("vocab.txt", "tokenizer_config.json", "special_tokens_map.json", "tokenizer.json"):
        shutil.copy(tiny / f, d / f)
    cfg = {
        **mj.config(),
        "hidden_size": 1024,
        "num_attention_heads": 16,
        "intermediate_size": 4096,
        "num_hidden_layers": 2,
    }
    local = {k: v.split("--")[1] for k, v in mj.HUB_AUTO_MAP.items()}
    (d / "config.json").write_text(json.dumps({**cfg, "auto_map": local}))
    torch.manual_seed(7)
    config = AutoConfig.from_pretrained(d, trust_remote_code=True)
    model = AutoModel.from_config(config, trust_remote_code=True)
    with torch.no_grad():
        for n, p in model.state_dict().items():
            if "lora_" in n:
                p.normal_(0, 0.05)
            elif "norm" in n or "emb_ln" in n:
                weight = n.endswith("weight")
                p.copy_(1 + 0.2 * torch.randn_like(p) if weight else 0.1 * torch.randn_like(p))
            else:
                p.normal_(0, 0.03)
    model.eval()
    tensors = {k: v.contiguous() for k, v in model.state_dict().items()}
    save_file(tensors, str(d / "model.safetensors"))
    (d / "config.json").write_text(json.dumps({**cfg, "auto_map": mj.HUB_AUTO_MAP}))
    ids = torch.randint(5, 1500, (1, 3000))
    out = {}
    for task in ("base", "text-matching"):
        states = mj.run(model, ids, torch.ones_like(ids), task)
        out[task.replace("-", "_")] = torch.stack([s[0] for s in states]).numpy()
    np.savez(WORK / "ref.npz", ids=ids.numpy(), **out)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
