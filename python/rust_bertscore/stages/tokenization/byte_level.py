"""ByT5's tokenizer: UTF-8 bytes offset by 3, no vocabulary file.

``ByT5Tokenizer`` gives ``<pad>``, ``</s>``, ``<unk>`` the ids 0, 1, 2 and every byte ``b`` the
id ``b + 3``; those three tokens are cut out of the text first (swallowing the whitespace on
both sides, ``lstrip=rstrip=True``), the rest is encoded as UTF-8.
"""

from __future__ import annotations

from collections.abc import Sequence

from .added_tokens import AddedToken, AddedTokenSplitter

BYTE_OFFSET = 3
_SPECIALS = {"<pad>": 0, "</s>": 1, "<unk>": 2}


class ByteIds:
    """Token ids of text without special tokens around it, as ``ByT5Tokenizer``."""

    base_vocab_size = 256 + BYTE_OFFSET
    vocab_size = 256 + BYTE_OFFSET

    def __init__(self) -> None:
        self._splitter = AddedTokenSplitter(
            {t: AddedToken(t, lstrip=True, rstrip=True) for t in _SPECIALS}
        )

    def token_to_id(self, token: str) -> int | None:
        """The id of ``<pad>``/``</s>``/``<unk>`` or of a one-byte character."""
        if token in _SPECIALS:
            return _SPECIALS[token]
        data = token.encode("utf-8")
        return data[0] + BYTE_OFFSET if len(data) == 1 else None

    def id_to_token(self, token_id: int) -> str | None:
        """The special token or the byte (as ``\\xNN`` when not ASCII) of an id."""
        for text, i in _SPECIALS.items():
            if i == token_id:
                return text
        byte = token_id - BYTE_OFFSET
        if 0 <= byte < 128:
            return chr(byte)
        if 128 <= byte < 256:
            return f"\\x{byte:02x}"
        return None

    def encode(self, text: str) -> list[int]:
        """Ids of ``text`` (already stripped), no ``</s>`` appended."""
        ids: list[int] = []
        for piece, is_added in self._splitter.split(text):
            if is_added:
                ids.append(_SPECIALS[piece])
            else:
                ids.extend(b + BYTE_OFFSET for b in piece.encode("utf-8"))
        return ids

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """:meth:`encode` of each text."""
        return [self.encode(t) for t in texts]
