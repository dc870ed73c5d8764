"""What each model is: bert_score's tables (``lang2model``, ``model2layers``), ``config.json``
facts and the list of supported models."""
