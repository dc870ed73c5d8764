"""A weight view for checkpoints whose task model keeps the encoder under ``transformer.``
(``XLNetLMHeadModel``, ``XLMWithLMHeadModel``, the Hub layout of bert_score's XLNet and XLM
models). ``transformer.`` cannot join ``convert.checkpoint``'s stripped prefixes: DistilBERT's own
tensors are named ``transformer.layer.*``."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..checkpoint import WeightStore

PREFIX = "transformer."


class TransformerPrefixed:
    """``store``'s tensors by their bare names, read bare or under ``transformer.``."""

    def __init__(self, store: WeightStore) -> None:
        self.store = store
        self.files = store.files

    def _key(self, name: str) -> str:
        prefixed = PREFIX + name
        return prefixed if name not in self.store and prefixed in self.store else name

    def __contains__(self, name: str) -> bool:
        return name in self.store or PREFIX + name in self.store

    def get(self, name: str, shape: Sequence[int]) -> np.ndarray:
        """:meth:`WeightStore.get` of the bare or prefixed tensor."""
        return self.store.get(self._key(name), shape)
