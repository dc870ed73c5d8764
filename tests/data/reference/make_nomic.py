"""Make the tiny nomic_bert checkpoints and their references (``tests/data/reference/nomic/``).

Run by hand in a side venv with torch, einops, transformers 4.57.6 and bert-score 0.3.13, never
by pytest and never by the package:

    python make_nomic.py <dir with modeling_hf_nomic_bert.py and configuration_hf_nomic_bert.py>
        <tests/data/reference>

The two ``.py`` files are nomic-ai/contrastors' ``src/contrastors/models/huggingface/`` files
(the code the Hub's nomic-ai/nomic-bert-2048 repository serves to nomic-embed-text v1/v1.5); they
are loaded with ``trust_remote_code=True`` here only, and not copied into this repository.

For each tiny checkpoint (``nomic``: plain rotary; ``nomic-v15``: ``rotary_scaling_factor`` 2
with ``max_trained_positions`` 24, so texts past 24 tokens take the dynamic-NTK base):
- random weights (seeded), 3 layers, hidden 32, 2 heads, SwiGLU, no biases, the WordPiece
  tokenizer of the reference set's tiny BERT;
- ``hidden_states.npz``: ids and every layer's hidden states of a few texts, each run alone;
- ``cases.json``: bert_score 0.3.13's P/R/F, with bert_score's model loader replaced by one
  that runs the remote code on each text alone (a fresh rotary cache each time: the remote
  NTK module keeps state between calls, see docs/models.md) and returns what bert_score would
  get from a truncated model (hidden state ``num_layers``) or ``output_hidden_states``.
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

HUB = "nomic-ai/nomic-bert-2048--"
HUB_AUTO_MAP = {
    "AutoConfig": HUB + "configuration_hf_nomic_bert.NomicBertConfig",
    "AutoModel": HUB + "modeling_hf_nomic_bert.NomicBertModel",
    "AutoModelForMaskedLM": HUB + "modeling_hf_nomic_bert.NomicBertForPreTraining",
}


def config_for(name: str) -> dict:
    config = {
        "activation_function": "swiglu",
        "architectures": ["NomicBertModel"],
        "attn_pdrop": 0.0,
        "bos_token_id": None,
        "causal": False,
        "dense_seq_output": True,
        "embd_pdrop": 0.0,
        "eos_token_id": None,
        "fused_bias_fc": False,
        "fused_dropout_add_ln": False,
        "initializer_range": 0.02,
        "layer_norm_epsilon": 1e-12,
        "max_trained_positions": 2048,
        "mlp_fc1_bias": False,
        "mlp_fc2_bias": False,
        "model_type": "nomic_bert",
        "n_embd": 32,
        "n_head": 2,
        "n_inner": 256,
        "n_layer": 3,
        "n_positions": 128,
        "pad_vocab_size_multiple": 64,
        "parallel_block": False,
        "parallel_block_tied_norm": False,
        "prenorm": False,
        "qkv_proj_bias": False,
        "reorder_and_upcast_attn": False,
        "resid_pdrop": 0.0,
        "rotary_emb_base": 10000,
        "rotary_emb_fraction": 1.0,
        "rotary_emb_interleaved": False,
        "rotary_emb_scale_base": None,
        "rotary_scaling_factor": None,
        "scale_attn_by_inverse_layer_idx": False,
        "scale_attn_weights": True,
        "summary_activation": None,
        "summary_first_dropout": 0.0,
        "summary_proj_to_labels": True,
        "summary_type": "cls_index",
        "summary_use_proj": True,
        "torch_dtype": "float32",
        "type_vocab_size": 2,
        "use_cache": True,
        "use_flash_attn": False,
        "use_rms_norm": False,
        "use_xentropy": False,
        "vocab_size": 1500,
    }
    if name == "nomic-v15":
        config.update(rotary_emb_base=1000, rotary_scaling_factor=2.0, max_trained_positions=24)
    return config


def reset_rotary(model) -> None:
    """A fresh rotary cache and base, as a newly loaded model has."""
    for layer in model.encoder.layers:
        rot = layer.attn.rotary_emb
        rot._seq_len_cached = 0
        rot._cos_cached = rot._sin_cached = None
        rot.register_buffer("inv_freq", rot._compute_inv_freq(), persistent=False)


def states_alone(model, ids: list[int]) -> np.ndarray:
    """[layers + 1, len, hidden]: emb_ln's output and each layer's, the text run alone."""
    reset_rotary(model)
    out: list[torch.Tensor] = []
    hooks = [model.emb_ln.register_forward_hook(lambda m, i, o: out.append(o[0]))]
    for layer in model.encoder.layers:
        hooks.append(layer.register_forward_hook(lambda m, i, o: out.append(o[0][0])))
    with torch.no_grad():
        x = torch.tensor([ids])
        model(x, attention_mask=torch.ones_like(x))
    for h in hooks:
        h.remove()
    return torch.stack(out).numpy()


class AloneEncoder(torch.nn.Module):
    """What bert_score's ``bert_encode`` calls: each row's text run alone through the remote
    model; ``out[0]`` = hidden state ``num_layers``, ``out[-1]`` = every state (all_layers)."""

    def __init__(self, model, num_layers: int, all_layers: bool) -> None:
        super().__init__()
        self.model, self.num_layers, self.all_layers = model, num_layers, all_layers

    def forward(self, x, attention_mask=None, output_hidden_states=False):
        b, t = x.shape
        depth = len(self.model.encoder.layers)
        full = torch.ones(b, depth + 1, t, self.model.config.n_embd)
        for row in range(b):
            n = int(attention_mask[row].sum())
            full[row, :, :n] = torch.from_numpy(states_alone(self.model, x[row, :n].tolist()))
        if output_hidden_states:
            return (full[:, -1], tuple(full[:, i] for i in range(depth + 1)))
        return (full[:, self.num_layers],)


def build(name: str, code: Path, tiny_bert: Path, work: Path, out: Path, seed: int):
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
    model_cls = type(AutoModel.from_config(cfg, trust_remote_code=True))
    model = model_cls(cfg, add_pooling_layer=False)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.15)
        for n_, p in model.named_parameters():
            if "norm" in n_ or "emb_ln" in n_:
                p.copy_(
                    1.0 + 0.2 * torch.randn_like(p)
                    if n_.endswith("weight")
                    else 0.1 * torch.randn_like(p)
                )
    model.eval()
    tensors = {k: v.contiguous() for k, v in model.state_dict().items()}
    save_file(tensors, str(d / "model.safetensors"), metadata={"format": "pt"})
    for f in ("vocab.txt", "tokenizer_config.json", "special_tokens_map.json", "tokenizer.json"):
        shutil.copy(tiny_bert / f, d / f)
    dest = out / name
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    for f in (
        "model.safetensors",
        "vocab.txt",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "tokenizer.json",
    ):
        shutil.copy(d / f, dest / f)
    (dest / "config.json").write_text(
        json.dumps({**config, "auto_map": HUB_AUTO_MAP}, indent=2) + "\n"
    )
    reloaded = AutoModel.from_pretrained(d, trust_remote_code=True)
    reloaded.eval()
    return d, reloaded


def main(code: str, reference: str) -> None:
    code_dir, ref = Path(code), Path(reference)
    out = ref / "nomic"
    work = Path("/tmp/nomic_work")
    cases4 = json.loads((ref / "tiny" / "cases4.json").read_text(encoding="utf-8"))["cases"]
    cands, refs = cases4[0]["cands"], cases4[0]["refs"]
    long_c = [" ".join(cands[i : i + 6]) for i in range(0, 18, 6)] + [cands[0]]
    long_r = [" ".join(refs[i : i + 7]) for i in range(0, 21, 7)] + [refs[1]]
    multi = [[r, refs[(i + 3) % len(refs)]] for i, r in enumerate(refs[:10])]
    all_cases = []
    bs_score = sys.modules["bert_score.score"]
    orig_get_model = bs_utils.get_model
    for seed, name in enumerate(("nomic", "nomic-v15")):
        d, model = build(name, code_dir, ref / "tiny" / "bert", work, out, seed + 51)
        tok = bs_utils.get_tokenizer(str(d), use_fast=False)
        texts = [*cands[:3], long_c[0]]
        ids = [bs_utils.sent_encode(tok, t) for t in texts]
        arrays = {}
        for i, row in enumerate(ids):
            arrays[f"ids_{i}"] = np.asarray(row, np.int64)
            arrays[f"hidden_{i}"] = states_alone(model, row).astype(np.float32)
        np.savez_compressed(out / name / "hidden_states.npz", **arrays)

        def fake_get_model(model_type, num_layers, all_layers=None, _m=model):
            return AloneEncoder(_m, num_layers, bool(all_layers))

        bs_utils.get_model = fake_get_model
        bs_score.get_model = fake_get_model
        runs = [
            ("num_layers2_idfFalse", cands, refs, {"num_layers": 2, "idf": False, "batch_size": 8}),
            ("num_layers3_idfTrue", cands, refs, {"num_layers": 3, "idf": True, "batch_size": 8}),
            (
                "num_layers1_all_layers",
                cands,
                refs,
                {"num_layers": 1, "all_layers": True, "batch_size": 8},
            ),
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
        bs_utils.get_model = bs_score.get_model = orig_get_model
    meta = {
        "bert_score": version("bert-score"),
        "transformers": version("transformers"),
        "torch": torch.__version__,
        "einops": version("einops"),
        "code": "nomic-ai/contrastors src/contrastors/models/huggingface/modeling_hf_nomic_bert.py",
        "note": "each text run alone by the remote code (fresh rotary state); see make_nomic.py",
    }
    (out / "cases.json").write_text(json.dumps({"meta": meta, "cases": all_cases}, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
