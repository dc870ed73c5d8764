"""A checkpoint's ``config.json`` read without onnx: model family, depth, position limits.

What the tokenizer, the model listing and the converter all need to know about a configuration
lives here, so that none of them has to import the converter (and with it onnx) for it. Only
json and the standard library are imported.

Adding a ``model_type``: one entry in :data:`SUPPORTED_MODEL_TYPES` (and its family in
:data:`SUPPORTED_FAMILIES` if new), its depth field in :func:`model_depth` and its position
limit in :func:`max_positions` where they differ from BERT's; the converter's builder goes in
``rust_bertscore.convert.registry`` (see its docstring for the whole recipe).
"""

from __future__ import annotations

import math
import os
import reprlib
from pathlib import Path
from typing import Any

from ..errors import CheckpointError, InputValueError, ModelNotFoundError
from ..support.inputs import MAX_CONFIG_BYTES, read_json_object
from .remote_code import remote_code_class, with_remote_model_type

__all__ = [
    "CONFIG_NAME",
    "REMOTE_CODE_MODELS",
    "SUPPORTED_FAMILIES",
    "SUPPORTED_MODEL_TYPES",
    "float_field",
    "full_attention_limit",
    "has_convolutions",
    "int_field",
    "load_config",
    "max_positions",
    "model_depth",
    "model_family",
    "remote_code_class",
    "with_remote_model_type",
]

CONFIG_NAME = "config.json"

SUPPORTED_MODEL_TYPES: dict[str, str] = {
    "bert": "bert",
    "electra": "bert",
    "roberta": "roberta",
    "xlm-roberta": "roberta",
    "distilbert": "distilbert",
    "albert": "albert",
    "mpnet": "mpnet",
    "bart": "bart",
    "mbart": "mbart",
    "t5": "t5",
    "mt5": "t5",
    "deberta": "deberta",
    "deberta-v2": "deberta-v2",
    "longformer": "longformer",
    "pegasus": "pegasus",
    "big_bird": "bert",
    "blenderbot": "blenderbot",
    "blenderbot-small": "blenderbot-small",
    "squeezebert": "squeezebert",
    "led": "led",
    "prophetnet": "prophetnet",
    "xlm-prophetnet": "prophetnet",
    "xlnet": "xlnet",
    "xlm": "xlm",
    "convbert": "convbert",
    "modernbert": "modernbert",
    "qwen3": "qwen3",
    "gemma3_text": "gemma3",
    "nomic_bert": "nomic_bert",
    "new": "new",
}
"""``config.json``'s ``model_type`` -> the encoder family the converter builds for it."""

SUPPORTED_FAMILIES: tuple[str, ...] = (
    "bert",
    "roberta",
    "distilbert",
    "albert",
    "mpnet",
    "bart",
    "mbart",
    "t5",
    "deberta",
    "deberta-v2",
    "longformer",
    "pegasus",
    "blenderbot",
    "blenderbot-small",
    "squeezebert",
    "led",
    "prophetnet",
    "xlnet",
    "xlm",
    "convbert",
    "modernbert",
    "qwen3",
    "gemma3",
    "nomic_bert",
    "new",
)
"""The encoder families: ``bert`` (BERT, MiniLM, ELECTRA discriminators, BigBird), ``roberta``
(RoBERTa, XLM-RoBERTa), ``distilbert``, ``albert``, ``mpnet``, the encoders of ``bart`` and
``mbart``, ``t5`` (T5, mT5, ByT5: the encoder stack), ``deberta`` (DeBERTa v1), ``deberta-v2``
(DeBERTa v2, v3, mDeBERTa-v3), ``longformer`` (RoBERTa with banded attention), the encoders of
``pegasus``, ``blenderbot``, ``blenderbot-small``, ``led`` and ``prophetnet``, and
``squeezebert`` (BERT with grouped 1x1 convolutions), ``xlnet`` (the content stream, relative
positions), ``xlm`` (XLM's masked language models), ``convbert`` (mixed self-attention and
dynamic convolution heads), ``modernbert`` (RoPE, local and global attention, GeGLU), and the
decoder-style embedding models ``qwen3`` (Qwen3-Embedding: causal grouped-query attention) and
``gemma3`` (EmbeddingGemma: Gemma3's text model with bidirectional attention), and
``nomic_bert`` (nomic-embed-text v1/v1.5: rotary positions, SwiGLU, no biases), ``new``
(GTE v1.5 and multilingual, snowflake-arctic-embed-m-v2.0: rotary positions, gated MLP)."""

REMOTE_CODE_MODELS: dict[str, str] = {
    "NomicBertModel": "nomic_bert",
    "NomicBertForPreTraining": "nomic_bert",
    "NewModel": "new",
    "XLMRobertaLoRA": "xlm-roberta",
}
"""The classes a config.json's ``auto_map`` (``AutoModel``) may name, whose architecture the
converter reimplements from the config and weights -> their ``model_type``. The repository's
code itself is never imported or run; a config whose ``auto_map`` names another class is
refused (:func:`model_family`), since its ``model_type`` would not say what the code computes.
jina-embeddings-v3's ``XLMRobertaLoRA`` says ``xlm-roberta`` (the ``roberta`` family: its
tokenizer, 8,192 positions past the two XLM-R reserves) and adds rotary positions and LoRA
adapters: the converter picks its own builder by the class (``convert.registry.converter_for``)."""

# model_types whose encoder bert_score scores with (depth: ``encoder_layers``)
_SEQ2SEQ = ("bart", "mbart", "pegasus", "blenderbot", "blenderbot-small", "led")


def load_config(model_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """Read ``config.json`` from a checkpoint directory.

    Parameters
    ----------
    model_dir
        A Hugging Face checkpoint directory.

    Returns
    -------
    dict
        The parsed configuration.

    Raises
    ------
    FileNotFoundError
        If the directory or its ``config.json`` does not exist.
    CheckpointError
        If ``config.json`` is not a JSON object.

    Examples
    --------
    >>> from rust_bertscore import DEFAULT_MODEL
    >>> from rust_bertscore.models.files import resolve_model
    >>> model_dir = resolve_model(DEFAULT_MODEL).model_dir  # all-MiniLM-L6-v2's checkpoint
    >>> from rust_bertscore.convert import load_config
    >>> config = load_config(model_dir)
    >>> config["model_type"], config["hidden_size"]
    ('bert', 384)
    """
    path = Path(model_dir) / CONFIG_NAME
    if not path.is_file():
        raise ModelNotFoundError(
            f"{path}: no such file (expected a Hugging Face checkpoint directory)"
        )
    config = read_json_object(path, error=CheckpointError, max_bytes=MAX_CONFIG_BYTES)
    check_config_fields(config, path)
    return with_remote_model_type(config)


MAX_CONFIG_INT = 1 << 24
"""The largest size, count or id a ``config.json`` field may hold (a 256k vocabulary and 128k
positions stay well below)."""

MAX_CONFIG_LAYERS = 1024
"""The largest layer count a ``config.json`` may give."""

# The fields the converter and the tokenizer read, by kind. A field that is absent (or null) is
# left to its reader's default; one that is present must have its kind.
_LAYER_FIELDS = frozenset(
    ("num_hidden_layers", "n_layers", "num_layers", "n_layer", "encoder_layers",
     "num_encoder_layers")
)  # fmt: skip
_SIZE_FIELDS = frozenset(
    ("hidden_size", "num_attention_heads", "intermediate_size", "vocab_size",
     "max_position_embeddings", "type_vocab_size", "embedding_size", "n_heads", "dim",
     "hidden_dim", "d_model", "d_ff", "d_kv", "num_heads", "encoder_attention_heads",
     "encoder_ffn_dim", "relative_attention_num_buckets", "relative_attention_max_distance",
     "max_relative_positions", "position_buckets", "conv_kernel_size", "conv_groups",
     "head_dim", "num_key_value_heads", "max_encoder_position_embeddings", "block_size",
     "num_random_blocks", "n_positions", "attention_head_size", "extra_ids", "num_buckets",
     "max_distance", "ngram", "global_attn_every_n_layers", "local_attention", "mem_len",
     "clamp_len", "sliding_window", "embedding_dim", "max_seq_len")
)  # fmt: skip
_TOKEN_ID_FIELDS = frozenset(
    ("pad_token_id", "bos_token_id", "eos_token_id", "unk_token_id", "sep_token_id",
     "cls_token_id", "mask_token_id", "decoder_start_token_id")
)  # fmt: skip
# Fields where -1 means "none" or "unlimited".
_MINUS_ONE_FIELDS = _TOKEN_ID_FIELDS | {
    "clamp_len",
    "max_relative_positions",
    "position_buckets",
    "mem_len",
    "sliding_window",
}
FLOAT32_MAX = 3.4028234663852886e38
"""The largest finite float32: a number field past it is finite in ``config.json`` but inf in
the graph, and every score 0 (``layer_norm_eps: 1e300``)."""

_NUMBER_FIELDS = frozenset(
    ("layer_norm_eps", "layer_norm_epsilon", "rms_norm_eps", "norm_eps", "rope_theta",
     "global_rope_theta", "local_rope_theta", "embedding_multiplier", "query_pre_attn_scalar",
     "attn_logit_softcapping", "final_logit_softcapping")
)  # fmt: skip
_TEXT_FIELDS = frozenset(
    ("model_type", "hidden_act", "activation", "activation_function", "position_embedding_type",
     "feed_forward_proj", "hidden_activation", "ff_activation", "attention_type", "attn_type",
     "tokenizer_class", "conv_act", "pos_att_type", "normalization", "norm_rel_ebd")
)  # fmt: skip


def _bad(path: Path | None, name: str, what: str, value: object) -> CheckpointError:
    where = f"{path}: " if path is not None else ""
    return CheckpointError(
        f"{where}config field {name!r} must be {what}, got {reprlib.repr(value)}"
    )


def check_config_fields(config: dict[str, Any], path: Path | None = None) -> None:
    """Check the kind and range of every field of a ``config.json`` that the converter or the
    tokenizer reads (sizes, layer counts, token ids, numbers, names), before any is used.

    Raises
    ------
    CheckpointError
        Naming the file and the field, for a field of the wrong type or out of range.

    Examples
    --------
    >>> check_config_fields({"model_type": "bert", "hidden_size": 64})
    >>> try:
    ...     check_config_fields({"hidden_size": [64]})
    ... except CheckpointError as e:
    ...     print(e)
    config field 'hidden_size' must be an integer in 0..16777216, got [64]
    """
    for name, value in config.items():
        if value is None:
            continue
        if name in _LAYER_FIELDS or name in _SIZE_FIELDS or name in _TOKEN_ID_FIELDS:
            low = -1 if name in _MINUS_ONE_FIELDS else 0
            high = MAX_CONFIG_LAYERS if name in _LAYER_FIELDS else MAX_CONFIG_INT
            several = name in _TOKEN_ID_FIELDS and isinstance(value, list)  # several eos ids
            items = value if several else [value]
            for item in items:
                if isinstance(item, bool) or not isinstance(item, int) or not low <= item <= high:
                    raise _bad(path, name, f"an integer in {low}..{high}", value)
        elif name in _NUMBER_FIELDS:
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or abs(value) > FLOAT32_MAX  # finite here, inf in the float32 graph
            ):
                raise _bad(path, name, "a number finite in float32", value)
            if "eps" in name and not 0 <= value <= 1:  # a norm's epsilon
                raise _bad(path, name, "a number in 0..1", value)
        elif name in _TEXT_FIELDS:
            texts = value if name == "pos_att_type" and isinstance(value, list) else [value]
            if not all(isinstance(v, str) for v in texts):
                raise _bad(path, name, "a string", value)


def model_family(config: dict[str, Any]) -> str:
    """Return the encoder family (one of :data:`SUPPORTED_FAMILIES`) of a configuration.

    Parameters
    ----------
    config
        A parsed ``config.json`` (see :func:`load_config`).

    Returns
    -------
    str
        ``"bert"`` (bert, electra), ``"roberta"`` (roberta, xlm-roberta), ``"distilbert"``,
        ``"albert"``, ``"mpnet"``, ``"bart"``, ``"mbart"``, ``"t5"`` (t5, mt5), ``"deberta"`` or
        ``"deberta-v2"``.

    Raises
    ------
    ValueError
        If ``model_type`` is missing or not one the converter supports.

    Examples
    --------
    >>> from rust_bertscore.convert import model_family
    >>> model_family({"model_type": "xlm-roberta"}), model_family({"model_type": "deberta-v2"})
    ('roberta', 'deberta-v2')
    """
    model_type = config.get("model_type")
    _check_remote_code(config)
    try:
        return SUPPORTED_MODEL_TYPES[model_type]  # type: ignore[index]
    except (KeyError, TypeError):
        supported = ", ".join(sorted(SUPPORTED_MODEL_TYPES))
        raise InputValueError(
            f"unsupported model_type {model_type!r}: the converter handles the BERT, RoBERTa, "
            "DistilBERT, ALBERT, MPNet, BART, mBART, T5, DeBERTa, Longformer, Pegasus, BigBird, "
            "Blenderbot, SqueezeBERT, LED, ProphetNet, XLNet, XLM, ConvBERT, ModernBERT, Qwen3, "
            f"Gemma3 (text), NomicBERT and GTE (new) families (model_type one of {supported})"
        ) from None


def _check_remote_code(config: dict[str, Any]) -> None:
    """Refuse a config whose ``auto_map`` names code the converter does not reimplement."""
    cls = remote_code_class(config)
    if cls is None:
        return
    model_type = config.get("model_type")
    if REMOTE_CODE_MODELS.get(cls) != model_type:
        known = ", ".join(f"{c} ({t})" for c, t in REMOTE_CODE_MODELS.items())
        raise InputValueError(
            f"config.json's auto_map names remote code ({config['auto_map']['AutoModel']!r}, "
            f"model_type {model_type!r}): rust-bertscore never runs a model repository's code "
            f"and converts only the remote architectures it reimplements: {known}"
        )


def int_field(config: dict[str, Any], *names: str) -> int:
    """The first of the fields ``names`` that config.json has, an integer.

    Raises
    ------
    CheckpointError
        If that field is not an integer, or the config has none of them.
    """
    for name in names:
        value = config.get(name)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int):
                raise CheckpointError(f"config field {name!r} must be an integer, got {value!r}")
            return value
    raise CheckpointError(f"config has none of the fields {', '.join(map(repr, names))}")


def float_field(config: dict[str, Any], name: str, default: float) -> float:
    """A positive number from config.json (``default`` when absent)."""
    value = config.get(name, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise CheckpointError(f"config field {name!r} must be a positive number, got {value!r}")
    return float(value)


def model_depth(config: dict[str, Any]) -> int:
    """Return the number of transformer layers (``num_hidden_layers``; DistilBERT and XLM:
    ``n_layers``; XLNet: ``n_layer``;
    BART/mBART: the encoder's ``encoder_layers``, since bert_score scores with the encoder;
    T5: ``num_layers``, the encoder's depth).

    Parameters
    ----------
    config
        A parsed ``config.json``.

    Returns
    -------
    int
        The depth L; a model has L + 1 hidden states (0 = the embeddings output).

    Raises
    ------
    CheckpointError
        If neither field holds an integer.

    Examples
    --------
    >>> from rust_bertscore.convert import model_depth
    >>> model_depth({"model_type": "bert", "num_hidden_layers": 6})
    6
    """
    if config.get("model_type") in ("prophetnet", "xlm-prophetnet"):  # the encoder's depth
        return int_field(config, "num_encoder_layers")
    if config.get("model_type") in _SEQ2SEQ:  # bert_score runs the encoder only
        return int_field(config, "encoder_layers", "num_hidden_layers")
    return int_field(config, "num_hidden_layers", "n_layers", "num_layers", "n_layer")


def max_positions(config: dict[str, Any]) -> int | None:
    """Return the longest input (special tokens included) the model's position table covers.

    RoBERTa-family position ids start after ``pad_token_id`` (``cumsum(mask) + padding_idx``), so
    514 position embeddings hold 512 tokens; the other families use positions ``0..T-1``. T5 and
    XLNet have no position table (relative positions work at any length), nor have GTE's
    rotary ``new`` models (new-impl grows its tables with the input) and ModernBERT, Qwen3 and
    Gemma3 (transformers computes their rotary angles from the position ids, whatever
    ``max_position_embeddings`` says), and ProphetNet clamps its
    position ids to the table's last row: None, the tokenizer's ``model_max_length`` alone
    limits the input.

    Parameters
    ----------
    config
        A parsed ``config.json``.

    Returns
    -------
    int or None
        The largest ``seq`` the graph accepts; None if any length is.

    Examples
    --------
    >>> from rust_bertscore.convert import max_positions
    >>> max_positions({"model_type": "bert", "max_position_embeddings": 512})
    512
    >>> max_positions({"model_type": "roberta", "max_position_embeddings": 514, "pad_token_id": 1})
    512
    """
    family = model_family(config)
    if family in ("t5", "xlnet"):  # relative positions only
        return None
    if family == "led":  # the encoder's own table
        return int_field(config, "max_encoder_position_embeddings")
    rope = config.get("position_embedding_type", "rope") == "rope"
    if family == "new" and rope:  # new-impl grows its rotary tables with the input
        return None
    if family == "prophetnet":  # position ids clamped to the table's last row: any length
        return None
    if family in ("modernbert", "qwen3", "gemma3"):  # rotary angles from the positions
        return None
    if family == "nomic_bert":  # a GPT2Config: n_positions (8,192 for nomic-embed-text)
        return int_field(config, "n_positions", "max_position_embeddings")
    n_positions = int_field(config, "max_position_embeddings")
    if family in ("roberta", "longformer"):
        return n_positions - int_field(config, "pad_token_id") - 1
    if family == "mpnet":  # RoBERTa's positions with padding_idx fixed at 1 in transformers' code
        return n_positions - 2
    return n_positions  # BART/mBART: the table holds max_position_embeddings + 2 rows


def full_attention_limit(config: dict[str, Any]) -> int | None:
    """The longest input (tokens, special tokens included) a ``block_sparse`` BigBird runs with
    full attention in transformers: ``(5 + 2 * num_random_blocks) * block_size`` (704 for the
    published models). None for other models and for ``original_full`` BigBird.

    transformers switches a ``block_sparse`` BigBird to ``original_full`` for good the first
    time it sees a batch no longer than that; the converter builds full attention only, so the
    tokenizer refuses longer texts (see ``rust_bertscore.convert.families.bigbird``).
    """
    if config.get("model_type") != "big_bird":
        return None
    if config.get("attention_type", "block_sparse") != "block_sparse":
        return None
    block = int_field(config, "block_size") if "block_size" in config else 64
    random_blocks = int_field(config, "num_random_blocks") if "num_random_blocks" in config else 3
    return (5 + 2 * random_blocks) * block


def has_convolutions(config: dict[str, Any]) -> bool:
    """Whether the converter's graph of this model has ``Conv`` nodes, which ONNX Runtime runs
    with cuDNN on CUDA: ConvBERT (the span-based dynamic convolution's depthwise Conv1d) and
    DeBERTa-v2/v3 with ``conv_kernel_size > 0`` (the convolution after layer 0). SqueezeBERT's
    1x1 convolutions become MatMuls in the graph, so it has none; nor has any other family.

    Examples
    --------
    >>> from rust_bertscore.catalog.configs import has_convolutions
    >>> has_convolutions({"model_type": "convbert"}), has_convolutions({"model_type": "bert"})
    (True, False)
    >>> has_convolutions({"model_type": "deberta-v2", "conv_kernel_size": 3})
    True
    >>> has_convolutions({"model_type": "squeezebert"})
    False
    """
    family = SUPPORTED_MODEL_TYPES.get(str(config.get("model_type")))
    if family == "convbert":
        return True
    kernel = config.get("conv_kernel_size")
    return family == "deberta-v2" and isinstance(kernel, int) and kernel > 0
