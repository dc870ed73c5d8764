"""Random-weight checkpoints with the shapes of large published models, for benchmarks.

Benchmarking ``lang="en"`` (roberta-large, layer 17) needs no download: its cost depends on the
shape, not on the trained values. :func:`roberta_large_shape` writes a RoBERTa checkpoint with
roberta-large's config (hidden 1,024, 24 layers, 16 heads, FFN 4,096, vocabulary 50,265, 514
positions, one token type, LayerNorm eps 1e-5) and weights drawn like transformers' initialiser
(normal, std 0.02; LayerNorm 1 and 0; biases 0), streamed to ``model.safetensors`` one tensor at a
time (peak memory: one tensor, not 1.4 GB).

Its tokenizer is a byte-level BPE trained with ``tokenizers`` on the benchmark's own texts, its
vocabulary size (:data:`BPE_VOCAB`) chosen so that the texts make about as many tokens as
roberta-large's GPT-2 BPE would (GPT-2's vocabulary cannot be had without a download; its token
counts on English news are close to BERT's WordPiece, which the bench checks against MiniLM's
tokenizer and prints). Saved as ``vocab.json`` + ``merges.txt`` with a ``RobertaTokenizer``
config, so bert_score's slow tokenizer and rust-bertscore's read the same files.

:func:`qwen3_embedding_shape` writes Qwen/Qwen3-Embedding-0.6B's shape (a Qwen3 decoder: hidden
1,024, 28 layers, 16 query and 8 key/value heads of 128, FFN 3,072, vocabulary 151,669, 32,768
positions; 2.4 GB in fp32), its tokenizer a byte-level BPE of the same kind saved with a
``Qwen2Tokenizer`` config (no special tokens around a text, as Qwen3-Embedding's slow tokenizer).

:func:`deberta_xlarge_shape` does the same for microsoft/deberta-xlarge-mnli (DeBERTa v1: hidden
1,024, 48 layers, 16 heads, FFN 4,096, relative attention c2p|p2c over 512 positions, bert_score's
layer 40), with DeBERTa's ``[CLS]``/``[SEP]`` special tokens on the same kind of byte-level BPE.

The values mean nothing: the deviation of int8 from fp32 on such a model says little about a
trained one (trained models have outlier channels that random ones lack).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

ROBERTA_LARGE = {
    "architectures": ["RobertaModel"],
    "attention_probs_dropout_prob": 0.1,
    "bos_token_id": 0,
    "eos_token_id": 2,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "hidden_size": 1024,
    "initializer_range": 0.02,
    "intermediate_size": 4096,
    "layer_norm_eps": 1e-05,
    "max_position_embeddings": 514,
    "model_type": "roberta",
    "num_attention_heads": 16,
    "num_hidden_layers": 24,
    "pad_token_id": 1,
    "position_embedding_type": "absolute",
    "type_vocab_size": 1,
    "vocab_size": 50265,
}
"""roberta-large's config.json (the fields that shape the model)."""

ROBERTA_LARGE_LAYER = 17
"""bert_score's tuned layer for roberta-large (``lang="en"``)."""

BPE_VOCAB = 12_000
"""Vocabulary of the trained BPE: on the WMT pairs it gives about as many tokens as BERT's
WordPiece (checked and printed by the bench)."""

DEBERTA_XLARGE = {
    "architectures": ["DebertaModel"],
    "attention_probs_dropout_prob": 0.1,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "hidden_size": 1024,
    "initializer_range": 0.02,
    "intermediate_size": 4096,
    "layer_norm_eps": 1e-07,
    "max_position_embeddings": 512,
    "max_relative_positions": -1,
    "model_type": "deberta",
    "num_attention_heads": 16,
    "num_hidden_layers": 48,
    "pad_token_id": 0,
    "pos_att_type": ["c2p", "p2c"],
    "position_biased_input": False,
    "relative_attention": True,
    "type_vocab_size": 0,
    "vocab_size": 50265,
}
"""microsoft/deberta-xlarge-mnli's config.json (the fields that shape the encoder)."""

DEBERTA_XLARGE_LAYER = 40
"""bert_score's tuned layer for microsoft/deberta-xlarge-mnli."""

QWEN3_EMBEDDING_06B = {
    "architectures": ["Qwen3Model"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 151643,
    "eos_token_id": 151643,
    "head_dim": 128,
    "hidden_act": "silu",
    "hidden_size": 1024,
    "initializer_range": 0.02,
    "intermediate_size": 3072,
    "max_position_embeddings": 32768,
    "max_window_layers": 28,
    "model_type": "qwen3",
    "num_attention_heads": 16,
    "num_hidden_layers": 28,
    "num_key_value_heads": 8,
    "rms_norm_eps": 1e-06,
    "rope_scaling": None,
    "rope_theta": 1000000,
    "sliding_window": None,
    "tie_word_embeddings": True,
    "use_sliding_window": False,
    "vocab_size": 151669,
}
"""Qwen/Qwen3-Embedding-0.6B's config.json (the fields that shape the model)."""

QWEN3_EMBEDDING_06B_LAYER = 28
"""The default layer for Qwen3-Embedding-0.6B: the last (no tuned layer is known)."""

QWEN2_SPECIAL = {
    "eos_token": "<|endoftext|>",
    "pad_token": "<|endoftext|>",
    "unk_token": "<|endoftext|>",
}
QWEN2_ORDER = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
"""Qwen2Tokenizer's special tokens and their ids (0-2 here; 151,643-151,645 in Qwen's own)."""

ROBERTA_SPECIAL = {
    "bos_token": "<s>",
    "cls_token": "<s>",
    "eos_token": "</s>",
    "mask_token": "<mask>",
    "pad_token": "<pad>",
    "sep_token": "</s>",
    "unk_token": "<unk>",
}
ROBERTA_ORDER = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
"""RoBERTa's special tokens and their ids (0-4)."""

DEBERTA_SPECIAL = {
    "bos_token": "[CLS]",
    "cls_token": "[CLS]",
    "eos_token": "[SEP]",
    "mask_token": "[MASK]",
    "pad_token": "[PAD]",
    "sep_token": "[SEP]",
    "unk_token": "[UNK]",
}
DEBERTA_ORDER = ["[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"]
"""DeBERTa (v1)'s special tokens and their ids (0-4)."""


def layer_output_tensors(p: str, h: int, f: int) -> Iterator[tuple[str, tuple[int, ...], str]]:
    """The tensors after self-attention that BERT-like layers (RoBERTa, DeBERTa) name alike:
    attention output projection and LayerNorm, FFN in and out, output LayerNorm."""
    yield f"{p}attention.output.dense.weight", (h, h), "weight"
    yield f"{p}attention.output.dense.bias", (h,), "zero"
    yield f"{p}attention.output.LayerNorm.weight", (h,), "one"
    yield f"{p}attention.output.LayerNorm.bias", (h,), "zero"
    yield f"{p}intermediate.dense.weight", (f, h), "weight"
    yield f"{p}intermediate.dense.bias", (f,), "zero"
    yield f"{p}output.dense.weight", (h, f), "weight"
    yield f"{p}output.dense.bias", (h,), "zero"
    yield f"{p}output.LayerNorm.weight", (h,), "one"
    yield f"{p}output.LayerNorm.bias", (h,), "zero"


def roberta_tensors(config: dict) -> Iterator[tuple[str, tuple[int, ...], str]]:
    """(name, shape, kind) of every tensor of a RobertaModel; kind is weight, one or zero."""
    h, f = config["hidden_size"], config["intermediate_size"]
    yield "embeddings.word_embeddings.weight", (config["vocab_size"], h), "weight"
    yield "embeddings.position_embeddings.weight", (config["max_position_embeddings"], h), "weight"
    yield "embeddings.token_type_embeddings.weight", (config["type_vocab_size"], h), "weight"
    yield "embeddings.LayerNorm.weight", (h,), "one"
    yield "embeddings.LayerNorm.bias", (h,), "zero"
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        for name in ("attention.self.query", "attention.self.key", "attention.self.value"):
            yield f"{p}{name}.weight", (h, h), "weight"
            yield f"{p}{name}.bias", (h,), "zero"
        yield from layer_output_tensors(p, h, f)
    yield "pooler.dense.weight", (h, h), "weight"
    yield "pooler.dense.bias", (h,), "zero"


def deberta_tensors(config: dict) -> Iterator[tuple[str, tuple[int, ...], str]]:
    """(name, shape, kind) of every tensor of a (v1) DebertaModel with relative attention."""
    h, f = config["hidden_size"], config["intermediate_size"]
    span = config["max_relative_positions"]
    span = config["max_position_embeddings"] if span < 1 else span
    yield "embeddings.word_embeddings.weight", (config["vocab_size"], h), "weight"
    yield "embeddings.LayerNorm.weight", (h,), "one"
    yield "embeddings.LayerNorm.bias", (h,), "zero"
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        yield f"{p}attention.self.in_proj.weight", (3 * h, h), "weight"
        yield f"{p}attention.self.q_bias", (h,), "zero"
        yield f"{p}attention.self.v_bias", (h,), "zero"
        yield f"{p}attention.self.pos_proj.weight", (h, h), "weight"
        yield f"{p}attention.self.pos_q_proj.weight", (h, h), "weight"
        yield f"{p}attention.self.pos_q_proj.bias", (h,), "zero"
        yield from layer_output_tensors(p, h, f)
    yield "encoder.rel_embeddings.weight", (2 * span, h), "weight"


def qwen3_tensors(config: dict) -> Iterator[tuple[str, tuple[int, ...], str]]:
    """(name, shape, kind) of every tensor of a Qwen3Model (the names Qwen3-Embedding ships)."""
    h, f, d = config["hidden_size"], config["intermediate_size"], config["head_dim"]
    q, kv = config["num_attention_heads"] * d, config["num_key_value_heads"] * d
    yield "embed_tokens.weight", (config["vocab_size"], h), "weight"
    for i in range(config["num_hidden_layers"]):
        p = f"layers.{i}."
        yield f"{p}input_layernorm.weight", (h,), "one"
        yield f"{p}self_attn.q_proj.weight", (q, h), "weight"
        yield f"{p}self_attn.k_proj.weight", (kv, h), "weight"
        yield f"{p}self_attn.v_proj.weight", (kv, h), "weight"
        yield f"{p}self_attn.o_proj.weight", (h, q), "weight"
        yield f"{p}self_attn.q_norm.weight", (d,), "one"
        yield f"{p}self_attn.k_norm.weight", (d,), "one"
        yield f"{p}post_attention_layernorm.weight", (h,), "one"
        yield f"{p}mlp.gate_proj.weight", (f, h), "weight"
        yield f"{p}mlp.up_proj.weight", (f, h), "weight"
        yield f"{p}mlp.down_proj.weight", (h, f), "weight"
    yield "norm.weight", (h,), "one"


def random_arrays(
    config: dict, specs: Sequence[tuple[str, tuple[int, ...], str]], seed: int = 0
) -> Iterator[np.ndarray]:
    """The float32 values of ``specs`` (name, shape, kind), one tensor at a time: normal with
    std ``initializer_range`` (position embeddings' padding row 0), ones or zeros."""
    rng = np.random.default_rng(seed)
    std = float(config.get("initializer_range", 0.02))
    for name, shape, kind in specs:
        if kind == "weight":
            array = rng.standard_normal(shape, dtype=np.float32)
            array *= std
            if name.endswith("position_embeddings.weight"):
                array[config["pad_token_id"]] = 0.0
        elif kind == "one":
            array = np.ones(shape, np.float32)
        else:
            array = np.zeros(shape, np.float32)
        yield array


def write_random_safetensors(
    path: Path,
    config: dict,
    specs: Sequence[tuple[str, tuple[int, ...], str]],
    seed: int = 0,
) -> None:
    """Stream a float32 safetensors file of random weights for ``specs`` (name, shape, kind),
    one tensor in memory at a time."""
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, shape, _ in specs:
        size = 4 * int(np.prod(shape))
        header[name] = {
            "dtype": "F32",
            "shape": list(shape),
            "data_offsets": [offset, offset + size],
        }
        offset += size
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as out:
        out.write(struct.pack("<Q", len(raw)))
        out.write(raw)
        for array in random_arrays(config, specs, seed):
            out.write(np.ascontiguousarray(array, dtype="<f4").tobytes())
            del array
    tmp.replace(path)


def write_bpe_tokenizer(
    model_dir: Path,
    texts: Sequence[str],
    special: dict[str, str],
    order: Sequence[str],
    tokenizer_class: str,
    vocab_size: int = BPE_VOCAB,
) -> None:
    """Train a byte-level BPE on ``texts`` (special tokens ``order`` first, ids 0...) and save
    it as the slow tokenizer files of ``tokenizer_class`` (``vocab.json`` + ``merges.txt``)."""
    from tokenizers import ByteLevelBPETokenizer

    bpe = ByteLevelBPETokenizer(add_prefix_space=False)
    bpe.train_from_iterator(
        list(texts), vocab_size=vocab_size, min_frequency=2, special_tokens=list(order)
    )
    bpe.save_model(str(model_dir))
    tokenizer_config = {
        **special,
        "add_prefix_space": False,
        "clean_up_tokenization_spaces": False,
        "errors": "replace",
        "model_max_length": 512,
        "tokenizer_class": tokenizer_class,
    }
    if tokenizer_class == "RobertaTokenizer":
        tokenizer_config["trim_offsets"] = True
    elif tokenizer_class == "Qwen2Tokenizer":
        del tokenizer_config["add_prefix_space"]
        tokenizer_config["bos_token"] = None
    else:
        tokenizer_config["add_bos_token"] = False
    (model_dir / "tokenizer_config.json").write_text(json.dumps(tokenizer_config, indent=1))
    (model_dir / "special_tokens_map.json").write_text(json.dumps(special, indent=1))


def random_shape(
    root: Path,
    name: str,
    config: dict,
    specs: Sequence[tuple[str, tuple[int, ...], str]],
    texts: Sequence[str],
    tokenizer: tuple[dict[str, str], Sequence[str], str],
    seed: int = 0,
) -> Path:
    """A random-weight checkpoint ``root/name`` of ``config``, made once.

    Reused when ``root/name/DONE`` exists (the weights take 1.4-2.9 GB and a minute or two to
    write).
    """
    model_dir = root / name
    done = model_dir / "DONE"
    if done.is_file():
        return model_dir
    model_dir.mkdir(parents=True, exist_ok=True)
    (model_dir / "config.json").write_text(json.dumps(config, indent=1))
    write_bpe_tokenizer(model_dir, texts, *tokenizer)
    write_random_safetensors(model_dir / "model.safetensors", config, specs, seed)
    done.write_text(f"random weights, {name}\n")
    return model_dir


def roberta_large_shape(root: Path, texts: Sequence[str], seed: int = 0) -> Path:
    """roberta-large's shape (``lang="en"``) under ``root/roberta-large-shape``."""
    specs = list(roberta_tensors(ROBERTA_LARGE))
    tokenizer = (ROBERTA_SPECIAL, ROBERTA_ORDER, "RobertaTokenizer")
    return random_shape(root, "roberta-large-shape", ROBERTA_LARGE, specs, texts, tokenizer, seed)


def deberta_xlarge_shape(root: Path, texts: Sequence[str], seed: int = 0) -> Path:
    """microsoft/deberta-xlarge-mnli's shape under ``root/deberta-xlarge-shape``."""
    specs = list(deberta_tensors(DEBERTA_XLARGE))
    tokenizer = (DEBERTA_SPECIAL, DEBERTA_ORDER, "DebertaTokenizer")
    return random_shape(root, "deberta-xlarge-shape", DEBERTA_XLARGE, specs, texts, tokenizer, seed)


def qwen3_embedding_shape(root: Path, texts: Sequence[str], seed: int = 0) -> Path:
    """Qwen/Qwen3-Embedding-0.6B's shape under ``root/qwen3-embedding-0.6b-shape``."""
    specs = list(qwen3_tensors(QWEN3_EMBEDDING_06B))
    tokenizer = (QWEN2_SPECIAL, QWEN2_ORDER, "Qwen2Tokenizer")
    name = "qwen3-embedding-0.6b-shape"
    return random_shape(root, name, QWEN3_EMBEDDING_06B, specs, texts, tokenizer, seed)


MINILM_TOKENIZER_FILES = (
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
    "special_tokens_map.json",
)


def minilm_random_shape(root: Path, minilm_dir: Path, seed: int = 0) -> Path:
    """all-MiniLM-L6-v2's config and tokenizer (copied from ``minilm_dir``) with random
    weights (BERT's tensor names, which RobertaModel shares), under ``root/minilm-random``."""
    import shutil

    model_dir = root / "minilm-random"
    done = model_dir / "DONE"
    if done.is_file():
        return model_dir
    model_dir.mkdir(parents=True, exist_ok=True)
    for name in MINILM_TOKENIZER_FILES:
        if (minilm_dir / name).is_file():
            shutil.copy(minilm_dir / name, model_dir / name)
    config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    config.setdefault("pad_token_id", 0)
    specs = list(roberta_tensors(config))
    write_random_safetensors(model_dir / "model.safetensors", config, specs, seed)
    done.write_text("random weights, all-MiniLM-L6-v2's config\n")
    return model_dir
