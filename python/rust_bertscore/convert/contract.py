"""What every encoder graph promises and every family builder reads: the graph's input and
output names, where a layer keeps its tensors, the layer count to build, and the config.json
field readers.

The graph contract (see ``rust_bertscore.convert``): inputs :data:`INPUT_IDS` and
:data:`ATTENTION_MASK` (int64 ``[batch, seq]``), output :data:`HIDDEN_STATE` (float32
``[batch, seq, hidden]``) or, with ``all_layers``, :data:`HIDDEN_STATES` (float32
``[depth + 1, batch, seq, hidden]``). This module imports nothing of the converter.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from ..catalog.configs import float_field, int_field, max_positions, model_depth, model_family
from ..errors import CheckpointError

__all__ = [
    "ATTENTION_MASK",
    "HIDDEN_STATE",
    "HIDDEN_STATES",
    "INPUT_IDS",
    "CheckpointError",
    "LayerNames",
    "check_num_layers",
    "float_field",
    "int_field",
    "layers_to_build",
    "max_positions",
    "model_depth",
    "model_family",
    "numbered",
]

INPUT_IDS = "input_ids"
ATTENTION_MASK = "attention_mask"
HIDDEN_STATE = "hidden_state"
HIDDEN_STATES = "hidden_states"


@dataclass(frozen=True)
class LayerNames:
    """Where one family keeps a layer's tensors, relative to the layer's prefix."""

    prefix: str
    query: str
    key: str
    value: str
    attn_out: str
    attn_norm: str
    ffn_in: str
    ffn_out: str
    ffn_norm: str


def numbered(template: LayerNames) -> Callable[[int], LayerNames]:
    """Layer ``i``'s names from a template whose prefix holds ``{i}``."""
    return lambda i: replace(template, prefix=template.prefix.format(i=i))


def check_num_layers(num_layers: int, depth: int) -> None:
    """``ValueError`` unless ``0 <= num_layers <= depth``."""
    if isinstance(num_layers, bool) or not isinstance(num_layers, (int, np.integer)):
        raise TypeError(f"num_layers must be an int, got {type(num_layers).__name__}")
    if not 0 <= num_layers <= depth:
        raise ValueError(
            f"num_layers={num_layers} is out of range: the model has {depth} layers, "
            f"so num_layers must be in 0..{depth} (0 = the embeddings output)"
        )


def layers_to_build(depth: int, num_layers: int | None, all_layers: bool) -> int:
    """How many layers the graph holds: ``depth`` with ``all_layers``, else ``num_layers``."""
    if all_layers:
        return depth
    if num_layers is None:
        raise TypeError("num_layers is required unless all_layers=True")
    check_num_layers(num_layers, depth)
    return int(num_layers)
