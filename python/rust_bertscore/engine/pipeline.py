"""The scoring pipeline: texts to token ids, token vectors and weights, then the kernel.

:class:`ScoringPipeline` is the engine behind :class:`~rust_bertscore.BERTScorer` and the public
seam the analyses (alignments, similarity matrices, system comparison) build on. It holds one
model at one layer (a :class:`~rust_bertscore.models.runtime.ModelRuntime`), the cache of encoded
texts and the token weights, and scores pairs with bert_score's rules: the padding floor (the
kernel's ``pad_floor_flags``), empty and weightless texts, and the multi-reference max; and with
the options bert_score does not have (:class:`~rust_bertscore.stages.options.ScoringOptions`): long
texts in sliding windows, tokens left out of matching, F-beta. Each block of pairs is scored by a
:class:`~rust_bertscore.engine.blocks.BlockScorer` (``engine/blocks.py``).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from .. import _core
from ..errors import InputValueError, ScorerClosedError
from ..models.runtime import ModelRuntime
from ..stages.embeddings import EmbeddingCache, TokenWeights, idf_from_dict, unseen_idf
from ..stages.options import ScoringOptions
from ..stages.scored_tokens import ScoredTokens
from ..stages.text import PairedTexts
from ..store import EmbeddingStore
from .blocks import BlockScorer, Progress, tqdm_progress
from .overlap import score_overlapped
from .rounds import block_step, explicit_floors, round_budget
from .rules import max_over_groups
from .settings import CHUNK_BYTES, PAIRS_PER_CHUNK, Scores
from .vectors import CallMemo, VectorSource

if TYPE_CHECKING:
    from ..stages.encoder import Encoder
    from ..stages.tokenization.tokenizer import TextTokenizer


def _closed() -> ScorerClosedError:
    return ScorerClosedError(
        "this scoring pipeline was closed (BERTScorer.close()): its model was released; make a "
        "new BERTScorer"
    )


class ScoringPipeline:
    """Texts to token ids, vectors and weights, and pairs to P/R/F with the kernel.

    Parameters
    ----------
    runtime : ModelRuntime
        Tokenizer and encoder of one model at one layer (or all layers).
    cache : EmbeddingCache
        Encoded texts kept across calls (``max_bytes`` 0: none).
    store : EmbeddingStore, optional
        Token vectors kept on disk across processes (see ``rust_bertscore.store``).
    options : ScoringOptions, optional
        Long texts, exclusions and beta (default: bert_score's metric).

    Attributes
    ----------
    cache : EmbeddingCache
    options : ScoringOptions
    tokens : ScoredTokens
        The tokens scored: ids as encoded (cut, or whole with windows), exclusions, windows.
    uniform : TokenWeights
        bert_score's uniform weights: 1 for every token, 0 for special tokens.
    idf_weights : TokenWeights or None
        IDF weights once computed or given (see :meth:`idf_from_sentences`, :meth:`idf_from_dict`).
    block_pairs : int
        Pairs tokenised together per block (a multiple of the floor batch when there is one).
    round_bytes : int
        About the most bytes of token vectors held at once; a block is scored in rounds.
    progress_bar : callable
        ``progress_bar(total_pairs)`` gives the progress bar of a verbose call (tqdm by default).
    overlap : bool or None
        Fetch each round's vectors on a worker thread while the kernel scores the round before
        and the next block is tokenised (``engine.overlap``; the same numbers). None (the
        default): when the encoder runs on CUDA, where the GPU would otherwise wait for the
        CPU; on the CPU the encoder and the kernel each use every core already.

    Examples
    --------
    The pipeline of a scorer (or ``ScoringPipeline(runtime, EmbeddingCache(max_bytes))``):

    >>> from rust_bertscore import BERTScorer
    >>> from rust_bertscore.stages.text import pair_texts
    >>> pipeline = BERTScorer().pipeline
    >>> paired = pair_texts(["the cat sat"], ["a cat sat"])
    >>> P, R, F = pipeline.score(paired, pipeline.uniform, batch_size=64, floor_batch=64)
    >>> float(F[0]) == float(BERTScorer().score(["the cat sat"], ["a cat sat"])[2][0])
    True
    """

    def __init__(
        self,
        runtime: ModelRuntime,
        cache: EmbeddingCache,
        store: EmbeddingStore | None = None,
        options: ScoringOptions | None = None,
    ) -> None:
        self._model: ModelRuntime | None = runtime
        self.cache = cache
        self.options = options or ScoringOptions()
        self.tokens = ScoredTokens(runtime.tokenizer, self.options)
        self._vectors: VectorSource | None = VectorSource(runtime, cache, store, self.tokens.window)
        self.uniform = TokenWeights.uniform(
            runtime.tokenizer.special_ids, runtime.tokenizer.vocab_size
        )
        self.idf_weights: TokenWeights | None = None
        self.block_pairs = PAIRS_PER_CHUNK
        self.round_bytes = CHUNK_BYTES
        self.progress_bar: Callable[[int], Progress] = tqdm_progress
        self.overlap: bool | None = None

    # -- the model ---------------------------------------------------------------------------
    @property
    def runtime(self) -> ModelRuntime:
        """The model: tokenizer, encoder, layer, depth, precision."""
        return self._runtime

    @property
    def _runtime(self) -> ModelRuntime:
        if self._model is None:
            raise _closed()
        return self._model

    @property
    def vector_source(self) -> VectorSource:
        """Where vectors come from: the call's memo, the cache, the store, else the encoder."""
        if self._vectors is None:
            raise _closed()
        return self._vectors

    def close(self) -> None:
        """Empty the cache of encoded texts and drop the runtime (tokenizer and encoder
        session), freed once nothing else holds it; later calls that need the model raise
        :class:`~rust_bertscore.errors.ScorerClosedError`. Closing twice does nothing.

        >>> from rust_bertscore import BERTScorer
        >>> pipeline = BERTScorer().pipeline
        >>> pipeline.close()
        >>> len(pipeline.cache)
        0
        """
        self.cache.clear()
        self._model = self._vectors = None

    @property
    def tokenizer(self) -> TextTokenizer:
        return self._runtime.tokenizer

    @property
    def all_layers(self) -> bool:
        """Vectors of every hidden state (arrays with a leading layer axis)."""
        return self._runtime.all_layers

    @property
    def layers(self) -> int:
        """Layers scored: the model's depth + 1 with ``all_layers``, else 1."""
        return self._runtime.depth + 1 if self.all_layers else 1

    def use_encoder(self, encoder: Encoder) -> None:
        """Encode with ``encoder`` from now on (same tokenizer and layer); empties the cache,
        whose vectors came from the previous encoder.

        Examples
        --------
        >>> from rust_bertscore import BERTScorer
        >>> pipeline = BERTScorer().pipeline
        >>> pipeline.use_encoder(pipeline.runtime.encoder)
        >>> len(pipeline.cache)
        0
        """
        self._model = dataclasses.replace(self._runtime, encoder=encoder)
        self.cache.clear()
        self._vectors = VectorSource(
            self._model, self.cache, self.vector_source.store, self.tokens.window
        )

    # -- texts to token ids, vectors and weights ---------------------------------------------
    def encode_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of every text, special tokens included (bert_score's ``sent_encode``, cut at
        the model's maximum length; :attr:`tokens` gives the ids the options score).

        Examples
        --------
        >>> from rust_bertscore import BERTScorer
        >>> pipeline = BERTScorer().pipeline
        >>> pipeline.encode_ids(["the cat sat"])
        [[101, 1996, 4937, 2938, 102]]
        """
        return self._runtime.tokenizer.encode(texts)

    @property
    def store(self) -> EmbeddingStore | None:
        """The persistent store, or None."""
        return self.vector_source.store

    def vectors(
        self,
        texts: Sequence[str],
        ids: Sequence[list[int]],
        batch_size: int,
        memo: CallMemo | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Token vectors of the distinct ``texts`` (token ids ``ids``) packed for the kernel:
        from the call's ``memo``, the cache or the store where found (with as many ids), else
        encoded straight into place (``batch_size`` texts per encoder call at most; a text
        longer than the model takes, in the sliding windows of ``long_texts="window"``); see
        ``VectorSource.packed``.

        Returns ``(data, offsets, slot)``: text ``i`` is rows ``offsets[slot[i]]:offsets[slot[i]
        + 1]`` of ``data`` (of its last two axes, for all layers).

        Examples
        --------
        >>> from rust_bertscore import BERTScorer
        >>> pipeline = BERTScorer().pipeline
        >>> texts = ["the cat sat", "a dog"]
        >>> data, offsets, slot = pipeline.vectors(texts, pipeline.encode_ids(texts), 64)
        >>> data.shape, [int(offsets[s + 1] - offsets[s]) for s in slot]
        ((9, 384), [5, 4])
        """
        return self.vector_source.packed(texts, ids, batch_size, memo)

    def text_vectors(
        self, texts: Sequence[str], ids: Sequence[list[int]], batch_size: int
    ) -> list[np.ndarray]:
        """Token vectors of each text, one (tokens x hidden) array per text (views of
        :meth:`vectors`' packed array).

        Examples
        --------
        >>> from rust_bertscore import BERTScorer
        >>> pipeline = BERTScorer().pipeline
        >>> texts = ["the cat sat", "a dog"]
        >>> [v.shape for v in pipeline.text_vectors(texts, pipeline.encode_ids(texts), 64)]
        [(5, 384), (4, 384)]
        """
        data, offsets, slot = self.vectors(texts, ids, batch_size)
        return [data[..., offsets[s] : offsets[s + 1], :] for s in slot]

    def weights_for(self, idf: bool) -> TokenWeights:
        """The weights a scorer with ``idf`` scores with: :attr:`idf_weights` or :attr:`uniform`.

        Raises ValueError when ``idf`` and no IDF weights were computed or given.

        Examples
        --------
        >>> from rust_bertscore import BERTScorer
        >>> pipeline = BERTScorer().pipeline
        >>> pipeline.weights_for(False) is pipeline.uniform
        True
        """
        if not idf:
            return self.uniform
        if self.idf_weights is None:
            raise InputValueError(
                "IDF weights are not computed: pass idf_sents or call compute_idf() first"
            )
        return self.idf_weights

    def idf_from_sentences(self, sents: Sequence[str]) -> TokenWeights:
        """bert_score's IDF over ``sents`` (``ln((M+1)/(df+1))`` over token-id sets, unseen ids
        ``ln(M+1)``), by the kernel's ``idf_table``; over whole texts with
        ``long_texts="window"``.

        Examples
        --------
        >>> from rust_bertscore import BERTScorer
        >>> pipeline = BERTScorer().pipeline
        >>> ids = pipeline.encode_ids(["the cat sat"])[0]
        >>> weights = pipeline.idf_from_sentences(["the cat sat", "the dog ran"])
        >>> [round(float(w), 4) for w in weights.weights(ids)]  # [CLS], the, cat, sat, [SEP]
        [0.0, 0.0, 0.4055, 0.4055, 0.0]
        """
        docs = self.tokens.encode(sents)
        ids, values = _core.idf_table(docs)
        return TokenWeights.from_idf(
            dict(zip(ids.tolist(), values.tolist())),
            unseen_idf(len(docs)),
            self._runtime.tokenizer.vocab_size,
        )

    def idf_from_dict(self, idf: Mapping[int, float]) -> TokenWeights:
        """Ready IDF weights ``{token id: weight}`` (a ``defaultdict``'s default for unseen ids;
        with a plain dict an unseen id weighs NaN, which scoring reports).

        Examples
        --------
        >>> from rust_bertscore import BERTScorer
        >>> pipeline = BERTScorer().pipeline
        >>> from collections import defaultdict
        >>> weights = pipeline.idf_from_dict(defaultdict(lambda: 1.0, {1996: 0.5, 4937: 2.0}))
        >>> weights.weights([101, 1996, 4937, 2938, 102]).tolist()
        [1.0, 0.5, 2.0, 1.0, 1.0]
        """
        entries, default = idf_from_dict(idf)
        return TokenWeights.from_idf(
            entries,
            math.nan if default is None else default,
            self._runtime.tokenizer.vocab_size,
        )

    # -- scoring -----------------------------------------------------------------------------
    @property
    def overlaps(self) -> bool:
        """Whether calls fetch vectors on a worker thread (:attr:`overlap`, None: on CUDA).

        Examples
        --------
        >>> from rust_bertscore import BERTScorer
        >>> pipeline = BERTScorer(device="cpu").pipeline
        >>> pipeline.overlaps
        False
        >>> pipeline.overlap = True
        >>> pipeline.overlaps
        True
        """
        if self.overlap is not None:
            return bool(self.overlap)
        return self._runtime.encoder.device == "cuda"

    def score(
        self,
        paired: PairedTexts,
        weights: TokenWeights,
        batch_size: int,
        floor_batch: int | None,
        pad_floor: tuple[ArrayLike, ArrayLike] | None = None,
        verbose: bool = False,
        truncated: set[str] | None = None,
    ) -> Scores:
        """P, R, F of every candidate of ``paired``: :meth:`score_pairs`, then each candidate's
        best over its references (the kernel's ``multi_ref_max``) when it has several.

        ``pad_floor`` (explicit floor flags, one per flattened pair) replaces those of
        ``floor_batch``'s batches; ``truncated`` collects the texts cut to the model's maximum
        length; see :meth:`score_pairs`.

        Examples
        --------
        >>> from rust_bertscore import BERTScorer
        >>> pipeline = BERTScorer().pipeline
        >>> from rust_bertscore.stages.text import pair_texts
        >>> paired = pair_texts(["the cat sat"], [["a cat sat", "dogs run"]])
        >>> P, R, F = pipeline.score(paired, pipeline.uniform, batch_size=64, floor_batch=64)
        >>> F.shape
        (1,)
        """
        floors = explicit_floors(pad_floor, len(paired.cands))
        if verbose:
            print("calculating scores...")
        start = time.perf_counter()
        prf = self.score_pairs(paired, weights, batch_size, floor_batch, floors, verbose, truncated)
        if paired.group_offsets is not None:
            prf = max_over_groups(prf, paired.group_offsets)
        if verbose:
            elapsed = max(time.perf_counter() - start, 1e-9)
            print(f"done in {elapsed:.2f} seconds, {len(paired.refs) / elapsed:.2f} sentences/sec")
        return prf[0], prf[1], prf[2]

    def score_pairs(
        self,
        paired: PairedTexts,
        weights: TokenWeights,
        batch_size: int,
        floor_batch: int | None,
        floors: tuple[np.ndarray, np.ndarray] | None = None,
        verbose: bool = False,
        truncated: set[str] | None = None,
    ) -> np.ndarray:
        """Raw P, R, F of every (candidate, reference) pair: shape (3, [layers,] pairs).

        Pairs go in blocks of about :attr:`block_pairs` (a multiple of ``floor_batch``, so
        that bert_score's scoring batches never straddle two blocks), tokenised together, and
        each block in rounds of at most :attr:`round_bytes` of token vectors: a round encodes
        (texts seen before come from the cache) and scores only its own texts, so memory does
        not grow with the number of pairs. ``floor_batch``: bert_score's padding floor of
        consecutive batches of that many pairs (the kernel's ``pad_floor_flags``); None: no
        floor, unless ``floors`` gives explicit flags.

        With :attr:`options`: the tokens are :attr:`tokens`' (whole texts in windows; excluded
        tokens dropped from both sides, and the padding floor compares the tokens left), F is
        F-beta. Texts cut to the model's maximum length are added to ``truncated``.

        Examples
        --------
        >>> from rust_bertscore import BERTScorer
        >>> pipeline = BERTScorer().pipeline
        >>> from rust_bertscore.stages.text import pair_texts
        >>> paired = pair_texts(["the cat sat"], [["a cat sat", "dogs run"]])
        >>> pipeline.score_pairs(paired, pipeline.uniform, batch_size=64, floor_batch=64).shape
        (3, 2)
        """
        layers = self.layers
        hidden = self._runtime.encoder.hidden_size or 1024
        n = len(paired.cands)
        out = np.zeros((3, layers, n), dtype=np.float32)
        progress = self.progress_bar(n) if verbose else None
        step = block_step(self.block_pairs, floor_batch)
        blocks = BlockScorer(
            self.tokens,
            self.vectors,
            self.all_layers,
            self.options.beta,
            paired,
            weights,
            batch_size,
            floor_batch,
            budget=round_budget(self.round_bytes, hidden, layers),  # token rows per round
            out=out,
            cut=set() if truncated is None else truncated,
            progress=progress,
            # Each distinct text is encoded once a call, while the texts still to come fit in
            # round_bytes (memory stays within about two rounds); past that, encoded again.
            memo=CallMemo([*paired.cands, *paired.refs], self.round_bytes),
        )
        spans = [
            (
                block,
                min(block + step, n),
                None if floors is None else (floors[0][block:][:step], floors[1][block:][:step]),
            )
            for block in range(0, n, step)
        ]
        if self.overlaps:
            score_overlapped(blocks, spans)
        else:
            for block, block_stop, block_floors in spans:
                blocks.score(block, block_stop, block_floors)
        if progress is not None:
            progress.close()
        return out if self.all_layers else out[:, 0, :]
