"""The scoring engine, from the bottom up:

* ``settings``: argument checks, constants, the settings hash (the leaf);
* ``rounds``, ``rules``: block and round planning, explicit floor flags; bert_score's rules for
  empty and weightless texts and the multi-reference max (the kernel's);
* ``vectors``: where a text's token vectors come from (the call memo, the cache, the store, the
  encoder, windows for long texts);
* ``blocks``: :class:`~rust_bertscore.engine.blocks.BlockScorer`, one block of pairs tokenised
  together and scored in rounds by the kernel (floor flags, weightless pairs, F-beta);
* ``pipeline``: :class:`~rust_bertscore.engine.pipeline.ScoringPipeline`, texts to token ids,
  vectors and weights, and pairs to P/R/F with the kernel, block by block;
* ``text_embedding``: the records ``BERTScorer.embed`` returns.

The analyses (:mod:`rust_bertscore.analyses`) build on it and the front
(:mod:`rust_bertscore.scoring`) sits above both. This ``__init__`` imports nothing.
"""
