"""Today's Hugging Face Hub ids of the models bert_score's tables name by their old ids.

The table: Hub id -> the name bert_score's ``model2layers`` (and its baseline files) use.
"""

from __future__ import annotations

# The Hub's organisation moves (2024): the legacy un-namespaced model repositories went under
# organisations (bert-* to google-bert/, roberta-* and xlm-* to FacebookAI/, the OpenAI detectors
# to openai-community/, distil* to distilbert/, albert-* to albert/, t5-* to google-t5/, xlnet-*
# to xlnet/). The old ids still download (the Hub redirects them), but bert_score's tables know
# only the old ones. Namespaced ids (microsoft/..., allenai/..., google/...) kept their names.
# Every un-namespaced model of bert_score's table moved; tests/test_hub_names.py checks that
# each one has its entry here and that each entry names a table model.
HUB_ALIASES: dict[str, str] = {
    "google-bert/bert-base-uncased": "bert-base-uncased",
    "google-bert/bert-large-uncased": "bert-large-uncased",
    "google-bert/bert-base-cased-finetuned-mrpc": "bert-base-cased-finetuned-mrpc",
    "google-bert/bert-base-multilingual-cased": "bert-base-multilingual-cased",
    "google-bert/bert-base-chinese": "bert-base-chinese",
    "FacebookAI/roberta-base": "roberta-base",
    "FacebookAI/roberta-large": "roberta-large",
    "FacebookAI/roberta-large-mnli": "roberta-large-mnli",
    "openai-community/roberta-base-openai-detector": "roberta-base-openai-detector",
    "openai-community/roberta-large-openai-detector": "roberta-large-openai-detector",
    "xlnet/xlnet-base-cased": "xlnet-base-cased",
    "xlnet/xlnet-large-cased": "xlnet-large-cased",
    "FacebookAI/xlm-mlm-en-2048": "xlm-mlm-en-2048",
    "FacebookAI/xlm-mlm-100-1280": "xlm-mlm-100-1280",
    "distilbert/distilroberta-base": "distilroberta-base",
    "distilbert/distilbert-base-uncased": "distilbert-base-uncased",
    "distilbert/distilbert-base-uncased-distilled-squad": "distilbert-base-uncased-distilled-squad",
    "distilbert/distilbert-base-multilingual-cased": "distilbert-base-multilingual-cased",
    "albert/albert-base-v1": "albert-base-v1",
    "albert/albert-large-v1": "albert-large-v1",
    "albert/albert-xlarge-v1": "albert-xlarge-v1",
    "albert/albert-xxlarge-v1": "albert-xxlarge-v1",
    "albert/albert-base-v2": "albert-base-v2",
    "albert/albert-large-v2": "albert-large-v2",
    "albert/albert-xlarge-v2": "albert-xlarge-v2",
    "albert/albert-xxlarge-v2": "albert-xxlarge-v2",
    "FacebookAI/xlm-roberta-base": "xlm-roberta-base",
    "FacebookAI/xlm-roberta-large": "xlm-roberta-large",
    "google-t5/t5-small": "t5-small",
    "google-t5/t5-base": "t5-base",
    "google-t5/t5-large": "t5-large",
}
"""Hub id today -> bert_score's name for the model (its ``model2layers`` key)."""
