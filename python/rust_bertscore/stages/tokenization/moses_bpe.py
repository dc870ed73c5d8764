"""Sub-word ids of XLMTokenizer (``xlm-mlm-en-2048``, ``xlm-mlm-100-1280``): Moses
tokenisation, then BPE with ``</w>`` word ends over ``vocab.json`` + ``merges.txt``.

Facts from transformers 4.57's ``tokenization_xlm.py``, for the language bert_score tokenises
with (it passes none, so XLMTokenizer's default ``lang="en"``):

1. the text between added tokens (``<s>``, ``</s>``, ``<special0..9>`` ... are kept whole) is
   lowercased first when ``do_lowercase_and_remove_accent`` (default true; the tokenizer's
   ``do_lower_case``, which ``PreTrainedTokenizer.tokenize`` honours);
2. ``moses_pipeline``: XLM's own replacement of CJK and full-width punctuation
   (:func:`replace_unicode_punct`), sacremoses' ``MosesPunctNormalizer(lang="en")``, then every
   character of a Unicode category ``C*`` removed;
3. sacremoses' ``MosesTokenizer(lang="en").tokenize(text, escape=False)``;
4. with ``do_lowercase_and_remove_accent``: the tokens joined by spaces, lowercased, NFD, marks
   (``Mn``) dropped, lowercased again and split on spaces;
5. each non-empty token through the BPE merges (its last symbol marked ``</w>``), each piece's
   id ``vocab[piece]``, else the unknown token's.

sacremoses (pure Python, the reference Moses port that XLMTokenizer itself imports) is the
optional extra ``rust-bertscore[xlm]``; loading an XLM tokenizer without it raises an
ImportError that says how to install it.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from ...errors import InputValueError
from ...support.inputs import MAX_TOKENIZER_BYTES, read_json, read_text
from .added_tokens import AddedToken, AddedTokenSplitter
from .word_bpe import WordBpeIds, merge_symbols

LANG = "en"
"""The language XLMTokenizer tokenises with when given none (bert_score gives none)."""

_UNICODE_PUNCT: tuple[tuple[str, str], ...] = (
    ("，", ","),
    ("re:。", ". "),
    ("、", ","),
    ("”", '"'),
    ("“", '"'),
    ("∶", ":"),
    ("：", ":"),
    ("？", "?"),
    ("《", '"'),
    ("》", '"'),
    ("）", ")"),
    ("！", "!"),
    ("（", "("),
    ("；", ";"),
    ("１", "1"),
    ("」", '"'),
    ("「", '"'),
    ("０", "0"),
    ("３", "3"),
    ("２", "2"),
    ("５", "5"),
    ("６", "6"),
    ("９", "9"),
    ("７", "7"),
    ("８", "8"),
    ("４", "4"),
    ("re:．", ". "),
    ("～", "~"),
    ("’", "'"),
    ("…", "..."),
    ("━", "-"),
    ("〈", "<"),
    ("〉", ">"),
    ("【", "["),
    ("】", "]"),
    ("％", "%"),
)
"""XLM's ``replace_unicode_punct`` (a port of Moses' replace-unicode-punctuation.perl), in its
order; ``re:X`` replaces ``X`` and the whitespace after it."""


def replace_unicode_punct(text: str) -> str:
    """XLMTokenizer's replacement of CJK and full-width punctuation by ASCII."""
    for source, target in _UNICODE_PUNCT:
        if source.startswith("re:"):
            text = re.sub(re.escape(source[3:]) + r"\s*", target, text)
        else:
            text = text.replace(source, target)
    return text


def remove_non_printing_char(text: str) -> str:
    """Drop every character of a Unicode category ``C*`` (control, format, unassigned ...)."""
    return "".join(c for c in text if not unicodedata.category(c).startswith("C"))


def lowercase_and_remove_accent(tokens: list[str]) -> list[str]:
    """XLM's ``lowercase_and_remove_accent`` on a token list."""
    text = unicodedata.normalize("NFD", " ".join(tokens).lower())
    return "".join(c for c in text if unicodedata.category(c) != "Mn").lower().split(" ")


def _import_sacremoses(model_dir: Path) -> object:
    try:
        import sacremoses
    except ImportError as e:
        raise ImportError(
            f"the XLM tokenizer in {model_dir} needs the sacremoses package (Moses "
            "tokenisation): pip install sacremoses (or pip install 'rust-bertscore[xlm]')"
        ) from e
    return sacremoses


class XLMIds(WordBpeIds):
    """Token ids of text without special tokens, as XLMTokenizer gives them (``lang="en"``).

    Parameters
    ----------
    model_dir : Path
        Holds ``vocab.json`` and ``merges.txt``.
    added : dict
        The added tokens (text -> :class:`AddedToken`), kept whole.
    tok_config : dict
        ``tokenizer_config.json`` (``do_lowercase_and_remove_accent``, ``unk_token``), the
        class defaults under it.

    Raises
    ------
    ImportError
        Without sacremoses.
    ValueError
        For unreadable vocabulary files.
    """

    def __init__(self, model_dir: Path, added: dict[str, AddedToken], tok_config: dict) -> None:
        sacremoses = _import_sacremoses(model_dir)
        self._normalizer = sacremoses.MosesPunctNormalizer(lang=LANG)  # type: ignore[attr-defined]
        self._moses = sacremoses.MosesTokenizer(lang=LANG)  # type: ignore[attr-defined]
        vocab_path, merges_path = model_dir / "vocab.json", model_dir / "merges.txt"
        try:
            encoder = read_json(vocab_path, error=InputValueError, max_bytes=MAX_TOKENIZER_BYTES)
            lines = read_text(
                merges_path, max_bytes=MAX_TOKENIZER_BYTES, error=InputValueError
            ).split("\n")[:-1]
        except FileNotFoundError as e:
            raise InputValueError(f"cannot read the XLM vocabulary in {model_dir}: {e}") from e
        if not isinstance(encoder, dict):
            raise InputValueError(f"{vocab_path}: expected a JSON object of token -> id")
        self.encoder: dict[str, int] = encoder
        self.decoder = {v: k for k, v in encoder.items()}
        self.ranks: dict[tuple[str, ...], int] = {
            tuple(line.split()[:2]): i for i, line in enumerate(lines)
        }
        self.do_lower = bool(tok_config.get("do_lowercase_and_remove_accent", True))
        unk = tok_config.get("unk_token", "<unk>")
        unk = unk.get("content") if isinstance(unk, dict) else unk
        self.unk_id = encoder.get(unk) if isinstance(unk, str) else None
        self._added_ids: dict[str, int] = {}
        for text, token in added.items():
            token_id = encoder.get(text, token.id)
            if token_id is not None:
                self._added_ids[text] = int(token_id)
        self._splitter = AddedTokenSplitter(
            {k: v for k, v in added.items() if k in self._added_ids}
        )
        self.base_vocab_size = len(encoder)
        self.vocab_size = max(self.base_vocab_size, max(self._added_ids.values(), default=-1) + 1)
        self._cache: dict[str, list[int]] = {}

    def words(self, text: str) -> list[str]:
        """Moses' tokens of ``text`` (no added token in it), lowercased and unaccented with
        ``do_lowercase_and_remove_accent``."""
        text = replace_unicode_punct(text)
        text = self._normalizer.normalize(text)  # type: ignore[attr-defined]
        text = remove_non_printing_char(text)
        tokens: list[str] = self._moses.tokenize(text, return_str=False, escape=False)  # type: ignore[attr-defined]
        return lowercase_and_remove_accent(tokens) if self.do_lower else tokens

    def _word_ids(self, token: str) -> list[int]:
        ids = self._cache.get(token)
        if ids is None:
            word = merge_symbols((*token[:-1], token[-1] + "</w>"), self.ranks)
            ids = []
            for piece in word:
                token_id = self.encoder.get(piece, self.unk_id)
                if token_id is None:
                    raise InputValueError(
                        f"{piece!r} is not in the vocabulary and it has no unknown token"
                    )
                ids.append(int(token_id))
            self._cache[token] = ids
        return ids

    def encode(self, text: str) -> list[int]:
        """Ids of ``text`` (already stripped), no special tokens around it: lowercased outside
        added tokens with ``do_lowercase_and_remove_accent``, then as every word-level BPE."""
        if self.do_lower:
            text = self._splitter.protect(text, str.lower)
        return super().encode(text)

    def id_to_token(self, token_id: int) -> str | None:
        """The vocabulary piece of an id, None when out of range."""
        for text, i in self._added_ids.items():
            if i == token_id:
                return text
        return self.decoder.get(token_id)
