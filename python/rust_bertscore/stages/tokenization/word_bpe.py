"""Sub-word ids of the word-level BPE tokenizers: BlenderbotSmallTokenizer
(``facebook/blenderbot_small-90M``) and BertweetTokenizer (``vinai/bertweet-base``), the slow
tokenizers bert_score runs for those models.

BlenderbotSmall: a word-level BPE over ``vocab.json`` + ``merges.txt`` (not byte-level): each
whitespace-separated word (with its trailing newline) has a space put before ``. , ! ? ( )`` and
around ``'``, is split again on spaces, lowercased, and merged by rank from single characters,
the last one marked ``</w>``; the pieces are joined with ``@@ `` (``hel@@ lo``). Each piece's id
is ``vocab[piece.lower()]``, else the unknown token's. Facts from transformers 4.57's
``tokenization_blenderbot_small.py``; the tokenizer adds no special tokens around a text.

Bertweet (fastBPE, ``tokenization_bertweet.py``): the same merge loop on each whitespace-separated
word as it is (no punctuation split, case kept); ids from the fairseq dictionary ``vocab.txt``
(``<s>`` ``<pad>`` ``</s>`` ``<unk>`` = 0..3, then one id per line in order), merges from
``bpe.codes`` (``a b count`` lines), exact lookups with the unknown token as fallback. Its
``normalization`` option (tweet normalisation with the ``emoji`` package) is not implemented:
refused.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from ...errors import InputValueError
from ...support.inputs import MAX_TOKENIZER_BYTES, read_json, read_text
from .added_tokens import AddedToken, AddedTokenSplitter


def _pairs(word: tuple[str, ...]) -> set[tuple[str, str]]:
    return {(a, b) for a, b in itertools.pairwise(word)}


def merge_symbols(word: tuple[str, ...], ranks: dict[tuple[str, ...], int]) -> tuple[str, ...]:
    """Merge adjacent symbols of ``word`` by rank, lowest first, until no ranked pair is left
    (the loop of transformers' word-level BPE tokenizers)."""
    pairs = _pairs(word)
    if not pairs:
        return word
    while True:
        bigram = min(pairs, key=lambda pair: ranks.get(pair, float("inf")))
        if bigram not in ranks:
            break
        first, second = bigram
        merged: list[str] = []
        i = 0
        while i < len(word):
            try:
                j = word.index(first, i)
            except ValueError:
                merged.extend(word[i:])
                break
            merged.extend(word[i:j])
            i = j
            if word[i] == first and i < len(word) - 1 and word[i + 1] == second:
                merged.append(first + second)
                i += 2
            else:
                merged.append(word[i])
                i += 1
        word = tuple(merged)
        if len(word) == 1:
            break
        pairs = _pairs(word)
    return word


def merge_word(token: str, ranks: dict[tuple[str, ...], int]) -> str:
    """One word's BPE pieces joined with ``@@ `` (the last piece without its ``</w>``)."""
    word = (*token[:-1], token[-1] + "</w>")
    if not _pairs(word):
        return token
    return "@@ ".join(merge_symbols(word, ranks))[:-4]


class WordBpeIds:
    """What the two word-level BPE tokenizers share: added tokens are kept whole, the rest of a
    text is cut into whitespace-separated words (each with its trailing newline) and
    :meth:`_word_ids` gives each word's ids. Subclasses fill ``encoder`` (piece -> id),
    ``_added_ids`` (added token -> id) and ``_splitter``."""

    encoder: dict[str, int]
    _added_ids: dict[str, int]
    _splitter: AddedTokenSplitter

    def words(self, text: str) -> list[str]:
        """The words of a stretch of text without added tokens: whitespace-separated, each with
        its trailing newline (XLM's tokenizer cuts them with Moses instead)."""
        return re.findall(r"\S+\n?", text)

    def _word_ids(self, word: str) -> Iterable[int]:
        """Ids of one word, as :meth:`words` cuts them."""
        raise NotImplementedError

    def encode(self, text: str) -> list[int]:
        """Ids of ``text`` (already stripped), no special tokens around it."""
        ids: list[int] = []
        for part, is_added in self._splitter.split(text):
            if is_added:
                ids.append(self._added_ids[part])
                continue
            for word in self.words(part):
                if word:
                    ids.extend(self._word_ids(word))
        return ids

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """:meth:`encode` of each text."""
        return [self.encode(t) for t in texts]

    def token_to_id(self, token: str) -> int | None:
        if token in self._added_ids:
            return self._added_ids[token]
        token_id = self.encoder.get(token)
        return None if token_id is None else int(token_id)


class BlenderbotSmallIds(WordBpeIds):
    """Token ids of text without special tokens, as BlenderbotSmallTokenizer gives them.

    Parameters
    ----------
    model_dir : Path
        Holds ``vocab.json`` and ``merges.txt``.
    added : dict
        The added tokens (text -> :class:`AddedToken`), kept whole.
    unk_token : str
        The unknown token (``__unk__``).
    """

    def __init__(self, model_dir: Path, added: dict[str, AddedToken], unk_token: str) -> None:
        vocab_path, merges_path = model_dir / "vocab.json", model_dir / "merges.txt"
        try:
            self.encoder: dict[str, int] = read_json(
                vocab_path, error=InputValueError, max_bytes=MAX_TOKENIZER_BYTES
            )
            lines = read_text(
                merges_path, max_bytes=MAX_TOKENIZER_BYTES, error=InputValueError
            ).split("\n")[1:-1]
        except FileNotFoundError as e:
            raise InputValueError(
                f"cannot read the BlenderbotSmall vocabulary in {model_dir}: {e}"
            ) from e
        if not isinstance(self.encoder, dict):
            raise InputValueError(f"{vocab_path}: expected a JSON object of token -> id")
        merges = [tuple(line.split()) for line in lines]
        self.ranks: dict[tuple[str, ...], int] = {m: i for i, m in enumerate(merges)}
        self.decoder = {v: k for k, v in self.encoder.items()}
        self.unk_id = self.encoder.get(unk_token)
        self._added_ids: dict[str, int] = {}
        for text, token in added.items():
            token_id = self.encoder.get(text, token.id)
            if token_id is not None:
                self._added_ids[text] = int(token_id)
        self._splitter = AddedTokenSplitter(
            {k: v for k, v in added.items() if k in self._added_ids}
        )
        self.base_vocab_size = len(self.encoder)
        self.vocab_size = max(self.base_vocab_size, max(self._added_ids.values(), default=-1) + 1)

    def _bpe(self, chunk: str) -> list[str]:
        chunk = re.sub("([.,!?()])", r" \1", chunk)
        chunk = re.sub("(')", r" \1 ", chunk)
        chunk = re.sub(r"\s{2,}", " ", chunk)
        if "\n" in chunk:
            chunk = chunk.replace("\n", " __newln__")
        words = [merge_word(t.lower(), self.ranks) for t in chunk.split(" ") if t]
        return " ".join(words).split(" ")

    def _id(self, piece: str) -> int:
        token_id = self.encoder.get(piece.lower(), self.unk_id)
        if token_id is None:
            raise InputValueError(
                f"{piece!r} is not in the vocabulary and there is no unknown token"
            )
        return int(token_id)

    def _word_ids(self, word: str) -> Iterable[int]:
        return (self._id(p) for p in self._bpe(word))

    def id_to_token(self, token_id: int) -> str | None:
        return self.decoder.get(token_id)


class BertweetIds(WordBpeIds):
    """Token ids of text without special tokens, as BertweetTokenizer (``normalization`` off)
    gives them.

    Parameters
    ----------
    model_dir : Path
        Holds ``vocab.txt`` (fairseq dictionary) and ``bpe.codes``.
    added : dict
        The added tokens (text -> :class:`AddedToken`), kept whole.
    tok_config : dict
        ``tokenizer_config.json`` (``normalization`` and the special tokens' texts).
    """

    def __init__(self, model_dir: Path, added: dict[str, AddedToken], tok_config: dict) -> None:
        if tok_config.get("normalization", False):
            raise InputValueError(
                f"{model_dir}: BertweetTokenizer with normalization=true (tweet normalisation "
                "with the emoji package) is not implemented"
            )

        def name(key: str, default: str) -> str:
            value = tok_config.get(key, default)
            if isinstance(value, dict):
                value = value.get("content", default)
            return value if isinstance(value, str) else default

        self.encoder: dict[str, int] = {}
        for key, default in (
            ("bos_token", "<s>"),
            ("pad_token", "<pad>"),
            ("eos_token", "</s>"),
            ("unk_token", "<unk>"),
        ):
            self.encoder[name(key, default)] = len(self.encoder)
        vocab_path, codes_path = model_dir / "vocab.txt", model_dir / "bpe.codes"
        try:
            vocab_text = read_text(vocab_path, max_bytes=MAX_TOKENIZER_BYTES, error=InputValueError)
            for line in vocab_text.splitlines():
                line = line.strip()
                cut = line.rfind(" ")
                if cut == -1:
                    raise InputValueError(
                        f"{vocab_path}: expected '<token> <count>' lines, got {line!r}"
                    )
                self.encoder[line[:cut]] = len(self.encoder)
            lines = read_text(
                codes_path, max_bytes=MAX_TOKENIZER_BYTES, error=InputValueError
            ).split("\n")[:-1]
        except FileNotFoundError as e:
            raise InputValueError(f"cannot read the Bertweet vocabulary in {model_dir}: {e}") from e
        self.ranks: dict[tuple[str, ...], int] = {
            tuple(line.split()[:-1]): i for i, line in enumerate(lines)
        }
        self.decoder = {v: k for k, v in self.encoder.items()}
        self.unk_id = self.encoder[name("unk_token", "<unk>")]
        self.base_vocab_size = len(self.encoder)
        self._added_ids: dict[str, int] = {}
        next_id = self.base_vocab_size
        for text, token in added.items():
            if text in self.encoder:
                self._added_ids[text] = self.encoder[text]
            elif token.id is not None:
                self._added_ids[text] = token.id
            else:  # transformers appends an added token missing from the vocabulary (<mask>)
                self._added_ids[text] = next_id
                next_id += 1
        self._splitter = AddedTokenSplitter(added)
        self.vocab_size = max(self.base_vocab_size, max(self._added_ids.values(), default=-1) + 1)

    def _word_ids(self, word: str) -> Iterable[int]:
        pieces = merge_word(word, self.ranks).split(" ")
        return (self.encoder.get(p, self.unk_id) for p in pieces)

    def id_to_token(self, token_id: int) -> str | None:
        for text, i in self._added_ids.items():
            if i == token_id:
                return text
        return self.decoder.get(token_id)
