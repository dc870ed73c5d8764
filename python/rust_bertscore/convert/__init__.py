"""Torch-free conversion of Hugging Face encoder checkpoints to ONNX graphs.

Reads ``config.json`` and safetensors weights (single file or sharded) with ``safetensors``'
NumPy backend, or PyTorch ``.bin`` weights without torch (``torch_bin``, never running their
pickles), and writes an fp32 ONNX graph (opset 17, weights as initializers) that reproduces
transformers' eager forward pass of the BERT, RoBERTa/XLM-RoBERTa, DistilBERT and DeBERTa (v1,
v2/v3) families, of the T5 / mT5 / ByT5 encoder, and of ALBERT, MPNet, BART/mBART, Longformer,
Pegasus, Blenderbot, LED, ProphetNet, SqueezeBERT, BigBird and BERT with relative positions.

Graph contract
--------------
Inputs
    ``input_ids`` int64 ``[batch, seq]`` and ``attention_mask`` int64 ``[batch, seq]``
    (1 = real token, 0 = padding; padding at the end of each row).
Output of a truncated graph (``all_layers=False``)
    ``hidden_state`` float32 ``[batch, seq, hidden]``: hidden state ``num_layers``
    (0 = the embeddings output, k = the output of layer k).
Output with ``all_layers=True``
    ``hidden_states`` float32 ``[depth + 1, batch, seq, hidden]``: every hidden state of the
    whole model, ``num_layers`` notwithstanding (as bert_score does).

Padding keys get float32's most negative finite value as additive attention bias, so the outputs
of real tokens do not depend on padding; the outputs at padded positions are meaningless.

Layout
------
``contract`` (the names above, layer names, layer checks, config field readers), ``graph`` and
``blocks`` (the graph builder and the shared layers), ``checkpoint`` (the weights; ``.bin`` files
through ``torch_pickle`` and ``torch_bin``),
``families/`` (one module per family), ``registry`` (every ``model_type`` -> its builder, and
``build_model``), then ``export`` (``export_onnx``), ``int8`` (``quantize_int8``),
``per_token``, ``fp16`` (``to_fp16``) and ``writer``. The config readers (``load_config``,
``model_family``, ``max_positions``, ...) live in ``rust_bertscore.catalog.configs``, which needs
no onnx; they are re-exported here.
"""

from __future__ import annotations

from ..catalog.configs import (
    SUPPORTED_FAMILIES,
    SUPPORTED_MODEL_TYPES,
    load_config,
    max_positions,
    model_depth,
    model_family,
)
from ..errors import CheckpointError
from .checkpoint import weight_files, weights_fingerprint
from .contract import ATTENTION_MASK, HIDDEN_STATE, HIDDEN_STATES, INPUT_IDS
from .export import CONVERTER_VERSION, export_onnx
from .fp16 import FP16_POLICY, convert_fp16, to_fp16
from .graph import OPSET
from .int8 import (
    INT8_ACTIVATIONS,
    INT8_FP32_LAYERS,
    INT8_POLICY,
    int8_fp32_nodes,
    quantize_int8,
)
from .registry import build_model
from .writer import EXTERNAL_DATA_THRESHOLD

__all__ = [
    "ATTENTION_MASK",
    "CONVERTER_VERSION",
    "EXTERNAL_DATA_THRESHOLD",
    "FP16_POLICY",
    "HIDDEN_STATE",
    "HIDDEN_STATES",
    "INPUT_IDS",
    "INT8_ACTIVATIONS",
    "INT8_FP32_LAYERS",
    "INT8_POLICY",
    "OPSET",
    "SUPPORTED_FAMILIES",
    "SUPPORTED_MODEL_TYPES",
    "CheckpointError",
    "build_model",
    "convert_fp16",
    "export_onnx",
    "int8_fp32_nodes",
    "load_config",
    "max_positions",
    "model_depth",
    "model_family",
    "quantize_int8",
    "to_fp16",
    "weight_files",
    "weights_fingerprint",
]
