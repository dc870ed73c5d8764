"""The settings side of :class:`~rust_bertscore.BERTScorer`: a base class with the properties
that mirror ``bert_score.BERTScorer``, the engine seams (``pipeline``, ``runtime``,
``use_encoder``, ``block_pairs``, ``round_bytes``), the IDF setters and the scorer's life
(``close()``, ``closed``, the context manager).

:class:`~rust_bertscore.scoring.scorer.BERTScorer` derives from it and sets the attributes it
reads in its constructor; the scoring, embedding and analysis methods live there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from ..engine.settings import make_hash
from ..errors import ScorerClosedError, warn
from ..models.runtime import RUNTIMES
from ..stages.rescale import load_baseline
from ..stages.text import check_texts
from .signature import scorer_signature

if TYPE_CHECKING:
    from ..engine.pipeline import ScoringPipeline
    from ..models.runtime import ModelRuntime
    from ..stages.embeddings import EmbeddingCache
    from ..stages.encoder import Encoder
    from ..stages.options import ScoringOptions
    from ..stages.scored_tokens import ScoredTokens
    from ..stages.tokenization.tokenizer import TextTokenizer
    from ..store import EmbeddingStore


_Scorer = TypeVar("_Scorer", bound="ScorerProperties")


class ScorerProperties:
    """Properties, engine seams and IDF setters of a scorer (see
    :class:`~rust_bertscore.BERTScorer`, which sets the attributes below)."""

    _open_pipeline: ScoringPipeline | None
    _own_store: EmbeddingStore | None  # a store the scorer opened from a path: closed with it
    _model_type: str
    _lang: str | None
    _idf: bool
    _rescale_with_baseline: bool
    _baseline_vals: np.ndarray | None
    use_custom_baseline: bool
    baseline_path: str
    missing_baseline: str
    all_layers: bool
    batch_independent: bool
    options: ScoringOptions
    revision: str | None
    batch_size: int
    nthreads: int
    _settings_at_close: dict[str, Any] | None = None  # what close() kept readable

    # -- the scorer's life --------------------------------------------------------------------
    @property
    def _pipeline(self) -> ScoringPipeline:
        if self._open_pipeline is None:
            raise ScorerClosedError(
                f"this BERTScorer ({self._model_type}) was closed: its model was released by "
                "close() (or the end of its with block); make a new BERTScorer"
            )
        return self._open_pipeline

    def _setting(self, name: str) -> Any:
        """A setting read off the open model, or as :meth:`close` kept it."""
        if self._open_pipeline is None and self._settings_at_close is not None:
            return self._settings_at_close[name]
        pipeline = self._pipeline  # ScorerClosedError if it never opened
        runtime = pipeline.runtime
        live = {
            "num_layers": lambda: runtime.num_layers,
            "use_fast_tokenizer": lambda: runtime.tokenizer.fast,
            "precision": lambda: runtime.precision,
            "device": lambda: runtime.encoder.device,
            "backend": lambda: runtime.backend,
            "block_pairs": lambda: pipeline.block_pairs,
            "round_bytes": lambda: pipeline.round_bytes,
        }
        return live[name]()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._open_pipeline is None

    def close(self) -> None:
        """Release the model: empty the cache of encoded texts, drop the scorer's runtime
        (tokenizer and ONNX Runtime session) and close a store it opened from a path.

        The process's runtime cache (:data:`rust_bertscore.models.runtime.RUNTIMES`) lets go
        of the runtime too unless another open scorer uses it, so the session (GPU memory on
        CUDA) is freed once nothing else holds it; another scorer of the same model keeps
        working. After ``close()``, :meth:`score` and every method that needs the model raise
        :class:`~rust_bertscore.errors.ScorerClosedError` (a ``RuntimeError``); the settings
        stay readable (:attr:`model_type`, :attr:`num_layers`, :attr:`precision`,
        :attr:`use_fast_tokenizer`, :attr:`hash`, :attr:`block_pairs`, ...), but not
        :attr:`signature`, which digests the model's files. Closing twice does nothing.
        ``with BERTScorer(...) as scorer:`` closes at the end of the block.

        Examples
        --------
        >>> from rust_bertscore import BERTScorer
        >>> with BERTScorer() as scorer:
        ...     P, R, F = scorer.score(["the cat sat"], ["a cat sat"])
        >>> scorer.closed
        True
        >>> scorer.close()  # again: nothing to do
        """
        pipeline, self._open_pipeline = self._open_pipeline, None
        if pipeline is None:
            return
        runtime = pipeline.runtime
        self._settings_at_close = {
            "num_layers": runtime.num_layers,
            "use_fast_tokenizer": runtime.tokenizer.fast,
            "precision": runtime.precision,
            "device": runtime.encoder.device,
            "backend": runtime.backend,
            "block_pairs": pipeline.block_pairs,
            "round_bytes": pipeline.round_bytes,
        }
        pipeline.close()
        RUNTIMES.release(self)
        if self._own_store is not None:
            self._own_store.close()
            self._own_store = None

    def __enter__(self: _Scorer) -> _Scorer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- properties mirroring bert_score.BERTScorer -------------------------------------------
    @property
    def model_type(self) -> str:
        """The model used (a Hub id or a path)."""
        return self._model_type

    @property
    def num_layers(self) -> int:
        """The layer whose output is scored."""
        return int(self._setting("num_layers"))

    @property
    def lang(self) -> str | None:
        """The language code given (None when the model was chosen otherwise)."""
        return self._lang

    @property
    def idf(self) -> bool:
        """Whether tokens are weighted by IDF."""
        return self._idf

    @property
    def rescale_with_baseline(self) -> bool:
        """Whether scores are rescaled with a baseline."""
        return self._rescale_with_baseline

    @property
    def use_fast_tokenizer(self) -> bool:
        """Whether texts are tokenised with the model's fast tokenizer (bert_score's
        ``use_fast_tokenizer``; named in :attr:`hash` as ``_fast-tokenizer``)."""
        return bool(self._setting("use_fast_tokenizer"))

    @property
    def precision(self) -> str:
        return str(self._setting("precision"))

    @property
    def hash(self) -> str:
        """A string naming model, layer, idf, rescaling and this package's version."""
        return make_hash(
            self._model_type,
            self.num_layers,
            self._idf,
            self._rescale_with_baseline,
            self.use_custom_baseline,
            self.precision,
            self.batch_independent,
            self.options,
            use_fast_tokenizer=self.use_fast_tokenizer,
            device=str(self._setting("device")),
            revision=self.revision,
            runtime=str(self._setting("backend")),
        )

    @property
    def signature(self) -> str:
        """A citable one-line signature of the settings the scores depend on, in sacrebleu's
        form (``key:value|...``): model, revision, a digest of the weights' values, layer, IDF,
        tokenizer, options, rescaling with the baseline's origin and digest, the padding floor
        with its batch size (``score()``'s default, 64: see :meth:`signature_for`), precision,
        device, runtime and version. The weights digest is computed the first time a signature of a
        checkpoint is asked for, then kept in the model cache. Fields:
        :mod:`rust_bertscore.scoring.signature`; what to report: docs/reproducibility.md.
        :attr:`hash` stays bert_score's settings string."""
        return scorer_signature(self)

    def signature_for(self, batch_size: int | None = None) -> str:
        """:attr:`signature` of :meth:`score` calls with ``batch_size`` (the batch of pairs
        whose longest texts decide bert_score's padding floor; without
        ``batch_independent=True`` a pair's score depends on it).

        >>> from rust_bertscore import BERTScorer
        >>> scorer = BERTScorer()
        >>> scorer.signature_for(32).replace("bs32", "bs64") == scorer.signature
        True
        >>> BERTScorer(batch_independent=True).signature_for(32)  # doctest: +ELLIPSIS
        'model:...|floor:no|prec:fp32|device:cpu|runtime:onnxruntime|version:...'
        """
        return scorer_signature(self, batch_size)

    @property
    def baseline_vals(self) -> np.ndarray | None:
        """The baseline row (P, R, F) for ``num_layers``, or all rows with ``all_layers``.

        Raises ``ValueError`` when the baseline file does not exist (as bert_score's scorer;
        :func:`score` warns and leaves scores unscaled instead, as ``bert_score.score``; see
        :attr:`missing_baseline`).
        """
        if self._baseline_vals is None:
            self._baseline_vals = load_baseline(
                self.baseline_path,
                self.num_layers,
                self.all_layers,
                model_type=self._model_type,
                lang=self._lang,
                missing=self.missing_baseline,
            )
        return self._baseline_vals

    @property
    def tokenizer(self) -> TextTokenizer:
        """The model's tokenizer, set up as bert_score's ``sent_encode``."""
        return self._pipeline.tokenizer

    @property
    def scored_tokens(self) -> ScoredTokens:
        """The tokens this scorer scores (ids as encoded, exclusions, windows): see
        :class:`rust_bertscore.stages.scored_tokens.ScoredTokens`."""
        return self._pipeline.tokens

    @property
    def cache(self) -> EmbeddingCache:
        """The cache of encoded texts (see ``cache_bytes``)."""
        return self._pipeline.cache

    @property
    def store(self) -> EmbeddingStore | None:
        """The persistent embedding store (see ``store``), or None."""
        return self._pipeline.store

    # -- the engine, for analyses and benchmarks ----------------------------------------------
    @property
    def pipeline(self) -> ScoringPipeline:
        """The scoring pipeline: token ids, vectors, weights and kernel calls of this scorer."""
        return self._pipeline

    @property
    def runtime(self) -> ModelRuntime:
        """The model: tokenizer, encoder, layer, depth and precision (read-only)."""
        return self._pipeline.runtime

    def use_encoder(self, encoder: Encoder) -> None:
        """Encode with ``encoder`` (an ONNX graph of the same model and layer, e.g. another
        quantisation) from now on; the cache of encoded texts is emptied.

        >>> from rust_bertscore import BERTScorer
        >>> scorer = BERTScorer()
        >>> scorer.use_encoder(scorer.runtime.encoder)  # e.g. another quantisation of the model
        """
        self._pipeline.use_encoder(encoder)

    @property
    def block_pairs(self) -> int:
        """Pairs tokenised together per block (see the class docstring)."""
        return int(self._setting("block_pairs"))

    @block_pairs.setter
    def block_pairs(self, value: int) -> None:
        self._pipeline.block_pairs = value

    @property
    def round_bytes(self) -> int:
        """About the most bytes of token vectors held at once (see the class docstring)."""
        return int(self._setting("round_bytes"))

    @round_bytes.setter
    def round_bytes(self, value: int) -> None:
        self._pipeline.round_bytes = value

    # -- IDF ---------------------------------------------------------------------------------
    def compute_idf(self, sents: Sequence[str]) -> None:
        """Compute IDF weights from ``sents``: ``ln((M+1)/(df+1))`` over token-id sets.

        Overwrites weights computed before (with a message on stderr, as bert_score warns).

        >>> from rust_bertscore import BERTScorer
        >>> BERTScorer(idf=True).compute_idf(["the cat sat", "the dog ran"])
        """
        if self._pipeline.idf_weights is not None:
            warn("Warning: Overwriting the previous importance weights.")
        self.set_idf_sents(check_texts(sents, "sents"))

    def set_idf_sents(self, sents: Sequence[str]) -> None:
        """Use IDF weights computed from ``sents`` (as :meth:`compute_idf`), replacing earlier
        weights without a warning: for callers that set them on every call (the ``evaluate``
        module weights by each call's references).

        >>> from rust_bertscore import BERTScorer
        >>> BERTScorer(idf=True).set_idf_sents(["the cat sat", "the dog ran"])
        """
        self._pipeline.idf_weights = self._pipeline.idf_from_sentences(sents)

    def set_idf_dict(self, idf: Mapping[int, float]) -> None:
        """Use ready IDF weights ``{token id: weight}`` (a ``defaultdict``'s default is kept for
        unseen ids; with a plain dict every token scored must have a weight).

        >>> from collections import defaultdict
        >>> from rust_bertscore import BERTScorer
        >>> BERTScorer(idf=True).set_idf_dict(defaultdict(lambda: 1.0))  # every token weighs 1
        """
        self._pipeline.idf_weights = self._pipeline.idf_from_dict(idf)

    # -- display ------------------------------------------------------------------------------
    def __repr__(self) -> str:
        """bert_score's form: ``BERTScorer(hash=..., batch_size=..., nthreads=...)``.

        >>> from rust_bertscore import BERTScorer
        >>> print(BERTScorer(batch_size=32, nthreads=2))  # doctest: +ELLIPSIS
        BERTScorer(hash=sentence-...-L6-v2_L6_no-idf_version=...), batch_size=32, nthreads=2)
        """
        if self.closed:
            return f"{self.__class__.__name__}(model_type={self._model_type}, closed)"
        return (
            f"{self.__class__.__name__}(hash={self.hash}, batch_size={self.batch_size}, "
            f"nthreads={self.nthreads})"
        )
