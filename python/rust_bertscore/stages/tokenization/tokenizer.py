"""Stage 2, tokens: turn prepared text into the token ids bert_score feeds the model.

bert_score 0.3.13 uses the slow ("Python") tokenizers of transformers. This module reproduces
their ``sent_encode`` output: ``strip()``, the tokenizer class's special tokens around the text
(``[CLS] X [SEP]``, T5's ``X </s>``, mBART's ``X </s> en_XX``, mBART-50's ``en_XX X </s>``,
XLNet's ``X <sep> <cls>``, XLM's ``<s> X </s>``, Gemma's ``<bos> X <eos>``, none for Qwen2),
an empty text as its special tokens only (no tokens at all for Qwen2), a
prefix space for RoBERTa/GPT-2 byte-level BPE, and truncation to the model's maximum length
with the special tokens kept.

The sub-word ids come from one of these back ends: a SentencePiece ``.model`` file read with the
``sentencepiece`` library (the one the slow tokenizers use) for the SentencePiece classes,
UTF-8 bytes for ByT5, Moses and BPE for XLM (``moses_bpe.py``), word-level BPE for
BlenderbotSmall and Bertweet (``word_bpe.py``), and the Rust ``tokenizers`` library
(``tokenizer.json``, or ``vocab.txt``, or ``vocab.json`` + ``merges.txt``; ``fast.py``) for the
others.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from tokenizers import Tokenizer

from ...catalog.configs import full_attention_limit
from ...errors import InputValueError
from ...support.boundary import foreign_call
from ...support.inputs import read_json_object
from ...support.read_record import recording
from ..text import prepare_text
from .added_tokens import AddedToken, collect_added_tokens, named_special_tokens
from .byte_level import ByteIds
from .classes import (
    LAYOUT_BARE,
    LAYOUT_BOS_EOS,
    LAYOUT_BOS_SEP,
    LAYOUT_EOS,
    LAYOUT_EOS_ALWAYS,
    LAYOUT_MBART,
    LAYOUT_MBART50,
    LAYOUT_SEP_CLS,
    SENTENCEPIECE_FILES,
    TOKENIZER_CLASSES,
    TokenizerClass,
    tokenizer_class,
)
from .fast import (
    SLOW_ONLY_CLASSES,
    TEMPLATE_REBUILT_CLASSES,
    FastIds,
    entry_text,
    load_fast_tokenizer,
    load_use_fast_tokenizer,
    template_frame,
)
from .lengths import declares_no_limit, max_length_of
from .lower_first import lower_first
from .sentencepiece import SentencePieceIds

# Tokenizer classes whose slow version bert_score calls with add_prefix_space=True
# (``isinstance(tokenizer, (GPT2Tokenizer, RobertaTokenizer))``; in transformers 4.57 BART,
# Longformer and DeBERTa tokenizers are separate classes, not RobertaTokenizer subclasses).
PREFIX_SPACE_CLASSES = frozenset(c.name for c in TOKENIZER_CLASSES.values() if c.prefix_space)
PREFIX_SPACE_MODEL_TYPES = frozenset({"roberta", "gpt2"})

# Byte-level BPE classes whose own ``add_prefix_space`` option (tokenizer_config.json) adds it.
_OWN_PREFIX_SPACE_CLASSES = frozenset(
    {
        "BartTokenizer",
        "DebertaTokenizer",
        "LongformerTokenizer",
        "BlenderbotTokenizer",
        "LEDTokenizer",
    }
)

LOAD_KEEPS = (FileNotFoundError, ImportError)
"""What a tokenizer load lets through from the libraries (the missing file, the missing
package); anything else they raise or panic with is an ``InputValueError`` naming the folder."""

TOKENIZER_FILES: tuple[str, ...] = (
    "tokenizer.json",
    "vocab.txt",
    "vocab.json",
    "prophetnet.tokenizer",
    *SENTENCEPIECE_FILES,
)
"""Files any one of which holds a tokenizer's vocabulary (ByT5 needs none)."""


class _IdSource(Protocol):
    """A back end: sub-word ids without special tokens."""

    @property
    def base_vocab_size(self) -> int: ...

    @property
    def vocab_size(self) -> int: ...

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]: ...

    def token_to_id(self, token: str) -> int | None: ...

    def id_to_token(self, token_id: int) -> str | None: ...


def _read_json(path: Path) -> dict:
    """``tokenizer_config.json`` or ``special_tokens_map.json``: a JSON object ({} when the
    file is missing), read within ``support.inputs``' size and depth bounds."""
    if not path.exists():
        return {}
    return read_json_object(path, error=InputValueError)


def saved_special_tokens(model_dir: Path, tok_config: dict) -> dict:
    """``special_tokens_map.json`` as transformers 4.57 reads it
    (``PreTrainedTokenizerBase._from_pretrained``): only for a ``tokenizer_config.json``
    without ``added_tokens_decoder`` (the legacy layout), where its names then override
    ``tokenizer_config.json``'s; with ``added_tokens_decoder`` it is not read at all ({}), and
    neither is ``added_tokens.json`` (:func:`.added_tokens.collect_added_tokens`)."""
    if "added_tokens_decoder" in tok_config:
        return {}
    return _read_json(model_dir / "special_tokens_map.json")


class TextTokenizer:
    """A model's tokenizer, set up to encode exactly as bert_score's ``sent_encode``.

    Parameters
    ----------
    model_dir : path
        A directory with ``tokenizer.json``, or a SentencePiece model (``spiece.model``,
        ``spm.model``, ``sentencepiece.bpe.model``), or ``vocab.txt`` (WordPiece) or
        ``vocab.json`` + ``merges.txt`` (byte-level BPE), plus the usual
        ``tokenizer_config.json`` / ``special_tokens_map.json``. ByT5 needs only its
        ``tokenizer_config.json``.
    config : dict
        The model's ``config.json`` (for ``model_type`` and the position table size).
    fast : bool
        False (default): bert_score's slow tokenizer, as above. True: the model's fast
        tokenizer, as bert_score's ``use_fast_tokenizer=True`` gets it
        (:func:`~rust_bertscore.tokenization.fast.load_use_fast_tokenizer`; built from the
        SentencePiece model as transformers converts it when there is no ``tokenizer.json``),
        or the slow one where transformers has no fast class (XLM, ByT5, Bertweet, ProphetNet,
        XLM-ProphetNet), as ``AutoTokenizer`` then gives bert_score.

    Attributes
    ----------
    cls_id, sep_id : int or None
        The CLS and SEP tokens' ids; None for tokenizers without them (T5, ByT5).
    max_length : int or None
        Texts are truncated to this many tokens, special tokens included; None: no limit.
    """

    def __init__(self, model_dir: str | Path, config: dict, *, fast: bool = False) -> None:
        with recording(model_dir) as record:
            self._load(Path(model_dir), config, fast)
        self.files_read: dict[str, str] = dict(sorted(record.files.items()))
        """Every file the loader read (its name in the model's folder: the digest of its
        bytes, JSON by value): what :func:`~rust_bertscore.models.identity.tokenizer_digest`
        names, recorded at load (:mod:`rust_bertscore.support.read_record`)."""

    def _load(self, model_dir: Path, config: dict, fast: bool) -> None:
        self.model_dir = model_dir
        self.fast = fast
        tok_config = _read_json(self.model_dir / "tokenizer_config.json")
        special_map = saved_special_tokens(self.model_dir, tok_config)
        self.tokenizer_class: TokenizerClass = tokenizer_class(tok_config, config)
        tok_config = {**self.tokenizer_class.defaults, **tok_config}
        self._source: _IdSource
        self._tokenizer: Tokenizer | None
        # With use_fast_tokenizer=True bert_score gets the slow tokenizer where transformers
        # has no fast class (XLM, ByT5, ...): its fast path is then the slow one.
        uses_fast = fast and self.tokenizer_class.name not in SLOW_ONLY_CLASSES
        loading = f"cannot load the tokenizer of {self.model_dir}"
        if uses_fast:
            sentinels = (
                _sentinel_count(tok_config) if self.tokenizer_class.layout == LAYOUT_EOS else 0
            )
            with foreign_call(loading, InputValueError, LOAD_KEEPS):
                fast_tokenizer = load_use_fast_tokenizer(
                    self.model_dir, tok_config, special_map, self.tokenizer_class, sentinels
                )
            self._source = FastIds(fast_tokenizer, f"the tokenizer of {self.model_dir}")
            self._tokenizer = fast_tokenizer
        else:
            with foreign_call(loading, InputValueError, LOAD_KEEPS):
                self._source, self._tokenizer = _load_source(
                    self.model_dir, tok_config, special_map, self.tokenizer_class
                )
        # bert_score adds the prefix space itself for the slow RoBERTa/GPT-2 classes only.
        self.prefix_space = False if uses_fast else _wants_prefix_space(tok_config, config)
        # the slow classes lower-case the text before they split out added tokens
        self._lower_first = None
        if not uses_fast:
            added = collect_added_tokens(self.model_dir, tok_config, special_map, {})
            named = named_special_tokens(tok_config, special_map)
            self._lower_first = lower_first(self.tokenizer_class.name, tok_config, added, named)
        names = {
            key: [entry_text(special_map.get(key)), entry_text(tok_config.get(key))]
            for key in ("cls_token", "sep_token", "eos_token", "bos_token")
        }
        self.cls_id: int | None = None
        self.sep_id: int | None = None
        if self.tokenizer_class.has_cls_sep:
            self.cls_id = self._special_id("cls_token", [*names["cls_token"], "[CLS]", "<s>"])
            self.sep_id = self._special_id("sep_token", [*names["sep_token"], "[SEP]", "</s>"])
        self._prefix, self._suffix = self._frame(tok_config, names)
        self._empty = [] if self.tokenizer_class.bare_empty else self._prefix + self._suffix
        if uses_fast and self.tokenizer_class.fast_empty_bos_eos:
            self._empty = [
                self._special_id("bos_token", [*names["bos_token"], "<s>"]),
                self._special_id("eos_token", [*names["eos_token"], "</s>"]),
            ]
        # A fast tokenizer loaded from tokenizer.json adds what its post-processor says to a
        # text (an empty text gets the class's build_inputs_with_special_tokens, above).
        from_file = uses_fast or self.tokenizer_class.name == "PreTrainedTokenizerFast"
        if (
            from_file
            and self._tokenizer is not None
            and (self.model_dir / "tokenizer.json").is_file()
            and self.tokenizer_class.name not in TEMPLATE_REBUILT_CLASSES
        ):
            framed = template_frame(self._tokenizer)
            if framed is not None:
                self._prefix, self._suffix = framed
        # T5's slow tokenizer does not double a final </s>; its fast template always adds one.
        self._eos_if_absent = self.tokenizer_class.layout == LAYOUT_EOS and not uses_fast
        self.max_length = max_length_of(tok_config, config)
        # transformers' fast tokenizer cannot truncate to "no limit" (int(1e30)): bert_score's
        # fast path raises OverflowError on every non-empty text of such a checkpoint
        self._fast_unbounded = uses_fast and declares_no_limit(tok_config)
        self.full_attention_limit = full_attention_limit(config)
        self.vocab_size = int(self._source.vocab_size)
        self.embedding_rows: int | None = None
        """The model's embedding rows (``config.json``'s ``vocab_size``) when the tokenizer has
        ids past them (added tokens saved past the table): :meth:`encode_content` then refuses
        a text that gives one, and :attr:`vocab_size` (what tables by token id are sized by)
        stops at the table, however large a saved id is."""
        rows = config.get("vocab_size")
        if isinstance(rows, int) and not isinstance(rows, bool) and 0 < rows < self.vocab_size:
            self.embedding_rows = self.vocab_size = rows
            framing = [*self._prefix, *self._suffix, *self._empty]
            if framing and max(framing) >= rows:
                token_id = max(framing)
                raise InputValueError(
                    f"the tokenizer of {self.model_dir} frames every text with "
                    f"{self._source.id_to_token(token_id)!r} (id {token_id}), past the {rows} rows "
                    "of the model's embedding table (config.json vocab_size): the special token "
                    "files name a token the model has no vector for"
                )
        self.base_vocab_size = int(self._source.base_vocab_size)

    def _special_id(self, key: str, names: list[str | None]) -> int:
        for name in names:
            if name is None:
                continue
            token_id = self._source.token_to_id(name)
            if token_id is not None:
                return int(token_id)
        raise InputValueError(f"the tokenizer in {self.model_dir} has no {key} (tried {names})")

    def _frame(
        self, tok_config: dict, names: dict[str, list[str | None]]
    ) -> tuple[list[int], list[int]]:
        """The ids before and after a text (``build_inputs_with_special_tokens``)."""
        layout = self.tokenizer_class.layout
        if layout == LAYOUT_BARE:
            return [], []
        if layout == LAYOUT_SEP_CLS:
            return [], [self.sep_id, self.cls_id]  # type: ignore[list-item]
        if layout == LAYOUT_BOS_EOS:
            bos = self._special_id("bos_token", [*names["bos_token"], "<bos>"])
            eos = self._special_id("eos_token", [*names["eos_token"], "<eos>"])
            return (
                [bos] if _flag(tok_config, "add_bos_token") else [],
                [eos] if _flag(tok_config, "add_eos_token") else [],
            )
        if layout == LAYOUT_BOS_SEP:
            bos = self._special_id("bos_token", [*names["bos_token"], "<s>"])
            return [bos], [self.sep_id]  # type: ignore[list-item]
        if layout not in (LAYOUT_EOS, LAYOUT_EOS_ALWAYS, LAYOUT_MBART, LAYOUT_MBART50):
            return [self.cls_id], [self.sep_id]  # type: ignore[list-item]
        # ProphetNetTokenizer has no eos_token: it appends its [SEP]
        eos = self._special_id("eos_token", [*names["eos_token"], "</s>", "[SEP]"])
        if layout in (LAYOUT_EOS, LAYOUT_EOS_ALWAYS):
            return [], [eos]
        lang = str(tok_config.get("src_lang") or "en_XX")
        if lang not in self.tokenizer_class.language_codes:
            raise InputValueError(
                f"{self.model_dir}: src_lang {lang!r} is not one of the "
                f"{self.tokenizer_class.name}'s language codes"
            )
        lang_id = self._special_id("src_lang", [lang])
        return ([], [eos, lang_id]) if layout == LAYOUT_MBART else ([lang_id], [eos])

    @property
    def special_ids(self) -> frozenset[int]:
        """The ids that weigh 0 in BERTScore without idf: the tokenizer's CLS and SEP tokens.

        bert_score sets ``idf_dict[sep_token_id] = idf_dict[cls_token_id] = 0``; T5 and ByT5
        have neither, so their ``</s>`` weighs 1, and mBART's language code weighs 1.
        """
        return frozenset(i for i in (self.cls_id, self.sep_id) if i is not None)

    @property
    def empty_ids(self) -> list[int]:
        """What an empty (or all-whitespace) text encodes to: the special tokens only (none
        for ``PreTrainedTokenizerFast``, see :attr:`TokenizerClass.bare_empty`)."""
        return list(self._empty)

    @property
    def prefix_ids(self) -> list[int]:
        """The special tokens before a text's own (``[CLS]``; none for T5, XLNet, mBART)."""
        return list(self._prefix)

    @property
    def suffix_ids(self) -> list[int]:
        """The special tokens after a text's own (``[SEP]``, ``</s>``, ``</s> en_XX``)."""
        return list(self._suffix)

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each text, special tokens included, as bert_score's ``sent_encode``."""
        out = [self.build(ids) for ids in self.encode_content(texts)]
        if self.full_attention_limit is not None:
            self.check_full_attention(texts, out)
        return out

    def encode_content(self, texts: Sequence[str]) -> list[list[int] | None]:
        """Each text's own token ids: prepared as bert_score does, without special tokens and
        without truncation; None for an empty (or all-whitespace) text, which :meth:`build`
        turns into :attr:`empty_ids`."""
        prepared = [prepare_text(t, self.prefix_space) for t in texts]
        if self._lower_first is not None:
            prepared = [self._lower_first(t) for t in prepared]
        out: list[list[int] | None] = [None for _ in prepared]
        todo = [i for i, t in enumerate(prepared) if t]
        if todo:
            encoded = self._source.encode_batch([prepared[i] for i in todo])
            rows = self.embedding_rows
            for i, ids in zip(todo, encoded):
                out[i] = list(ids)
                if rows is not None and ids and max(ids) >= rows:
                    self._past_the_table(texts, i, max(ids), rows)
        return out

    def _past_the_table(self, texts: Sequence[str], i: int, token_id: int, rows: int) -> None:
        token = self._source.id_to_token(token_id)
        raise InputValueError(
            f"text {i} ({texts[i].strip()[:40]!r}...) has the added token {token!r} (id "
            f"{token_id}), past the {rows} rows of the model's embedding table (config.json "
            f"vocab_size of {self.model_dir}): the model has no vector for it (bert_score's "
            "fails on it too)"
        )

    def check_full_attention(self, texts: Sequence[str], ids: list[list[int]]) -> None:
        """``ValueError`` for a text longer than a block-sparse BigBird's full-attention limit."""
        limit = self.full_attention_limit
        for i, row in enumerate(ids):
            if limit is not None and len(row) > limit:
                start = texts[i].strip()[:40]
                raise InputValueError(
                    f"text {i} ({start!r}...) has {len(row)} tokens: the BigBird model in "
                    f"{self.model_dir} runs full attention on at most {limit} tokens and "
                    "block-sparse attention past that, which this package does not implement "
                    "(shorten or split the text, or score it whole with long_texts='window')"
                )

    def build(self, ids: list[int] | None, *, truncate: bool = True) -> list[int]:
        """A text's ids with the special tokens added (``build_inputs_with_special_tokens``),
        truncated first to :attr:`max_length` (keeping room for the special tokens) unless
        ``truncate`` is False. None (an empty text) gives :attr:`empty_ids`. With
        ``use_fast_tokenizer=True`` on a tokenizer that declares no ``model_max_length``,
        truncating raises ``InputValueError``, as bert_score's fast path fails there."""
        if ids is None:
            return self.empty_ids
        if truncate and self._fast_unbounded:
            raise InputValueError(
                f"use_fast_tokenizer=True: the tokenizer of {self.model_dir} declares no "
                "model_max_length, and bert_score's fast path fails on every non-empty text "
                "there (transformers' fast tokenizer raises OverflowError truncating to its "
                "default int(1e30)); set model_max_length in tokenizer_config.json, or leave "
                "use_fast_tokenizer=False"
            )
        n_special = len(self._prefix) + len(self._suffix)
        if truncate and self.max_length is not None and len(ids) + n_special > self.max_length:
            ids = ids[: max(self.max_length - n_special, 0)]
        if self._eos_if_absent and ids and ids[-1] == self._suffix[0]:
            return self._prefix + ids  # T5's _add_eos_if_not_present
        return self._prefix + ids + self._suffix

    def token_to_id(self, token: str) -> int | None:
        """The id of a vocabulary string, None when there is none."""
        return self._source.token_to_id(token)

    def id_to_token(self, token_id: int) -> str:
        """The vocabulary string of one id (for display)."""
        return self._source.id_to_token(token_id) or f"<{token_id}>"

    def token_text(self, token_id: int) -> str:
        """Readable text of one token: decoded as the tokenizer decodes it alone (no byte-level
        ``Ġ`` or SentencePiece ``▁`` marker; WordPiece keeps ``##``), surrounding whitespace
        dropped; the vocabulary piece when that leaves nothing (a bare space token)."""
        piece = self.id_to_token(token_id)
        if self._tokenizer is None:  # SentencePiece or byte back ends: the piece, unmarked
            text = piece[1:] if piece.startswith("▁") else piece.removesuffix("</w>")
        else:
            with foreign_call(
                f"the tokenizer of {self.model_dir} cannot decode {piece!r}", InputValueError
            ):
                text = self._tokenizer.decode([token_id], skip_special_tokens=False)
        return text.strip() or piece


def _load_source(
    model_dir: Path, tok_config: dict, special_map: dict, cls: TokenizerClass
) -> tuple[_IdSource, Tokenizer | None]:
    """The back end for a checkpoint, and the ``tokenizers.Tokenizer`` when it is that one."""
    if cls.name == "ByT5Tokenizer":
        return ByteIds(), None
    if cls.name == "BertweetTokenizer":
        from .word_bpe import BertweetIds

        added = collect_added_tokens(model_dir, tok_config, special_map, {})
        return BertweetIds(model_dir, added, tok_config), None
    if cls.name == "XLMTokenizer":
        from .moses_bpe import XLMIds

        added = collect_added_tokens(model_dir, tok_config, special_map, {})
        return XLMIds(model_dir, added, tok_config), None
    if cls.name == "BlenderbotSmallTokenizer":
        from .word_bpe import BlenderbotSmallIds

        added = collect_added_tokens(model_dir, tok_config, special_map, {})
        unk = entry_text(special_map.get("unk_token")) or entry_text(tok_config.get("unk_token"))
        return BlenderbotSmallIds(model_dir, added, unk or "__unk__"), None
    if cls.sentencepiece is not None:
        for name in cls.model_files:
            if (model_dir / name).is_file():
                extra = {"<mask>": AddedToken("<mask>", lstrip=True)} if cls.language_codes else {}
                extra.update({c: AddedToken(c) for c in cls.language_codes})
                sentinels = _sentinel_count(tok_config) if cls.layout == LAYOUT_EOS else 0
                extra.update(
                    {
                        f"<extra_id_{i}>": AddedToken(f"<extra_id_{i}>", lstrip=True, rstrip=True)
                        for i in range(sentinels)
                    }
                )
                added = collect_added_tokens(model_dir, tok_config, special_map, extra)
                source = SentencePieceIds(
                    model_dir / name,
                    cls.sentencepiece,
                    tok_config,
                    added,
                    cls.language_codes,
                    sentinels,
                )
                return source, None
    tokenizer = load_fast_tokenizer(model_dir, tok_config, special_map, cls)
    return FastIds(tokenizer, f"the tokenizer of {model_dir}"), tokenizer


def _flag(tok_config: dict, key: str) -> bool:
    """A true/false option of tokenizer_config.json (ValueError naming it otherwise)."""
    value = tok_config.get(key)
    if not isinstance(value, bool):
        raise InputValueError(f"tokenizer_config.json {key} must be true or false, got {value!r}")
    return value


def _sentinel_count(tok_config: dict) -> int:
    """T5's ``extra_ids`` (default 100): the ``<extra_id_N>`` sentinels past the pieces."""
    value = tok_config.get("extra_ids", 100)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputValueError(f"tokenizer_config.json extra_ids must be an int >= 0, got {value!r}")
    return value


def has_tokenizer_files(model_dir: Path) -> bool:
    """True when ``model_dir`` holds what :class:`TextTokenizer` needs to load."""
    if any((model_dir / name).is_file() for name in TOKENIZER_FILES):
        return True
    tok_config = _read_json(model_dir / "tokenizer_config.json")
    return str(tok_config.get("tokenizer_class") or "") == "ByT5Tokenizer"


def _wants_prefix_space(tok_config: dict, config: dict) -> bool:
    cls = str(tok_config.get("tokenizer_class") or config.get("tokenizer_class") or "")
    cls = cls.removesuffix("Fast")
    if cls:
        if cls in _OWN_PREFIX_SPACE_CLASSES:
            return bool(tok_config.get("add_prefix_space", False))
        return cls in PREFIX_SPACE_CLASSES
    return str(config.get("model_type", "")) in PREFIX_SPACE_MODEL_TYPES
