"""Models at run time: finding a model's files locally, in the offline package or on the Hub
(``files``), the converted-graph cache (``graph_cache``), opening a model's tokenizer and encoder
for a layer (``runtime``) and exporting one (``export``). What each model is (bert_score's tables,
``config.json`` facts, the listing) is in :mod:`rust_bertscore.catalog`."""
