"""Sub-word ids of BlenderbotSmallTokenizer (``facebook/blenderbot_small-90M``), the slow
tokenizer bert_score runs for that model.

A word-level BPE over ``vocab.json`` + ``merges.txt`` (not byte-level): each whitespace-separated
word (with its trailing newline) has a space put before ``. , ! ? ( )`` and around ``'``, is
split again on spaces, lowercased, and merged by rank from single characters, the last one
marked ``</w>``; the pieces are joined with ``@@ `` (``hel@@ lo``). Each piece's id is
``vocab[piece.lower()]``, else the unknown token's. Facts from transformers 4.57's
``tokenization_blenderbot_small.py``; the tokenizer adds no special tokens around a text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from .added_tokens import AddedToken, AddedTokenSplitter


def _pairs(word: tuple[str, ...]) -> set[tuple[str, str]]:
    return {(a, b) for a, b in zip(word, word[1:])}


class BlenderbotSmallIds:
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
            self.encoder: dict[str, int] = json.loads(vocab_path.read_text(encoding="utf-8"))
            lines = merges_path.read_text(encoding="utf-8").split("\n")[1:-1]
        except (OSError, ValueError) as e:
            raise ValueError(
                f"cannot read the BlenderbotSmall vocabulary in {model_dir}: {e}"
            ) from e
        if not isinstance(self.encoder, dict):
            raise ValueError(f"{vocab_path}: expected a JSON object of token -> id")
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

    def _merge(self, token: str) -> str:
        """One lowercased word's pieces joined with ``@@ ``."""
        word = (*token[:-1], token[-1] + "</w>")
        pairs = _pairs(word)
        if not pairs:
            return token
        while True:
            bigram = min(pairs, key=lambda pair: self.ranks.get(pair, float("inf")))
            if bigram not in self.ranks:
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
        return "@@ ".join(word)[:-4]

    def _bpe(self, chunk: str) -> list[str]:
        chunk = re.sub("([.,!?()])", r" \1", chunk)
        chunk = re.sub("(')", r" \1 ", chunk)
        chunk = re.sub(r"\s{2,}", " ", chunk)
        if "\n" in chunk:
            chunk = chunk.replace("\n", " __newln__")
        words = [self._merge(t.lower()) for t in chunk.split(" ") if t]
        return " ".join(words).split(" ")

    def _id(self, piece: str) -> int:
        token_id = self.encoder.get(piece.lower(), self.unk_id)
        if token_id is None:
            raise ValueError(f"{piece!r} is not in the vocabulary and there is no unknown token")
        return int(token_id)

    def encode(self, text: str) -> list[int]:
        """Ids of ``text`` (already stripped), no special tokens around it."""
        ids: list[int] = []
        for part, is_added in self._splitter.split(text):
            if is_added:
                ids.append(self._added_ids[part])
                continue
            for word in re.findall(r"\S+\n?", part):
                ids.extend(self._id(p) for p in self._bpe(word))
        return ids

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """:meth:`encode` of each text."""
        return [self.encode(t) for t in texts]

    def token_to_id(self, token: str) -> int | None:
        if token in self._added_ids:
            return self._added_ids[token]
        token_id = self.encoder.get(token)
        return None if token_id is None else int(token_id)

    def id_to_token(self, token_id: int) -> str | None:
        return self.decoder.get(token_id)
