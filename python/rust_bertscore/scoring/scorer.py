"""The scorer front: :class:`BERTScorer`, bert_score 0.3.13's class on the scoring pipeline.

The front checks arguments, holds the settings (IDF, rescaling, the floor batch) and calls
:class:`~rust_bertscore.scoring.pipeline.ScoringPipeline`; its convenience methods call the
analyses (``align``, ``similarity``, ``heatmap``, ``compare``), which sit between the pipeline
and this module. Nothing of the package below this module imports it at run time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Literal, overload

import numpy as np
from numpy.typing import ArrayLike

from ..embeddings import EmbeddingCache
from ..errors import warn
from ..models.loading import ModelRuntime, load_runtime
from ..models.registry import choose_model
from ..rescale import load_baseline, packaged_baseline, rescale
from ..store import EmbeddingStore, StoreArg, open_store
from ..text import check_texts, pair_texts
from .analyses import ScorerAnalyses
from .pipeline import ScoringPipeline
from .settings import (
    DEFAULT_CACHE_BYTES,
    SCORE_BATCH_SIZE,
    RefsArg,
    Scores,
    check_batch_size,
    check_flag,
    make_hash,
)

if TYPE_CHECKING:
    from ..encoder import Encoder
    from ..tokenization.tokenizer import TextTokenizer


class BERTScorer(ScorerAnalyses):
    """BERTScore with a model loaded once, as ``bert_score.BERTScorer``.

    Parameters
    ----------
    model_type : str, optional
        A Hugging Face model id, a local checkpoint directory, or an ``.onnx`` file with its
        tokenizer beside it. Default: ``lang``'s model, or all-MiniLM-L6-v2 when ``lang`` is None.
    num_layers : int, optional
        The layer whose output is used (0 = embeddings). Default: bert_score's tuned layer for
        the model, else the model's last layer.
    batch_size : int
        Most texts per encoder call; calls also stay within ``encoder.DEFAULT_MAX_TOKENS``
        padded tokens (texts are batched longest first).
    nthreads : int
        Accepted for compatibility with bert_score; threads are set by
        ``RUST_BERTSCORE_NUM_THREADS`` (kernel and encoder; default: the kernel uses every CPU,
        the encoder one thread per physical core).
    all_layers : bool
        Score with every hidden state of the model: arrays of shape (layers + 1, N).
    idf : bool
        Weight tokens by inverse document frequency over ``idf_sents``.
    idf_sents : list of str, optional
        Sentences to compute IDF weights from (see :meth:`compute_idf`).
    device : str, optional
        ``"cpu"``, ``"cuda"`` or ``"cuda:N"``; None picks CUDA when ONNX Runtime offers it.
    lang : str, optional
        Language code (``"en"``, ``"zh"``, ...): picks the model and the rescale baseline.
    rescale_with_baseline : bool
        Rescale scores as ``(x - b) / (1 - b)`` with the baseline of model and ``lang``.
    baseline_path : str, optional
        A baseline file of your own (``LAYER,P,R,F``).
    precision : {"fp32", "int8"}
        ``"int8"`` runs an int8 encoder (projections with 7-bit weights per output channel
        and one activation scale per token; the fused attention stays fp32): about 1.3x
        faster than fp32 end to end on this project's 2-core benchmark machine, with F within
        about 0.003 of fp32 on average (Pearson r 0.9997 over WMT pairs; docs/performance.md).
        Use it to rank systems or filter data; keep fp32 to report numbers comparable with
        bert_score.
    cache_bytes : int
        Bound, in bytes, of the LRU cache of encoded texts kept across :meth:`score` calls
        (default 512 MiB; 0 disables it). Scoring a second system against the same references
        encodes only its candidates.
    batch_independent : bool
        False (default) reproduces bert_score's batch padding floor: pairs are scored in
        consecutive batches of ``batch_size`` and a token's best match counts ``max(best, 0)``
        when the other side of its pair is shorter than the longest text of that side of the
        batch. True gives every pair the paper's definition (maxima over real tokens only),
        whatever its neighbours. Named in :attr:`hash`.
    store : str or EmbeddingStore, optional
        A directory (or :class:`~rust_bertscore.EmbeddingStore`) of token vectors kept on disk
        across processes: texts found there are not encoded, texts encoded are added. Keyed by
        model graph, precision, layer and token ids; scores are the same. docs/store.md.

    Attributes
    ----------
    missing_baseline : {"raise", "warn"}
        What a missing baseline file does when rescaling: ``"raise"`` (default, as
        bert_score's scorer) or ``"warn"`` and leave scores unscaled (as ``bert_score.score``,
        which :func:`score` sets).
    block_pairs : int
        Pairs tokenised together per block (default :data:`PAIRS_PER_CHUNK`); set it lower to
        hold fewer texts at once. Scores do not depend on it.
    round_bytes : int
        About the most bytes of token vectors held at once while scoring (default
        :data:`CHUNK_BYTES`): a block is encoded and scored in rounds within it. Scores do not
        depend on it.

    Examples
    --------
    >>> from rust_bertscore import BERTScorer
    >>> scorer = BERTScorer()  # all-MiniLM-L6-v2, layer 6
    >>> P, R, F = scorer.score(["The cat sat on the mat."], ["A cat was sitting on the mat."])
    >>> round(float(P[0]), 3), round(float(R[0]), 3), round(float(F[0]), 3)
    (0.919, 0.896, 0.907)
    """

    def __init__(
        self,
        model_type: str | None = None,
        num_layers: int | None = None,
        batch_size: int = 64,
        nthreads: int = 4,
        all_layers: bool = False,
        idf: bool = False,
        idf_sents: Sequence[str] | None = None,
        device: str | None = None,
        lang: str | None = None,
        rescale_with_baseline: bool = False,
        baseline_path: str | None = None,
        precision: str = "fp32",
        cache_bytes: int = DEFAULT_CACHE_BYTES,
        batch_independent: bool = False,
        store: StoreArg = None,
    ) -> None:
        self.batch_independent = check_flag("batch_independent", batch_independent)
        opened = open_store(store)
        self._rescale_with_baseline = check_flag("rescale_with_baseline", rescale_with_baseline)
        if self._rescale_with_baseline and lang is None and baseline_path is None:
            raise ValueError(
                "Need to specify Language when rescaling with baseline: pass lang (e.g. "
                "lang='en') or baseline_path"
            )
        self._lang = lang
        self._idf = check_flag("idf", idf)
        self.all_layers = check_flag("all_layers", all_layers)
        self.batch_size = check_batch_size(batch_size)
        self.nthreads = nthreads
        self._model_type = choose_model(model_type, lang)
        if precision not in ("fp32", "int8"):
            raise ValueError(f"precision must be 'fp32' or 'int8', got {precision!r}")
        runtime = load_runtime(
            self._model_type,
            num_layers,
            all_layers=self.all_layers,
            device=device,
            precision=precision,
        )
        self.device = "cuda" if "CUDAExecutionProvider" in runtime.encoder.providers else "cpu"
        self._pipeline = ScoringPipeline(runtime, EmbeddingCache(cache_bytes), opened)
        self.use_custom_baseline = baseline_path is not None
        if baseline_path is None:
            baseline_path = str(packaged_baseline(lang or "", self._model_type))
        self.baseline_path = baseline_path
        self._baseline_vals: np.ndarray | None = None
        self.missing_baseline = "raise"
        if idf_sents is not None:
            self.compute_idf(idf_sents)

    # -- properties mirroring bert_score.BERTScorer -------------------------------------------
    @property
    def model_type(self) -> str:
        """The model used (a Hub id or a path)."""
        return self._model_type

    @property
    def num_layers(self) -> int:
        """The layer whose output is scored."""
        return self._pipeline.runtime.num_layers

    @property
    def lang(self) -> str | None:
        return self._lang

    @property
    def idf(self) -> bool:
        return self._idf

    @property
    def rescale_with_baseline(self) -> bool:
        return self._rescale_with_baseline

    @property
    def precision(self) -> str:
        return self._pipeline.runtime.precision

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
        )

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

        >>> scorer = BERTScorer()
        >>> scorer.use_encoder(scorer.runtime.encoder)  # e.g. another quantisation of the model
        """
        self._pipeline.use_encoder(encoder)

    @property
    def block_pairs(self) -> int:
        """Pairs tokenised together per block (see the class docstring)."""
        return self._pipeline.block_pairs

    @block_pairs.setter
    def block_pairs(self, value: int) -> None:
        self._pipeline.block_pairs = value

    @property
    def round_bytes(self) -> int:
        """About the most bytes of token vectors held at once (see the class docstring)."""
        return self._pipeline.round_bytes

    @round_bytes.setter
    def round_bytes(self, value: int) -> None:
        self._pipeline.round_bytes = value

    # -- IDF ---------------------------------------------------------------------------------
    def compute_idf(self, sents: Sequence[str]) -> None:
        """Compute IDF weights from ``sents``: ``ln((M+1)/(df+1))`` over token-id sets.

        Overwrites weights computed before (with a message on stderr, as bert_score warns).

        >>> BERTScorer(idf=True).compute_idf(["the cat sat", "the dog ran"])
        """
        if self._pipeline.idf_weights is not None:
            warn("Warning: Overwriting the previous importance weights.")
        self.set_idf_sents(check_texts(sents, "sents"))

    def set_idf_sents(self, sents: Sequence[str]) -> None:
        """Use IDF weights computed from ``sents`` (as :meth:`compute_idf`), replacing earlier
        weights without a warning: for callers that set them on every call (the ``evaluate``
        module weights by each call's references).

        >>> BERTScorer(idf=True).set_idf_sents(["the cat sat", "the dog ran"])
        """
        self._pipeline.idf_weights = self._pipeline.idf_from_sentences(sents)

    def set_idf_dict(self, idf: Mapping[int, float]) -> None:
        """Use ready IDF weights ``{token id: weight}`` (a ``defaultdict``'s default is kept for
        unseen ids; with a plain dict every token scored must have a weight).

        >>> from collections import defaultdict
        >>> BERTScorer(idf=True).set_idf_dict(defaultdict(lambda: 1.0))  # every token weighs 1
        """
        self._pipeline.idf_weights = self._pipeline.idf_from_dict(idf)

    # -- scoring -----------------------------------------------------------------------------
    @overload
    def score(
        self,
        cands: Sequence[str],
        refs: RefsArg,
        verbose: bool = ...,
        batch_size: int | None = ...,
        return_hash: Literal[False] = ...,
        pad_floor: tuple[ArrayLike, ArrayLike] | None = ...,
    ) -> Scores: ...

    @overload
    def score(
        self,
        cands: Sequence[str],
        refs: RefsArg,
        verbose: bool = ...,
        batch_size: int | None = ...,
        *,
        return_hash: Literal[True],
        pad_floor: tuple[ArrayLike, ArrayLike] | None = ...,
    ) -> tuple[Scores, str]: ...

    @overload
    def score(
        self,
        cands: Sequence[str],
        refs: RefsArg,
        verbose: bool,
        batch_size: int | None,
        return_hash: Literal[True],
        pad_floor: tuple[ArrayLike, ArrayLike] | None = ...,
    ) -> tuple[Scores, str]: ...

    @overload
    def score(
        self,
        cands: Sequence[str],
        refs: RefsArg,
        verbose: bool = ...,
        batch_size: int | None = ...,
        return_hash: bool = ...,
        pad_floor: tuple[ArrayLike, ArrayLike] | None = ...,
    ) -> Scores | tuple[Scores, str]: ...

    def score(
        self,
        cands: Sequence[str],
        refs: RefsArg,
        verbose: bool = False,
        batch_size: int | None = None,
        return_hash: bool = False,
        pad_floor: tuple[ArrayLike, ArrayLike] | None = None,
    ) -> Scores | tuple[Scores, str]:
        """Score candidates against references.

        Parameters
        ----------
        cands : list of str
            Candidate sentences.
        refs : list of str or list of list of str
            One reference per candidate, or a list of references per candidate (each
            candidate's P, R and F are then the best over its references, each on its own).
        verbose : bool
            Print progress.
        batch_size : int, optional
            Pairs per bert_score scoring batch, which decides the padding floor (default 64, as
            ``bert_score.BERTScorer.score``; see ``batch_independent``), and most texts per
            encoder call (default: the scorer's ``batch_size``).
        return_hash : bool
            Also return :attr:`hash`.
        pad_floor : (array of bool, array of bool), optional
            Explicit padding-floor flags (precision side, recall side), one per pair after
            multi-reference flattening, in place of those of ``batch_size``'s batches: for
            engines that score a dataset in pieces (see ``rust_bertscore.kernel.pad_floor_flags``).

        Returns
        -------
        (P, R, F) : tuple of np.ndarray
            float32 arrays of shape (N,), or (layers + 1, N) with ``all_layers``.

        Examples
        --------
        Several references per candidate: each score is the best over them.

        >>> (P, R, F), settings = BERTScorer().score(
        ...     ["the cat sat"], [["a cat sat", "dogs run"]], return_hash=True
        ... )
        >>> F.shape, settings.startswith("sentence-transformers/all-MiniLM-L6-v2_L6_no-idf")
        ((1,), True)
        """
        weights = self._pipeline.weights_for(self._idf)
        floor_batch = SCORE_BATCH_SIZE if batch_size is None else check_batch_size(batch_size)
        out = self._pipeline.score(
            pair_texts(cands, refs),
            weights,
            self.batch_size if batch_size is None else check_batch_size(batch_size),
            None if self.batch_independent else floor_batch,
            pad_floor,
            verbose,
        )
        if self._rescale_with_baseline and self.baseline_vals is not None:
            p, r, f = (rescale(s, self._baseline_column(i)) for i, s in enumerate(out))
            out = (p, r, f)
        return (out, self.hash) if return_hash else out

    def _baseline_column(self, which: int) -> np.ndarray:
        vals = self.baseline_vals
        assert vals is not None
        return vals[:, which][:, None] if self.all_layers else vals[which]
