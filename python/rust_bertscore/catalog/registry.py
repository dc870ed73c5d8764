"""Which model and layer to use: bert_score's published tables and defaults.

``LANG2MODEL`` and ``MODEL2LAYERS`` are carried over from bert_score 0.3.13
(``bert_score/utils.py``, MIT License, Copyright (c) 2019 Tianyi Zhang, Varsha Kishore,
Felix Wu, Kilian Q. Weinberger and Yoav Artzi). The layer numbers are the ones its authors
tuned on WMT16 correlations.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import InputTypeError, warn_user
from .hub_names import HUB_ALIASES

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
"""The model used when neither ``model_type`` nor ``lang`` is given."""

DEFAULT_MODEL_LAYER = 6

DEFAULT_LANG_MODEL = "bert-base-multilingual-cased"

LANG2MODEL: dict[str, str] = {
    "en": "roberta-large",
    "zh": "bert-base-chinese",
    "tr": "dbmdz/bert-base-turkish-cased",
    "en-sci": "allenai/scibert_scivocab_uncased",
}

MODEL2LAYERS: dict[str, int] = {
    DEFAULT_MODEL: DEFAULT_MODEL_LAYER,
    "bert-base-uncased": 9,
    "bert-large-uncased": 18,
    "bert-base-cased-finetuned-mrpc": 9,
    "bert-base-multilingual-cased": 9,
    "bert-base-chinese": 8,
    "roberta-base": 10,
    "roberta-large": 17,
    "roberta-large-mnli": 19,
    "roberta-base-openai-detector": 7,
    "roberta-large-openai-detector": 15,
    "xlnet-base-cased": 5,
    "xlnet-large-cased": 7,
    "xlm-mlm-en-2048": 6,
    "xlm-mlm-100-1280": 10,
    "allenai/scibert_scivocab_uncased": 8,
    "allenai/scibert_scivocab_cased": 9,
    "nfliu/scibert_basevocab_uncased": 9,
    "distilroberta-base": 5,
    "distilbert-base-uncased": 5,
    "distilbert-base-uncased-distilled-squad": 4,
    "distilbert-base-multilingual-cased": 5,
    "albert-base-v1": 10,
    "albert-large-v1": 17,
    "albert-xlarge-v1": 16,
    "albert-xxlarge-v1": 8,
    "albert-base-v2": 9,
    "albert-large-v2": 14,
    "albert-xlarge-v2": 13,
    "albert-xxlarge-v2": 8,
    "xlm-roberta-base": 9,
    "xlm-roberta-large": 17,
    "google/electra-small-generator": 9,
    "google/electra-small-discriminator": 11,
    "google/electra-base-generator": 10,
    "google/electra-base-discriminator": 9,
    "google/electra-large-generator": 18,
    "google/electra-large-discriminator": 14,
    "google/bert_uncased_L-2_H-128_A-2": 1,
    "google/bert_uncased_L-2_H-256_A-4": 1,
    "google/bert_uncased_L-2_H-512_A-8": 1,
    "google/bert_uncased_L-2_H-768_A-12": 2,
    "google/bert_uncased_L-4_H-128_A-2": 3,
    "google/bert_uncased_L-4_H-256_A-4": 3,
    "google/bert_uncased_L-4_H-512_A-8": 3,
    "google/bert_uncased_L-4_H-768_A-12": 3,
    "google/bert_uncased_L-6_H-128_A-2": 5,
    "google/bert_uncased_L-6_H-256_A-4": 5,
    "google/bert_uncased_L-6_H-512_A-8": 5,
    "google/bert_uncased_L-6_H-768_A-12": 5,
    "google/bert_uncased_L-8_H-128_A-2": 7,
    "google/bert_uncased_L-8_H-256_A-4": 7,
    "google/bert_uncased_L-8_H-512_A-8": 6,
    "google/bert_uncased_L-8_H-768_A-12": 7,
    "google/bert_uncased_L-10_H-128_A-2": 8,
    "google/bert_uncased_L-10_H-256_A-4": 8,
    "google/bert_uncased_L-10_H-512_A-8": 9,
    "google/bert_uncased_L-10_H-768_A-12": 8,
    "google/bert_uncased_L-12_H-128_A-2": 10,
    "google/bert_uncased_L-12_H-256_A-4": 11,
    "google/bert_uncased_L-12_H-512_A-8": 10,
    "google/bert_uncased_L-12_H-768_A-12": 9,
    "amazon/bort": 0,
    "facebook/bart-base": 6,
    "facebook/bart-large": 10,
    "facebook/bart-large-cnn": 10,
    "facebook/bart-large-mnli": 11,
    "facebook/bart-large-xsum": 9,
    "t5-small": 6,
    "t5-base": 11,
    "t5-large": 23,
    "vinai/bertweet-base": 9,
    "microsoft/deberta-base": 9,
    "microsoft/deberta-base-mnli": 9,
    "microsoft/deberta-large": 16,
    "microsoft/deberta-large-mnli": 18,
    "microsoft/deberta-xlarge": 18,
    "microsoft/deberta-xlarge-mnli": 40,
    "YituTech/conv-bert-base": 10,
    "YituTech/conv-bert-small": 10,
    "YituTech/conv-bert-medium-small": 9,
    "microsoft/mpnet-base": 8,
    "squeezebert/squeezebert-uncased": 9,
    "squeezebert/squeezebert-mnli": 9,
    "squeezebert/squeezebert-mnli-headless": 9,
    "tuner007/pegasus_paraphrase": 15,
    "google/pegasus-large": 8,
    "google/pegasus-xsum": 11,
    "sshleifer/tiny-mbart": 2,
    "facebook/mbart-large-cc25": 12,
    "facebook/mbart-large-50": 12,
    "facebook/mbart-large-en-ro": 12,
    "facebook/mbart-large-50-many-to-many-mmt": 12,
    "facebook/mbart-large-50-one-to-many-mmt": 12,
    "allenai/led-base-16384": 6,
    "facebook/blenderbot_small-90M": 7,
    "facebook/blenderbot-400M-distill": 2,
    "microsoft/prophetnet-large-uncased": 4,
    "microsoft/prophetnet-large-uncased-cnndm": 7,
    "SpanBERT/spanbert-base-cased": 8,
    "SpanBERT/spanbert-large-cased": 17,
    "microsoft/xprophetnet-large-wiki100-cased": 7,
    "ProsusAI/finbert": 10,
    "Vamsi/T5_Paraphrase_Paws": 12,
    "ramsrigouthamg/t5_paraphraser": 11,
    "microsoft/deberta-v2-xlarge": 10,
    "microsoft/deberta-v2-xlarge-mnli": 17,
    "microsoft/deberta-v2-xxlarge": 21,
    "microsoft/deberta-v2-xxlarge-mnli": 22,
    "allenai/longformer-base-4096": 7,
    "allenai/longformer-large-4096": 14,
    "allenai/longformer-large-4096-finetuned-triviaqa": 14,
    "zhiheng-huang/bert-base-uncased-embedding-relative-key": 4,
    "zhiheng-huang/bert-base-uncased-embedding-relative-key-query": 7,
    "zhiheng-huang/bert-large-uncased-whole-word-masking-embedding-relative-key-query": 19,
    "google/mt5-small": 8,
    "google/mt5-base": 11,
    "google/mt5-large": 19,
    "google/mt5-xl": 24,
    "google/bigbird-roberta-base": 10,
    "google/bigbird-roberta-large": 14,
    "google/bigbird-base-trivia-itc": 8,
    "princeton-nlp/unsup-simcse-bert-base-uncased": 10,
    "princeton-nlp/unsup-simcse-bert-large-uncased": 18,
    "princeton-nlp/unsup-simcse-roberta-base": 8,
    "princeton-nlp/unsup-simcse-roberta-large": 13,
    "princeton-nlp/sup-simcse-bert-base-uncased": 10,
    "princeton-nlp/sup-simcse-bert-large-uncased": 18,
    "princeton-nlp/sup-simcse-roberta-base": 10,
    "princeton-nlp/sup-simcse-roberta-large": 16,
    "dbmdz/bert-base-turkish-cased": 10,
    "dbmdz/distilbert-base-turkish-cased": 4,
    "google/byt5-small": 1,
    "google/byt5-base": 17,
    "google/byt5-large": 30,
    "microsoft/deberta-v3-xsmall": 10,
    "microsoft/deberta-v3-small": 4,
    "microsoft/deberta-v3-base": 9,
    "microsoft/mdeberta-v3-base": 10,
    "microsoft/deberta-v3-large": 12,
    "khalidalt/DeBERTa-v3-large-mnli": 18,
}


MULTILINGUAL_LANGS: frozenset[str] = frozenset(
    """af an ar ast az azb ba bar be bg bn bpy br bs ca ce ceb cs cv cy da de el en es et eu fa
    fi fr fy ga gl gu he hi hr ht hu hy id io is it ja jv ka kk kn ko ky la lb lmo lt lv mg mk
    ml mn mr ms my nds ne new nl nn no oc pa pl pms pnb pt ro ru scn sco sh sk sl sq sr su sv
    sw ta te tg th tl tr tt uk ur uz vi vo war yo zh""".split()  # noqa: SIM905
)
"""Wikipedia codes of the languages bert-base-multilingual-cased (bert_score's model for every
language without its own) was trained on."""

BASELINE_LANGS: frozenset[str] = frozenset(
    {"cs", "de", "en", "en-sci", "es", "et", "fi", "fr", "it", "lv", "pt", "zh"}
)
"""The languages of bert_score's published rescale baselines."""

KNOWN_LANGS: frozenset[str] = frozenset(LANG2MODEL) | BASELINE_LANGS | MULTILINGUAL_LANGS
"""Every language code bert_score has a model or a baseline for: the codes of ``LANG2MODEL``,
of its baselines, and of multilingual BERT's languages. Others warn (see :func:`choose_model`)."""


def model_for_lang(lang: str) -> str:
    """Return bert_score's model for a language code (``lang2model``).

    Parameters
    ----------
    lang : str
        A language code such as ``"en"`` or ``"zh"``; case is ignored. Codes without an entry
        map to ``bert-base-multilingual-cased``, as in bert_score.
    """
    return LANG2MODEL.get(lang.lower(), DEFAULT_LANG_MODEL)


def choose_model(model_type: str | None, lang: str | None) -> str:
    """Resolve the ``model_type``/``lang`` pair the way ``bert_score.score`` does.

    An explicit ``model_type`` wins; otherwise ``lang`` picks a model; with neither, the default
    model (all-MiniLM-L6-v2) is used.
    """
    if model_type is not None:
        if not isinstance(model_type, str) or not model_type.strip():
            raise InputTypeError(f"model_type must be a non-empty str, got {model_type!r}")
        return model_type
    if lang is not None:
        if not isinstance(lang, str):
            raise InputTypeError(f"lang must be a str such as 'en', got {lang!r}")
        if lang.lower() not in KNOWN_LANGS:
            warn_user(
                f"lang={lang!r} is not one of bert_score's language codes: falling back to "
                f"{DEFAULT_LANG_MODEL}, as bert_score does. Known codes: "
                f"{', '.join(sorted(set(LANG2MODEL) | BASELINE_LANGS))} (own models or "
                f"baselines), and multilingual BERT's: {', '.join(sorted(MULTILINGUAL_LANGS))}"
            )
        return model_for_lang(lang)
    return DEFAULT_MODEL


def table_name(model_type: str) -> str:
    """bert_score's name for ``model_type``: its table entry when ``model_type`` is today's Hub
    id of a model the tables name by its old id (:data:`~rust_bertscore.catalog.hub_names.
    HUB_ALIASES`), else ``model_type`` unchanged (local paths and other ids are taken as given,
    as bert_score takes them: a directory named ``roberta-large`` is not bert_score's model).

    Examples
    --------
    >>> from rust_bertscore.catalog.registry import table_name
    >>> table_name("FacebookAI/roberta-large"), table_name("roberta-large")
    ('roberta-large', 'roberta-large')
    >>> table_name("microsoft/deberta-base")  # namespaced ids kept their names
    'microsoft/deberta-base'
    >>> table_name("facebookai/roberta-large")  # Hub ids match whatever their case
    'roberta-large'
    """
    if model_type in HUB_ALIASES:
        return HUB_ALIASES[model_type]
    if model_type in MODEL2LAYERS or not _hub_id_like(model_type):
        return model_type
    # The Hub resolves ids case-insensitively (facebookai/roberta-large is FacebookAI's).
    folded = model_type.casefold()
    return _FOLDED_ALIASES.get(folded) or _FOLDED_TABLE.get(folded) or model_type


def _hub_id_like(name: str) -> bool:
    """A name the Hub could hold: ``name`` or ``owner/name``, not a path."""
    return not name.startswith((".", "/", "~")) and name.count("/") <= 1 and "\\" not in name


_FOLDED_ALIASES = {hub_id.casefold(): old for hub_id, old in HUB_ALIASES.items()}
_FOLDED_TABLE = {name.casefold(): name for name in MODEL2LAYERS}


def hub_spelling(model_type: str) -> str:
    """The spelling bert_score's tables or the Hub aliases give a Hub id matched without regard
    to case (``facebookai/roberta-large`` -> ``FacebookAI/roberta-large``), else ``model_type``.

    Examples
    --------
    >>> from rust_bertscore.catalog.registry import hub_spelling
    >>> hub_spelling("facebookai/roberta-large"), hub_spelling("Roberta-Large")
    ('FacebookAI/roberta-large', 'roberta-large')
    >>> hub_spelling("./Roberta-Large")  # a path is taken as given
    './Roberta-Large'
    """
    if not _hub_id_like(model_type):
        return model_type
    folded = model_type.casefold()
    for hub_id in HUB_ALIASES:
        if hub_id.casefold() == folded:
            return hub_id
    if folded == DEFAULT_MODEL.casefold():
        return DEFAULT_MODEL
    return _FOLDED_TABLE.get(folded, model_type)


def hub_aliases(name: str) -> tuple[str, ...]:
    """Today's Hub ids of the table model ``name`` (or of the one a Hub id names).

    Examples
    --------
    >>> from rust_bertscore.catalog.registry import hub_aliases
    >>> hub_aliases("bert-base-uncased"), hub_aliases("microsoft/deberta-base")
    (('google-bert/bert-base-uncased',), ())
    """
    table = table_name(name)
    return tuple(hub_id for hub_id, old in HUB_ALIASES.items() if old == table)


def tuned_layer(model_type: str) -> int | None:
    """The layer bert_score's authors tuned for ``model_type`` (a table name or today's Hub id
    of one, see :func:`table_name`), or None when it has no entry.

    Examples
    --------
    >>> from rust_bertscore.catalog.registry import tuned_layer
    >>> tuned_layer("roberta-large"), tuned_layer("FacebookAI/roberta-large"), tuned_layer("x/y")
    (17, 17, None)
    """
    return MODEL2LAYERS.get(table_name(model_type))


def model_langs(model_type: str) -> tuple[str, ...]:
    """The language codes for which ``lang=`` picks ``model_type`` (bert_score's
    ``lang2model``): every code without a model of its own for bert-base-multilingual-cased.

    Examples
    --------
    >>> from rust_bertscore.catalog.registry import model_langs
    >>> model_langs("FacebookAI/roberta-large"), model_langs("t5-small")
    (('en',), ())
    """
    table = table_name(model_type)
    if table == DEFAULT_LANG_MODEL:
        return tuple(sorted(KNOWN_LANGS - set(LANG2MODEL)))
    return tuple(sorted(lang for lang, model in LANG2MODEL.items() if model == table))


BASELINE_DIR = Path(__file__).resolve().parent.parent / "baselines"
"""The rescale baselines shipped in the wheel, as bert_score's ``rescale_baseline/``."""


def baseline_file(lang: str, model_type: str) -> Path:
    """Where the wheel keeps the baseline of ``model_type`` for ``lang`` (it may not exist).

    As bert_score's ``rescale_baseline/{lang}/{model_type}.tsv``, for the table name of
    ``model_type`` (today's Hub id finds its model's file, see :func:`table_name`): a model id
    with a slash is a sub-folder, a path stays under the folder, and ``lang`` is taken as given.

    Examples
    --------
    >>> from rust_bertscore.catalog.registry import BASELINE_DIR, baseline_file
    >>> baseline_file("en", "FacebookAI/roberta-large") == BASELINE_DIR / "en/roberta-large.tsv"
    True
    """
    # Joined as bert_score's f-string path: an absolute model path stays under the folder.
    return BASELINE_DIR.joinpath(*f"{lang}/{table_name(model_type)}.tsv".split("/"))


def baseline_langs(model_type: str) -> tuple[str, ...]:
    """The languages with a shipped baseline of ``model_type`` (see :func:`baseline_file`).

    Examples
    --------
    >>> from rust_bertscore.catalog.registry import baseline_langs
    >>> baseline_langs("google-bert/bert-base-uncased"), baseline_langs("t5-small")
    (('en',), ())
    """
    if not BASELINE_DIR.is_dir():
        return ()
    langs = (d.name for d in BASELINE_DIR.iterdir() if d.is_dir())
    return tuple(sorted(lang for lang in langs if baseline_file(lang, model_type).is_file()))
