"""Added (special) tokens in running text, split out as transformers' slow tokenizers do.

A slow tokenizer (``PreTrainedTokenizer.tokenize``) first cuts the text at every added token
(``<s>``, ``</s>``, ``[CLS]``, mBART's language codes, T5's ``<extra_id_N>`` ...), strips the
whitespace next to tokens marked ``lstrip``/``rstrip``, and runs its own sub-word model only on
the pieces between them. This module reproduces that step for the tokenizers implemented here
(SentencePiece and bytes); the Rust ``tokenizers`` path does the same on its own.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ...errors import InputValueError
from ...support.inputs import read_json_object


@dataclass(frozen=True)
class AddedToken:
    """One added token: its text and the whitespace it swallows on either side."""

    content: str
    lstrip: bool = False
    rstrip: bool = False
    special: bool = True
    id: int | None = None
    """The id the saved tokenizer gives it (``added_tokens_decoder`` / ``added_tokens.json``)."""
    normalized: bool = False
    """Matched in the normalised text (a fast tokenizer's flag; the slow ones ignore it)."""


def _flag_of(value: dict, key: str, default: bool) -> bool:
    """An added token's flag: true or false (transformers refuses anything else at load, where
    ``bool("false")`` would have been True here)."""
    flag = value.get(key, default)
    if not isinstance(flag, bool):
        raise InputValueError(
            f"the added token {str(value.get('content'))[:60]!r}: {key} must be true or false, "
            f"got {flag!r:.40}"
        )
    return flag


def _entry(value: object, token_id: int | None = None) -> AddedToken | None:
    if isinstance(value, str):
        return AddedToken(value, id=token_id)
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        special = _flag_of(value, "special", True)
        return AddedToken(
            value["content"],
            lstrip=_flag_of(value, "lstrip", False),
            rstrip=_flag_of(value, "rstrip", False),
            special=special,
            id=token_id,
            normalized=_flag_of(value, "normalized", not special),
        )
    return None


def _int_or_none(value: object) -> int | None:
    try:
        return int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return None


_SPECIAL_KEYS = (
    "bos_token",
    "eos_token",
    "unk_token",
    "sep_token",
    "pad_token",
    "cls_token",
    "mask_token",
)


def collect_added_tokens(
    model_dir: Path, tok_config: dict, special_map: dict, extra: dict[str, AddedToken]
) -> dict[str, AddedToken]:
    """Every token the slow tokenizer keeps whole, by text.

    Parameters
    ----------
    model_dir : Path
        The checkpoint directory (for ``added_tokens.json``).
    tok_config, special_map : dict
        ``tokenizer_config.json`` and ``special_tokens_map.json``.
    extra : dict
        Tokens the tokenizer class adds itself (e.g. mBART's language codes); the saved files
        override their flags.
    """
    found: dict[str, AddedToken] = dict(extra)
    decoder = tok_config.get("added_tokens_decoder")
    if isinstance(decoder, dict):
        for key, value in decoder.items():
            token = _entry(value, _int_or_none(key))
            if token is not None:
                found[token.content] = token
    added_json = model_dir / "added_tokens.json"
    # transformers 4.57 reads added_tokens.json only without added_tokens_decoder (legacy).
    if "added_tokens_decoder" not in tok_config and added_json.is_file():
        data = read_json_object(added_json, error=InputValueError)
        if isinstance(data, dict):
            # as transformers builds them: special when a special token names them, and then
            # not normalized; the others normalized (a fast tokenizer matches them lower-cased)
            named = set(named_special_tokens(tok_config, special_map))
            for text, token_id in data.items():
                if str(text) not in found:
                    special = str(text) in named
                    found[str(text)] = AddedToken(
                        str(text),
                        special=special,
                        id=_int_or_none(token_id),
                        normalized=not special,
                    )
    for source in (special_map, tok_config):
        for token in _named_entries(source):
            if token.content not in found:
                found[token.content] = token
    return found


def _named_entries(source: dict) -> Iterator[AddedToken]:
    """The special tokens a configuration names: ``bos_token`` and its kin, then
    ``additional_special_tokens``."""
    for key in _SPECIAL_KEYS:
        token = _entry(source.get(key))
        if token is not None:
            yield token
    extras = source.get("additional_special_tokens")
    if isinstance(extras, list):
        for value in extras:
            token = _entry(value)
            if token is not None:
                yield token


def named_special_tokens(tok_config: dict, special_map: dict) -> list[str]:
    """transformers' ``all_special_tokens``: the named special tokens (``cls_token``, ...; the
    map's where it is read, else the config's) and ``additional_special_tokens``."""
    return [t.content for t in _named_entries({**tok_config, **special_map}) if t.content]


class AddedTokenSplitter:
    """Cut text at added tokens (leftmost, longest first), as ``PreTrainedTokenizer.tokenize``.

    Parameters
    ----------
    tokens : dict
        The added tokens by text (from :func:`collect_added_tokens`).
    """

    def __init__(self, tokens: dict[str, AddedToken]) -> None:
        self.tokens = {k: v for k, v in tokens.items() if k}
        ordered = sorted(self.tokens, key=len, reverse=True)
        self._pattern = (
            re.compile("(" + "|".join(re.escape(t) for t in ordered) + ")") if ordered else None
        )

    def split(self, text: str) -> list[tuple[str, bool]]:
        """``(piece, is_added_token)`` in order; empty pieces dropped."""
        if self._pattern is None:
            return [(text, False)] if text else []
        parts = self._pattern.split(text)
        # re.split with one group: even indices are text, odd indices are added tokens
        for i in range(1, len(parts), 2):
            token = self.tokens[parts[i]]
            if token.rstrip and i + 1 < len(parts):
                parts[i + 1] = parts[i + 1].lstrip()
            if token.lstrip and i - 1 >= 0:
                parts[i - 1] = parts[i - 1].rstrip()
        return [(p, i % 2 == 1) for i, p in enumerate(parts) if p]

    def protect(self, text: str, transform: object) -> str:
        """Apply ``transform`` (a str -> str function) to the text outside added tokens."""
        if self._pattern is None:
            return transform(text)  # type: ignore[operator]
        parts = self._pattern.split(text)
        return "".join(p if i % 2 else transform(p) for i, p in enumerate(parts))  # type: ignore[operator]
