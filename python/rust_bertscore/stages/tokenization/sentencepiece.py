"""Sub-word ids from a SentencePiece ``.model`` file, as transformers' slow tokenizers give them.

The slow SentencePiece tokenizers (``T5Tokenizer``, ``AlbertTokenizer``, ``DebertaV2Tokenizer``,
``MBartTokenizer``, ``MBart50Tokenizer``) all run the ``sentencepiece`` library on the text
between added tokens, and differ in what they do before and after:

- ALBERT (``"albert"``): collapses whitespace, ``\\`\\``/``''`` -> ``"``, drops accents (NFKD)
  unless ``keep_accents``, lowercases with ``do_lower_case``, and splits pieces such as ``9,``.
- XLNet (``"xlnet"``): ALBERT's steps (XLNetTokenizer's ``preprocess_text`` and ``_tokenize``
  are ALBERT's), but ``do_lower_case`` defaults to false.
- DeBERTa v2/v3 (``"deberta-v2"``): lowercases with ``do_lower_case``; ``split_by_punct``
  encodes each punctuation-separated run on its own.
- T5/mT5 (``"plain"``): the pieces as they come (``legacy=True``, the default of every T5 in
  bert_score's table).
- Gemma (``"gemma"``): the pieces as they come (``GemmaTokenizer._tokenize`` is
  ``sp_model.encode``; its model adds no dummy prefix and falls back to bytes).
- mBART (``"fairseq"``): fairseq's ids, i.e. ``<s> <pad> </s> <unk>`` = 0..3, every other piece
  one above its SentencePiece id, then the language codes, then ``<mask>``.
- XLM-ProphetNet (``"xlm-prophetnet"``): ``[PAD] [CLS] [SEP] [UNK] [MASK]`` = 0..4,
  ``[unused0..9]`` = 5..14, every other piece 12 above its SentencePiece id (the unknown piece,
  id 0, gives ``[UNK]``).
- Pegasus (``"pegasus"``): every piece ``offset`` (103) above its SentencePiece id; ids below
  ``offset + 2`` go to ``<pad>`` 0, ``</s>`` 1, ``<mask_1>`` 2, ``<mask_2>`` 3 and
  ``<unk_2> .. <unk_{offset-1}>`` 4.. (PegasusTokenizer's ``added_tokens_decoder``).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from pathlib import Path

from ...errors import InputValueError
from ...support.boundary import foreign_call, library_path
from ...support.inputs import MAX_TOKENIZER_BYTES
from .added_tokens import AddedToken, AddedTokenSplitter
from .programs import read_model_proto

SPIECE_UNDERLINE = "\u2581"

_FAIRSEQ_SPECIALS = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}

XLM_PROPHETNET_IDS: dict[str, int] = {
    "[PAD]": 0,
    "[CLS]": 1,
    "[SEP]": 2,
    "[UNK]": 3,
    "[MASK]": 4,
    **{f"[unused{i}]": 5 + i for i in range(10)},
}
"""XLMProphetNetTokenizer's fixed ids (its ``fairseq_tokens_to_ids``)."""


def _load_processor(path: Path) -> object:
    try:
        import sentencepiece
    except ImportError as e:  # pragma: no cover - a declared dependency
        raise ImportError(
            f"{path.name} needs the sentencepiece package: pip install sentencepiece"
        ) from e
    read_model_proto(path)  # its character map checked before the library reads it
    processor = sentencepiece.SentencePieceProcessor()
    with (
        library_path(path, max_bytes=MAX_TOKENIZER_BYTES, error=InputValueError) as name,
        foreign_call(f"cannot load the SentencePiece model {path}", InputValueError),
    ):
        processor.Load(name)
    return processor


def _is_punctuation(char: str) -> bool:
    cp = ord(char)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _split_on_punctuation(text: str) -> list[str]:
    """Runs of non-punctuation and single punctuation characters (DeBERTa's ``split_by_punct``)."""
    out: list[list[str]] = []
    start_new = True
    for char in text:
        if _is_punctuation(char):
            out.append([char])
            start_new = True
        else:
            if start_new:
                out.append([])
            start_new = False
            out[-1].append(char)
    return ["".join(x) for x in out]


def pegasus_offset(tok_config: dict) -> int:
    """PegasusTokenizer's ``offset`` (default 103): the ids below the first piece's."""
    value = tok_config.get("offset", 103)
    if isinstance(value, bool) or not isinstance(value, int) or value < 2:
        raise InputValueError(f"tokenizer_config.json offset must be an int >= 2, got {value!r}")
    return value


def pegasus_added_ids(tok_config: dict, offset: int) -> dict[str, int]:
    """The tokens PegasusTokenizer places below its pieces, by text: pad, eos, then (when
    ``mask_token_sent`` is set) ``<mask_1>`` and the mask token, then ``<unk_2> ..
    <unk_{offset-1}>``."""

    def name(key: str, default: str | None) -> str | None:
        value = tok_config.get(key, default)
        if isinstance(value, dict):
            value = value.get("content")
        return value if isinstance(value, str) else None

    texts = [name("pad_token", "<pad>"), name("eos_token", "</s>")]
    mask_sent = name("mask_token_sent", "<mask_1>")
    if mask_sent is not None:
        texts += [mask_sent, name("mask_token", "<mask_2>")]
    texts += [f"<unk_{i}>" for i in range(2, offset)]
    return {text: i for i, text in enumerate(texts) if text is not None}


class SentencePieceIds:
    """Token ids of text without special tokens around it, by a slow tokenizer's rules.

    Parameters
    ----------
    model_path : Path
        The ``.model`` file.
    convention : str
        ``"plain"``, ``"gemma"``, ``"albert"``, ``"xlnet"``, ``"deberta-v2"``, ``"fairseq"``,
        ``"pegasus"`` or ``"xlm-prophetnet"``.
    tok_config : dict
        ``tokenizer_config.json`` (``do_lower_case``, ``keep_accents``, ``remove_space``,
        ``split_by_punct``, ``legacy``).
    added : dict
        The added tokens (text -> :class:`AddedToken`); their ids come from ``added_ids``.
    language_codes : sequence of str
        mBART's language codes (``"fairseq"`` only): their ids follow the pieces, then
        ``<mask>``'s.
    sentinel_count : int
        T5's ``extra_ids``: ``<extra_id_i>`` gets id ``pieces - 1 + sentinel_count - i``.
    """

    def __init__(
        self,
        model_path: Path,
        convention: str,
        tok_config: dict,
        added: dict[str, AddedToken],
        language_codes: Sequence[str] = (),
        sentinel_count: int = 0,
    ) -> None:
        if convention not in (
            "plain",
            "gemma",
            "albert",
            "xlnet",
            "deberta-v2",
            "fairseq",
            "pegasus",
            "xlm-prophetnet",
        ):
            raise InputValueError(f"unknown SentencePiece convention {convention!r}")
        if convention == "plain" and tok_config.get("legacy") is False:
            raise InputValueError(
                f"{model_path.parent}: T5 tokenizers with legacy=False are not supported "
                "(bert_score's T5 models all use the legacy behaviour)"
            )
        self.path = model_path
        self.convention = convention
        self._sp = _load_processor(model_path)
        self.piece_count = int(self._sp.GetPieceSize())  # type: ignore[attr-defined]
        # only ALBERT, XLNet and DeBERTa-v2 have a do_lower_case attribute for tokenize()
        self.do_lower_case = convention in ("albert", "xlnet", "deberta-v2") and bool(
            tok_config.get("do_lower_case", convention == "albert")
        )
        self.keep_accents = bool(tok_config.get("keep_accents", False))
        self.remove_space = bool(tok_config.get("remove_space", True))
        self.split_by_punct = bool(tok_config.get("split_by_punct", False))
        self._added_ids: dict[str, int] = {}
        self._fairseq_extra = 0
        self._offset = 0
        if convention == "pegasus":
            self._offset = pegasus_offset(tok_config)
            self._added_ids.update(pegasus_added_ids(tok_config, self._offset))
        if convention == "xlm-prophetnet":
            self._offset = 12
            self._added_ids.update(XLM_PROPHETNET_IDS)
        if convention == "fairseq":
            # MBartTokenizer: language codes after the pieces (offset 1), then <mask>
            for i, code in enumerate(language_codes):
                self._added_ids[code] = self.piece_count + i + 1
            self._added_ids["<mask>"] = self.piece_count + len(language_codes) + 1
            self._fairseq_extra = len(language_codes) + 2
        for i in range(sentinel_count):
            self._added_ids[f"<extra_id_{i}>"] = self.piece_count - 1 + sentinel_count - i
        # As transformers' slow classes number added tokens: the id saved for it
        # (added_tokens_decoder, added_tokens.json), past the model's pieces too; else the
        # piece's own; else (a named special token the model lacks) the next free id, in order.
        pending = []
        for text, token in added.items():
            if text in self._added_ids:
                continue
            piece_id = self._piece_id(text)
            if token.id is not None and token.id >= 0:
                self._added_ids[text] = token.id
            elif piece_id is not None:
                self._added_ids[text] = piece_id
            elif text:
                pending.append(text)
        for text in pending:
            self._added_ids[text] = self.vocab_size
        self._splitter = AddedTokenSplitter(
            {k: v for k, v in added.items() if k in self._added_ids}
        )
        self._unk_id = self._piece_id("<unk>")
        if self._unk_id is None:
            self._unk_id = self._piece_id("[UNK]") or 0

    @property
    def base_vocab_size(self) -> int:
        """The slow tokenizer's ``vocab_size``: ids below it come from the model file."""
        if self.convention == "fairseq":
            return self.piece_count + self._fairseq_extra
        return self.piece_count + self._offset

    @property
    def vocab_size(self) -> int:
        """One past the largest id this tokenizer can give."""
        top = max(self._added_ids.values(), default=-1)
        return max(self.base_vocab_size, top + 1)

    def _piece_id(self, piece: str) -> int | None:
        """The id of a piece, or None when the model does not have it."""
        if self.convention == "fairseq" and piece in _FAIRSEQ_SPECIALS:
            return _FAIRSEQ_SPECIALS[piece]
        sp_id = int(self._sp.PieceToId(piece))  # type: ignore[attr-defined]
        if self.convention == "pegasus":
            known = self._sp.IdToPiece(sp_id) == piece  # type: ignore[attr-defined]
            return sp_id + self._offset if known else None
        if self._sp.IdToPiece(sp_id) != piece:  # type: ignore[attr-defined]
            return None  # PieceToId answers the unknown piece's id for pieces it lacks
        if self.convention == "fairseq":
            return sp_id + 1 if sp_id else None
        if self.convention == "xlm-prophetnet":
            return sp_id + self._offset if sp_id else None
        return sp_id

    def token_to_id(self, token: str) -> int | None:
        """The id of a token (added token or piece), None when there is none."""
        if token in self._added_ids:
            return self._added_ids[token]
        return self._piece_id(token)

    def id_to_token(self, token_id: int) -> str | None:
        """The text of an id, None when out of range."""
        for text, i in self._added_ids.items():
            if i == token_id:
                return text
        sp_id = token_id - 1 if self.convention == "fairseq" else token_id - self._offset
        if 0 <= sp_id < self.piece_count:
            return str(self._sp.IdToPiece(sp_id))  # type: ignore[attr-defined]
        return None

    def _convert(self, piece: str) -> int:
        if self.convention == "fairseq":
            if piece in _FAIRSEQ_SPECIALS:
                return _FAIRSEQ_SPECIALS[piece]
            sp_id = int(self._sp.PieceToId(piece))  # type: ignore[attr-defined]
            return sp_id + 1 if sp_id else _FAIRSEQ_SPECIALS["<unk>"]
        if self.convention == "xlm-prophetnet":
            sp_id = int(self._sp.PieceToId(piece))  # type: ignore[attr-defined]
            return sp_id + self._offset if sp_id else XLM_PROPHETNET_IDS["[UNK]"]
        return int(self._sp.PieceToId(piece)) + self._offset  # type: ignore[attr-defined]

    def _albert_text(self, text: str) -> str:
        if self.remove_space:
            text = " ".join(text.strip().split())
        text = text.replace("``", '"').replace("''", '"')
        if not self.keep_accents:
            text = unicodedata.normalize("NFKD", text)
            text = "".join(c for c in text if not unicodedata.combining(c))
        if self.do_lower_case:
            text = text.lower()
        return text

    def _pieces(self, text: str) -> list[str]:
        encode = self._sp.encode  # type: ignore[attr-defined]
        if self.convention in ("albert", "xlnet"):
            pieces: list[str] = encode(self._albert_text(text), out_type=str)
            out: list[str] = []
            for piece in pieces:
                if len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit():
                    sub = list(encode(piece[:-1].replace(SPIECE_UNDERLINE, ""), out_type=str))
                    if piece[0] != SPIECE_UNDERLINE and sub and sub[0][0] == SPIECE_UNDERLINE:
                        if len(sub[0]) == 1:
                            sub = sub[1:]
                        else:
                            sub[0] = sub[0][1:]
                    sub.append(piece[-1])
                    out.extend(sub)
                else:
                    out.append(piece)
            return out
        if self.convention == "deberta-v2" and self.split_by_punct:
            return [p for w in _split_on_punctuation(text) for p in encode(w, out_type=str)]
        return list(encode(text, out_type=str))

    def encode(self, text: str) -> list[int]:
        """Ids of ``text`` (already stripped), no special tokens around it."""
        if self.do_lower_case:
            # PreTrainedTokenizer.tokenize lowercases the text outside added tokens first
            text = self._splitter.protect(text, str.lower)
        ids: list[int] = []
        for piece, is_added in self._splitter.split(text):
            if is_added:
                ids.append(self._added_ids[piece])
            else:
                ids.extend(self._convert(p) for p in self._pieces(piece))
        return ids

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """:meth:`encode` of each text."""
        return [self.encode(t) for t in texts]
