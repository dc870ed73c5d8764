"""Scoring: the pipeline, the ``BERTScorer`` front and ``score()``.

From the bottom up:

* ``settings``: argument checks, constants, the settings hash (the leaf);
* ``rounds``, ``rules``: block and round planning, explicit floor flags; bert_score's rules for
  empty and weightless texts and the multi-reference max (the kernel's);
* ``pipeline``: :class:`~rust_bertscore.scoring.pipeline.ScoringPipeline`, texts to token ids,
  vectors and weights, and pairs to P/R/F with the kernel;
* (the analyses ``align``, ``similarity``, ``heatmap``, ``compare`` build on the pipeline)
* ``scorer``: :class:`~rust_bertscore.BERTScorer`, the front, whose convenience methods call
  the analyses;
* ``api``: :func:`~rust_bertscore.score`.

This ``__init__`` imports nothing, so that an analysis importing ``scoring.pipeline`` does not
load the front above it.
"""
