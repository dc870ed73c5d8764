"""Scoring 2,000-token documents whole with nomic-embed-text-v1.5's shape against
``long_texts="window"`` on all-MiniLM-L6-v2: pairs/s and peak memory (issue 51).

nomic-embed-text-v1.5 (``nomic_bert``: hidden 768, 12 layers, 12 heads, SwiGLU FFN 3,072, no
biases, rotary base 1,000, 8,192 positions, ``max_trained_positions`` 2,048) with random weights
(the cost depends on the shape, not the values) and bert-base-uncased's WordPiece vocabulary
(MiniLM's ``vocab.txt``, the vocabulary nomic-embed-text uses), ``model_max_length`` 8,192; with
``rotary_scaling_factor`` 2, as the model card sets it for long inputs (below 2,048 tokens it
changes nothing). The documents are consecutive WMT lines (``hyps_long.txt`` / ``refs_long.txt``)
joined to about ``--tokens`` WordPiece tokens.

Each configuration runs in child processes: one that converts and caches the graph, one that
loads it and scores one short pair (the peak RSS of a loaded scorer), and one that scores the
documents after that warm-up pair: the wall time of that ``score()`` call and its peak RSS.

Usage: ``python -m benches.long_context [--pairs 4] [--tokens 2000] [--json out.json]``
(skips cleanly without the WMT files).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from benches.common import (
    default_model_dir,
    load_average,
    machine,
    peak_rss_mb,
    print_table,
    wmt_pairs,
    write_json,
)
from benches.shapes import write_random_safetensors

NOMIC_V15 = {
    "activation_function": "swiglu",
    "architectures": ["NomicBertModel"],
    "attn_pdrop": 0.0,
    "auto_map": {
        "AutoConfig": "nomic-ai/nomic-bert-2048--configuration_hf_nomic_bert.NomicBertConfig",
        "AutoModel": "nomic-ai/nomic-bert-2048--modeling_hf_nomic_bert.NomicBertModel",
    },
    "causal": False,
    "embd_pdrop": 0.0,
    "initializer_range": 0.02,
    "layer_norm_epsilon": 1e-12,
    "max_trained_positions": 2048,
    "mlp_fc1_bias": False,
    "mlp_fc2_bias": False,
    "model_type": "nomic_bert",
    "n_embd": 768,
    "n_head": 12,
    "n_inner": 3072,
    "n_layer": 12,
    "n_positions": 8192,
    "pad_vocab_size_multiple": 64,
    "prenorm": False,
    "qkv_proj_bias": False,
    "resid_pdrop": 0.0,
    "rotary_emb_base": 1000,
    "rotary_emb_fraction": 1.0,
    "rotary_emb_interleaved": False,
    "rotary_emb_scale_base": None,
    "rotary_scaling_factor": 2,
    "type_vocab_size": 2,
    "use_rms_norm": False,
    "vocab_size": 30528,
}
"""nomic-embed-text-v1.5's config.json (the fields that shape the model), scaling on."""


def nomic_tensors(config: dict) -> list[tuple[str, tuple[int, ...], str]]:
    h, f = config["n_embd"], config["n_inner"]
    specs = [
        ("embeddings.word_embeddings.weight", (config["vocab_size"], h), "weight"),
        ("embeddings.token_type_embeddings.weight", (2, h), "weight"),
        ("emb_ln.weight", (h,), "one"),
        ("emb_ln.bias", (h,), "zero"),
    ]
    for i in range(config["n_layer"]):
        p = f"encoder.layers.{i}"
        specs += [
            (f"{p}.attn.Wqkv.weight", (3 * h, h), "weight"),
            (f"{p}.attn.out_proj.weight", (h, h), "weight"),
            (f"{p}.mlp.fc11.weight", (f, h), "weight"),
            (f"{p}.mlp.fc12.weight", (f, h), "weight"),
            (f"{p}.mlp.fc2.weight", (h, f), "weight"),
            (f"{p}.norm1.weight", (h,), "one"),
            (f"{p}.norm1.bias", (h,), "zero"),
            (f"{p}.norm2.weight", (h,), "one"),
            (f"{p}.norm2.bias", (h,), "zero"),
        ]
    return specs


def nomic_v15_shape(root: Path, minilm_dir: Path) -> Path:
    """The random-weight checkpoint under ``root/nomic-embed-text-v1.5-shape``, made once."""
    model_dir = root / "nomic-embed-text-v1.5-shape"
    if (model_dir / "DONE").is_file():
        return model_dir
    model_dir.mkdir(parents=True, exist_ok=True)
    for name in ("vocab.txt", "special_tokens_map.json"):
        shutil.copy(minilm_dir / name, model_dir / name)
    tok = json.loads((minilm_dir / "tokenizer_config.json").read_text(encoding="utf-8"))
    tok.update(model_max_length=8192, tokenizer_class="BertTokenizer")
    (model_dir / "tokenizer_config.json").write_text(json.dumps(tok, indent=1))
    (model_dir / "config.json").write_text(json.dumps(NOMIC_V15, indent=1))
    specs = nomic_tensors(NOMIC_V15)
    write_random_safetensors(model_dir / "model.safetensors", NOMIC_V15, specs)
    (model_dir / "DONE").write_text("random weights, nomic-embed-text-v1.5's shape\n")
    return model_dir


def documents(lines: list[str], tokenizer, n: int, tokens: int) -> list[str]:
    """``n`` documents of consecutive ``lines`` joined to at least ``tokens`` tokens (the sum of
    the lines' own counts, each line encoded once)."""
    docs, current, count = [], [], 0
    for line, ids in zip(lines, tokenizer.encode(lines)):
        current.append(line)
        count += len(ids) - 2  # without [CLS] and [SEP]
        if count + 2 >= tokens:
            docs.append(" ".join(current))
            current, count = [], 0
            if len(docs) == n:
                break
    return docs


def child(spec_path: str) -> None:
    """Score the pairs of ``spec_path`` once after a warm-up; write the figures beside it."""
    import rust_bertscore as rb

    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    scorer = rb.BERTScorer(
        model_type=spec["model"], num_layers=spec["num_layers"], long_texts=spec["long_texts"]
    )
    scorer.score(["a warm-up pair"], ["a warm up pair"])
    if spec.get("warm_only"):
        return
    t0, c0 = time.perf_counter(), time.process_time()
    scorer.score(spec["cands"], spec["refs"])
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    lengths = [len(ids) for ids in scorer.tokenizer.encode(spec["cands"] + spec["refs"])]
    out = {"seconds": seconds, "cpu_seconds": cpu, "pairs": len(spec["cands"]), "tokens": lengths}
    Path(spec["out"]).write_text(json.dumps(out), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=2000)
    parser.add_argument("--root", type=Path, default=Path(tempfile.gettempdir()) / "rb-shapes")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    wmt = wmt_pairs("long_context", 3003, files=("hyps_long.txt", "refs_long.txt"))
    if wmt is None:
        return
    import rust_bertscore as rb

    minilm = default_model_dir()
    nomic = nomic_v15_shape(args.root, minilm)
    tok = rb.BERTScorer(model_type=str(minilm), num_layers=6).tokenizer
    half = len(wmt[0]) // 2
    cands = documents(wmt[0][:half], tok, args.pairs, args.tokens)
    refs = documents(wmt[1][half:], tok, args.pairs, args.tokens)
    runs = {
        "nomic-embed-text-v1.5 shape, whole": (str(nomic), 12, "truncate"),
        "all-MiniLM-L6-v2, window": (str(minilm), 6, "window"),
    }
    figures: dict = {"machine": machine(), "load_before": load_average(), "runs": {}}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, (model, layer, mode) in runs.items():
            spec = Path(tmp) / "spec.json"
            out = Path(tmp) / "out.json"
            spec.write_text(
                json.dumps(
                    {
                        "model": model,
                        "num_layers": layer,
                        "long_texts": mode,
                        "cands": cands,
                        "refs": refs,
                        "out": str(out),
                    }
                )
            )
            cmd = [sys.executable, "-m", "benches.long_context", "--child", str(spec)]
            env = {**os.environ, "HF_HUB_OFFLINE": "1"}
            warm = json.loads(spec.read_text(encoding="utf-8"))
            (Path(tmp) / "warm.json").write_text(json.dumps({**warm, "warm_only": True}))
            # converts and caches the graph; its peak is the baseline of a loaded scorer
            base_rss, _ = peak_rss_mb([*cmd[:-1], str(Path(tmp) / "warm.json")], env)
            base_rss, _ = peak_rss_mb([*cmd[:-1], str(Path(tmp) / "warm.json")], env)
            rss, _ = peak_rss_mb(cmd, env)
            got = json.loads(out.read_text(encoding="utf-8"))
            rate = got["pairs"] / got["seconds"]
            tokens = got["tokens"]
            figures["runs"][label] = {
                **got,
                "pairs_per_s": rate,
                "peak_rss_mb": rss,
                "loaded_rss_mb": base_rss,
            }
            rows.append(
                (
                    label,
                    f"{min(tokens)}-{max(tokens)}" if mode != "window" else "windows of 512",
                    f"{rate:.3f}",
                    f"{got['seconds']:.1f}",
                    f"{got['cpu_seconds']:.1f}",
                    f"{rss:.0f}",
                    f"{base_rss:.0f}",
                )
            )
    figures["load_after"] = load_average()
    print(
        f"{figures['machine']}; load before {figures['load_before']}, after {figures['load_after']}"
    )
    header = ("model", "tokens/text", "pairs/s", "s", "CPU s", "peak RSS MB", "loaded MB")
    print_table(header, rows, right=(1, 2, 3, 4, 5, 6))
    write_json(args.json, figures)


if __name__ == "__main__":
    main()
