"""The front: :class:`~rust_bertscore.BERTScorer` (``scorer``, with its settings and seams in
``properties`` and its analysis methods in ``methods``) and :func:`~rust_bertscore.score`
(``api``). It builds on the engine (:mod:`rust_bertscore.engine`) and the analyses
(:mod:`rust_bertscore.analyses`); nothing below imports it.
"""
