"""BigBird (``model_type`` ``big_bird``): converted as BERT, with its full-attention limit.

``BigBirdModel`` is BERT's post-LayerNorm encoder (absolute positions, token type 0; the
weights sit under ``bert.`` in the Hub's ``BigBirdForPreTraining`` checkpoints) whose
self-attention is either ``original_full`` (BERT's) or ``block_sparse``. With ``block_sparse``,
transformers 4.57 switches the model to ``original_full`` for good (with a warning) the first
time it sees a batch of at most ``(5 + 2 * num_random_blocks) * block_size`` tokens, since the
sparse pattern needs more blocks than that. bert_score encodes sentences, so this package runs
full attention and refuses, at tokenisation, a text longer than that limit
(:func:`full_attention_limit`): block-sparse attention (random key blocks) is not implemented.
"""

from __future__ import annotations

from typing import Any

from ._checkpoint import CheckpointError, _int_field


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


def full_attention_limit(config: dict[str, Any]) -> int | None:
    """The longest input (tokens, special tokens included) a ``block_sparse`` BigBird runs with
    full attention in transformers: ``(5 + 2 * num_random_blocks) * block_size`` (704 for the
    published models). None for other models and for ``original_full`` BigBird."""
    if config.get("model_type") != "big_bird":
        return None
    if config.get("attention_type", "block_sparse") != "block_sparse":
        return None
    block = _int_field(config, "block_size") if "block_size" in config else 64
    random_blocks = _int_field(config, "num_random_blocks") if "num_random_blocks" in config else 3
    return (5 + 2 * random_blocks) * block
