"""Stage 2, tokens: turn prepared text into the token ids bert_score feeds the model.

bert_score 0.3.13 uses the slow ("Python") tokenizers of transformers. This module reproduces
their output with the Rust ``tokenizers`` library: ``strip()``, special tokens around the text, an
empty text as its special tokens only, a prefix space for RoBERTa-family byte-level BPE, and
truncation to the model's maximum length with the closing special token kept.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from tokenizers import Tokenizer

from .convert import max_positions
from .text import prepare_text

# Tokenizer classes whose slow version bert_score calls with add_prefix_space=True
# (``isinstance(tokenizer, (GPT2Tokenizer, RobertaTokenizer))``).
PREFIX_SPACE_CLASSES = frozenset(
    {
        "RobertaTokenizer",
        "GPT2Tokenizer",
        "BartTokenizer",
        "LongformerTokenizer",
    }
)
PREFIX_SPACE_MODEL_TYPES = frozenset({"roberta", "gpt2", "bart", "longformer"})

# transformers' placeholder for "no limit" (int(1e30)); anything this large is not a real limit.
_NO_LIMIT = 10**12


def _read_json(path: Path) -> dict:
    if not path.is_file():
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"cannot read {path}: {e}") from e
    return data if isinstance(data, dict) else {}


def _token_text(entry: object) -> str | None:
    if isinstance(entry, str):
        return entry
    if isinstance(entry, dict) and isinstance(entry.get("content"), str):
        return entry["content"]
    return None


class TextTokenizer:
    """A model's tokenizer, set up to encode exactly as bert_score's ``sent_encode``.

    Parameters
    ----------
    model_dir : path
        A directory with ``tokenizer.json``, or with ``vocab.txt`` (WordPiece) or
        ``vocab.json`` + ``merges.txt`` (byte-level BPE), plus the usual
        ``tokenizer_config.json`` / ``special_tokens_map.json``.
    config : dict
        The model's ``config.json`` (for ``model_type`` and the position table size).
    """

    def __init__(self, model_dir: str | Path, config: dict) -> None:
        self.model_dir = Path(model_dir)
        tok_config = _read_json(self.model_dir / "tokenizer_config.json")
        special_map = _read_json(self.model_dir / "special_tokens_map.json")
        self._tokenizer = _load_tokenizer(self.model_dir, tok_config)
        self.prefix_space = _wants_prefix_space(tok_config, config)
        self.cls_id = self._special_id("cls_token", tok_config, special_map, ("[CLS]", "<s>"))
        self.sep_id = self._special_id("sep_token", tok_config, special_map, ("[SEP]", "</s>"))
        self.max_length = _max_length(tok_config, config)
        self.vocab_size = int(self._tokenizer.get_vocab_size(with_added_tokens=True))
        self.base_vocab_size = int(self._tokenizer.get_vocab_size(with_added_tokens=False))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length=self.max_length)

    def _special_id(
        self, key: str, tok_config: dict, special_map: dict, fallbacks: tuple[str, ...]
    ) -> int:
        names = [_token_text(special_map.get(key)), _token_text(tok_config.get(key)), *fallbacks]
        for name in names:
            if name is None:
                continue
            token_id = self._tokenizer.token_to_id(name)
            if token_id is not None:
                return int(token_id)
        raise ValueError(f"the tokenizer in {self.model_dir} has no {key} (tried {names})")

    @property
    def special_ids(self) -> frozenset[int]:
        """The ids that weigh 0 in BERTScore: the [CLS]/<s> and [SEP]/</s> tokens."""
        return frozenset({self.cls_id, self.sep_id})

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each text, special tokens included, as bert_score's ``sent_encode``."""
        prepared = [prepare_text(t, self.prefix_space) for t in texts]
        out: list[list[int]] = [[self.cls_id, self.sep_id] for _ in prepared]
        todo = [i for i, t in enumerate(prepared) if t]
        if todo:
            encodings = self._tokenizer.encode_batch([prepared[i] for i in todo])
            for i, enc in zip(todo, encodings):
                out[i] = list(enc.ids)
        return out

    def id_to_token(self, token_id: int) -> str:
        """The vocabulary string of one id (for display)."""
        return self._tokenizer.id_to_token(token_id) or f"<{token_id}>"

    def token_text(self, token_id: int) -> str:
        """Readable text of one token: decoded as the tokenizer decodes it alone (no byte-level
        ``Ġ`` or SentencePiece ``▁`` marker; WordPiece keeps ``##``), surrounding whitespace
        dropped; the vocabulary piece when that leaves nothing (a bare space token)."""
        text = self._tokenizer.decode([token_id], skip_special_tokens=False).strip()
        return text or self.id_to_token(token_id)


def _load_tokenizer(model_dir: Path, tok_config: dict) -> Tokenizer:
    tokenizer_json = model_dir / "tokenizer.json"
    if tokenizer_json.is_file():
        try:
            return Tokenizer.from_file(str(tokenizer_json))
        except Exception as e:  # the Rust side raises a plain Exception
            raise ValueError(f"cannot load {tokenizer_json}: {e}") from e
    vocab_txt = model_dir / "vocab.txt"
    if vocab_txt.is_file():
        from tokenizers.implementations import BertWordPieceTokenizer

        lowercase = bool(tok_config.get("do_lower_case", True))
        strip_accents = tok_config.get("strip_accents")
        return BertWordPieceTokenizer(
            str(vocab_txt),
            lowercase=lowercase,
            strip_accents=strip_accents,
            handle_chinese_chars=bool(tok_config.get("tokenize_chinese_chars", True)),
            clean_text=True,
        )._tokenizer
    vocab_json, merges = model_dir / "vocab.json", model_dir / "merges.txt"
    if vocab_json.is_file() and merges.is_file():
        from tokenizers import processors
        from tokenizers.implementations import ByteLevelBPETokenizer

        bpe = ByteLevelBPETokenizer(str(vocab_json), str(merges), add_prefix_space=False)
        tokenizer = bpe._tokenizer
        bos, eos = tokenizer.token_to_id("<s>"), tokenizer.token_to_id("</s>")
        if bos is None or eos is None:
            raise ValueError(f"{vocab_json} has no <s> and </s> tokens")
        tokenizer.post_processor = processors.RobertaProcessing(("</s>", eos), ("<s>", bos))
        return tokenizer
    raise FileNotFoundError(
        f"no tokenizer in {model_dir}: expected tokenizer.json, vocab.txt, or vocab.json with "
        "merges.txt"
    )


def _wants_prefix_space(tok_config: dict, config: dict) -> bool:
    cls = str(tok_config.get("tokenizer_class") or "")
    if cls:
        return cls.removesuffix("Fast") in PREFIX_SPACE_CLASSES
    return str(config.get("model_type", "")) in PREFIX_SPACE_MODEL_TYPES


def _max_length(tok_config: dict, config: dict) -> int:
    """The tokenizer's ``model_max_length``, bounded by what the position table can hold."""
    try:
        positions: int | None = max_positions(config)
    except ValueError:  # no usable position table size in config.json
        positions = None
    declared = tok_config.get("model_max_length")
    if isinstance(declared, (int, float)) and 0 < declared < _NO_LIMIT:
        limit = int(declared)
        return min(limit, positions) if positions else limit
    if positions:
        return positions
    return 512
