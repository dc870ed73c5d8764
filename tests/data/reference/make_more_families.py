"""Make the reference data of tests/data/reference/more_families/ (run by hand, never by pytest).

Needs torch, transformers 4.57.6, bert-score 0.3.13 and sentencepiece (the project's
side venv); the package itself is not used. For each family of ``FAMILIES`` (a table:
tokenizer maker, config class and keywords, model class, seed) it builds a seeded random-weight
checkpoint (3 layers, hidden size 64, 4 heads), saves it with ``save_pretrained`` (safetensors)
and a slow tokenizer beside it, then records:

- ``<family>/hidden_states.npz``: ``ids_i`` (bert_score's ``sent_encode`` ids) and ``hidden_i``
  (PyTorch's hidden states of every layer of the whole model, ``output_hidden_states=True``; for
  Pegasus the encoder's, the last after its final layer norm) for 4 texts, each run alone, and
  the largest difference seen when the same texts run in one padded batch (``meta``);
- ``<family>/ids.json``: the slow tokenizer's ``sent_encode`` ids of every text of the cases and
  of a few edge cases;
- ``cases.json``: ``bert_score.score(cands, refs, model_type=<dir>, num_layers=L, ...)`` P/R/F.

Usage: python tests/data/reference/make_more_families.py [FAMILY ...]
(no names: every family; named ones replace their entries in cases.json, the others stay).
"""

from __future__ import annotations

import itertools
import json
import re
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
            pairs.update({p: c for p in itertools.pairwise(sym)})
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


# The sizes every family shares, under the names each kind of config gives them.
SHAPES: dict[str, dict[str, object]] = {
    "encoder": {  # BERT, RoBERTa, Longformer, BigBird, SqueezeBERT
        "hidden_size": SIZES["hidden"],
        "num_hidden_layers": SIZES["layers"],
        "num_attention_heads": SIZES["heads"],
        "intermediate_size": SIZES["ffn"],
        "initializer_range": 0.4,
    },
    "bart": {  # BART-like seq2seq (Pegasus, Blenderbot, LED): a 1-layer decoder bert_score drops
        "d_model": SIZES["hidden"],
        "encoder_layers": SIZES["layers"],
        "decoder_layers": 1,
        "encoder_attention_heads": SIZES["heads"],
        "decoder_attention_heads": SIZES["heads"],
        "encoder_ffn_dim": SIZES["ffn"],
        "decoder_ffn_dim": 64,
        "init_std": 0.4,
    },
    "prophetnet": {  # ProphetNet's own names for the same seq2seq sizes
        "hidden_size": SIZES["hidden"],
        "num_encoder_layers": SIZES["layers"],
        "num_decoder_layers": 1,
        "num_encoder_attention_heads": SIZES["heads"],
        "num_decoder_attention_heads": SIZES["heads"],
        "encoder_ffn_dim": SIZES["ffn"],
        "decoder_ffn_dim": 64,
        "init_std": 0.4,
    },
}

# Makes a family's slow tokenizer; its argument is a scratch folder for files it learns.
TokenizerMaker = Callable[[Path], Any]


def wordpiece(cls: type, **kwargs: object) -> TokenizerMaker:
    """``cls`` on tiny/bert's uncased WordPiece vocabulary."""
    return lambda scratch: cls(str(TINY / "bert" / "vocab.txt"), **kwargs)


def byte_bpe(cls: type) -> TokenizerMaker:
    """``cls`` on tiny/roberta's byte-level BPE (vocab.json, merges.txt)."""
    return lambda scratch: cls(
        str(TINY / "roberta" / "vocab.json"), str(TINY / "roberta" / "merges.txt")
    )


def sentencepiece(cls: type, **train_kwargs: object) -> TokenizerMaker:
    """``cls`` on a 600-piece unigram SentencePiece model learned on the texts of cases.json
    (``train_kwargs``: the special ids and symbols, as ``train_sp`` takes them)."""

    def make(scratch: Path) -> Any:
        sp_path = scratch / "spiece.model"
        train_sp(sp_path, 600, **train_kwargs)
        return cls(str(sp_path))

    return make


def word_bpe(cls: type, **learn_kwargs: Any) -> TokenizerMaker:
    """``cls`` on a word-level BPE from ``learn_small_bpe`` (its two files, in that order)."""

    def make(scratch: Path) -> Any:
        vocab_path, merges_path = learn_small_bpe(scratch / "bpe", **learn_kwargs)
        return cls(str(vocab_path), str(merges_path))

    return make


@dataclass(frozen=True)
class Family:
    """One random-weight checkpoint of more_families/: its tokenizer, config and model.

    ``torch.manual_seed(seed)`` comes before the model is made (its random weights) and
    ``seed - 10`` seeds ``perturb_norms``. The config gets ``vocab_size`` (``vocab_size(tok)``),
    the sizes ``SHAPES[shape]`` and ``config_kwargs``; the model is ``model(config,
    **model_kwargs)``. ``extra_settings`` are bert_score settings scored besides ``SETTINGS``.
    """

    name: str  # the folder under more_families/, bert_score's model_type and model_dir
    seed: int
    tokenizer: TokenizerMaker
    config: type
    shape: str
    config_kwargs: dict[str, Any]
    model: type
    model_kwargs: dict[str, Any] = field(default_factory=dict)
    vocab_size: Callable[[Any], int] = len
    extra_settings: tuple[dict[str, Any], ...] = ()


NO_POOLER = {"add_pooling_layer": False}
PROPHETNET = dict(ngram=2, num_buckets=8, relative_max_distance=16, activation_function="gelu")
FAMILIES = {
    family.name: family
    for family in [
        *(
            Family(
                name=f"bert-{kind.replace('_', '-')}",
                seed=11,
                tokenizer=wordpiece(BertTokenizer, do_lower_case=True),
                config=BertConfig,
                shape="encoder",
                config_kwargs=dict(max_position_embeddings=128, position_embedding_type=kind),
                model=BertModel,
                model_kwargs=NO_POOLER,
            )
            for kind in ("relative_key", "relative_key_query")
        ),
        Family(
            name="longformer",
            seed=12,
            tokenizer=byte_bpe(LongformerTokenizer),
            config=LongformerConfig,
            shape="encoder",
            config_kwargs=dict(
                max_position_embeddings=130,
                attention_window=[4, 8, 4],  # one-sided 2, 4, 2 (each must divide the largest)
                pad_token_id=1,
                bos_token_id=0,
                eos_token_id=2,
                sep_token_id=2,
            ),
            model=LongformerModel,
            model_kwargs=NO_POOLER,
        ),
        Family(
            name="pegasus",
            seed=13,
            tokenizer=sentencepiece(PegasusTokenizer, pad_id=0, eos_id=1, unk_id=2, bos_id=-1),
            vocab_size=lambda tok: tok.vocab_size,
            config=PegasusConfig,
            shape="bart",
            config_kwargs=dict(
                max_position_embeddings=256,
                activation_function="relu",
                scale_embedding=True,
                pad_token_id=0,
                eos_token_id=1,
                decoder_start_token_id=0,
            ),
            model=PegasusModel,
        ),
        Family(
            name="bigbird",
            seed=14,
            tokenizer=sentencepiece(
                BigBirdTokenizer,
                pad_id=0,
                eos_id=1,
                bos_id=2,
                unk_id=3,
                user_defined_symbols=["[SEP]", "[CLS]", "[MASK]"],
            ),
            config=BigBirdConfig,
            shape="encoder",
            config_kwargs=dict(
                max_position_embeddings=512,
                hidden_act="gelu_new",
                attention_type="block_sparse",
                block_size=16,
                num_random_blocks=2,  # full attention up to (5 + 2 * 2) * 16 = 144 tokens
                pad_token_id=0,
                bos_token_id=2,
                eos_token_id=1,
                sep_token_id=4,
            ),
            model=BigBirdModel,
            model_kwargs=NO_POOLER,
        ),
        Family(
            name="blenderbot",
            seed=15,
            tokenizer=byte_bpe(BlenderbotTokenizer),
            config=BlenderbotConfig,
            shape="bart",
            config_kwargs=dict(
                max_position_embeddings=130,
                activation_function="gelu",
                scale_embedding=True,
                pad_token_id=1,
                bos_token_id=0,
                eos_token_id=2,
                decoder_start_token_id=1,
            ),
            model=BlenderbotModel,
        ),
        Family(
            name="blenderbot-small",
            seed=16,
            tokenizer=word_bpe(BlenderbotSmallTokenizer),
            config=BlenderbotSmallConfig,
            shape="bart",
            config_kwargs=dict(
                max_position_embeddings=256,
                activation_function="gelu",
                scale_embedding=True,
                pad_token_id=0,
                bos_token_id=1,
                eos_token_id=2,
                decoder_start_token_id=1,
            ),
            model=BlenderbotSmallModel,
        ),
        Family(
            name="bertweet",
            seed=17,
            tokenizer=word_bpe(BertweetTokenizer, n_merges=500, bertweet=True),
            config=RobertaConfig,
            shape="encoder",
            config_kwargs=dict(
                max_position_embeddings=258,
                pad_token_id=1,
                bos_token_id=0,
                eos_token_id=2,
                tokenizer_class="BertweetTokenizer",  # as vinai/bertweet-base's config.json says
            ),
            model=RobertaModel,
            model_kwargs=NO_POOLER,
        ),
        Family(
            name="squeezebert",
            seed=18,
            tokenizer=wordpiece(SqueezeBertTokenizer, do_lower_case=True),
            config=SqueezeBertConfig,
            shape="encoder",
            config_kwargs=dict(
                embedding_size=SIZES["hidden"],
                max_position_embeddings=128,
                q_groups=4,
                k_groups=2,
                v_groups=4,
                post_attention_groups=2,
                intermediate_groups=4,
                output_groups=4,
            ),
            model=SqueezeBertModel,
            # bert_score scores it with all_layers only: idf that way too
            extra_settings=({"num_layers": 2, "all_layers": True, "idf": True, "batch_size": 5},),
        ),
        Family(
            name="led",
            seed=19,
            tokenizer=byte_bpe(LEDTokenizer),
            config=LEDConfig,
            shape="bart",
            config_kwargs=dict(
                max_encoder_position_embeddings=130,
                max_decoder_position_embeddings=16,
                attention_window=[4, 8, 4],
                activation_function="gelu",
                pad_token_id=1,
                bos_token_id=0,
                eos_token_id=2,
                decoder_start_token_id=2,
            ),
            model=LEDModel,
        ),
        Family(
            name="prophetnet",
            seed=20,
            tokenizer=wordpiece(ProphetNetTokenizer),
            config=ProphetNetConfig,
            shape="prophetnet",
            config_kwargs=dict(max_position_embeddings=128, pad_token_id=0, **PROPHETNET),
            model=ProphetNetModel,
        ),
        Family(
            name="xlm-prophetnet",
            seed=21,
            tokenizer=sentencepiece(
                XLMProphetNetTokenizer, unk_id=0, bos_id=1, eos_id=2, pad_id=-1
            ),
            vocab_size=lambda tok: tok.vocab_size,
            config=XLMProphetNetConfig,
            shape="prophetnet",
            config_kwargs=dict(max_position_embeddings=256, pad_token_id=0, **PROPHETNET),
            model=XLMProphetNetModel,
        ),
    ]
}


def build(family: Family) -> Path:
    """Make ``family``'s seeded checkpoint and slow tokenizer in more_families/<name>/."""
    torch.manual_seed(family.seed)
    out = OUT / family.name
    with tempfile.TemporaryDirectory() as scratch:
        tok = family.tokenizer(Path(scratch))
        config = family.config(
            vocab_size=family.vocab_size(tok), **SHAPES[family.shape], **family.config_kwargs
        )
        model = family.model(config, **family.model_kwargs)
        perturb_norms(model, family.seed - 10)
        save(model, tok, out)
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


# The bert_score settings every family is scored with (``Family.extra_settings`` adds more).
SETTINGS: list[dict[str, Any]] = [
    {"num_layers": 2, "idf": False, "batch_size": 8},
    {"num_layers": 3, "idf": True, "batch_size": 8},
    {"num_layers": 1, "all_layers": True, "batch_size": 8},
]


def score_cases(out: Path, family: Family) -> list[dict]:
    cases = []
    for kwargs in [*SETTINGS, *family.extra_settings]:
        name = family.name + "_" + "_".join(f"{k}{v}" for k, v in kwargs.items())
        case = {
            "name": name,
            "model_dir": family.name,
            "cands": CANDS,
            "refs": REFS,
            "kwargs": kwargs,
        }
        try:
            P, R, F = bert_score.score(
                CANDS, REFS, model_type=str(out), device="cpu", use_fast_tokenizer=False, **kwargs
            )
        except Exception as exc:  # recorded: what bert_score itself does with this family
            print(f"{name}: bert_score raised {exc!r}", file=sys.stderr)
            case["bert_score_error"] = f"{type(exc).__name__}: {exc}"
        else:
            case["expected"] = {"P": P.tolist(), "R": R.tolist(), "F": F.tolist()}
        cases.append(case)
    return cases


def main() -> None:
    OUT.mkdir(exist_ok=True)
    wanted = sys.argv[1:] or list(FAMILIES)
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
    for name in wanted:
        family = FAMILIES[name]
        out = build(family)
        batch_diffs[name] = record(out, name)["batched_vs_alone"]
        data["cases"] = [c for c in data["cases"] if c["model_dir"] != name]
        data["cases"].extend(score_cases(out, family))
    data["meta"]["batched_vs_alone"] = batch_diffs
    cases_path.write_text(json.dumps(data, ensure_ascii=False))


if __name__ == "__main__":
    main()
