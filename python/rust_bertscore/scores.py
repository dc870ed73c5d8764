"""The names of the former ``scores`` module, kept for code that imports them from here.

The scorer lives in :mod:`rust_bertscore.scoring` (``scorer``: :class:`BERTScorer`; ``api``:
:func:`score`; ``settings``: constants and the hash; ``pipeline``: the engine).
"""

from __future__ import annotations

from .scoring.api import score
from .scoring.scorer import BERTScorer
from .scoring.settings import (
    CHUNK_BYTES,
    DEFAULT_CACHE_BYTES,
    PAIRS_PER_CHUNK,
    SCORE_BATCH_SIZE,
    RefsArg,
    Scores,
    make_hash,
)

__all__ = [
    "CHUNK_BYTES",
    "DEFAULT_CACHE_BYTES",
    "PAIRS_PER_CHUNK",
    "SCORE_BATCH_SIZE",
    "BERTScorer",
    "RefsArg",
    "Scores",
    "make_hash",
    "score",
]
