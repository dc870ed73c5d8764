"""What the analyses use of a scorer, as a :class:`typing.Protocol`.

The analyses sit below :class:`~rust_bertscore.BERTScorer` (whose convenience methods call them),
so they never import it, not even for annotations: they name the seams they call here, and the
front satisfies them (``mypy`` checks it where the front passes itself in).

>>> from rust_bertscore import BERTScorer
>>> from rust_bertscore.analyses.seams import Scorer
>>> scorer: Scorer = BERTScorer()
>>> scorer.num_layers
6
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np

    from ..engine.pipeline import ScoringPipeline
    from ..engine.settings import RefsArg, Scores
    from ..stages.options import ScoringOptions
    from ..stages.tokenization.tokenizer import TextTokenizer

__all__ = ["Scorer"]


class Scorer(Protocol):
    """A scorer as the analyses see it: its settings, its pipeline and ``score``.

    Examples
    --------
    >>> from rust_bertscore import BERTScorer
    >>> from rust_bertscore.analyses.seams import Scorer
    >>> def layer_of(scorer: Scorer) -> int:
    ...     return scorer.num_layers
    >>> layer_of(BERTScorer())
    6
    """

    all_layers: bool
    batch_size: int
    batch_independent: bool
    device: str
    options: ScoringOptions
    use_custom_baseline: bool

    @property
    def model_type(self) -> str: ...

    @property
    def num_layers(self) -> int: ...

    @property
    def idf(self) -> bool: ...

    @property
    def rescale_with_baseline(self) -> bool: ...

    @property
    def precision(self) -> str: ...

    @property
    def use_fast_tokenizer(self) -> bool: ...

    @property
    def hash(self) -> str: ...

    @property
    def baseline_vals(self) -> np.ndarray | None: ...

    @property
    def tokenizer(self) -> TextTokenizer: ...

    @property
    def pipeline(self) -> ScoringPipeline: ...

    @property
    def round_bytes(self) -> int: ...

    def score(
        self,
        cands: Sequence[str],
        refs: RefsArg,
        verbose: bool = ...,
        batch_size: int | None = ...,
    ) -> Scores: ...
