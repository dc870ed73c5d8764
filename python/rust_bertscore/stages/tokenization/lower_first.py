"""The lower-casing transformers' slow tokenizers apply before they split out added tokens.

``PreTrainedTokenizer.tokenize`` (transformers 4.57), for a class with a true ``do_lower_case``,
lower-cases the whole text first, character by character, except where it finds a special
token or a non-special ``normalized`` added token written exactly; only then does it cut the
text at the added tokens. So an added ``<new>`` matches ``<NEW>`` in a text, an added ``<NEW>``
that is not protected never matches, and a final capital sigma becomes ``σ`` (Python's
``str.lower`` of one character), not ``ς``. :func:`lower_first` gives that step for the slow
classes that have the attribute; the fast tokenizers have no such step.

>>> from rust_bertscore.stages.tokenization.added_tokens import AddedToken
>>> from rust_bertscore.stages.tokenization.lower_first import lower_first
>>> step = lower_first("BertTokenizer", {}, {"[MASK]": AddedToken("[MASK]")}, ["[MASK]"])
>>> step("A [MASK] and <NEW> ΟΔΟΣ")
'a [MASK] and <new> οδοσ'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping

from .added_tokens import AddedToken

__all__ = ["LOWER_FIRST_CLASSES", "lower_first"]

LOWER_FIRST_CLASSES: dict[str, bool] = {
    "BertTokenizer": True,
    "DistilBertTokenizer": True,
    "ElectraTokenizer": True,
    "MPNetTokenizer": True,
    "ConvBertTokenizer": True,
    "SqueezeBertTokenizer": True,
    "ProphetNetTokenizer": True,
    "AlbertTokenizer": True,
    "XLNetTokenizer": False,
    "DebertaV2Tokenizer": False,
}
"""The slow classes with a ``do_lower_case`` attribute, and its default."""

BASIC_TOKENIZER_CLASSES = frozenset(
    {
        "BertTokenizer",
        "DistilBertTokenizer",
        "ElectraTokenizer",
        "MPNetTokenizer",
        "ConvBertTokenizer",
        "SqueezeBertTokenizer",
    }
)
"""Classes whose ``do_lower_case`` is their basic tokenizer's: with ``do_basic_tokenize``
false they have none, and no text is lower-cased first."""


def _lower(text: str) -> str:
    """``str.lower`` one character at a time, as ``re.sub``'s ``(.+?)`` does: only a capital
    sigma depends on its context (``Σ`` at a word's end is ``ς`` for the whole string)."""
    return "".join(c.lower() for c in text) if "Σ" in text else text.lower()


def lower_first(
    class_name: str,
    tok_config: Mapping[str, object],
    added: Mapping[str, AddedToken],
    named: Iterable[str] = (),
) -> Callable[[str], str] | None:
    """The text step of ``class_name``'s slow tokenizer (None when it lower-cases nothing
    first): the text lower-cased outside exact occurrences of its special tokens (``named``:
    ``all_special_tokens``, the named ones and ``additional_special_tokens``; an added token
    flagged special but not named is lower-cased, as there) and of its non-special
    ``normalized`` added tokens (``added``, by text)."""
    default = LOWER_FIRST_CLASSES.get(class_name)
    if default is None or not tok_config.get("do_lower_case", default):
        return None
    if class_name in BASIC_TOKENIZER_CLASSES and tok_config.get("do_basic_tokenize") is False:
        return None
    protected = {t.content for t in added.values() if not t.special and t.normalized}
    kept = sorted((k for k in protected | set(named) if k), key=len, reverse=True)
    if not kept:
        return _lower
    pattern = re.compile("|".join(re.escape(k) for k in kept))

    def step(text: str) -> str:
        out, at = [], 0
        for match in pattern.finditer(text):
            out.append(_lower(text[at : match.start()]))
            out.append(match.group())
            at = match.end()
        out.append(_lower(text[at:]))
        return "".join(out)

    return step
