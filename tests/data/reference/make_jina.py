"""Make the tiny jina-embeddings-v3 checkpoint and its references (``tests/data/reference/jina/``).

Run by hand in a side venv with torch, einops, transformers 4.57.6 and bert-score 0.3.13, never
by pytest and never by the package:

    python make_jina.py <dir with jinaai/xlm-roberta-flash-implementation's .py files>
        <tests/data/reference>

The ``.py`` files are jinaai/xlm-roberta-flash-implementation's (``modeling_lora.py``,
``modeling_xlm_roberta.py``, ``mha.py``, ``rotary.py``, ``block.py``, ``embedding.py``,
``mlp.py``, ``xlm_padding.py``, ``stochastic_depth.py``, ``configuration_xlm_roberta.py``; the
copy read was github.com/aoncevay/jina-wrapper's); they are loaded with
``trust_remote_code=True`` here only, and not copied into this repository. ``use_flash_attn`` is
false (the remote code's torch attention: padding keys get -10000).

The tiny checkpoint ``jina``: ``XLMRobertaLoRA`` with random weights (seeded), 3 layers, hidden
32, 2 heads, GELU MLP 64, rotary positions (``rotary_emb_base`` 20,000), ``type_vocab_size`` 1,
five LoRA adapters of rank 4 (``lora_alpha`` 1) with random A and B on every linear and
embedding layer, and the WordPiece tokenizer of the reference set's tiny BERT (the converter
does not depend on the tokenizer; the real model's is XLM-R's).

For the base weights (no adapter: what the model's ``encode()`` without ``task`` computes) and
the tasks ``text-matching`` and ``retrieval.query`` (``adapter_mask`` = that task for every row):
- ``hidden_states_<task>.npz``: ids and every layer's hidden states of a few texts, each alone;
- ``cases.json``: bert_score 0.3.13's P/R/F, with bert_score's model loader replaced by the
  remote model run on bert_score's padded batches with that ``adapter_mask``
  (``out[0]`` = hidden state ``num_layers``; ``output_hidden_states`` for all layers).
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
from transformers.utils import HF_MODULES_CACHE

HUB = "jinaai/xlm-roberta-flash-implementation--"
HUB_AUTO_MAP = {
    "AutoConfig": HUB + "configuration_xlm_roberta.XLMRobertaFlashConfig",
    "AutoModel": HUB + "modeling_lora.XLMRobertaLoRA",
    "AutoModelForMaskedLM": HUB + "modeling_xlm_roberta.XLMRobertaForMaskedLM",
    "AutoModelForPreTraining": HUB + "modeling_xlm_roberta.XLMRobertaForPreTraining",
}
TASKS = ["retrieval.query", "retrieval.passage", "separation", "classification", "text-matching"]
REFERENCE_TASKS = ("base", "text-matching", "retrieval.query")


def config() -> dict:
    return {
        "architectures": ["XLMRobertaModel"],
        "attention_probs_dropout_prob": 0.1,
        "bos_token_id": 0,
        "classifier_dropout": None,
        "emb_pooler": None,
        "eos_token_id": 2,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "hidden_size": 32,
        "initializer_range": 0.02,
        "intermediate_size": 64,
        "layer_norm_eps": 1e-05,
        "load_trained_adapters": True,
        "lora_adaptations": TASKS,
        "lora_alpha": 1,
        "lora_dropout_p": 0.0,
        "lora_main_params_trainable": False,
        "lora_rank": 4,
        "max_position_embeddings": 8194,
        "model_type": "xlm-roberta",
        "num_attention_heads": 2,
        "num_hidden_layers": 3,
        "pad_token_id": 0,
        "position_embedding_type": "rotary",
        "rotary_emb_base": 20000.0,
        "torch_dtype": "float32",
        "type_vocab_size": 1,
        "use_cache": True,
        "use_flash_attn": False,
        "vocab_size": 1500,
        "task_instructions": {
            "retrieval.query": "Represent the query for retrieving evidence documents: ",
            "retrieval.passage": "Represent the document for retrieval: ",
            "separation": "",
            "classification": "",
            "text-matching": "",
        },
    }


def adapter(task: str, rows: int) -> torch.Tensor | None:
    if task == "base":
        return None
    return torch.full((rows,), TASKS.index(task), dtype=torch.int32)


def run(model, x: torch.Tensor, mask: torch.Tensor, task: str) -> tuple[torch.Tensor, ...]:
    with torch.no_grad():
        out = model(
            x,
            attention_mask=mask,
            output_hidden_states=True,
            adapter_mask=adapter(task, x.shape[0]),
        )
    return tuple(out.hidden_states)


class TaskEncoder(torch.nn.Module):
    """What bert_score's ``bert_encode`` calls: the remote model on the padded batch with
    ``adapter_mask`` = the task (none for the base weights)."""

    def __init__(self, model, num_layers: int, all_layers: bool, task: str) -> None:
        super().__init__()
        self.model, self.num_layers, self.all_layers, self.task = (
            model,
            num_layers,
            all_layers,
            task,
        )

    def forward(self, x, attention_mask=None, output_hidden_states=False):
        states = run(self.model, x, attention_mask, self.task)
        if output_hidden_states:
            return (states[-1], states)
        return (states[self.num_layers],)


def build(code: Path, tiny_bert: Path, work: Path, out: Path, seed: int):
    d = work / "jina"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    for f in code.glob("*.py"):
        shutil.copy(f, d / f.name)
    for f in ("vocab.txt", "tokenizer_config.json", "special_tokens_map.json", "tokenizer.json"):
        shutil.copy(tiny_bert / f, d / f)
    local = {k: v.split("--")[1] for k, v in HUB_AUTO_MAP.items()}
    (d / "config.json").write_text(json.dumps({**config(), "auto_map": local}, indent=2))
    # transformers copies only the files it finds imported; mha.py and others are imported
    # inside try blocks, so every file goes to the dynamic-module cache first
    modules = Path(HF_MODULES_CACHE) / "transformers_modules" / d.name
    modules.mkdir(parents=True, exist_ok=True)
    for f in code.glob("*.py"):
        shutil.copy(f, modules / f.name)
    torch.manual_seed(seed)
    cfg = AutoConfig.from_pretrained(d, trust_remote_code=True)
    model = AutoModel.from_config(cfg, trust_remote_code=True)
    with torch.no_grad():
        for name, p in model.state_dict().items():
            if "lora_" in name:
                p.normal_(0.0, 0.3)
            elif "norm" in name or "emb_ln" in name:
                p.copy_(
                    1.0 + 0.2 * torch.randn_like(p)
                    if name.endswith("weight")
                    else 0.1 * torch.randn_like(p)
                )
            else:
                p.normal_(0.0, 0.15)
    model.eval()
    tensors = {k: v.contiguous() for k, v in model.state_dict().items()}
    save_file(tensors, str(d / "model.safetensors"), metadata={"format": "pt"})
    dest = out / "jina"
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
        json.dumps({**config(), "auto_map": HUB_AUTO_MAP}, indent=2) + "\n"
    )
    reloaded = AutoModel.from_pretrained(d, trust_remote_code=True)
    reloaded.eval()
    return d, reloaded


def main(code: str, reference: str) -> None:
    code_dir, ref = Path(code), Path(reference)
    out = ref / "jina"
    work = Path("/tmp/jina_work")
    cases4 = json.loads((ref / "tiny" / "cases4.json").read_text(encoding="utf-8"))["cases"]
    cands, refs = cases4[0]["cands"], cases4[0]["refs"]
    long_c = [" ".join(cands[i : i + 6]) for i in range(0, 18, 6)] + [cands[0]]
    long_r = [" ".join(refs[i : i + 7]) for i in range(0, 21, 7)] + [refs[1]]
    multi = [[r, refs[(i + 3) % len(refs)]] for i, r in enumerate(refs[:10])]
    d, model = build(code_dir, ref / "tiny" / "bert", work, out, 5103)
    tok = bs_utils.get_tokenizer(str(d), use_fast=False)
    texts = [*cands[:3], long_c[0]]
    ids = [bs_utils.sent_encode(tok, t) for t in texts]
    all_cases = []
    bs_score = sys.modules["bert_score.score"]
    orig_get_model = bs_utils.get_model
    for task in REFERENCE_TASKS:
        arrays = {}
        for i, row in enumerate(ids):
            x = torch.tensor([row])
            states = run(model, x, torch.ones_like(x), task)
            arrays[f"ids_{i}"] = np.asarray(row, np.int64)
            arrays[f"hidden_{i}"] = torch.stack([s[0] for s in states]).numpy().astype(np.float32)
        np.savez_compressed(out / f"hidden_states_{task}.npz", **arrays)

        def fake_get_model(model_type, num_layers, all_layers=None, _t=task):
            return TaskEncoder(model, num_layers, bool(all_layers), _t)

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
            ("long_idf", long_c, long_r, {"num_layers": 2, "idf": True, "batch_size": 2}),
        ]
        for tag, c, r, kw in runs:
            p, rr, f = bert_score.score(c, r, model_type=str(d), lang=None, **kw)
            all_cases.append(
                {
                    "name": f"{task}_{tag}",
                    "task": task,
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
        "code": "jinaai/xlm-roberta-flash-implementation (copy in aoncevay/jina-wrapper)",
        "note": "remote XLMRobertaLoRA, use_flash_attn false, adapter_mask per task; make_jina.py",
    }
    (out / "cases.json").write_text(json.dumps({"meta": meta, "cases": all_cases}, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
