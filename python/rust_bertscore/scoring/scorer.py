"""The scorer front: :class:`BERTScorer`, bert_score 0.3.13's class on the scoring pipeline.

The front checks arguments, holds the settings (IDF, rescaling, the floor batch, the
:class:`~rust_bertscore.stages.options.ScoringOptions`) and calls
:class:`~rust_bertscore.engine.pipeline.ScoringPipeline`; its convenience methods call the
analyses (``align``, ``similarity``, ``heatmap``, ``compare``), which sit between the pipeline
and this module. Its properties, engine seams and IDF setters are in
:class:`~rust_bertscore.scoring.properties.ScorerProperties`, its base class. Nothing of the
package below this module imports it at run time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, overload

import numpy as np
from numpy.typing import ArrayLike

from ..catalog.registry import DEFAULT_MODEL, choose_model
from ..engine.pipeline import ScoringPipeline
from ..engine.settings import (
    DEFAULT_CACHE_BYTES,
    SCORE_BATCH_SIZE,
    RefsArg,
    Scores,
    batch_size_or,
    check_batch_size,
    check_flag,
)
from ..errors import InputValueError, ModelNotFoundError, warn_user
from ..models.fast_path import FastChoice, read_host, slowdown_warning
from ..models.runtime import check_backend, check_precision, load_runtime
from ..stages.embeddings import EmbeddingCache
from ..stages.options import ScoringOptions
from ..stages.rescale import packaged_baseline, rescale
from ..stages.scored_tokens import warn_truncated
from ..stages.text import pair_texts
from ..store import StoreArg, open_store
from .fast_measure import choose_fast_path
from .methods import ScorerAnalyses
from .properties import ScorerProperties

if TYPE_CHECKING:
    from ..analyses.seams import Scorer


class BERTScorer(ScorerProperties, ScorerAnalyses):
    """BERTScore with a model loaded once, as ``bert_score.BERTScorer``; held until
    :meth:`close` (or the end of a ``with`` block: ``with BERTScorer() as scorer:``).

    Parameters
    ----------
    model_type : str, optional
        A Hugging Face model id, a local checkpoint directory, or an ``.onnx`` file with its
        tokenizer beside it. Default: ``lang``'s model, or all-MiniLM-L6-v2 when ``lang`` is None.
    num_layers : int, optional
        The layer whose output is used (0 = embeddings). Default: bert_score's tuned layer for
        the model, else the model's last layer (with a warning: untuned).
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
        ``"cpu"``, ``"cuda"`` or ``"cuda:N"``; None picks CUDA when ONNX Runtime offers it
        (``onnxruntime-gpu``: docs/gpu.md). The choice made is :attr:`device`, and a scorer on
        CUDA says ``_cuda`` in :attr:`hash`.
    lang : str, optional
        Language code (``"en"``, ``"zh"``, ...): picks the model (unless ``model_type`` is
        given) and the rescale baseline. A code bert_score does not know warns and falls back
        to bert-base-multilingual-cased, as bert_score does.
    rescale_with_baseline : bool
        Rescale scores as ``(x - b) / (1 - b)`` with the baseline of model and ``lang``. The
        default model needs no ``lang``: its English baseline ships with the package.
    baseline_path : str, optional
        A baseline file of your own (``LAYER,P,R,F``).
    use_fast_tokenizer : bool
        Tokenise with the model's fast tokenizer (its ``tokenizer.json``), as bert_score's
        ``use_fast_tokenizer=True``: ids may differ from the slow tokenizer's (RoBERTa gets no
        prefix space), and :attr:`hash` ends in ``_fast-tokenizer``. Without ``tokenizer.json``
        the fast tokenizer is built from the slow files as transformers 4.57 converts them (T5,
        mT5, mBART, XLNet, DeBERTa-v3's SentencePiece models); where transformers has no fast
        class (XLM, Bertweet, ByT5, ProphetNet) bert_score gets the slow tokenizer, and so does
        this package. BlenderbotSmall raises :class:`~rust_bertscore.errors.InputValueError`.
    precision : {"fp32", "tf32", "fp16", "int8", "bf16", "fast"}
        ``"fp32"`` is float32 on every device (on CUDA with TF32 off: bert_score's numbers).
        ``"tf32"`` lets CUDA run float32 GEMMs in TF32 (faster, F within about 1e-2 of fp32 on
        small models; the CPU has no TF32 and computes fp32). ``"fp16"`` runs a float16 graph
        with float32 norms, softmax and residual stream (for GPUs; mean |dF| about 1e-5 against
        fp32 on all-MiniLM-L6-v2, docs/performance.md). ``"int8"`` runs an int8 encoder
        (projections with 7-bit weights per output channel and one activation scale per
        token; the fused attention stays fp32): about 1.3x
        faster than fp32 end to end on this project's 2-core benchmark machine, with F within
        about 0.003 of fp32 on average (Pearson r 0.9997 over WMT pairs; docs/performance.md).
        Use it to rank systems or filter data; keep fp32 to report numbers comparable with
        bert_score. ``"bf16"``: bfloat16, with ``runtime="openvino"`` on a CPU with BF16 only.
        On a CPU without the instructions that make them fast (VNNI or AMX for int8, AVX512-BF16
        or AMX for bf16) asking for int8 warns: it measured slower than fp32 there.
        ``"fast"``: the fastest CPU path of this host whose mean |dF| against fp32 is within
        0.002 on built-in pairs and that measures at least 1.1x fp32, chosen by a measurement
        of a few seconds at first use and cached per host and model (fp32 where nothing
        qualifies); :attr:`fast_choice` holds the figures, and the signature the precision
        and runtime that ran (:mod:`rust_bertscore.models.fast_path`).
    cache_bytes : int
        Bound, in bytes, of the LRU cache of encoded texts kept across :meth:`score` calls
        (default 512 MiB; 0 disables it; :meth:`close` empties it). Scoring a second system
        against the same references encodes only its candidates.
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
    long_texts : {"truncate", "window"}
        ``"truncate"`` (default, bert_score): texts longer than the model takes are cut, with
        one :class:`~rust_bertscore.errors.RustBertScoreWarning` per call. ``"window"``: they
        are encoded in overlapping windows of the model's maximum length and every token is
        scored (:mod:`rust_bertscore.stages.windows`); texts that fit score as with ``"truncate"``.
    window_stride : int, optional
        Content tokens between window starts (default: half a window).
    exclude_punctuation : bool
        Leave tokens made only of Unicode punctuation out of matching, on both sides.
    exclude_special_tokens : bool
        Leave the special tokens (``[CLS]``, ``[SEP]``, ``</s>``, ...) out of matching.
    beta : float
        F is ``(1 + beta**2) P R / (beta**2 P + R)`` (default 1: F1).
    revision : str, optional
        The Hub branch, tag or commit of ``model_type`` (default: ``main``); named in :attr:`hash`.
    runtime : {"auto", "onnxruntime", "openvino"}
        What runs the encoder. ``"auto"`` (the default) is ONNX Runtime (bert_score's numbers)
        for fp32, tf32 and fp16 and on CUDA, and OpenVINO for ``precision="int8"`` and
        ``"bf16"`` on the CPU where it is installed (the ``[openvino]`` extra) and its CPU
        plugin reports INT8/BF16 (else ONNX Runtime's int8, or an error for bf16).
        ``"onnxruntime"`` or ``"openvino"`` choose. OpenVINO runs on the CPU only: fp32 within
        1e-5 of bert_score, ``"bf16"`` on CPUs with BF16, ``"int8"`` int8 weights with activations
        quantised per token (2.67x bert_score, 1.73x ONNX Runtime fp32, at mean |dF| 0.0016 on
        a 2-core Xeon with AMX, where bf16 ran 4.41x at 0.00017). The runtime
        that ran is named in :attr:`hash` (``_openvino``) and :attr:`signature`;
        docs/cpu_precisions.md says when to use which.

    Attributes
    ----------
    options : ScoringOptions
        ``long_texts``, ``window_stride``, the exclusions and ``beta`` (named in :attr:`hash`).
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
        use_fast_tokenizer: bool = False,
        precision: str = "fp32",
        cache_bytes: int = DEFAULT_CACHE_BYTES,
        batch_independent: bool = False,
        store: StoreArg = None,
        long_texts: str = "truncate",
        window_stride: int | None = None,
        exclude_punctuation: bool = False,
        exclude_special_tokens: bool = False,
        beta: float = 1.0,
        revision: str | None = None,
        runtime: str = "auto",
    ) -> None:
        self.batch_independent = check_flag("batch_independent", batch_independent)
        self.options = ScoringOptions(
            long_texts, window_stride, exclude_punctuation, exclude_special_tokens, beta
        )
        opened = open_store(store)
        self._rescale_with_baseline = check_flag("rescale_with_baseline", rescale_with_baseline)
        if self.options.beta != 1.0 and self._rescale_with_baseline:
            raise InputValueError(
                "rescale_with_baseline with beta != 1: the baselines are of F1, not F-beta"
            )
        baseline_lang = lang
        if self._rescale_with_baseline and lang is None and baseline_path is None:
            if model_type is not None and model_type != DEFAULT_MODEL:
                raise InputValueError(
                    "Need to specify Language when rescaling with baseline: pass lang with your "
                    f"model (e.g. lang='en', model_type={model_type!r}) or baseline_path"
                )
            baseline_lang = "en"  # the default model's shipped (English) baseline
        self._lang = lang
        self._idf = check_flag("idf", idf)
        self.all_layers = check_flag("all_layers", all_layers)
        self.batch_size = check_batch_size(batch_size)
        self.nthreads = nthreads
        self.revision = revision
        self._model_type = choose_model(model_type, lang)
        fast = check_flag("use_fast_tokenizer", use_fast_tokenizer)
        self.fast_choice: FastChoice | None = None
        """With ``precision="fast"``: the path chosen for this host and model, with the
        figures behind it (``fast_choice.explain()``); None otherwise."""
        if precision == "fast":
            self.fast_choice = choose_fast_path(
                self._model_type,
                num_layers,
                type(self),
                runtime=runtime,
                device=device,
                use_fast_tokenizer=fast,
                revision=revision,
            )
            precision, runtime = self.fast_choice.precision, self.fast_choice.runtime
        check_precision(precision)
        check_backend(runtime, precision, device)
        try:
            loaded = load_runtime(
                self._model_type,
                num_layers,
                all_layers=self.all_layers,
                device=device,
                precision=precision,
                use_fast_tokenizer=fast,
                owner=self,  # close() releases it from the process's cache (RUNTIMES)
                revision=revision,
                runtime=runtime,
            )
        except ModelNotFoundError as e:
            if model_type is not None or lang is None:
                raise
            raise ModelNotFoundError(
                f"{e} (lang={lang!r} picks {self._model_type}, as in bert_score; to keep "
                f"another model, pass it with lang: lang={lang!r}, model_type=...)"
            ) from e
        self.device = loaded.encoder.device
        if self.fast_choice is None and self.device == "cpu":
            slow = slowdown_warning(precision, read_host())
            if slow is not None:
                warn_user(slow)
        self._own_store = None if opened is store else opened  # opened from a path: ours
        self._open_pipeline = ScoringPipeline(
            loaded, EmbeddingCache(cache_bytes), opened, self.options
        )
        self.use_custom_baseline = baseline_path is not None
        if baseline_path is None:
            baseline_path = str(packaged_baseline(baseline_lang or "", self._model_type))
        self.baseline_path = baseline_path
        self._baseline_vals: np.ndarray | None = None
        self.missing_baseline = "raise"
        if idf_sents is not None:
            self.compute_idf(idf_sents)

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
            engines that score a dataset in pieces (see ``rust_bertscore._core.pad_floor_flags``).

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
        floor_batch = batch_size_or(SCORE_BATCH_SIZE, batch_size)
        paired = pair_texts(cands, refs)
        if self.all_layers and paired.group_offsets is not None:
            warn_user(
                "all_layers with several references per candidate: each candidate gets its best "
                "reference per layer, an array of shape (layers, candidates); bert_score 0.3.13 "
                "takes this maximum over the wrong axis and returns other shapes"
            )
        cut: set[str] = set()
        out = self._pipeline.score(
            paired,
            weights,
            batch_size_or(self.batch_size, batch_size),
            None if self.batch_independent else floor_batch,
            pad_floor,
            verbose,
            truncated=cut,
        )
        warn_truncated(len(cut), self._pipeline.tokenizer.max_length)
        if self._rescale_with_baseline and self.baseline_vals is not None:
            p, r, f = (rescale(s, self._baseline_column(i)) for i, s in enumerate(out))
            out = (p, r, f)
        return (out, self.hash) if return_hash else out

    def _baseline_column(self, which: int) -> np.ndarray:
        vals = self.baseline_vals
        assert vals is not None
        return vals[:, which][:, None] if self.all_layers else vals[which]


if TYPE_CHECKING:

    def _front_satisfies_the_analyses(scorer: BERTScorer) -> Scorer:
        # mypy's check that BERTScorer has every seam the analyses call (analyses/seams.py).
        return scorer
