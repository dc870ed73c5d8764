"""The models of bert_score's tuned-layer table: family, default layer, and whether this version
converts them (:func:`supported_models`); what the tables say of any one name, today's Hub ids
included (:func:`model_info`).

The family is the ``model_type`` of each Hugging Face checkpoint's ``config.json``, from a static
table derived from the names (no network access: the listing must work offline). Whether a model
converts is decided at run time from ``configs.SUPPORTED_MODEL_TYPES`` (the converter's table),
so the listing follows the families the converter learns; listing needs no onnx.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path

from ..errors import InputTypeError, InputValueError
from . import configs
from .registry import (
    DEFAULT_MODEL,
    DEFAULT_MODEL_LAYER,
    MODEL2LAYERS,
    baseline_langs,
    hub_aliases,
    model_langs,
    table_name,
)

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
    "Qwen/Qwen3-Embedding-0.6B": ("qwen3", 28),
    "Qwen/Qwen3-Embedding-4B": ("qwen3", 36),
    "Qwen/Qwen3-Embedding-8B": ("qwen3", 36),
    "google/embeddinggemma-300m": ("gemma3_text", 24),
    "nomic-ai/nomic-embed-text-v1": ("nomic_bert", 12),
    "nomic-ai/nomic-embed-text-v1.5": ("nomic_bert", 12),
    "nomic-ai/nomic-bert-2048": ("nomic_bert", 12),
    "Alibaba-NLP/gte-base-en-v1.5": ("new", 12),
    "Alibaba-NLP/gte-large-en-v1.5": ("new", 24),
    "Alibaba-NLP/gte-multilingual-base": ("new", 12),
    "Snowflake/snowflake-arctic-embed-m-v2.0": ("new", 12),
    "jinaai/jina-embeddings-v3": ("xlm-roberta", 24),
}
"""Models this version converts that bert_score's table lacks: name -> (``model_type``, default
layer). No tuned layer is published for them: the default is the last layer (the checkpoints'
``num_hidden_layers``: 22 and 28 for ModernBERT-base and -large, 28, 36 and 36 for
Qwen3-Embedding-0.6B, -4B and -8B, 24 for EmbeddingGemma, 12 (``n_layer``) for nomic-embed-text v1,
v1.5 and nomic-bert-2048, 12 for gte-base-en-v1.5, gte-multilingual-base and
snowflake-arctic-embed-m-v2.0, 24 for gte-large-en-v1.5 and jina-embeddings-v3, whose LoRA task
is picked with an ``@<task>`` suffix, ``catalog.lora_tasks``), which the scorer warns is untuned
(docs/encoders.md)."""

DEFAULT_NOTE = "the default model"
"""The note of the package's default model (not in bert_score's table)."""

# Checkpoints this version cannot score although their model_type converts: a tokenizer it does
# not reproduce (the model would get the wrong ids) or a config option the converter refuses.
_NOT_REPRODUCED: dict[str, str] = {}


@dataclass(frozen=True)
class ModelInfo:
    """What bert_score's tables (and this version) say of one model.

    Attributes
    ----------
    name : str
        The model as bert_score's table names it (``roberta-large`` for
        ``FacebookAI/roberta-large``); a model outside the tables keeps the name given.
    model_type : str or None
        The checkpoint's ``config.json`` ``model_type`` (its family); None for a model outside
        the tables (known only from its ``config.json``).
    default_layer : int or None
        The layer ``num_layers=None`` uses: bert_score's tuned layer (``model2layers``), the
        last layer for the models beyond the table (untuned), None for a model outside the
        tables (the scorer takes its last layer, with a warning).
    convertible : bool
        True when this version converts the checkpoint and reproduces its tokenizer; False for a
        model outside the tables (not known before its ``config.json`` is read).
    note : str
        Why a model does not convert, or what it is (empty for a table model that converts).
    in_bert_score : bool
        True for the models of bert_score's table; False for the default model, the models
        beyond it (:data:`BEYOND_BERT_SCORE`) and unknown ones.
    aliases : tuple of str
        Today's Hub ids of a model the table names by its old id (the Hub's 2024 organisation
        moves: ``FacebookAI/roberta-large``); each scores as the table entry.
    languages : tuple of str
        The ``lang=`` codes that pick this model (bert_score's ``lang2model``).
    baselines : tuple of str
        The languages with a rescale baseline shipped for it (``rescale_with_baseline=True``
        with one of these ``lang`` needs no ``baseline_path``).

    Examples
    --------
    >>> from rust_bertscore import supported_models
    >>> info = supported_models()[0]
    >>> info.name, info.model_type, info.default_layer, info.convertible
    ('bert-base-uncased', 'bert', 9, True)
    >>> info.aliases, info.baselines, info.to_dict()["in_bert_score"]
    (('google-bert/bert-base-uncased',), ('en',), True)
    """

    name: str
    model_type: str | None
    default_layer: int | None
    convertible: bool
    note: str = ""
    in_bert_score: bool = True
    aliases: tuple[str, ...] = ()
    languages: tuple[str, ...] = ()
    baselines: tuple[str, ...] = ()

    @property
    def family(self) -> str | None:
        """The model's family: its ``config.json`` ``model_type`` (as ``rust-bertscore models``
        shows it), None for a model outside the tables."""
        return self.model_type

    def to_dict(self) -> dict[str, object]:
        """The fields as a JSON-ready dict (tuples as lists)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


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
    raise InputValueError(f"no family known for model {name!r}")


def _supported_model_types() -> frozenset[str]:
    return frozenset(configs.SUPPORTED_MODEL_TYPES)


def _named(info: ModelInfo) -> ModelInfo:
    """``info`` with its Hub ids, ``lang=`` codes and shipped baselines."""
    name = info.name
    return replace(
        info, aliases=hub_aliases(name), languages=model_langs(name), baselines=baseline_langs(name)
    )


def _table_model(name: str, supported: frozenset[str]) -> ModelInfo:
    model_type = model_type_of(name)
    note = ""
    if model_type not in supported:
        note = f"model_type {model_type!r} is not converted by this version"
    elif name in _NOT_REPRODUCED:
        note = _NOT_REPRODUCED[name]
    return _named(ModelInfo(name, model_type, MODEL2LAYERS[name], not note, note))


def _beyond_model(name: str, supported: frozenset[str]) -> ModelInfo:
    model_type, layer = BEYOND_BERT_SCORE[name]
    note = "" if model_type in supported else f"model_type {model_type!r} not converted"
    note = note or "beyond bert_score's table; default layer untuned (the last)"
    if name == "jinaai/jina-embeddings-v3":
        note += "; LoRA task by an '@<task>' suffix (none: the base weights)"
    return ModelInfo(name, model_type, layer, model_type in supported, note, False)


def supported_models(*, beyond_table: bool = False) -> list[ModelInfo]:
    """bert_score's 140 models of its tuned-layer table, in its order.

    Parameters
    ----------
    beyond_table : bool
        Also list, after them, the models this version converts beyond bert_score's table
        (:data:`BEYOND_BERT_SCORE`: ModernBERT, Qwen3-Embedding, EmbeddingGemma,
        nomic-embed-text, GTE v1.5 and multilingual, jina-embeddings-v3), with
        ``in_bert_score=False``.

    Returns
    -------
    list of ModelInfo
        Name, family (``model_type``), bert_score's default layer, whether this version
        converts it (from the converter's supported ``model_type`` set at run time), its Hub
        ids of today, its ``lang=`` codes and its shipped baselines.

    Examples
    --------
    >>> from rust_bertscore import supported_models
    >>> [m.name for m in supported_models() if m.convertible][:2]
    ['bert-base-uncased', 'bert-large-uncased']
    """
    supported = _supported_model_types()
    # DEFAULT_MODEL is the package's own default, not in bert_score's table.
    out = [_table_model(name, supported) for name in MODEL2LAYERS if name != DEFAULT_MODEL]
    if beyond_table:
        out.extend(_beyond_model(name, supported) for name in BEYOND_BERT_SCORE)
    return out


OUTSIDE_THE_TABLES = (
    "not in bert_score's table: no tuned layer (the scorer takes the model's last layer, with a "
    "warning, unless num_layers is given)"
)
"""The note of a model that neither bert_score's table nor this version's lists name."""


def model_info(name: str) -> ModelInfo:
    """What bert_score's tables (and this version) say of ``name``: its table name, Hub ids,
    default layer, family, ``lang=`` codes and shipped baselines.

    Parameters
    ----------
    name : str
        A model as ``score(model_type=...)`` takes it: bert_score's table name
        (``roberta-large``) or today's Hub id of it (``FacebookAI/roberta-large``: the Hub moved
        the legacy ids under organisations in 2024; both give the same entry), a model beyond
        the table (:data:`BEYOND_BERT_SCORE`), the default model, or any other id or path.

    Returns
    -------
    ModelInfo
        For a model outside the tables (another Hub id, a local directory or ``.onnx`` file,
        even one named like a table model: bert_score looks names up as given), ``name`` as
        given, ``default_layer`` None and ``in_bert_score`` False; for a Hub id,
        ``model_type`` None and ``convertible`` False (nothing is downloaded); for a local
        directory or ``.onnx`` file, the ``model_type`` of its ``config.json`` and whether it
        converts (a family this version converts, weights and tokenizer files present), the
        note saying what is missing. Nothing else is read but the package's baseline folder.
        Hub ids match whatever their case, as the Hub resolves them.

    Raises
    ------
    InputTypeError
        If ``name`` is not a non-empty str.

    Examples
    --------
    >>> from rust_bertscore import model_info
    >>> info = model_info("FacebookAI/roberta-large")
    >>> info.name, info.default_layer, info.family, info.languages, info.baselines
    ('roberta-large', 17, 'roberta', ('en',), ('en',))
    >>> info == model_info("roberta-large")
    True
    >>> model_info("./my-checkpoint").default_layer is None
    True
    >>> model_info("facebookai/roberta-large").name  # the Hub's ids ignore case
    'roberta-large'
    >>> from rust_bertscore.models.files import resolve_model
    >>> local = model_info(str(resolve_model(DEFAULT_MODEL).model_dir))
    >>> local.model_type, local.convertible, local.default_layer
    ('bert', True, None)
    """
    if not isinstance(name, str) or not name.strip():
        raise InputTypeError(f"name must be a model id or path (a non-empty str), got {name!r}")
    table = table_name(name)
    supported = _supported_model_types()
    if table == DEFAULT_MODEL:
        family = model_type_of(table)
        return _named(ModelInfo(table, family, DEFAULT_MODEL_LAYER, True, DEFAULT_NOTE, False))
    if table in MODEL2LAYERS:
        return _table_model(table, supported)
    if table in BEYOND_BERT_SCORE:
        return _beyond_model(table, supported)
    local = Path(name).expanduser()
    if local.exists():
        return _local_model(name, local, supported)
    return ModelInfo(name, None, None, False, OUTSIDE_THE_TABLES, False)


_WEIGHT_GLOBS = ("*.safetensors", "pytorch_model*.bin")
_TOKENIZER_FILES = (
    "tokenizer.json",
    "vocab.txt",
    "vocab.json",
    "spiece.model",
    "spm.model",
    "sentencepiece.bpe.model",
    "tokenizer.model",
    "prophetnet.tokenizer",
    "tokenizer_config.json",
)


def _local_model(name: str, path: Path, supported: frozenset[str]) -> ModelInfo:
    """What a local checkpoint directory (or ``.onnx`` graph) is, from its ``config.json``."""
    graph = path.suffix == ".onnx" and path.is_file()
    folder = path.parent if graph else path
    try:
        config = configs.load_config(folder)
        model_type = str(config.get("model_type") or "") or None
    except (OSError, ValueError) as e:
        return ModelInfo(name, None, None, False, f"local, unreadable config.json: {e}", False)
    missing = []
    if model_type not in supported:
        missing.append(f"model_type {model_type!r} is not converted by this version")
    if not graph and not any(any(folder.glob(g)) for g in _WEIGHT_GLOBS):
        missing.append("no weights (model.safetensors or pytorch_model.bin)")
    if not any((folder / f).is_file() for f in _TOKENIZER_FILES):
        missing.append("no tokenizer files")
    if missing:
        return ModelInfo(name, model_type, None, False, "local: " + "; ".join(missing), False)
    kind = "an ONNX graph, run as given" if graph else "a local checkpoint, converted on first use"
    return ModelInfo(name, model_type, None, True, f"{kind}; {OUTSIDE_THE_TABLES}", False)
