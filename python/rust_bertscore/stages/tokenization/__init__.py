"""Tokenisation, the first stage: text to the ids bert_score's slow tokenizers give.

``tokenizer`` holds :class:`TextTokenizer`; the back ends it picks are in ``classes`` (which
slow tokenizer a model uses), ``sentencepiece``, ``byte_level`` (ByT5), ``word_bpe``
(BlenderbotSmall, Bertweet) and ``added_tokens``.
"""

from __future__ import annotations

from .tokenizer import TextTokenizer, has_tokenizer_files

__all__ = ["TextTokenizer", "has_tokenizer_files"]
