"""What each slow tokenizer class of transformers 4.57 does around the sub-word model.

bert_score 0.3.13 loads ``AutoTokenizer.from_pretrained(model, use_fast=False)``, so the class
named by ``tokenizer_config.json`` (or, without it, the one transformers maps ``model_type`` to)
decides the special tokens around a text, whether a space is put before it, and which
SentencePiece conventions apply. Facts taken from the classes' source
(``transformers/models/*/tokenization_*.py``) and checked against bert_score's ids.
"""

from __future__ import annotations

from dataclasses import dataclass, field

LAYOUT_CLS_SEP = "cls_sep"
"""``[CLS] X [SEP]`` (BERT, RoBERTa, DeBERTa, ALBERT, BART, MPNet, XLM-R ...)."""
LAYOUT_EOS = "eos"
"""``X </s>``, the ``</s>`` not doubled when X already ends with it (T5, mT5, ByT5)."""
LAYOUT_EOS_ALWAYS = "eos_always"
"""``X </s>``, always (PegasusTokenizer)."""
LAYOUT_BARE = "bare"
"""``X``: no special tokens at all (BlenderbotSmallTokenizer)."""
LAYOUT_MBART = "mbart"
"""``X </s> [src_lang]`` (MBartTokenizer)."""
LAYOUT_MBART50 = "mbart50"
"""``[src_lang] X </s>`` (MBart50Tokenizer)."""
LAYOUT_SEP_CLS = "sep_cls"
"""``X <sep> <cls>``: the special tokens at the end (XLNetTokenizer)."""
LAYOUT_BOS_SEP = "bos_sep"
"""``<s> X </s>``: ``bos_token`` first, ``sep_token`` last (XLMTokenizer, whose ``cls_token`` is
``</s>`` too, so only ``</s>`` weighs 0 and ``<s>`` counts as a word)."""

LAYOUT_BOS_EOS = "bos_eos"
"""``<bos> X <eos>``, each as ``add_bos_token`` / ``add_eos_token`` say (GemmaTokenizer: by
default ``<bos>`` only; neither token is CLS or SEP, so both weigh 1)."""

MBART_LANGUAGE_CODES: tuple[str, ...] = (
    "ar_AR",
    "cs_CZ",
    "de_DE",
    "en_XX",
    "es_XX",
    "et_EE",
    "fi_FI",
    "fr_XX",
    "gu_IN",
    "hi_IN",
    "it_IT",
    "ja_XX",
    "kk_KZ",
    "ko_KR",
    "lt_LT",
    "lv_LV",
    "my_MM",
    "ne_NP",
    "nl_XX",
    "ro_RO",
    "ru_RU",
    "si_LK",
    "tr_TR",
    "vi_VN",
    "zh_CN",
)
"""mBART-25's language codes, in the order of their ids (after the SentencePiece vocabulary)."""

MBART50_LANGUAGE_CODES: tuple[str, ...] = (
    *MBART_LANGUAGE_CODES,
    "af_ZA",
    "az_AZ",
    "bn_IN",
    "fa_IR",
    "he_IL",
    "hr_HR",
    "id_ID",
    "ka_GE",
    "km_KH",
    "mk_MK",
    "ml_IN",
    "mn_MN",
    "mr_IN",
    "pl_PL",
    "ps_AF",
    "pt_XX",
    "sv_SE",
    "sw_KE",
    "ta_IN",
    "te_IN",
    "th_TH",
    "tl_XX",
    "uk_UA",
    "ur_PK",
    "xh_ZA",
    "gl_ES",
    "sl_SI",
)
"""mBART-50's 52 language codes, mBART-25's first."""


@dataclass(frozen=True)
class TokenizerClass:
    """How one slow tokenizer class frames and splits text.

    Attributes
    ----------
    name : str
        The class name (``T5Tokenizer``).
    layout : str
        One of the ``LAYOUT_*`` constants.
    sentencepiece : str or None
        The SentencePiece convention (``"plain"``, ``"albert"``, ``"deberta-v2"``,
        ``"fairseq"``, ``"pegasus"``, ``"gemma"``) when the slow class runs a SentencePiece
        model, else None.
    model_files : tuple of str
        The SentencePiece model's usual file names.
    prefix_space : bool
        True when bert_score encodes with ``add_prefix_space=True`` (its ``sent_encode`` does so
        for ``GPT2Tokenizer`` and ``RobertaTokenizer`` instances only).
    has_cls_sep : bool
        False for classes without CLS and SEP tokens (T5, ByT5): bert_score's zero weights then
        go to no token at all.
    language_codes : tuple of str
        mBART's language codes (empty for the others).
    defaults : dict
        The class's ``__init__`` defaults that ``tokenizer_config.json`` may override (special
        tokens, options): what a checkpoint without that file gets.
    bare_empty : bool
        True when an empty text encodes to no token at all: bert_score encodes it with
        ``build_inputs_with_special_tokens([])``, which ``PreTrainedTokenizerFast`` (a checkpoint
        with only a ``tokenizer.json``, such as ModernBERT) leaves empty.
    fast_empty_bos_eos : bool
        True when the class's fast counterpart frames an empty text with ``bos`` and ``eos``
        (``RobertaTokenizerFast``, BART's, LED's, Longformer's and MPNet's
        ``build_inputs_with_special_tokens``) where the slow class takes ``cls`` and ``sep``:
        the same ids unless the files name other tokens.
    """

    name: str
    layout: str = LAYOUT_CLS_SEP
    sentencepiece: str | None = None
    model_files: tuple[str, ...] = ()
    prefix_space: bool = False
    has_cls_sep: bool = True
    language_codes: tuple[str, ...] = ()
    defaults: dict[str, object] = field(default_factory=dict)
    bare_empty: bool = False
    fast_empty_bos_eos: bool = False


_CLASSES = [
    # The generic fast class: bert_score gets it even with use_fast=False (there is no slow
    # one); its template (tokenizer.json's post-processor) frames a text, an empty text gets none.
    TokenizerClass("PreTrainedTokenizerFast", bare_empty=True),
    TokenizerClass("RobertaTokenizer", prefix_space=True, fast_empty_bos_eos=True),
    # Qwen2's byte-level BPE (Qwen3, Qwen3-Embedding): no special tokens at all, an empty text is
    # no tokens; pre-tokenised by its own pattern after NFC (fast.qwen2_tokenizer)
    TokenizerClass("Qwen2Tokenizer", layout=LAYOUT_BARE, has_cls_sep=False, bare_empty=True),
    TokenizerClass(
        "GemmaTokenizer",
        layout=LAYOUT_BOS_EOS,
        sentencepiece="gemma",
        model_files=("tokenizer.model",),
        has_cls_sep=False,
        defaults={
            "bos_token": "<bos>",
            "eos_token": "<eos>",
            "unk_token": "<unk>",
            "pad_token": "<pad>",
            "add_bos_token": True,
            "add_eos_token": False,
        },
    ),
    TokenizerClass("GPT2Tokenizer", prefix_space=True),
    TokenizerClass("BartTokenizer", fast_empty_bos_eos=True),
    TokenizerClass("DebertaTokenizer"),
    TokenizerClass("LongformerTokenizer", fast_empty_bos_eos=True),
    TokenizerClass("LEDTokenizer", fast_empty_bos_eos=True),
    TokenizerClass("BertTokenizer"),
    TokenizerClass("MPNetTokenizer", fast_empty_bos_eos=True),
    TokenizerClass(
        "AlbertTokenizer", sentencepiece="albert", model_files=("spiece.model", "spm.model")
    ),
    TokenizerClass(
        "DebertaV2Tokenizer", sentencepiece="deberta-v2", model_files=("spm.model", "spiece.model")
    ),
    TokenizerClass(
        "T5Tokenizer",
        layout=LAYOUT_EOS,
        sentencepiece="plain",
        model_files=("spiece.model",),
        has_cls_sep=False,
    ),
    TokenizerClass(
        "MT5Tokenizer",
        layout=LAYOUT_EOS,
        sentencepiece="plain",
        model_files=("spiece.model",),
        has_cls_sep=False,
    ),
    TokenizerClass("ByT5Tokenizer", layout=LAYOUT_EOS, has_cls_sep=False),
    TokenizerClass(
        "PegasusTokenizer",
        layout=LAYOUT_EOS_ALWAYS,
        sentencepiece="pegasus",
        model_files=("spiece.model",),
        has_cls_sep=False,
    ),
    TokenizerClass("BigBirdTokenizer", sentencepiece="plain", model_files=("spiece.model",)),
    TokenizerClass("BlenderbotTokenizer", layout=LAYOUT_EOS_ALWAYS),
    TokenizerClass("BlenderbotSmallTokenizer", layout=LAYOUT_BARE, has_cls_sep=False),
    TokenizerClass("BertweetTokenizer"),
    TokenizerClass("ProphetNetTokenizer", layout=LAYOUT_EOS_ALWAYS),
    TokenizerClass(
        "XLMProphetNetTokenizer",
        layout=LAYOUT_EOS_ALWAYS,
        sentencepiece="xlm-prophetnet",
        model_files=("prophetnet.tokenizer",),
    ),
    TokenizerClass(
        "XLNetTokenizer",
        layout=LAYOUT_SEP_CLS,
        sentencepiece="xlnet",
        model_files=("spiece.model",),
        defaults={
            "bos_token": "<s>",
            "eos_token": "</s>",
            "unk_token": "<unk>",
            "sep_token": "<sep>",
            "pad_token": "<pad>",
            "cls_token": "<cls>",
            "mask_token": {"content": "<mask>", "lstrip": True},
            "additional_special_tokens": ["<eop>", "<eod>"],
        },
    ),
    TokenizerClass(
        "XLMTokenizer",
        layout=LAYOUT_BOS_SEP,
        defaults={
            "bos_token": "<s>",
            "unk_token": "<unk>",
            "sep_token": "</s>",
            "pad_token": "<pad>",
            "cls_token": "</s>",
            "mask_token": "<special1>",
            "additional_special_tokens": [f"<special{i}>" for i in range(10)],
        },
    ),
    TokenizerClass(
        "MBartTokenizer",
        layout=LAYOUT_MBART,
        sentencepiece="fairseq",
        model_files=("sentencepiece.bpe.model",),
        language_codes=MBART_LANGUAGE_CODES,
    ),
    TokenizerClass(
        "MBart50Tokenizer",
        layout=LAYOUT_MBART50,
        sentencepiece="fairseq",
        model_files=("sentencepiece.bpe.model",),
        language_codes=MBART50_LANGUAGE_CODES,
    ),
]
TOKENIZER_CLASSES: dict[str, TokenizerClass] = {c.name: c for c in _CLASSES}
"""The slow tokenizer classes this package knows by name; any other class is read as
``[CLS] X [SEP]`` from its ``tokenizer.json`` or vocabulary files."""

MODEL_TYPE_TOKENIZERS: dict[str, str] = {
    "roberta": "RobertaTokenizer",
    "gpt2": "GPT2Tokenizer",
    "bart": "BartTokenizer",
    "deberta": "DebertaTokenizer",
    "deberta-v2": "DebertaV2Tokenizer",
    "longformer": "LongformerTokenizer",
    "led": "LEDTokenizer",
    "prophetnet": "ProphetNetTokenizer",
    "xlm-prophetnet": "XLMProphetNetTokenizer",
    "mpnet": "MPNetTokenizer",
    "albert": "AlbertTokenizer",
    "t5": "T5Tokenizer",
    "mt5": "MT5Tokenizer",
    "mbart": "MBartTokenizer",
    "pegasus": "PegasusTokenizer",
    "big_bird": "BigBirdTokenizer",
    "blenderbot": "BlenderbotTokenizer",
    "blenderbot-small": "BlenderbotSmallTokenizer",
    "xlnet": "XLNetTokenizer",
    "xlm": "XLMTokenizer",
    "modernbert": "PreTrainedTokenizerFast",
    "qwen3": "Qwen2Tokenizer",
    "gemma3_text": "GemmaTokenizer",
}
"""``config.json``'s ``model_type`` -> the slow class ``AutoTokenizer`` picks when
``tokenizer_config.json`` names none (transformers' ``TOKENIZER_MAPPING_NAMES``)."""

SENTENCEPIECE_FILES: tuple[str, ...] = (
    "spiece.model",
    "spm.model",
    "sentencepiece.bpe.model",
    "tokenizer.model",
)
"""Every SentencePiece model file name a supported checkpoint uses."""


def tokenizer_class(tok_config: dict, config: dict) -> TokenizerClass:
    """The slow tokenizer class bert_score would load, as far as it matters here."""
    name = str(tok_config.get("tokenizer_class") or "")
    if name == "PreTrainedTokenizerFast":  # no slow class to fall back to
        return TOKENIZER_CLASSES[name]
    name = name.removesuffix("Fast")
    if not name:  # AutoTokenizer's next guess: config.json's tokenizer_class (vinai/bertweet-base)
        name = str(config.get("tokenizer_class") or "").removesuffix("Fast")
    if not name:
        name = MODEL_TYPE_TOKENIZERS.get(str(config.get("model_type", "")), "")
    return TOKENIZER_CLASSES.get(name) or TokenizerClass(name or "PreTrainedTokenizer")
