"""Make the tiny ``new`` (GTE) checkpoints and their references (``tests/data/reference/gte/``).

Run by hand in a side venv with torch, transformers 4.57.6 and bert-score 0.3.13, never by
pytest and never by the package:

    python make_gte.py <dir with configuration.py and modeling.py> <tests/data/reference>

The two ``.py`` files are Alibaba-NLP/new-impl's (the code gte-base/large-en-v1.5,
gte-multilingual-base and snowflake-arctic-embed-m-v2.0 name in their ``auto_map``), here taken
from the copy in github.com/xuhaike/SparseCL ``sparsecl/gte/`` (78,302 and 7,119 bytes); they are
loaded with ``trust_remote_code=True`` here only and not copied into this repository.

Checkpoints (random weights, seeded; 3 layers, hidden 32, 2 heads, the WordPiece tokenizer of the
reference set's tiny BERT): ``gte`` (rope, packed qkv, one token type, like gte-base-en-v1.5),
``gte-ntk`` (``rope_scaling`` ntk factor 2 with ``mixed_b``, ``logn_attention_scale`` with
clip, separate q/k/v projections, like the multilingual model's options).

``bert_score.score`` runs unchanged but for its ``AutoModel.from_pretrained``, given
``trust_remote_code=True`` (bert_score never passes it): its own loader then truncates
``model.encoder.layer`` as for BERT, and its own batching pads the texts.
"""

from __future__ import annotations

import json
import shutil
import sys
from importlib.metadata import version
from pathlib import Path

import bert_score
import bert_score.utils as bs_utils
import numpy as np
import torch
from safetensors.torch import save_file
from transformers import AutoConfig, AutoModel

HUB = "Alibaba-NLP/new-impl--"
HUB_AUTO_MAP = {
    "AutoConfig": HUB + "configuration.NewConfig",
    "AutoModel": HUB + "modeling.NewModel",
    "AutoModelForMaskedLM": HUB + "modeling.NewForMaskedLM",
}


def config_for(name: str) -> dict:
    config = {
        "architectures": ["NewModel"],
        "attention_probs_dropout_prob": 0.0,
        "classifier_dropout": None,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.0,
        "hidden_size": 32,
        "initializer_range": 0.02,
        "intermediate_size": 64,
        "layer_norm_eps": 1e-12,
        "layer_norm_type": "layer_norm",
        "logn_attention_clip1": False,
        "logn_attention_scale": False,
        "max_position_embeddings": 128,
        "model_type": "new",
        "num_attention_heads": 2,
        "num_hidden_layers": 3,
        "pack_qkv": True,
        "pad_token_id": 0,
        "position_embedding_type": "rope",
        "rope_scaling": None,
        "rope_theta": 500000,
        "torch_dtype": "float32",
        "type_vocab_size": 1,
        "unpad_inputs": False,
        "use_memory_efficient_attention": False,
        "vocab_size": 1500,
    }
    if name == "gte-ntk":
        config.update(
            rope_scaling={"type": "ntk", "factor": 2.0, "mixed_b": 0.7},
            rope_theta=160000,
            logn_attention_scale=True,
            logn_attention_clip1=True,
            max_position_embeddings=32,
            pack_qkv=False,
            type_vocab_size=2,
            hidden_act="gelu_new",
        )
    return config


def build(name: str, code: Path, tiny_bert: Path, work: Path, out: Path, seed: int) -> Path:
    d = work / name
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    for f in code.glob("*.py"):
        shutil.copy(f, d / f.name)
    config = config_for(name)
    local = {k: v.split("--")[1] for k, v in HUB_AUTO_MAP.items()}
    (d / "config.json").write_text(json.dumps({**config, "auto_map": local}, indent=2))
    torch.manual_seed(seed)
    cfg = AutoConfig.from_pretrained(d, trust_remote_code=True)
    model = AutoModel.from_config(cfg, trust_remote_code=True)
    with torch.no_grad():
        for n_, p in model.named_parameters():
            if "ln" in n_ or "LayerNorm" in n_:
                base = 1.0 if n_.endswith("weight") else 0.0
                p.copy_(base + 0.2 * torch.randn_like(p))
            else:
                p.normal_(0.0, 0.15)
    tensors = {k: v.contiguous() for k, v in model.state_dict().items()}
    save_file(tensors, str(d / "model.safetensors"), metadata={"format": "pt"})
    tok_files = ("vocab.txt", "tokenizer_config.json", "special_tokens_map.json", "tokenizer.json")
    for f in tok_files:
        shutil.copy(tiny_bert / f, d / f)
    dest = out / name
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    for f in ("model.safetensors", *tok_files):
        shutil.copy(d / f, dest / f)
    full = {**config, "auto_map": HUB_AUTO_MAP}
    (dest / "config.json").write_text(json.dumps(full, indent=2) + "\n")
    return d


def hidden_states(d: Path, rows: list[list[int]]) -> tuple[list[np.ndarray], np.ndarray]:
    """Each text alone (every layer), and the padded batch of all of them."""
    model = AutoModel.from_pretrained(d, trust_remote_code=True)
    model.eval()
    alone = []
    with torch.no_grad():
        for ids in rows:
            x = torch.tensor([ids])
            out = model(x, attention_mask=torch.ones_like(x), output_hidden_states=True)
            alone.append(torch.stack(out.hidden_states)[:, 0].numpy())
        width = max(len(r) for r in rows)
        x = torch.zeros(len(rows), width, dtype=torch.long)
        mask = torch.zeros_like(x)
        for i, r in enumerate(rows):
            x[i, : len(r)], mask[i, : len(r)] = torch.tensor(r), 1
        out = model(x, attention_mask=mask, output_hidden_states=True)
        batched = torch.stack(out.hidden_states).numpy()
    return alone, batched


def main(code: str, reference: str) -> None:
    code_dir, ref = Path(code), Path(reference)
    out = ref / "gte"
    work = Path("/tmp/gte_work")
    cases4 = json.loads((ref / "tiny" / "cases4.json").read_text(encoding="utf-8"))["cases"]
    cands, refs = cases4[0]["cands"], cases4[0]["refs"]
    long_c = [" ".join(cands[i : i + 6]) for i in range(0, 18, 6)] + [cands[0]]
    long_r = [" ".join(refs[i : i + 7]) for i in range(0, 21, 7)] + [refs[1]]
    multi = [[r, refs[(i + 3) % len(refs)]] for i, r in enumerate(refs[:10])]
    real_from_pretrained = AutoModel.from_pretrained

    def trusting(*args, **kwargs):
        return real_from_pretrained(*args, trust_remote_code=True, **kwargs)

    all_cases = []
    for seed, name in enumerate(("gte", "gte-ntk")):
        d = build(name, code_dir, ref / "tiny" / "bert", work, out, seed + 151)
        tok = bs_utils.get_tokenizer(str(d), use_fast=False)
        texts = [*cands[:3], long_c[0]]
        ids = [bs_utils.sent_encode(tok, t) for t in texts]
        alone, batched = hidden_states(d, ids)
        arrays = {"batched": batched.astype(np.float32)}
        for i, row in enumerate(ids):
            arrays[f"ids_{i}"] = np.asarray(row, np.int64)
            arrays[f"hidden_{i}"] = alone[i].astype(np.float32)
        np.savez_compressed(out / name / "hidden_states.npz", **arrays)
        bs_utils.AutoModel.from_pretrained = trusting
        runs = [
            ("num_layers2_idfFalse", cands, refs, {"num_layers": 2, "idf": False, "batch_size": 8}),
            ("num_layers3_idfTrue", cands, refs, {"num_layers": 3, "idf": True, "batch_size": 8}),
            ("num_layers1_all_layers", cands, refs, {"num_layers": 1, "all_layers": True}),
            ("multi_ref_idf", cands[:10], multi, {"num_layers": 3, "idf": True, "batch_size": 4}),
            ("long", long_c, long_r, {"num_layers": 3, "batch_size": 3}),
            ("long_idf", long_c, long_r, {"num_layers": 2, "idf": True, "batch_size": 2}),
        ]
        for tag, c, r, kw in runs:
            p, rr, f = bert_score.score(c, r, model_type=str(d), lang=None, **kw)
            all_cases.append(
                {
                    "name": f"{name}_{tag}",
                    "model_dir": name,
                    "cands": c,
                    "refs": r,
                    "kwargs": kw,
                    "expected": {"P": p.tolist(), "R": rr.tolist(), "F": f.tolist()},
                }
            )
        bs_utils.AutoModel.from_pretrained = real_from_pretrained
    meta = {
        "bert_score": version("bert-score"),
        "transformers": version("transformers"),
        "torch": torch.__version__,
        "code": "Alibaba-NLP/new-impl modeling.py (copy at xuhaike/SparseCL sparsecl/gte/)",
        "note": "bert_score.score with AutoModel.from_pretrained given trust_remote_code=True",
    }
    (out / "cases.json").write_text(json.dumps({"meta": meta, "cases": all_cases}, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
