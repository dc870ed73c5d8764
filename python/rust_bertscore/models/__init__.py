"""Models: the registry of bert_score's defaults (``registry``), finding a model's files locally
or on the Hub (``files``), the converted-graph cache (``graph_cache``), loading a model for
scoring (``loading``), exporting one (``export``) and the listing of bert_score's table
(``listing``)."""
