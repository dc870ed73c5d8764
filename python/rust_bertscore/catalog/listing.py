"""The models of bert_score's tuned-layer table: family, default layer, and whether this version
converts them.

The family is the ``model_type`` of each Hugging Face checkpoint's ``config.json``, from a static
table derived from the names (no network access: the listing must work offline). Whether a model
converts is decided at run time from ``configs.SUPPORTED_MODEL_TYPES`` (the converter's table),
so the listing follows the families the converter learns; listing needs no onnx.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from . import configs
from .registry import DEFAULT_MODEL, MODEL2LAYERS

BERT_SCORE_MODEL_COUNT = 140
"""Entries of bert_score 0.3.13's ``model2layers``."""

# (substring of the lower-cased name, model_type); the first match wins, so the more specific
# patterns come first. Each line follows what the Hub checkpoint's config.json says.
_FAMILY_RULES: tuple[tuple[str, str], ...] = (
    ("xprophetnet", "xlm-prophetnet"),
    ("prophetnet", "prophetnet"),
    ("deberta-v3", "deberta-v2"),
    ("deberta-v2", "deberta-v2"),
    ("deberta", "deberta"),
    ("byt5", "t5"),
    ("mt5", "mt5"),
    ("t5", "t5"),
    ("mbart", "mbart"),
    ("bart", "bart"),
    ("blenderbot_small", "blenderbot-small"),
    ("blenderbot", "blenderbot"),
    ("pegasus", "pegasus"),
    ("/led-", "led"),
    ("longformer", "longformer"),
    ("bigbird", "big_bird"),
    ("xlm-roberta", "xlm-roberta"),
    ("xlm-mlm", "xlm"),
    ("xlnet", "xlnet"),
    ("bertweet", "roberta"),
    ("roberta", "roberta"),
    ("distilbert", "distilbert"),
    ("albert", "albert"),
    ("electra", "electra"),
    ("conv-bert", "convbert"),
    ("squeezebert", "squeezebert"),
    ("mpnet", "mpnet"),
    ("minilm", "bert"),
    ("bort", "bert"),
    ("finbert", "bert"),
    ("spanbert", "bert"),
    ("simcse-bert", "bert"),
    ("scibert", "bert"),
    ("bert", "bert"),
)

BEYOND_BERT_SCORE: dict[str, tuple[str, int]] = {
    "answerdotai/ModernBERT-base": ("modernbert", 22),
    "answerdotai/ModernBERT-large": ("modernbert", 28),
}
"""Models this version converts that bert_score's table lacks: name -> (``model_type``, default
layer). No tuned layer is published for them: the default is the last layer (22 and 28, the
checkpoints' ``num_hidden_layers``), which the scorer warns is untuned (docs/encoders.md)."""

# Checkpoints this version cannot score although their model_type converts: a tokenizer it does
# not reproduce (the model would get the wrong ids) or a config option the converter refuses.
_NOT_REPRODUCED: dict[str, str] = {}


@dataclass(frozen=True)
class ModelInfo:
    """One model of bert_score's table.

    Attributes
    ----------
    name : str
        The Hugging Face id, as bert_score names it.
    model_type : str
        The checkpoint's ``config.json`` ``model_type`` (its family).
    default_layer : int
        bert_score's tuned layer (``model2layers``): what ``num_layers=None`` uses.
    convertible : bool
        True when this version converts the checkpoint and reproduces its tokenizer.
    note : str
        Why a model does not convert (empty when it does).
    in_bert_score : bool
        False for the models beyond bert_score's table (:data:`BEYOND_BERT_SCORE`).

    Examples
    --------
    >>> from rust_bertscore import supported_models
    >>> info = supported_models()[0]
    >>> info.name, info.model_type, info.default_layer, info.convertible
    ('bert-base-uncased', 'bert', 9, True)
    >>> info.to_dict()["in_bert_score"]
    True
    """

    name: str
    model_type: str
    default_layer: int
    convertible: bool
    note: str = ""
    in_bert_score: bool = True

    def to_dict(self) -> dict[str, object]:
        """The fields as a JSON-ready dict."""
        return asdict(self)


def model_type_of(name: str) -> str:
    """The ``model_type`` of a model of bert_score's table, from its name.

    Raises
    ------
    ValueError
        If no rule of the static table matches the name.

    Examples
    --------
    >>> from rust_bertscore.catalog.listing import model_type_of
    >>> model_type_of("roberta-large"), model_type_of("microsoft/deberta-v3-base")
    ('roberta', 'deberta-v2')
    """
    lowered = name.lower()
    for pattern, model_type in _FAMILY_RULES:
        if pattern in lowered:
            return model_type
    raise ValueError(f"no family known for model {name!r}")


def _supported_model_types() -> frozenset[str]:
    return frozenset(configs.SUPPORTED_MODEL_TYPES)


def supported_models(*, beyond_table: bool = False) -> list[ModelInfo]:
    """bert_score's 140 models of its tuned-layer table, in its order.

    Parameters
    ----------
    beyond_table : bool
        Also list, after them, the models this version converts beyond bert_score's table
        (:data:`BEYOND_BERT_SCORE`: ModernBERT), with ``in_bert_score=False``.

    Returns
    -------
    list of ModelInfo
        Name, family (``model_type``), bert_score's default layer, and whether this version
        converts it (from the converter's supported ``model_type`` set at run time).

    Examples
    --------
    >>> from rust_bertscore import supported_models
    >>> [m.name for m in supported_models() if m.convertible][:2]
    ['bert-base-uncased', 'bert-large-uncased']
    """
    supported = _supported_model_types()
    out = []
    for name, layer in MODEL2LAYERS.items():
        if name == DEFAULT_MODEL:  # the package's own default, not in bert_score's table
            continue
        model_type = model_type_of(name)
        note = ""
        if model_type not in supported:
            note = f"model_type {model_type!r} is not converted by this version"
        elif name in _NOT_REPRODUCED:
            note = _NOT_REPRODUCED[name]
        out.append(ModelInfo(name, model_type, layer, not note, note))
    if beyond_table:
        for name, (model_type, layer) in BEYOND_BERT_SCORE.items():
            note = "" if model_type in supported else f"model_type {model_type!r} not converted"
            note = note or "beyond bert_score's table; default layer untuned (the last)"
            out.append(ModelInfo(name, model_type, layer, model_type in supported, note, False))
    return out
