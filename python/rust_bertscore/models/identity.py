"""What identifies a model: the one place that decides which of a model's files and settings
name its scores (docs/reproducibility.md, "Which identity decides what").

A model's identity has three parts, each a SHA-256 digest:

- **weights** (:func:`model_weights_digest`): the weights' values
  (:func:`rust_bertscore.convert.values.weights_digest`: canonical tensor names, dtype, shape
  and float32 bytes), computed once per checkpoint and kept under
  ``$RUST_BERTSCORE_CACHE/digests/`` by the weight files' fingerprint. An ``.onnx`` export
  names the digest of the checkpoint it was made from, recorded in ``<graph>.onnx.json``, but
  only when that record is tied to the graph (below); any other graph is named by the digest
  of its initializers, written ``onnx-<hex>``.
- **config** (:func:`config_digest`): the ``config.json`` fields that change the graph or the
  token ids (:data:`GRAPH_CONFIG_FIELDS`: the activation, norms and their epsilons, positions,
  attention variant, sizes, ...), by value; fields no converter reads (``architectures``,
  ``transformers_version``, ``id2label``, ...) are left out.
- **tokenizer** (:func:`tokenizer_digest`): every file the tokenizer's loader read, as it
  read it (``TextTokenizer.files_read``, recorded at load by
  :mod:`rust_bertscore.support.read_record`: the vocabulary, merges, Bertweet's ``bpe.codes``,
  the SentencePiece model, ``tokenizer.json``, ``tokenizer_config.json``,
  ``special_tokens_map.json``, ...; JSON by value), and the settings this package derives and
  passes (slow or fast, bert_score's prefix space, the truncation length, the CLS and SEP
  ids). No list of names is kept by hand: a new family's files are named because they are
  read.

An exported ``.onnx`` is tied to its ``<graph>.onnx.json`` record by the SHA-256 of the graph's
own bytes (``graph_sha256``; :mod:`rust_bertscore.models.graph_record`, re-exported here):
:func:`export_record` refuses a graph whose bytes are not the ones its record was written for
(:class:`GraphRecordMismatchError`), so a graph swapped in beside another's record never runs
under the record's layer and weights.

The signature (:mod:`rust_bertscore.scoring.signature`) shows the three digests; the graph
cache's key (:func:`rust_bertscore.models.graph_cache.entry_key`) names the checkpoint's weight
files and ``config.json`` by their bytes (stricter than the identity: any change converts
again); the embedding store keys by the graph's content and the token ids
(:mod:`rust_bertscore.store.keys`), which the weights, the config and the tokenizer decide.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..catalog.lora_tasks import LORA_TASK_KEY
from .files import ModelFiles
from .graph_record import (
    GraphRecordMismatchError,
    export_record,
    export_record_path,
    graph_file_digest,
)

if TYPE_CHECKING:
    from ..stages.tokenization.tokenizer import TextTokenizer

__all__ = [
    "GRAPH_CONFIG_FIELDS",
    "GRAPH_DIGEST_PREFIX",
    "GraphRecordMismatchError",
    "ModelIdentity",
    "checkpoint_digest",
    "config_digest",
    "export_record",
    "export_record_path",
    "graph_file_digest",
    "model_identity",
    "model_weights_digest",
    "tokenizer_digest",
]

IDENTITY_VERSION = "1"
"""The recipe of :func:`config_digest` (hashed first)."""
TOKENIZER_DIGEST_VERSION = "2"
"""The recipe of :func:`tokenizer_digest` (hashed first): 2 digests the files the loader read
(1 digested a fixed list of names)."""

GRAPH_DIGEST_PREFIX = "onnx-"
"""Marks the digest of a graph's initializers (not of a checkpoint's weights)."""

GRAPH_CONFIG_FIELDS: frozenset[str] = frozenset(
    {
        # which family, which tokenizer class
        "model_type",
        "tokenizer_class",
        "is_encoder",
        "causal",
        # sizes (the graph's shapes; a wrong one is refused, but they name the model)
        "vocab_size",
        "hidden_size",
        "d_model",
        "dim",
        "emb_dim",
        "embedding_size",
        "intermediate_size",
        "d_ff",
        "d_inner",
        "hidden_dim",
        "encoder_ffn_dim",
        "num_attention_heads",
        "num_heads",
        "n_heads",
        "n_head",
        "encoder_attention_heads",
        "num_encoder_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "d_head",
        "d_kv",
        "attention_head_size",
        "num_hidden_layers",
        "num_layers",
        "n_layers",
        "n_layer",
        "encoder_layers",
        "num_encoder_layers",
        "num_hidden_groups",
        "inner_group_num",
        "type_vocab_size",
        "pad_token_id",
        # activations
        "hidden_act",
        "hidden_activation",
        "activation",
        "activation_function",
        "ff_activation",
        "gelu_activation",
        "feed_forward_proj",
        "dense_act_fn",
        "is_gated_act",
        "conv_act",
        # norms and their epsilons
        "layer_norm_eps",
        "layer_norm_epsilon",
        "rms_norm_eps",
        "norm_eps",
        "norm_bias",
        "norm_rel_ebd",
        # positions
        "max_position_embeddings",
        "max_encoder_position_embeddings",
        "position_embedding_type",
        "position_biased_input",
        "sinusoidal_embeddings",
        "relative_attention",
        "relative_attention_num_buckets",
        "relative_attention_max_distance",
        "max_relative_positions",
        "position_buckets",
        "pos_att_type",
        "share_att_key",
        "rope_theta",
        "rope_scaling",
        "rope_local_base_freq",
        "global_rope_theta",
        "local_rope_theta",
        "clamp_len",
        "bi_data",
        # attention variant
        "attn_type",
        "attention_type",
        "attention_window",
        "attention_bias",
        "attn_logit_softcapping",
        "query_pre_attn_scalar",
        "talking_head",
        "layer_types",
        "sliding_window",
        "use_sliding_window",
        "use_bidirectional_attention",
        "max_window_layers",
        "sliding_window_pattern",
        "local_attention",
        "global_attn_every_n_layers",
        "block_size",
        "num_random_blocks",
        "head_ratio",
        "num_groups",
        "conv_kernel_size",
        "conv_groups",
        "q_groups",
        "k_groups",
        "v_groups",
        "post_attention_groups",
        "intermediate_groups",
        "output_groups",
        # embeddings and biases
        "scale_embedding",
        "rescale_embeddings",
        "mlp_bias",
        "use_bias",
        # remote-code families (nomic_bert, new/GTE; issue 51) and how they are recognised
        "max_trained_positions",
        "mlp_fc1_bias",
        "mlp_fc2_bias",
        "n_embd",
        "n_positions",
        "num_heads_kv",
        "qkv_proj_bias",
        "rotary_emb_base",
        "rotary_emb_fraction",
        "rotary_emb_scale_base",
        "rotary_scaling_factor",
        "layer_norm_type",
        "logn_attention_clip1",
        "logn_attention_scale",
        "pack_qkv",
        "auto_map",
        "norm_mlp",
        "use_rms_norm",
        "prenorm",
        "parallel_block",
        "rotary_emb_interleaved",
        "rotary_head_dim",
        "emb_ln",
        # jina-embeddings-v3: partial rotary, LoRA adapters, and the task chosen (``@<task>``)
        "rotary_emb_dim",
        "lora_adaptations",
        "lora_rank",
        "lora_alpha",
        LORA_TASK_KEY,
    }
)
"""The ``config.json`` fields that decide a converted graph or its token ids: every field a
family's converter, ``catalog.configs`` or the tokenizer reads (``tests/test_identity.py``
records the reads on every tiny checkpoint of tests/data and fails on one missing here, and
checks the fields read through a copy of the configuration, which the recording cannot see)."""


def _sha256(*parts: str) -> Any:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode() + b"\0")
    return digest


def config_digest(config: dict[str, Any]) -> str:
    """SHA-256 hex digest of the :data:`GRAPH_CONFIG_FIELDS` of ``config``, by value.

    Examples
    --------
    >>> from rust_bertscore.models.identity import config_digest
    >>> a = config_digest({"model_type": "bert", "hidden_act": "gelu", "architectures": ["X"]})
    >>> a == config_digest({"hidden_act": "gelu", "model_type": "bert"})  # not read: not named
    True
    >>> a == config_digest({"model_type": "bert", "hidden_act": "relu"})
    False
    """
    named = {key: config[key] for key in sorted(GRAPH_CONFIG_FIELDS) if key in config}
    text = json.dumps(named, sort_keys=True, default=str)
    return _sha256(f"rust-bertscore config digest {IDENTITY_VERSION}", text).hexdigest()


def tokenizer_digest(tokenizer: TextTokenizer) -> str:
    """SHA-256 hex digest of what decides ``tokenizer``'s ids: every file its loader read
    (``TextTokenizer.files_read``, recorded at load: JSON by value) and the settings this
    package passes it (see the module docstring).

    Examples
    --------
    >>> from rust_bertscore import BERTScorer
    >>> from rust_bertscore.models.identity import tokenizer_digest
    >>> slow = tokenizer_digest(BERTScorer().tokenizer)
    >>> slow == tokenizer_digest(BERTScorer(use_fast_tokenizer=True).tokenizer)
    False
    """
    digest = _sha256(f"rust-bertscore tokenizer files {TOKENIZER_DIGEST_VERSION}")
    for name, content in sorted(tokenizer.files_read.items()):
        digest.update(name.encode() + b"\0" + bytes.fromhex(content))
    settings = {
        "fast": tokenizer.fast,
        "class": tokenizer.tokenizer_class.name,
        "prefix_space": tokenizer.prefix_space,
        "max_length": tokenizer.max_length,
        "cls_id": tokenizer.cls_id,
        "sep_id": tokenizer.sep_id,
    }
    text = json.dumps(settings, sort_keys=True)
    return _sha256(digest.hexdigest(), text).hexdigest()


def checkpoint_digest(model_dir: Path) -> str:
    """:func:`~rust_bertscore.convert.values.weights_digest` of ``model_dir``, computed once per
    checkpoint: kept in the model cache by the weight files' fingerprint (a cache that cannot be
    written only costs a new computation next time).

    Examples
    --------
    >>> from rust_bertscore import DEFAULT_MODEL
    >>> from rust_bertscore.models.files import resolve_model
    >>> from rust_bertscore.models.identity import checkpoint_digest
    >>> checkpoint_digest(resolve_model(DEFAULT_MODEL).model_dir)[:16]
    '7babd26b2c0cac2f'
    """
    from .graph_cache import weights_key  # the record the graph cache's key reads too

    return weights_key(model_dir).split("|", 1)[1]


def model_weights_digest(files: ModelFiles) -> str:
    """The digest of the weights of the model ``files`` names (see the module docstring).

    Examples
    --------
    >>> from rust_bertscore import DEFAULT_MODEL
    >>> from rust_bertscore.models.files import resolve_model
    >>> from rust_bertscore.models.identity import model_weights_digest
    >>> model_weights_digest(resolve_model(DEFAULT_MODEL))[:16]
    '7babd26b2c0cac2f'
    """
    if files.onnx_path is None:
        return checkpoint_digest(files.model_dir)
    recorded = export_record(files.onnx_path).get("weights_digest")
    if isinstance(recorded, str) and recorded:
        return recorded
    stat = files.onnx_path.stat()
    return GRAPH_DIGEST_PREFIX + _initializers_digest(
        str(files.onnx_path.resolve()), stat.st_size, stat.st_mtime_ns
    )


@functools.lru_cache(maxsize=8)
def _initializers_digest(path: str, size: int, mtime_ns: int) -> str:
    from ..convert.values import graph_digest

    return graph_digest(path)


# --- the whole identity -------------------------------------------------------------------


@dataclass(frozen=True)
class ModelIdentity:
    """The three digests that name a loaded model (see the module docstring).

    >>> from rust_bertscore import BERTScorer
    >>> from rust_bertscore.models.identity import model_identity
    >>> identity = model_identity(BERTScorer().runtime)
    >>> identity.weights[:16], len(identity.config), len(identity.tokenizer)
    ('7babd26b2c0cac2f', 64, 64)
    """

    weights: str
    config: str
    tokenizer: str


class LoadedModel(Protocol):
    """What :func:`model_identity` reads of a loaded model (a ``ModelRuntime`` has it)."""

    @property
    def files(self) -> ModelFiles: ...
    @property
    def config(self) -> dict[str, Any]: ...
    @property
    def tokenizer(self) -> TextTokenizer: ...


def model_identity(runtime: LoadedModel) -> ModelIdentity:
    """The :class:`ModelIdentity` of a loaded model (a ``ModelRuntime``).

    Examples
    --------
    >>> from rust_bertscore import BERTScorer
    >>> from rust_bertscore.models.identity import model_identity
    >>> model_identity(BERTScorer().runtime) == model_identity(BERTScorer(idf=True).runtime)
    True
    """
    return ModelIdentity(
        weights=model_weights_digest(runtime.files),
        config=config_digest(runtime.config),
        tokenizer=tokenizer_digest(runtime.tokenizer),
    )
