"""The scorer's convenience methods that call the analyses (alignments, system comparison,
heatmap data, all pairs, MBR) and the pipeline's per-text data (``embed``): a mixin of
:class:`~rust_bertscore.scoring.scorer.BERTScorer`, at the front's layer, so the analyses stay
below the front and the scorer stays small."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..analyses.align import Alignment, align_one, align_pairs
from ..analyses.compare import Comparison, compare_systems
from ..analyses.heatmap import require_matplotlib, save_example
from ..analyses.mbr import MBRResult, mbr_select, mbr_select_batch
from ..analyses.pairwise import pairwise_scores
from ..analyses.report import Report, build_report
from ..analyses.report_html import report_payload, write_report
from ..analyses.similarity import SimilarityMatrix, compute_similarity_matrix
from ..engine.settings import RefsArg, Scores, batch_size_or
from ..engine.text_embedding import TextEmbedding, embed_texts
from ..stages.text import check_texts

if TYPE_CHECKING:
    from ..analyses.seams import Scorer


class ScorerAnalyses:
    """:class:`~rust_bertscore.scoring.scorer.BERTScorer`'s methods built on the analyses and
    the pipeline.

    >>> import rust_bertscore as rb
    >>> issubclass(rb.BERTScorer, ScorerAnalyses)
    True
    """

    def _scorer(self) -> Scorer:
        # Only BERTScorer derives from this mixin, and it satisfies the analyses' protocol
        # (checked in scorer.py); the mixin names the protocol, not the class above it.
        return cast("Scorer", self)

    # -- the data behind the scores -----------------------------------------------------------
    def embed(self, texts: Sequence[str], batch_size: int | None = None) -> list[TextEmbedding]:
        """Each text as this scorer scores it: token strings, ids, the special-token and
        excluded-token masks, the layer's vectors (float32, as the encoder gives them) and
        the weights. See :class:`rust_bertscore.engine.text_embedding.TextEmbedding`.

        With these, any score can be checked by hand: drop the excluded tokens, normalise the
        rows, take the cosine matrix of a pair, its row and column maxima, and their means
        weighted by ``weights`` (bert_score's batch padding floor aside: compare with
        ``batch_independent=True`` or one pair at a time).

        Examples
        --------
        >>> from rust_bertscore import BERTScorer
        >>> scorer = BERTScorer()
        >>> (emb,) = scorer.embed(["The cat sat."])
        >>> emb.tokens
        ['[CLS]', 'the', 'cat', 'sat', '.', '[SEP]']
        >>> emb.vectors.shape, emb.vectors.dtype
        ((6, 384), dtype('float32'))
        >>> emb.weights.tolist()
        [0.0, 1.0, 1.0, 1.0, 1.0, 0.0]
        >>> no_punct = BERTScorer(exclude_punctuation=True)
        >>> no_punct.embed(["The cat sat."])[0].excluded.tolist()
        [False, False, False, False, True, False]
        """
        scorer = self._scorer()
        pipeline = scorer.pipeline  # first: a closed scorer says so
        texts = check_texts(texts, "texts")
        batch = batch_size_or(scorer.batch_size, batch_size)
        return embed_texts(pipeline, texts, pipeline.weights_for(scorer.idf), batch)

    # -- all pairs and MBR (see pairwise.py, mbr.py) ------------------------------------------
    def pairwise(
        self, cands: Sequence[str], refs: Sequence[str], batch_size: int | None = None
    ) -> Scores:
        """P, R and F of every candidate against every reference, shape (len(cands),
        len(refs)) (with ``all_layers`` a leading layer axis), each pair as
        ``score(..., batch_independent=True)`` scores it (with this scorer's options: long
        texts in windows, exclusions, beta); each distinct text encoded once, memory within
        :attr:`round_bytes`. See :func:`rust_bertscore.analyses.pairwise.pairwise_scores`.

        >>> from rust_bertscore import BERTScorer
        >>> cands, refs = ["the cat sat", "dogs run"], ["a cat sat", "it rains", "b"]
        >>> P, R, F = BERTScorer().pairwise(cands, refs)
        >>> F.shape, int(F[0].argmax())
        ((2, 3), 0)
        """
        return pairwise_scores(self._scorer(), cands, refs, batch_size)

    def mbr(self, samples: Sequence[str], batch_size: int | None = None) -> MBRResult:
        """Minimum Bayes risk: the sample of highest mean F against the other samples, and
        every sample's utility. See :func:`rust_bertscore.analyses.mbr.mbr_select`.

        >>> from rust_bertscore import BERTScorer
        >>> best = BERTScorer().mbr(["the cat sat", "a cat sat", "the cat sat down", "stocks fell"])
        >>> best.sample, best.utilities.shape
        ('the cat sat', (4,))
        """
        return mbr_select(self._scorer(), samples, batch_size)

    def mbr_batch(
        self, sources: Sequence[Sequence[str]], batch_size: int | None = None
    ) -> list[MBRResult]:
        """:meth:`mbr` for many lists of samples (one per source), encoded together.

        >>> from rust_bertscore import BERTScorer
        >>> out = BERTScorer().mbr_batch([["a cat", "the cat", "stocks"], ["it rains", "rain"]])
        >>> [r.index for r in out], len(out[1].utilities)  # two samples tie: the first wins
        ([0, 0], 2)
        """
        return mbr_select_batch(self._scorer(), sources, batch_size)

    # -- token alignments (see align.py) -----------------------------------------------------
    def align(self, cand: str, ref: str) -> Alignment:
        """Token alignment of one pair: every token of each side with its weight and its best
        match on the other side (position and cosine), and the pair's P/R/F, equal to
        :meth:`score` of the pair alone (with this scorer's options; a token they exclude is
        flagged ``excluded`` and never matched). See
        :class:`rust_bertscore.analyses.align.Alignment`.

        >>> from rust_bertscore import BERTScorer
        >>> a = BERTScorer().align("the cat sat", "a cat sat")
        >>> [t.token for t in a.candidate.tokens], a.candidate.tokens[2].match
        (['[CLS]', 'the', 'cat', 'sat', '[SEP]'], 2)
        """
        return align_one(self._scorer(), cand, ref)

    def align_batch(
        self, cands: Sequence[str], refs: RefsArg, batch_size: int | None = None
    ) -> list[Alignment]:
        """Token alignments of many pairs, one record per (candidate, reference) pair, with
        P/R/F as :meth:`score` gives them for the same inputs and ``batch_size`` (each side says
        whether bert_score's batch padding floor applied to it). See
        :func:`rust_bertscore.analyses.align.align_pairs`.

        >>> from rust_bertscore import BERTScorer
        >>> cands, refs = ["the cat sat", "dogs run"], ["a cat sat", "dogs ran"]
        >>> [r.candidate.floored for r in BERTScorer().align_batch(cands, refs)]  # a short ref
        [False, True]
        """
        return align_pairs(self._scorer(), cands, refs, batch_size)

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
        See :func:`rust_bertscore.analyses.compare.compare_systems`.

        >>> from rust_bertscore import BERTScorer
        >>> refs = ["the cat sat", "it is raining", "she reads a book"]
        >>> systems = {"a": ["a cat sat", "it rains", "she is reading"], "b": ["dogs", "sun", "he"]}
        >>> table = BERTScorer().compare(systems, refs, n_samples=200)
        >>> table.baseline.name, table["b"].F.delta < 0
        ('a', True)
        """
        return compare_systems(
            self._scorer(),
            cands_by_system,
            refs,
            test,
            n_samples,
            seed,
            confidence,
            batch_size,
            verbose,
        )

    def report(
        self,
        cands_by_system: Mapping[str, Sequence[str]],
        refs: RefsArg,
        path: str | Path,
        test: str = "paired-bs",
        n_samples: int | None = None,
        seed: int | None = 12345,
        confidence: float = 0.95,
        batch_size: int | None = None,
        title: str = "BERTScore comparison",
        inputs: Sequence[tuple[str, str, int]] | None = None,
        sources: Sequence[str] | None = None,
        length_cutoffs: Sequence[int] | None = None,
        score_cutoffs: Sequence[float] | None = None,
    ) -> Report:
        """Write the HTML comparison report of the systems to ``path``: one self-contained
        page (no network request) with the systems table of :meth:`compare` (same arguments,
        same figures), distributions, buckets, a segment table and every segment's token
        alignment (:meth:`align_batch`'s). Returns the data drawn. ``inputs``: (role, file,
        lines) rows for the header (default: one per system and the references);
        ``sources``: each segment's source text; ``length_cutoffs`` / ``score_cutoffs``: the
        buckets' ascending thresholds (see :func:`~rust_bertscore.analyses.report.build_report`).
        See :mod:`rust_bertscore.analyses.report` and docs/report.md.

        >>> import os, tempfile
        >>> from rust_bertscore import BERTScorer
        >>> refs = ["the cat sat", "it is raining", "she reads a book"]
        >>> systems = {"a": ["a cat sat", "it rains", "she is reading"], "b": ["dogs", "sun", "he"]}
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     rep = BERTScorer().report(systems, refs, os.path.join(tmp, "r.html"), n_samples=200)
        ...     print(os.path.getsize(os.path.join(tmp, "r.html")) > 10_000)
        True
        >>> rep.comparison.baseline.name, rep.wins["b"]
        ('a', (0, 3, 0))
        """
        scorer = self._scorer()
        rep = build_report(
            scorer,
            cands_by_system,
            refs,
            test,
            n_samples,
            seed,
            confidence,
            batch_size,
            sources=sources,
            length_cutoffs=length_cutoffs,
            score_cutoffs=score_cutoffs,
        )
        if inputs is None:
            inputs = [("references", "(given)", len(refs))] + [
                ("baseline" if k == 0 else "system", str(name), len(cands))
                for k, (name, cands) in enumerate(cands_by_system.items())
            ]
        tokenizer = scorer.tokenizer
        payload = report_payload(
            rep,
            title=title,
            signature=cast("Any", self).signature_for(batch_size),
            inputs=inputs,
            special_tokens=[tokenizer.token_text(i) for i in sorted(tokenizer.special_ids)],
        )
        write_report(path, payload)
        return rep

    # -- the similarity matrix and its picture (see similarity.py, heatmap.py) --------------------
    def similarity_matrix(self, candidate: str, reference: str) -> SimilarityMatrix:
        """Token cosine similarities of one pair with this scorer's model and layer (rescaled
        with the F baseline when the scorer rescales), the tokens, their weights and the
        pair's P/R/F with uniform weights, as bert_score's ``plot_example`` computes them
        (with this scorer's options: long texts in windows, excluded tokens left out, beta).
        See :class:`rust_bertscore.analyses.similarity.SimilarityMatrix`.

        >>> from rust_bertscore import BERTScorer
        >>> m = BERTScorer().similarity_matrix("the cat sat", "a cat sat")
        >>> m.matrix.shape, m.ref_tokens[2]
        ((5, 5), 'cat')
        """
        return compute_similarity_matrix(self._scorer(), candidate, reference)

    def plot_example(self, candidate: str, reference: str, fname: str = "") -> SimilarityMatrix:
        """bert_score's ``BERTScorer.plot_example``: the heatmap of one pair, saved to
        ``fname`` when given (needs matplotlib; loaded only when called). Returns the
        :class:`~rust_bertscore.analyses.similarity.SimilarityMatrix` drawn, which Jupyter
        shows as the heatmap (its ``_repr_png_``), as bert_score's plot shows there.

        >>> from rust_bertscore import BERTScorer
        >>> import os, tempfile
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     out = os.path.join(tmp, "pair.png")
        ...     _ = BERTScorer().plot_example("the cat sat", "a cat sat", fname=out)
        ...     print(os.path.isfile(out))
        True
        """
        require_matplotlib()
        return save_example(self.similarity_matrix(candidate, reference), fname)
