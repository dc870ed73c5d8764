"""Make the reference data of tests/data/reference/more_families/ (run by hand, never by pytest).

Needs torch, transformers 4.57.6, bert-score 0.3.13 and sentencepiece (the project's
/work/torchenv venv); the package itself is not used. For each family it builds a seeded
random-weight checkpoint (3 layers, hidden size 64, 4 heads), saves it with ``save_pretrained``
(safetensors) and a slow tokenizer beside it, then records:

- ``<family>/hidden_states.npz``: ``ids_i`` (bert_score's ``sent_encode`` ids) and ``hidden_i``
  (PyTorch's hidden states of every layer of the whole model, ``output_hidden_states=True``; for
  Pegasus the encoder's, the last after its final layer norm) for 4 texts, each run alone, and
  the largest difference seen when the same texts run in one padded batch (``meta``);
- ``<family>/ids.json``: the slow tokenizer's ``sent_encode`` ids of every text of the cases and
  of a few edge cases;
- ``cases.json``: ``bert_score.score(cands, refs, model_type=<dir>, num_layers=L, ...)`` P/R/F.

Usage: /work/torchenv/bin/python tests/data/reference/make_more_families.py
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

import bert_score
import numpy as np
import sentencepiece as spm
import torch
import transformers
from bert_score.utils import sent_encode
from transformers import (
    AutoModel,
    AutoTokenizer,
    BertConfig,
    BertModel,
    BertTokenizer,
    BertweetTokenizer,
    BigBirdConfig,
    BigBirdModel,
    BigBirdTokenizer,
    BlenderbotConfig,
    BlenderbotModel,
    BlenderbotSmallConfig,
    BlenderbotSmallModel,
    BlenderbotSmallTokenizer,
    BlenderbotTokenizer,
    LEDConfig,
    LEDModel,
    LEDTokenizer,
    LongformerConfig,
    LongformerModel,
    LongformerTokenizer,
    PegasusConfig,
    PegasusModel,
    PegasusTokenizer,
    ProphetNetConfig,
    ProphetNetModel,
    ProphetNetTokenizer,
    RobertaConfig,
    RobertaModel,
    SqueezeBertConfig,
    SqueezeBertModel,
    SqueezeBertTokenizer,
    XLMProphetNetConfig,
    XLMProphetNetModel,
    XLMProphetNetTokenizer,
)

HERE = Path(__file__).resolve().parent
OUT = HERE / "more_families"
TINY = HERE / "tiny"
CASES2 = json.loads((TINY / "cases2.json").read_text())["cases"][0]
CANDS, REFS = CASES2["cands"], CASES2["refs"]
EDGE = [
    "",
    "   ",
    "Café naïve déjà vu",
    "CJK 中文字符 and emoji 🙂 here",
    "Numbers 1,234,567 and 9,8 then x",
    "Tabs\tand\nnewlines  inside",
    "UPPER lower MiXeD",
    "Ends with the end token </s>",
    "<mask_1> gap <mask_2> token <unk_7> and <unk> here",
    "[CLS] inside [SEP] and [MASK] text",
    "<s> bos <pad> pad",
]
SIZES = dict(hidden=64, heads=4, layers=3, ffn=96)


def texts_for_sp() -> list[str]:
    data = json.loads((HERE / "cases.json").read_text())
    out = []
    for case in data["cases"]:
        out.extend(case["cands"])
        for ref in case["refs"]:
            out.extend(ref if isinstance(ref, list) else [ref])
    return [t for t in out if t.strip()]


def train_sp(path: Path, vocab: int, **kwargs: object) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus.txt"
        corpus.write_text("\n".join(texts_for_sp()) + "\n", encoding="utf-8")
        spm.SentencePieceTrainer.train(
            input=str(corpus),
            model_prefix=str(Path(tmp) / "sp"),
            vocab_size=vocab,
            model_type="unigram",
            character_coverage=1.0,
            **kwargs,
        )
        shutil.copy(Path(tmp) / "sp.model", path)


def perturb_norms(model: torch.nn.Module, seed: int) -> None:
    """LayerNorm weights 1 + N(0, 0.2), biases N(0, 0.1): a wrong norm shows in the states."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.LayerNorm):
                shape = module.weight.shape
                module.weight.copy_(1 + 0.2 * torch.randn(shape, generator=gen))
                module.bias.copy_(0.1 * torch.randn(shape, generator=gen))


def save(model: torch.nn.Module, tokenizer: object, out: Path) -> None:
    if out.exists():
        shutil.rmtree(out)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    for extra in ("tokenizer.json", "generation_config.json"):
        (out / extra).unlink(missing_ok=True)


def make_bert(kind: str) -> Path:
    torch.manual_seed(11)
    out = OUT / f"bert-{kind.replace('_', '-')}"
    tok = BertTokenizer(str(TINY / "bert" / "vocab.txt"), do_lower_case=True)
    config = BertConfig(
        vocab_size=len(tok),
        hidden_size=SIZES["hidden"],
        num_hidden_layers=SIZES["layers"],
        num_attention_heads=SIZES["heads"],
        intermediate_size=SIZES["ffn"],
        max_position_embeddings=128,
        position_embedding_type=kind,
        initializer_range=0.4,
    )
    model = BertModel(config, add_pooling_layer=False)
    perturb_norms(model, 1)
    save(model, tok, out)
    return out


def make_longformer() -> Path:
    torch.manual_seed(12)
    out = OUT / "longformer"
    tok = LongformerTokenizer(
        str(TINY / "roberta" / "vocab.json"), str(TINY / "roberta" / "merges.txt")
    )
    config = LongformerConfig(
        vocab_size=len(tok),
        hidden_size=SIZES["hidden"],
        num_hidden_layers=SIZES["layers"],
        num_attention_heads=SIZES["heads"],
        intermediate_size=SIZES["ffn"],
        max_position_embeddings=130,
        attention_window=[4, 8, 4],  # one-sided 2, 4, 2 (each must divide the largest)
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        sep_token_id=2,
        initializer_range=0.4,
    )
    model = LongformerModel(config, add_pooling_layer=False)
    perturb_norms(model, 2)
    save(model, tok, out)
    return out


def make_pegasus() -> Path:
    torch.manual_seed(13)
    out = OUT / "pegasus"
    out.mkdir(parents=True, exist_ok=True)
    sp_path = OUT / "pegasus_spiece.model"
    train_sp(sp_path, 600, pad_id=0, eos_id=1, unk_id=2, bos_id=-1)
    tok = PegasusTokenizer(str(sp_path))
    config = PegasusConfig(
        vocab_size=tok.vocab_size,
        d_model=SIZES["hidden"],
        encoder_layers=SIZES["layers"],
        decoder_layers=1,
        encoder_attention_heads=SIZES["heads"],
        decoder_attention_heads=SIZES["heads"],
        encoder_ffn_dim=SIZES["ffn"],
        decoder_ffn_dim=64,
        max_position_embeddings=256,
        activation_function="relu",
        scale_embedding=True,
        init_std=0.4,
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
    )
    model = PegasusModel(config)
    perturb_norms(model, 3)
    save(model, tok, out)
    sp_path.unlink()
    return out


def make_bigbird() -> Path:
    torch.manual_seed(14)
    out = OUT / "bigbird"
    out.mkdir(parents=True, exist_ok=True)
    sp_path = OUT / "bigbird_spiece.model"
    train_sp(
        sp_path,
        600,
        pad_id=0,
        eos_id=1,
        bos_id=2,
        unk_id=3,
        user_defined_symbols=["[SEP]", "[CLS]", "[MASK]"],
    )
    tok = BigBirdTokenizer(str(sp_path))
    config = BigBirdConfig(
        vocab_size=len(tok),
        hidden_size=SIZES["hidden"],
        num_hidden_layers=SIZES["layers"],
        num_attention_heads=SIZES["heads"],
        intermediate_size=SIZES["ffn"],
        max_position_embeddings=512,
        hidden_act="gelu_new",
        attention_type="block_sparse",
        block_size=16,
        num_random_blocks=2,  # full attention up to (5 + 2 * 2) * 16 = 144 tokens
        pad_token_id=0,
        bos_token_id=2,
        eos_token_id=1,
        sep_token_id=4,
        initializer_range=0.4,
    )
    model = BigBirdModel(config, add_pooling_layer=False)
    perturb_norms(model, 4)
    save(model, tok, out)
    sp_path.unlink()
    return out


def make_blenderbot() -> Path:
    torch.manual_seed(15)
    out = OUT / "blenderbot"
    tok = BlenderbotTokenizer(
        str(TINY / "roberta" / "vocab.json"), str(TINY / "roberta" / "merges.txt")
    )
    config = BlenderbotConfig(
        vocab_size=len(tok),
        d_model=SIZES["hidden"],
        encoder_layers=SIZES["layers"],
        decoder_layers=1,
        encoder_attention_heads=SIZES["heads"],
        decoder_attention_heads=SIZES["heads"],
        encoder_ffn_dim=SIZES["ffn"],
        decoder_ffn_dim=64,
        max_position_embeddings=130,
        activation_function="gelu",
        scale_embedding=True,
        init_std=0.4,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        decoder_start_token_id=1,
    )
    model = BlenderbotModel(config)
    perturb_norms(model, 5)
    save(model, tok, out)
    return out


def _small_words(bertweet: bool = False) -> Counter:
    """Lower-cased words as BlenderbotSmallTokenizer splits them (Bertweet: the whitespace-split
    words as they are), with their counts."""
    counts: Counter = Counter()
    for text in texts_for_sp():
        for chunk in re.findall(r"\S+\n?", text):
            if bertweet:  # (no line breaks or other spaces in fastBPE's one-line entries)
                counts[chunk.rstrip()] += 1
                continue
            chunk = re.sub("([.,!?()])", r" \1", chunk)
            chunk = re.sub("(')", r" \1 ", chunk)
            chunk = re.sub(r"\s{2,}", " ", chunk)
            counts.update(t.lower() for t in chunk.split(" ") if t)
    return counts


def _apply(symbols: tuple[str, ...], pair: tuple[str, str]) -> tuple[str, ...]:
    out: list[str] = []
    i = 0
    while i < len(symbols):
        if i < len(symbols) - 1 and (symbols[i], symbols[i + 1]) == pair:
            out.append(symbols[i] + symbols[i + 1])
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return tuple(out)


def learn_small_bpe(
    out_dir: Path, n_merges: int = 400, bertweet: bool = False
) -> tuple[Path, Path]:
    """A word-level BPE (``@@`` continuation, ``</w>`` word ends) in BlenderbotSmall's format
    (Bertweet: fastBPE's ``vocab.txt`` dictionary and ``bpe.codes``), learned on the texts of
    cases.json."""
    counts = _small_words(bertweet)
    words = {w: (*w[:-1], w[-1] + "</w>") for w in counts}
    merges: list[tuple[str, str]] = []
    for _ in range(n_merges):
        pairs: Counter = Counter()
        for w, c in counts.items():
            sym = words[w]
            pairs.update({p: c for p in zip(sym, sym[1:])})
        if not pairs:
            break
        best = max(pairs, key=lambda p: (pairs[p], p))
        merges.append(best)
        words = {w: _apply(sym, best) for w, sym in words.items()}
    vocab = ["__null__", "__start__", "__end__", "__unk__"]
    chars = sorted({c for w in counts for c in w if not c.isspace()})
    symbols = [*chars, *(c + "</w>" for c in chars), *(a + b for a, b in merges)]
    for sym in symbols:
        piece = sym[:-4] if sym.endswith("</w>") else sym + "@@"
        if piece not in vocab:
            vocab.append(piece)
    out_dir.mkdir(parents=True, exist_ok=True)
    if bertweet:
        vocab_path, merges_path = out_dir / "vocab.txt", out_dir / "bpe.codes"
        vocab_path.write_text("".join(f"{p} 1\n" for p in vocab[4:]), encoding="utf-8")
        merges_path.write_text("".join(f"{a} {b} 1\n" for a, b in merges), encoding="utf-8")
        return vocab_path, merges_path
    vocab_path, merges_path = out_dir / "src_vocab.json", out_dir / "src_merges.txt"
    vocab_path.write_text(json.dumps({p: i for i, p in enumerate(vocab)}, ensure_ascii=False))
    merges_path.write_text(
        "#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges), encoding="utf-8"
    )
    return vocab_path, merges_path


def make_blenderbot_small() -> Path:
    torch.manual_seed(16)
    out = OUT / "blenderbot-small"
    vocab_path, merges_path = learn_small_bpe(OUT / "_small_bpe")
    tok = BlenderbotSmallTokenizer(str(vocab_path), str(merges_path))
    config = BlenderbotSmallConfig(
        vocab_size=len(tok),
        d_model=SIZES["hidden"],
        encoder_layers=SIZES["layers"],
        decoder_layers=1,
        encoder_attention_heads=SIZES["heads"],
        decoder_attention_heads=SIZES["heads"],
        encoder_ffn_dim=SIZES["ffn"],
        decoder_ffn_dim=64,
        max_position_embeddings=256,
        activation_function="gelu",
        scale_embedding=True,
        init_std=0.4,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        decoder_start_token_id=1,
    )
    model = BlenderbotSmallModel(config)
    perturb_norms(model, 6)
    save(model, tok, out)
    shutil.rmtree(OUT / "_small_bpe")
    return out


def make_bertweet() -> Path:
    torch.manual_seed(17)
    out = OUT / "bertweet"
    vocab_path, codes_path = learn_small_bpe(OUT / "_bertweet_bpe", n_merges=500, bertweet=True)
    tok = BertweetTokenizer(str(vocab_path), str(codes_path))
    config = RobertaConfig(
        vocab_size=len(tok),
        hidden_size=SIZES["hidden"],
        num_hidden_layers=SIZES["layers"],
        num_attention_heads=SIZES["heads"],
        intermediate_size=SIZES["ffn"],
        max_position_embeddings=258,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        initializer_range=0.4,
        tokenizer_class="BertweetTokenizer",  # as vinai/bertweet-base's config.json says
    )
    model = RobertaModel(config, add_pooling_layer=False)
    perturb_norms(model, 7)
    save(model, tok, out)
    shutil.rmtree(OUT / "_bertweet_bpe")
    return out


def make_squeezebert() -> Path:
    torch.manual_seed(18)
    out = OUT / "squeezebert"
    tok = SqueezeBertTokenizer(str(TINY / "bert" / "vocab.txt"), do_lower_case=True)
    config = SqueezeBertConfig(
        vocab_size=len(tok),
        hidden_size=SIZES["hidden"],
        embedding_size=SIZES["hidden"],
        num_hidden_layers=SIZES["layers"],
        num_attention_heads=SIZES["heads"],
        intermediate_size=SIZES["ffn"],
        max_position_embeddings=128,
        q_groups=4,
        k_groups=2,
        v_groups=4,
        post_attention_groups=2,
        intermediate_groups=4,
        output_groups=4,
        initializer_range=0.4,
    )
    model = SqueezeBertModel(config)
    perturb_norms(model, 8)
    save(model, tok, out)
    return out


def make_led() -> Path:
    torch.manual_seed(19)
    out = OUT / "led"
    tok = LEDTokenizer(str(TINY / "roberta" / "vocab.json"), str(TINY / "roberta" / "merges.txt"))
    config = LEDConfig(
        vocab_size=len(tok),
        d_model=SIZES["hidden"],
        encoder_layers=SIZES["layers"],
        decoder_layers=1,
        encoder_attention_heads=SIZES["heads"],
        decoder_attention_heads=SIZES["heads"],
        encoder_ffn_dim=SIZES["ffn"],
        decoder_ffn_dim=64,
        max_encoder_position_embeddings=130,
        max_decoder_position_embeddings=16,
        attention_window=[4, 8, 4],
        activation_function="gelu",
        init_std=0.4,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        decoder_start_token_id=2,
    )
    model = LEDModel(config)
    perturb_norms(model, 9)
    save(model, tok, out)
    return out


def make_prophetnet() -> Path:
    torch.manual_seed(20)
    out = OUT / "prophetnet"
    tok = ProphetNetTokenizer(str(TINY / "bert" / "vocab.txt"))
    config = ProphetNetConfig(
        vocab_size=len(tok),
        hidden_size=SIZES["hidden"],
        num_encoder_layers=SIZES["layers"],
        num_decoder_layers=1,
        num_encoder_attention_heads=SIZES["heads"],
        num_decoder_attention_heads=SIZES["heads"],
        encoder_ffn_dim=SIZES["ffn"],
        decoder_ffn_dim=64,
        max_position_embeddings=128,
        ngram=2,
        num_buckets=8,
        relative_max_distance=16,
        activation_function="gelu",
        init_std=0.4,
        pad_token_id=0,
    )
    model = ProphetNetModel(config)
    perturb_norms(model, 10)
    save(model, tok, out)
    return out


def make_xlm_prophetnet() -> Path:
    torch.manual_seed(21)
    out = OUT / "xlm-prophetnet"
    out.mkdir(parents=True, exist_ok=True)
    sp_path = OUT / "xprophetnet_spiece.model"
    train_sp(sp_path, 600, unk_id=0, bos_id=1, eos_id=2, pad_id=-1)
    tok = XLMProphetNetTokenizer(str(sp_path))
    config = XLMProphetNetConfig(
        vocab_size=tok.vocab_size,
        hidden_size=SIZES["hidden"],
        num_encoder_layers=SIZES["layers"],
        num_decoder_layers=1,
        num_encoder_attention_heads=SIZES["heads"],
        num_decoder_attention_heads=SIZES["heads"],
        encoder_ffn_dim=SIZES["ffn"],
        decoder_ffn_dim=64,
        max_position_embeddings=256,
        ngram=2,
        num_buckets=8,
        relative_max_distance=16,
        activation_function="gelu",
        init_std=0.4,
        pad_token_id=0,
    )
    model = XLMProphetNetModel(config)
    perturb_norms(model, 11)
    save(model, tok, out)
    sp_path.unlink()
    return out


def load(out: Path) -> tuple[torch.nn.Module, object]:
    """The model and tokenizer as bert_score loads them (AutoModel, slow AutoTokenizer)."""
    model = AutoModel.from_pretrained(str(out))
    model.eval()
    if hasattr(model, "decoder") and hasattr(model, "encoder"):
        model = model.encoder
    return model, AutoTokenizer.from_pretrained(str(out), use_fast=False)


def record(out: Path, family: str) -> dict:
    model, tok = load(out)
    texts = [CANDS[0], CANDS[1], CANDS[2], ""]
    if not sent_encode(tok, ""):  # BlenderbotSmall: no special tokens, an empty text is no input
        texts[3] = CANDS[4]
    ids = [sent_encode(tok, t) for t in texts]
    arrays: dict[str, np.ndarray] = {}
    with torch.no_grad():
        alone = []
        for i, row in enumerate(ids):
            x = torch.tensor([row])
            states = model(x, attention_mask=torch.ones_like(x), output_hidden_states=True)
            hidden = torch.stack(states.hidden_states)[:, 0].numpy().astype(np.float32)
            alone.append(hidden)
            arrays[f"ids_{i}"] = np.array(row, dtype=np.int64)
            arrays[f"hidden_{i}"] = hidden
        width = max(len(r) for r in ids) + 3
        pad = tok.pad_token_id
        batch = torch.full((len(ids), width), pad, dtype=torch.long)
        mask = torch.zeros((len(ids), width), dtype=torch.long)
        for i, row in enumerate(ids):
            batch[i, : len(row)] = torch.tensor(row)
            mask[i, : len(row)] = 1
        states = model(batch, attention_mask=mask, output_hidden_states=True)
        stacked = torch.stack(states.hidden_states).numpy()
        batch_diff = max(
            float(np.abs(stacked[:, i, : len(row)] - alone[i]).max()) for i, row in enumerate(ids)
        )
    np.savez_compressed(out / "hidden_states.npz", **arrays)
    every = list(dict.fromkeys(CANDS + REFS + EDGE))
    (out / "ids.json").write_text(
        json.dumps(
            {
                "tokenizer_class": type(tok).__name__,
                "texts": every,
                "ids": [sent_encode(tok, t) for t in every],
            },
            ensure_ascii=False,
        )
    )
    print(f"{family}: batched vs alone max |diff| {batch_diff:.2e}", file=sys.stderr)
    return {"family": family, "batched_vs_alone": batch_diff}


def score_cases(out: Path, family: str) -> list[dict]:
    cases = []
    settings: list[dict] = [
        {"num_layers": 2, "idf": False, "batch_size": 8},
        {"num_layers": 3, "idf": True, "batch_size": 8},
        {"num_layers": 1, "all_layers": True, "batch_size": 8},
    ]
    if family == "squeezebert":  # bert_score scores it with all_layers only: idf that way too
        settings.append({"num_layers": 2, "all_layers": True, "idf": True, "batch_size": 5})
    for kwargs in settings:
        name = family + "_" + "_".join(f"{k}{v}" for k, v in kwargs.items())
        try:
            P, R, F = bert_score.score(
                CANDS, REFS, model_type=str(out), device="cpu", use_fast_tokenizer=False, **kwargs
            )
        except Exception as exc:  # recorded: what bert_score itself does with this family
            print(f"{name}: bert_score raised {exc!r}", file=sys.stderr)
            cases.append(
                {
                    "name": name,
                    "model_dir": family,
                    "cands": CANDS,
                    "refs": REFS,
                    "kwargs": kwargs,
                    "bert_score_error": f"{type(exc).__name__}: {exc}",
                }
            )
            continue
        cases.append(
            {
                "name": name,
                "model_dir": family,
                "cands": CANDS,
                "refs": REFS,
                "kwargs": kwargs,
                "expected": {"P": P.tolist(), "R": R.tolist(), "F": F.tolist()},
            }
        )
    return cases


def main() -> None:
    OUT.mkdir(exist_ok=True)
    builders = {
        "bert-relative-key": lambda: make_bert("relative_key"),
        "bert-relative-key-query": lambda: make_bert("relative_key_query"),
        "longformer": make_longformer,
        "pegasus": make_pegasus,
        "bigbird": make_bigbird,
        "blenderbot": make_blenderbot,
        "blenderbot-small": make_blenderbot_small,
        "bertweet": make_bertweet,
        "squeezebert": make_squeezebert,
        "led": make_led,
        "prophetnet": make_prophetnet,
        "xlm-prophetnet": make_xlm_prophetnet,
    }
    wanted = sys.argv[1:] or list(builders)
    cases_path = OUT / "cases.json"
    data = json.loads(cases_path.read_text()) if cases_path.is_file() else {"meta": {}, "cases": []}
    batch_diffs = data["meta"].get("batched_vs_alone", {})
    data["meta"] = {
        "bert_score": bert_score.__version__,
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "note": "seeded random-weight tiny models made by make_more_families.py; "
        "model_type = the folder",
    }
    for family in wanted:
        out = builders[family]()
        batch_diffs[family] = record(out, family)["batched_vs_alone"]
        data["cases"] = [c for c in data["cases"] if c["model_dir"] != family]
        data["cases"].extend(score_cases(out, family))
    data["meta"]["batched_vs_alone"] = batch_diffs
    cases_path.write_text(json.dumps(data, ensure_ascii=False))


if __name__ == "__main__":
    main()
