"""Stage 5, scores: ``score()`` and ``BERTScorer``, bert_score 0.3.13's API on the Rust kernel."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Literal, Union, overload

import numpy as np
from numpy.typing import ArrayLike

from . import _core
from ._version import __version__
from .embeddings import EmbeddingCache, TokenWeights, idf_from_dict, unseen_idf
from .errors import warn
from .models.loading import ModelRuntime, load_runtime
from .models.registry import choose_model
from .options import ScoringOptions, f_beta
from .rescale import load_baseline, packaged_baseline, rescale
from .scored_tokens import ScoredTokens, warn_truncated
from .text import PairedTexts, check_texts, pair_texts
from .token_filter import drop_rows
from .tokenization.tokenizer import TextTokenizer
from .windows import embed_windowed

if TYPE_CHECKING:
    from .align import Alignment
    from .compare import Comparison
    from .similarity import SimilarityMatrix
    from .text_embedding import TextEmbedding

Scores = tuple[np.ndarray, np.ndarray, np.ndarray]
RefsArg = Union[Sequence[str], Sequence[Sequence[str]]]

DEFAULT_CACHE_BYTES = 512 * 1024 * 1024
"""Default bound of a scorer's cache of encoded texts (bytes)."""

SCORE_BATCH_SIZE = 64
"""bert_score's default scoring batch (pairs), which decides its padding floor."""

PAIRS_PER_CHUNK = 2048
"""Most pairs scored per round: only their texts' embeddings are held at once."""

CHUNK_BYTES = 128 * 1024 * 1024
"""About the most bytes of token vectors a round holds (long texts make rounds of fewer pairs)."""


def _check_flag(name: str, value: object) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def _check_batch_size(batch_size: object) -> int:
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)):
        raise TypeError(f"batch_size must be a positive int, got {batch_size!r}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size}")
    return int(batch_size)


class BERTScorer:
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
    long_texts : {"truncate", "window"}
        ``"truncate"`` (default, bert_score): texts longer than the model takes are cut, with
        one :class:`~rust_bertscore.errors.RustBertScoreWarning` per call. ``"window"``: they
        are encoded in overlapping windows of the model's maximum length and every token is
        scored (:mod:`rust_bertscore.windows`); texts that fit score as with ``"truncate"``.
    window_stride : int, optional
        Content tokens between window starts (default: half a window).
    exclude_punctuation : bool
        Leave tokens made only of Unicode punctuation out of matching, on both sides.
    exclude_special_tokens : bool
        Leave the special tokens (``[CLS]``, ``[SEP]``, ``</s>``, ...) out of matching.
    beta : float
        F is ``(1 + beta**2) P R / (beta**2 P + R)`` (default 1: F1).

    Attributes
    ----------
    block_pairs : int
        Pairs tokenised together per block (default :data:`PAIRS_PER_CHUNK`); set it lower to
        hold fewer texts at once. Scores do not depend on it.
    round_bytes : int
        About the most bytes of token vectors held at once while scoring (default
        :data:`CHUNK_BYTES`): a block is encoded and scored in rounds within it. Scores do not
        depend on it.
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
        long_texts: str = "truncate",
        window_stride: int | None = None,
        exclude_punctuation: bool = False,
        exclude_special_tokens: bool = False,
        beta: float = 1.0,
    ) -> None:
        self.batch_independent = _check_flag("batch_independent", batch_independent)
        self.options = ScoringOptions(
            long_texts, window_stride, exclude_punctuation, exclude_special_tokens, beta
        )
        self._rescale_with_baseline = _check_flag("rescale_with_baseline", rescale_with_baseline)
        if self.options.beta != 1.0 and self._rescale_with_baseline:
            raise ValueError(
                "rescale_with_baseline with beta != 1: the baselines are of F1, not F-beta"
            )
        if self._rescale_with_baseline and lang is None and baseline_path is None:
            raise ValueError(
                "Need to specify Language when rescaling with baseline: pass lang (e.g. "
                "lang='en') or baseline_path"
            )
        self._lang = lang
        self._idf = _check_flag("idf", idf)
        self.all_layers = _check_flag("all_layers", all_layers)
        self.batch_size = _check_batch_size(batch_size)
        self.nthreads = nthreads
        self._model_type = choose_model(model_type, lang)
        if precision not in ("fp32", "int8"):
            raise ValueError(f"precision must be 'fp32' or 'int8', got {precision!r}")
        self._runtime: ModelRuntime = load_runtime(
            self._model_type,
            num_layers,
            all_layers=self.all_layers,
            device=device,
            precision=precision,
        )
        self.device = (
            "cuda" if "CUDAExecutionProvider" in self._runtime.encoder.providers else ("cpu")
        )
        self._tokens = ScoredTokens(self._runtime.tokenizer, self.options)
        self._uniform = TokenWeights.uniform(
            self._runtime.tokenizer.special_ids, self._runtime.tokenizer.vocab_size
        )
        self._idf_weights: TokenWeights | None = None
        self._cache = EmbeddingCache(cache_bytes)
        self.block_pairs = PAIRS_PER_CHUNK
        self.round_bytes = CHUNK_BYTES
        self.use_custom_baseline = baseline_path is not None
        if baseline_path is None:
            baseline_path = str(packaged_baseline(lang or "", self._model_type))
        self.baseline_path = baseline_path
        self._baseline_vals: np.ndarray | None = None
        # What a missing baseline file does: "raise" (bert_score's scorer) or "warn" (score()).
        self._missing_baseline = "raise"
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
        return self._runtime.num_layers

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
        return self._runtime.precision

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
        )

    @property
    def baseline_vals(self) -> np.ndarray | None:
        """The baseline row (P, R, F) for ``num_layers``, or all rows with ``all_layers``.

        Raises ``ValueError`` when the baseline file does not exist (as bert_score's scorer;
        :func:`score` warns and leaves scores unscaled instead, as ``bert_score.score``).
        """
        if self._baseline_vals is None:
            self._baseline_vals = load_baseline(
                self.baseline_path,
                self.num_layers,
                self.all_layers,
                model_type=self._model_type,
                lang=self._lang,
                missing=self._missing_baseline,
            )
        return self._baseline_vals

    @property
    def tokenizer(self) -> TextTokenizer:
        """The model's tokenizer, set up as bert_score's ``sent_encode``."""
        return self._runtime.tokenizer

    @property
    def scored_tokens(self) -> ScoredTokens:
        """The tokens this scorer scores (ids as encoded, exclusions, windows): see
        :class:`rust_bertscore.scored_tokens.ScoredTokens`."""
        return self._tokens

    def set_idf_dict(self, idf: Mapping[int, float]) -> None:
        """Use ready IDF weights ``{token id: weight}`` (a ``defaultdict``'s default is kept for
        unseen ids; with a plain dict every token scored must have a weight)."""
        self._idf_weights = self._user_idf(idf)

    @property
    def cache(self) -> EmbeddingCache:
        """The cache of encoded texts (see ``cache_bytes``)."""
        return self._cache

    # -- IDF ---------------------------------------------------------------------------------
    def compute_idf(self, sents: Sequence[str]) -> None:
        """Compute IDF weights from ``sents``: ``ln((M+1)/(df+1))`` over token-id sets.

        Overwrites weights computed before (with a message on stderr, as bert_score warns).
        """
        if self._idf_weights is not None:
            warn("Warning: Overwriting the previous importance weights.")
        self._idf_weights = self._idf_table(check_texts(sents, "sents"))

    def _idf_table(self, sents: Sequence[str]) -> TokenWeights:
        docs = self._tokens.encode(sents)  # whole texts with long_texts="window"
        ids, values = _core.idf_table(docs)
        return TokenWeights.from_idf(
            dict(zip(ids.tolist(), values.tolist())),
            unseen_idf(len(docs)),
            self._runtime.tokenizer.vocab_size,
        )

    def _user_idf(self, idf: Mapping[int, float]) -> TokenWeights:
        entries, default = idf_from_dict(idf)
        return TokenWeights.from_idf(
            entries,
            math.nan if default is None else default,
            self._runtime.tokenizer.vocab_size,
        )

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
        """
        if self._idf:
            if self._idf_weights is None:
                raise ValueError(
                    "IDF weights are not computed: pass idf_sents or call compute_idf() first"
                )
            weights = self._idf_weights
        else:
            weights = self._uniform
        floor_batch = SCORE_BATCH_SIZE if batch_size is None else _check_batch_size(batch_size)
        out = self._score(
            pair_texts(cands, refs), weights, verbose, batch_size, floor_batch, pad_floor
        )
        if self._rescale_with_baseline and self.baseline_vals is not None:
            p, r, f = (rescale(s, self._baseline_column(i)) for i, s in enumerate(out))
            out = (p, r, f)
        return (out, self.hash) if return_hash else out

    # -- the data behind the scores -----------------------------------------------------------
    def embed(self, texts: Sequence[str], batch_size: int | None = None) -> list[TextEmbedding]:
        """Each text as this scorer scores it: token strings, ids, the special-token and
        excluded-token masks, the layer's vectors (float32, as the encoder gives them) and
        the weights. See :class:`rust_bertscore.text_embedding.TextEmbedding`.

        With these, any score can be checked by hand: drop the excluded tokens, normalise the
        rows, take the cosine matrix of a pair, its row and column maxima, and their means
        weighted by ``weights`` (bert_score's batch padding floor aside: compare with
        ``batch_independent=True`` or one pair at a time).
        """
        from .text_embedding import text_embeddings

        texts = check_texts(texts, "texts")
        weights = self._idf_weights if self._idf else self._uniform
        if weights is None:
            raise ValueError("IDF weights are not computed: pass idf_sents or call compute_idf()")
        batch = self.batch_size if batch_size is None else _check_batch_size(batch_size)
        tokenized = self._tokens.tokenize(texts)
        data, offsets, slot = self._vectors(texts, tokenized.ids, batch)
        rows = [slice(offsets[j], offsets[j + 1]) for j in slot]
        tok = self._runtime.tokenizer
        return text_embeddings(
            texts,
            tokenized.ids,
            [[tok.id_to_token(t) for t in ids] for ids in tokenized.ids],
            [self._tokens.special(ids) for ids in tokenized.ids],
            tokenized.keep,
            [data[:, r] if self.all_layers else data[r] for r in rows],
            [weights.weights(ids) for ids in tokenized.ids],
        )

    # -- token alignments (see align.py) -----------------------------------------------------
    def align(self, cand: str, ref: str) -> Alignment:
        """Token alignment of one pair: every token of each side with its weight and its best
        match on the other side (position and cosine), and the pair's P/R/F, equal to
        :meth:`score` of the pair alone. See :class:`rust_bertscore.align.Alignment`."""
        from .align import align_one

        return align_one(self, cand, ref)

    def align_batch(
        self, cands: Sequence[str], refs: RefsArg, batch_size: int | None = None
    ) -> list[Alignment]:
        """Token alignments of many pairs, one record per (candidate, reference) pair, with
        P/R/F as :meth:`score` gives them for the same inputs and ``batch_size`` (each side says
        whether bert_score's batch padding floor applied to it). See
        :func:`rust_bertscore.align.align_pairs`."""
        from .align import align_pairs

        return align_pairs(self, cands, refs, batch_size)

    # -- comparing systems (see compare.py) ---------------------------------------------------
    def compare(
        self,
        cands_by_system: Mapping[str, Sequence[str]],
        refs: RefsArg,
        test: str = "paired-bs",
        n_samples: int | None = None,
        seed: int | None = 12345,
        confidence: float = 0.95,
        batch_size: int | None = None,
        verbose: bool = False,
    ) -> Comparison:
        """Score several systems over the same references and test each against the first:
        mean P/R/F1 with bootstrap intervals, and paired-bootstrap (``test="paired-bs"``) or
        approximate-randomisation (``"paired-ar"``) p-values. References are encoded once.
        See :func:`rust_bertscore.compare.compare_systems`."""
        from .compare import compare_systems

        return compare_systems(
            self, cands_by_system, refs, test, n_samples, seed, confidence, batch_size, verbose
        )

    # -- the similarity matrix and its picture (see similarity.py, plot.py) --------------------
    def similarity_matrix(self, candidate: str, reference: str) -> SimilarityMatrix:
        """Token cosine similarities of one pair with this scorer's model and layer (rescaled
        with the F baseline when the scorer rescales), the tokens, their weights and the
        pair's P/R/F with uniform weights, as bert_score's ``plot_example`` computes them.
        See :class:`rust_bertscore.similarity.SimilarityMatrix`."""
        from .similarity import compute_similarity_matrix

        return compute_similarity_matrix(self, candidate, reference)

    def plot_example(self, candidate: str, reference: str, fname: str = "") -> SimilarityMatrix:
        """bert_score's ``BERTScorer.plot_example``: the heatmap of one pair, saved to
        ``fname`` when given (needs matplotlib; loaded only when called). Returns the
        :class:`~rust_bertscore.similarity.SimilarityMatrix` drawn."""
        from .plot import require_matplotlib, save_example

        require_matplotlib()
        return save_example(self.similarity_matrix(candidate, reference), fname)

    def _baseline_column(self, which: int) -> np.ndarray:
        vals = self.baseline_vals
        assert vals is not None
        return vals[:, which][:, None] if self.all_layers else vals[which]

    def _score(
        self,
        paired: PairedTexts,
        weights: TokenWeights,
        verbose: bool,
        batch_size: int | None,
        floor_batch: int,
        pad_floor: tuple[ArrayLike, ArrayLike] | None = None,
    ) -> Scores:
        batch = self.batch_size if batch_size is None else _check_batch_size(batch_size)
        floors = _explicit_floors(pad_floor, len(paired.cands))
        if self.all_layers and paired.group_offsets is not None:
            warn(
                "all_layers with several references per candidate: each candidate gets its best "
                "reference per layer, an array of shape (layers, candidates); bert_score 0.3.13 "
                "takes this maximum over the wrong axis and returns other shapes",
                4,
            )
        if verbose:
            print("calculating scores...")
        start = time.perf_counter()
        prf = self._score_pairs(
            paired, weights, batch, verbose, None if self.batch_independent else floor_batch, floors
        )
        if paired.group_offsets is not None:
            prf = _max_over_groups(prf, paired.group_offsets)
        if verbose:
            elapsed = max(time.perf_counter() - start, 1e-9)
            print(f"done in {elapsed:.2f} seconds, {len(paired.refs) / elapsed:.2f} sentences/sec")
        return prf[0], prf[1], prf[2]

    def _score_pairs(
        self,
        paired: PairedTexts,
        weights: TokenWeights,
        batch_size: int,
        verbose: bool,
        floor_batch: int | None,
        floors: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> np.ndarray:
        """Raw P, R, F of every (candidate, reference) pair: shape (3, [layers,] pairs).

        Pairs go in blocks of about :attr:`block_pairs` (a multiple of ``floor_batch``, so
        that bert_score's scoring batches never straddle two blocks), tokenised together, and
        each block in rounds of at most :attr:`round_bytes` of token vectors: a round encodes
        (texts seen before come from the cache) and scores only its own texts, so memory does
        not grow with the number of pairs. ``floor_batch`` None: no padding floor, unless
        ``floors`` gives explicit flags.
        """
        layers = self._runtime.depth + 1 if self.all_layers else 1
        hidden = self._runtime.encoder.hidden_size or 1024
        budget = max(1, self.round_bytes // (4 * hidden * layers))  # token rows per round
        n = len(paired.cands)
        out = np.zeros((3, layers, n), dtype=np.float32)
        warned: set[str] = set()
        cut: set[str] = set()
        progress = None
        if verbose:
            from tqdm.auto import tqdm

            progress = tqdm(total=n, desc="scoring", unit="pair")
        step = self.block_pairs
        if floor_batch is not None:
            step = max(1, self.block_pairs // floor_batch) * floor_batch
        for block in range(0, n, step):
            block_stop = min(block + step, n)
            texts: dict[str, int] = {}
            cand_idx = np.fromiter(
                (texts.setdefault(t, len(texts)) for t in paired.cands[block:block_stop]),
                np.int64,
                block_stop - block,
            )
            ref_idx = np.fromiter(
                (texts.setdefault(t, len(texts)) for t in paired.refs[block:block_stop]),
                np.int64,
                block_stop - block,
            )
            unique = list(texts)
            tokenized = self._tokens.tokenize(unique)
            ids, keep = tokenized.ids, tokenized.keep
            cut.update(unique[i] for i in tokenized.cut)
            _warn_empty(tokenized.empty, cand_idx, ref_idx, warned)
            text_weights = [weights.weights(t) for t in ids]
            _check_weights(text_weights, unique)
            if keep is not None:  # excluded tokens: dropped from both sides (token_filter)
                text_weights = [w[k] for w, k in zip(text_weights, keep)]
            lengths = tokenized.lengths()
            weightless = np.fromiter((not w.sum() > 0 for w in text_weights), bool, len(ids))
            two = tokenized.empty[cand_idx] | tokenized.empty[ref_idx]
            if floors is not None:
                floor_p, floor_r = floors[0][block:block_stop], floors[1][block:block_stop]
            elif floor_batch is not None:
                floor_p, floor_r = _core.pad_floor_flags(
                    lengths[cand_idx], lengths[ref_idx], floor_batch
                )
            else:
                floor_p = floor_r = None  # type: ignore[assignment]  # no floor: batch-independent
            for lo, hi in _rounds(lengths[cand_idx] + lengths[ref_idx], budget):
                needed, inverse = np.unique(
                    np.concatenate([cand_idx[lo:hi], ref_idx[lo:hi]]), return_inverse=True
                )
                data, offsets, slot = self._vectors(
                    [unique[i] for i in needed], [ids[i] for i in needed], batch_size
                )
                by_slot = needed[np.argsort(slot)]
                if keep is not None:
                    data, offsets = drop_rows(data, offsets, [keep[i] for i in by_slot])
                packed_weights = np.concatenate([text_weights[i] for i in by_slot])
                local = slot[inverse.reshape(-1)]
                local_cand, local_ref = local[: hi - lo], local[hi - lo :]
                round_floors = (
                    None if floor_p is None else floor_p[lo:hi],
                    None if floor_r is None else floor_r[lo:hi],
                )
                nan_sides = _weightless_sides(
                    weightless[cand_idx[lo:hi]], weightless[ref_idx[lo:hi]], two[lo:hi]
                )
                for layer, vectors in enumerate(data if self.all_layers else data[None]):
                    p, r, f = _core.score_ragged(
                        vectors,
                        offsets,
                        packed_weights,
                        local_cand,
                        local_ref,
                        floor_precision=round_floors[0],
                        floor_recall=round_floors[1],
                    )
                    if nan_sides is not None:
                        unit = np.where(
                            np.repeat(weightless[by_slot], np.diff(offsets)), 1.0, packed_weights
                        ).astype(np.float32)
                        _score_weightless(
                            (p, r, f), nan_sides, vectors, offsets, unit, local, round_floors
                        )
                    out[0, layer, block + lo : block + hi] = p
                    out[1, layer, block + lo : block + hi] = r
                    out[2, layer, block + lo : block + hi] = f
                if progress is not None:
                    progress.update(hi - lo)
            if self.options.beta != 1.0:
                span = slice(block, block_stop)
                out[2, :, span] = f_beta(out[0, :, span], out[1, :, span], self.options.beta)
            # bert_score zeroes P and R (not F) of a pair with a 2-token side ("empty")
            out[:2, :, block + np.flatnonzero(two)] = 0.0
        if progress is not None:
            progress.close()
        warn_truncated(len(cut), self._runtime.tokenizer.max_length)
        return out if self.all_layers else out[:, 0, :]

    def _vectors(
        self, texts: Sequence[str], ids: Sequence[list[int]], batch_size: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Token vectors of ``texts`` packed for the kernel: from the cache where seen before,
        else encoded straight into place.

        Returns ``(data, offsets, slot)``: text ``i`` is rows ``offsets[slot[i]]:offsets[slot[i]
        + 1]`` of ``data`` (of its last two axes, for all layers).
        """
        cache = self._cache
        found = [cache.get(t) for t in texts] if cache.max_bytes else [None] * len(texts)
        # A text cached with other ids (cut, or whole) is encoded again.
        found = [
            v if v is None or v.shape[-2] == len(ids[i]) else None for i, v in enumerate(found)
        ]
        missing = [i for i, v in enumerate(found) if v is None]
        hits = [i for i, v in enumerate(found) if v is not None]
        hit_lengths = np.fromiter((len(ids[i]) for i in hits), np.int64, len(hits))
        packed = embed_windowed(
            self._runtime.encoder,
            [ids[i] for i in missing],
            self._tokens.window,
            batch_size,
            extra_rows=int(hit_lengths.sum()),
        )
        data, fresh = packed.data, len(missing)
        offsets = np.concatenate([packed.offsets, packed.offsets[-1] + np.cumsum(hit_lengths)])
        slot = np.empty(len(texts), dtype=np.int64)
        slot[np.asarray(missing, dtype=np.int64)[packed.order]] = np.arange(fresh)
        for k, i in enumerate(hits):
            slot[i] = fresh + k
            lo, hi = offsets[fresh + k], offsets[fresh + k + 1]
            if self.all_layers:
                data[:, lo:hi] = found[i]
            else:
                data[lo:hi] = found[i]
        if cache.max_bytes:
            for j, i in enumerate(np.asarray(missing, dtype=np.int64)[packed.order]):
                lo, hi = offsets[j], offsets[j + 1]
                # A copy: a view would keep the whole round's array alive.
                cache.put(texts[i], (data[:, lo:hi] if self.all_layers else data[lo:hi]).copy())
        return data, offsets, slot


def _weightless_sides(
    cand_weightless: np.ndarray, ref_weightless: np.ndarray, two_tokens: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """Pairs whose candidate (P side) or reference (R side) weighs 0 in all and is not "empty"
    (2 tokens), or None when there are none.

    bert_score divides by the side's weight sum, so that side's score is 0/0 = NaN, F is NaN
    and then set to 0, while the other side is computed as usual (its maxima do not depend on
    weights). With idf this happens to a text whose every token is in every reference, or to
    a T5 text that encodes to ``</s>`` alone; the kernel scores such a pair 0 on both sides.
    """
    nan_p = cand_weightless & ~two_tokens
    nan_r = ref_weightless & ~two_tokens
    return (nan_p, nan_r) if (nan_p.any() or nan_r.any()) else None


def _score_weightless(
    prf: tuple[np.ndarray, np.ndarray, np.ndarray],
    nan_sides: tuple[np.ndarray, np.ndarray],
    vectors: np.ndarray,
    offsets: np.ndarray,
    unit_weights: np.ndarray,
    local: np.ndarray,
    floors: tuple[np.ndarray | None, np.ndarray | None],
) -> None:
    """Give the pairs of :func:`_weightless_sides` bert_score's numbers, in place: the
    weightless side NaN, F 0, the other side scored again with the weightless texts' weights
    set to 1 (which changes no maximum)."""
    nan_p, nan_r = nan_sides
    redo = np.flatnonzero(nan_p | nan_r)
    n = len(prf[0])
    p2, r2, _ = _core.score_ragged(
        vectors,
        offsets,
        unit_weights,
        local[:n][redo],
        local[n:][redo],
        floor_precision=None if floors[0] is None else floors[0][redo],
        floor_recall=None if floors[1] is None else floors[1][redo],
    )
    prf[0][redo] = np.where(nan_p[redo], np.nan, p2)
    prf[1][redo] = np.where(nan_r[redo], np.nan, r2)
    prf[2][redo] = 0.0


def _explicit_floors(
    pad_floor: tuple[ArrayLike, ArrayLike] | None, n_pairs: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """Check a user's ``pad_floor`` flags: two bool arrays of one flag per (flattened) pair."""
    if pad_floor is None:
        return None
    if not isinstance(pad_floor, (tuple, list)) or len(pad_floor) != 2:
        raise TypeError("pad_floor must be a pair (floor_precision, floor_recall) of bool arrays")
    out = []
    for name, flags in zip(("floor_precision", "floor_recall"), pad_floor):
        arr = np.asarray(flags)
        if arr.ndim != 1 or len(arr) != n_pairs:
            raise ValueError(
                f"pad_floor's {name} must hold one flag per pair after multi-reference "
                f"flattening ({n_pairs}), got shape {arr.shape}"
            )
        if arr.dtype.kind not in "biu" and len(arr):
            raise TypeError(f"pad_floor's {name} must be a bool array, got dtype {arr.dtype}")
        out.append(arr.astype(bool))
    return out[0], out[1]


def _rounds(pair_tokens: np.ndarray, budget: int) -> Iterator[tuple[int, int]]:
    """``[lo, hi)`` runs of pairs whose tokens (candidate + reference) add up to at most
    ``budget``; a run has at least one pair."""
    n, lo = len(pair_tokens), 0
    ends = np.cumsum(pair_tokens)
    while lo < n:
        base = ends[lo - 1] if lo else 0
        hi = int(np.searchsorted(ends, base + budget, side="right"))
        hi = min(max(hi, lo + 1), n)
        yield lo, hi
        lo = hi


def _max_over_groups(prf: np.ndarray, offsets: Sequence[int]) -> np.ndarray:
    """P, R and F each maxed over every candidate's references (last axis), by the kernel's
    ``_core.multi_ref_max`` (a NaN in a group gives NaN, as bert_score's ``torch.max``)."""
    arr = np.asarray(prf, dtype=np.float32)
    bounds = np.asarray(offsets, dtype=np.int64)
    if arr.ndim == 2:
        return np.stack(_core.multi_ref_max(arr[0], arr[1], arr[2], bounds))
    # (3, layers, pairs): layer by layer.
    per_layer = [
        _core.multi_ref_max(arr[0, i], arr[1, i], arr[2, i], bounds) for i in range(arr.shape[1])
    ]
    groups = len(bounds) - 1
    return np.stack(
        [
            np.stack([layer[k] for layer in per_layer])
            if per_layer
            else np.zeros((0, groups), np.float32)
            for k in range(3)
        ]
    )


def _warn_empty(
    empty: np.ndarray, cand_idx: np.ndarray, ref_idx: np.ndarray, warned: set[str]
) -> None:
    """bert_score's warnings for empty texts, each at most once per call (``warned``)."""
    if "cand" not in warned and len(cand_idx) and empty[cand_idx].any():
        warned.add("cand")
        warn("Warning: Empty candidate sentence detected; setting raw BERTscores to 0.", 5)
    if "ref" not in warned and len(ref_idx) and empty[ref_idx].any():
        warned.add("ref")
        warn("Warning: Empty reference sentence detected; setting raw BERTScores to 0.", 5)


def _check_weights(weights: Sequence[np.ndarray], texts: Sequence[str]) -> None:
    for i, w in enumerate(weights):
        if np.isnan(w).any():
            raise ValueError(
                f"the idf dict has no weight for a token of text {texts[i]!r:.60}: give a "
                "defaultdict (as bert_score's get_idf_dict returns) or weights for every token id"
            )


def make_hash(
    model_type: str,
    num_layers: int,
    idf: bool,
    rescale_with_baseline: bool,
    use_custom_baseline: bool,
    precision: str = "fp32",
    batch_independent: bool = False,
    options: ScoringOptions | None = None,
) -> str:
    """The settings string bert_score prints, naming this package and its version, and the
    options other than bert_score's (:meth:`ScoringOptions.hash_suffix`)."""
    msg = (
        f"{model_type}_L{num_layers}{'_idf' if idf else '_no-idf'}"
        f"_version={__version__}(rust-bertscore)"
    )
    if rescale_with_baseline:
        msg += "-custom-rescaled" if use_custom_baseline else "-rescaled"
    if precision != "fp32":
        msg += f"_{precision}"
    if batch_independent:
        msg += "_batch-independent"
    if options is not None:
        msg += options.hash_suffix()
    return msg


@overload
def score(
    cands: Sequence[str],
    refs: RefsArg,
    model_type: str | None = ...,
    num_layers: int | None = ...,
    verbose: bool = ...,
    idf: bool | Mapping[int, float] = ...,
    device: str | None = ...,
    batch_size: int = ...,
    nthreads: int = ...,
    all_layers: bool = ...,
    lang: str | None = ...,
    return_hash: Literal[False] = ...,
    rescale_with_baseline: bool = ...,
    baseline_path: str | None = ...,
    precision: str = ...,
    batch_independent: bool = ...,
    long_texts: str = ...,
    window_stride: int | None = ...,
    exclude_punctuation: bool = ...,
    exclude_special_tokens: bool = ...,
    beta: float = ...,
) -> Scores: ...


@overload
def score(
    cands: Sequence[str],
    refs: RefsArg,
    model_type: str | None = ...,
    num_layers: int | None = ...,
    verbose: bool = ...,
    idf: bool | Mapping[int, float] = ...,
    device: str | None = ...,
    batch_size: int = ...,
    nthreads: int = ...,
    all_layers: bool = ...,
    lang: str | None = ...,
    *,
    return_hash: Literal[True],
    rescale_with_baseline: bool = ...,
    baseline_path: str | None = ...,
    precision: str = ...,
    batch_independent: bool = ...,
    long_texts: str = ...,
    window_stride: int | None = ...,
    exclude_punctuation: bool = ...,
    exclude_special_tokens: bool = ...,
    beta: float = ...,
) -> tuple[Scores, str]: ...


@overload
def score(
    cands: Sequence[str],
    refs: RefsArg,
    model_type: str | None,
    num_layers: int | None,
    verbose: bool,
    idf: bool | Mapping[int, float],
    device: str | None,
    batch_size: int,
    nthreads: int,
    all_layers: bool,
    lang: str | None,
    return_hash: Literal[True],
    rescale_with_baseline: bool = ...,
    baseline_path: str | None = ...,
    precision: str = ...,
    batch_independent: bool = ...,
    long_texts: str = ...,
    window_stride: int | None = ...,
    exclude_punctuation: bool = ...,
    exclude_special_tokens: bool = ...,
    beta: float = ...,
) -> tuple[Scores, str]: ...


@overload
def score(
    cands: Sequence[str],
    refs: RefsArg,
    model_type: str | None = ...,
    num_layers: int | None = ...,
    verbose: bool = ...,
    idf: bool | Mapping[int, float] = ...,
    device: str | None = ...,
    batch_size: int = ...,
    nthreads: int = ...,
    all_layers: bool = ...,
    lang: str | None = ...,
    return_hash: bool = ...,
    rescale_with_baseline: bool = ...,
    baseline_path: str | None = ...,
    precision: str = ...,
    batch_independent: bool = ...,
    long_texts: str = ...,
    window_stride: int | None = ...,
    exclude_punctuation: bool = ...,
    exclude_special_tokens: bool = ...,
    beta: float = ...,
) -> Scores | tuple[Scores, str]: ...


def score(
    cands: Sequence[str],
    refs: RefsArg,
    model_type: str | None = None,
    num_layers: int | None = None,
    verbose: bool = False,
    idf: bool | Mapping[int, float] = False,
    device: str | None = None,
    batch_size: int = 64,
    nthreads: int = 4,
    all_layers: bool = False,
    lang: str | None = None,
    return_hash: bool = False,
    rescale_with_baseline: bool = False,
    baseline_path: str | None = None,
    precision: str = "fp32",
    batch_independent: bool = False,
    long_texts: str = "truncate",
    window_stride: int | None = None,
    exclude_punctuation: bool = False,
    exclude_special_tokens: bool = False,
    beta: float = 1.0,
) -> Scores | tuple[Scores, str]:
    """BERTScore of candidates against references, as ``bert_score.score``.

    Parameters
    ----------
    cands : list of str
        Candidate sentences.
    refs : list of str or list of list of str
        References: one per candidate, or a list per candidate (counts may differ).
    model_type : str, optional
        Hugging Face id, checkpoint directory or ``.onnx`` file. Default: ``lang``'s model, or
        sentence-transformers/all-MiniLM-L6-v2 at layer 6 when neither is given.
    num_layers : int, optional
        Layer to use; default bert_score's tuned layer for the model, else its last layer.
    verbose : bool
        Print progress.
    idf : bool or dict
        IDF weighting over the references (``ln((M+1)/(df+1))``), or a ready ``{id: weight}``.
    device : str, optional
        ``"cpu"``, ``"cuda"``/``"cuda:N"``; None picks CUDA when available.
    batch_size : int
        Pairs per bert_score scoring batch (which decides its padding floor, see
        ``batch_independent``) and most texts per encoder call; encoder calls also stay within
        ``encoder.DEFAULT_MAX_TOKENS`` padded tokens (texts are batched longest first).
    nthreads : int
        Accepted for compatibility.
    all_layers : bool
        Scores for every hidden state of the model: arrays of shape (layers + 1, N).
    lang : str, optional
        Language code; picks the model (bert_score's ``lang2model``) and the baseline.
    return_hash : bool
        Also return the settings hash.
    rescale_with_baseline : bool
        Rescale with the baseline of the model and ``lang`` (or ``baseline_path``).
    baseline_path : str, optional
        A custom baseline file.
    precision : {"fp32", "int8"}
        Encoder precision.
    batch_independent : bool
        False (default): bert_score's numbers, batch padding floor included (a token's best
        match counts ``max(best, 0)`` when the other side of its pair is shorter than the
        longest text on that side of its batch of ``batch_size`` pairs). True: every pair gets
        the paper's definition, whatever its neighbours.
    long_texts : {"truncate", "window"}
        ``"truncate"`` (bert_score): texts past the model's maximum length are cut (one
        warning per call says how many). ``"window"``: scored whole with sliding windows.
    window_stride : int, optional
        With ``"window"``: content tokens between window starts (default half a window).
    exclude_punctuation, exclude_special_tokens : bool
        Leave punctuation tokens / the special tokens out of matching, on both sides.
    beta : float
        F is ``(1 + beta**2) P R / (beta**2 P + R)``; 1 (default) gives F1.

    Returns
    -------
    (P, R, F) or ((P, R, F), hash)
        float32 arrays of shape (N,), or (layers + 1, N) with ``all_layers``.
    """
    if isinstance(idf, Mapping):
        use_idf, idf_dict = True, idf
    else:
        use_idf, idf_dict = _check_flag("idf", idf), None
    if model_type is None and lang is not None:
        lang = lang.lower()  # bert_score lower-cases lang where it picks the model from it
    # Every argument is checked here, before any model is loaded or text encoded.
    scorer = BERTScorer(
        model_type=model_type,
        num_layers=num_layers,
        batch_size=batch_size,
        nthreads=nthreads,
        all_layers=all_layers,
        idf=use_idf,
        device=device,
        lang=lang,
        rescale_with_baseline=rescale_with_baseline,
        baseline_path=baseline_path,
        precision=precision,
        cache_bytes=0,
        batch_independent=batch_independent,
        long_texts=long_texts,
        window_stride=window_stride,
        exclude_punctuation=exclude_punctuation,
        exclude_special_tokens=exclude_special_tokens,
        beta=beta,
    )
    scorer._missing_baseline = "warn"  # bert_score's score() warns and returns raw scores
    if idf_dict is not None:
        scorer.set_idf_dict(idf_dict)
    elif use_idf:
        scorer.compute_idf(pair_texts(cands, refs).refs)  # over the flattened references
    return scorer.score(
        cands, refs, verbose=verbose, batch_size=batch_size, return_hash=return_hash
    )
