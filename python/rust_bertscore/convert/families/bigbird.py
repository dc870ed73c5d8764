"""BigBird (``model_type`` ``big_bird``): converted as BERT, with its full-attention limit.

``BigBirdModel`` is BERT's post-LayerNorm encoder (absolute positions, token type 0; the
weights sit under ``bert.`` in the Hub's ``BigBirdForPreTraining`` checkpoints) whose
self-attention is either ``original_full`` (BERT's) or ``block_sparse``. With ``block_sparse``,
transformers 4.57 switches the model to ``original_full`` for good (with a warning) the first
time it sees a batch of at most ``(5 + 2 * num_random_blocks) * block_size`` tokens, since the
sparse pattern needs more blocks than that. bert_score encodes sentences, so this package runs
full attention and refuses, at tokenisation, a text longer than that limit
(``rust_bertscore.catalog.configs.full_attention_limit``): block-sparse attention (random key
blocks) is not implemented.
"""

from __future__ import annotations

from typing import Any

import onnx

from ..blocks import BuildRequest
from ..contract import CheckpointError
from .bert import build_bert


def check_bigbird(config: dict[str, Any]) -> None:
    """Refuse the BigBird options the BERT graph does not reproduce.

    Raises
    ------
    CheckpointError
        For ``rescale_embeddings`` true, ``use_bias`` false or an unknown ``attention_type``.
    """
    if config.get("rescale_embeddings", False):
        raise CheckpointError(
            "BigBird with rescale_embeddings=true (embeddings scaled by sqrt(hidden_size)) is "
            "not converted"
        )
    if not config.get("use_bias", True):
        raise CheckpointError("BigBird with use_bias=false (no attention biases) is not converted")
    kind = config.get("attention_type", "block_sparse")
    if kind not in ("block_sparse", "original_full"):
        raise CheckpointError(
            f"config field 'attention_type' is {kind!r}: expected 'block_sparse' or 'original_full'"
        )


def build_bigbird(request: BuildRequest) -> onnx.ModelProto:
    """The graph of a BigBird checkpoint (see ``convert.export_onnx``): BERT's, with full
    attention, once :func:`check_bigbird` accepts the config."""
    check_bigbird(request.config)
    return build_bert(request)
