"""One module per encoder family, each building its graph from a
:class:`~rust_bertscore.convert.blocks.BuildRequest` (see ``convert.registry`` for the list and
for how to add a family).

A family module imports the converter's contract (``convert.contract``), its shared blocks
(``convert.blocks``, ``convert.graph``) and checkpoint reader (``convert.checkpoint``), and
another family only when it extends it (ALBERT, Longformer, SqueezeBERT and BigBird build on
``bert``; LED and Pegasus on ``bart``; LED also on ``longformer``); never the registry.
"""
