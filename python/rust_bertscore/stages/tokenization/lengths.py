"""How long a text the tokenizer keeps: ``model_max_length`` as transformers 4.57 reads it,
bounded by what the model's position table holds (:func:`max_length_of`)."""

from __future__ import annotations

import math

from ...catalog.configs import max_positions
from ...errors import InputValueError

__all__ = ["check_declared", "declares_no_limit", "max_length_of"]

_NO_LIMIT = 10**12
"""transformers' placeholder for "no limit" is ``int(1e30)``; anything this large is not a real
limit."""


def check_declared(declared: object) -> object:
    """``model_max_length`` as written, when transformers' tokenizer takes it: absent, a whole
    number (huge ones: no limit) or infinity; InputValueError for what it refuses or what
    would cut every text to nothing here (true, a negative or fractional number, NaN, text).

    >>> from rust_bertscore.stages.tokenization.lengths import check_declared
    >>> check_declared(512), check_declared(None), check_declared(1e30)
    (512, None, 1e+30)
    >>> check_declared(True)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rust_bertscore.errors.InputValueError: tokenizer_config.json: model_max_length must be ...
    """
    if declared is None:
        return None
    whole = isinstance(declared, int) and not isinstance(declared, bool)
    if isinstance(declared, float) and (declared == math.inf or declared.is_integer()):
        whole = True
    if not whole or declared < 0:  # type: ignore[operator]
        raise InputValueError(
            "tokenizer_config.json: model_max_length must be a whole number of tokens (or "
            f"absent: no limit), got {declared!r:.40}"
        )
    return declared


def declares_no_limit(tok_config: dict) -> bool:
    """True when ``model_max_length`` is absent (transformers then takes ``int(1e30)``) or does
    not fit the 64-bit length the ``tokenizers`` library truncates to."""
    declared = check_declared(tok_config.get("model_max_length"))
    return declared is None or declared >= 2**64  # type: ignore[operator]


def max_length_of(tok_config: dict, config: dict) -> int | None:
    """The tokenizer's ``model_max_length``, bounded by what the position table can hold.

    None (no truncation) when the tokenizer declares no limit (transformers 4.57 then gives
    ``int(1e30)``: it keeps no table of lengths per checkpoint) and the model takes any length
    (T5's relative positions, ProphetNet's clamped ones, ...), as bert_score then truncates
    nothing. Where the position table is shorter than the text, bert_score's model fails on
    it; here the text is truncated to the table, with the truncation warning.
    """
    try:
        positions: int | None = max_positions(config)
        known = True
    except ValueError:  # no usable position table size in config.json
        positions, known = None, False
    declared = check_declared(tok_config.get("model_max_length"))
    if isinstance(declared, (int, float)) and 0 < declared < _NO_LIMIT:
        limit = int(declared)
        return min(limit, positions) if positions else limit
    if positions:
        return positions
    if (
        known
        or config.get("model_type") in ("t5", "mt5", "xlnet")
        or "relative_attention_num_buckets" in config
    ):
        return None
    return 512
