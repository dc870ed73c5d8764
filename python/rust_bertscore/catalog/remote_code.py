"""What a config.json's ``auto_map`` says: the remote class a model repository's code would
load (the converter never runs that code; ``catalog.configs`` decides what it converts)."""

from __future__ import annotations

from typing import Any

__all__ = ["REMOTE_CONFIG_MODEL_TYPES", "remote_code_class", "with_remote_model_type"]


def remote_code_class(config: dict[str, Any]) -> str | None:
    """The class name a config.json's ``auto_map`` gives ``AutoModel`` (``"NomicBertModel"`` of
    ``"nomic-ai/nomic-bert-2048--modeling_hf_nomic_bert.NomicBertModel"``), None without one.

    Examples
    --------
    >>> from rust_bertscore.catalog.configs import remote_code_class
    >>> remote_code_class({"auto_map": {"AutoModel": "org/repo--modeling.NewModel"}})
    'NewModel'
    >>> remote_code_class({"model_type": "bert"}) is None
    True
    """
    auto_map = config.get("auto_map")
    ref = auto_map.get("AutoModel") if isinstance(auto_map, dict) else None
    if isinstance(ref, (list, tuple)) and ref:  # (config class, tokenizer) style entries
        ref = ref[0]
    return ref.rsplit(".", 1)[-1] if isinstance(ref, str) and ref else None


REMOTE_CONFIG_MODEL_TYPES: dict[str, str] = {"XLMRobertaLoRA": "xlm-roberta"}
"""Remote classes whose config class declares a ``model_type`` that their config.json may leave
out (jina-embeddings-v3's ``XLMRobertaFlashConfig.model_type`` is "xlm-roberta", which is what
transformers reads it as)."""


def with_remote_model_type(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` with the ``model_type`` its remote config class declares, where config.json
    has none (:data:`REMOTE_CONFIG_MODEL_TYPES`); other configs as they are.

    Examples
    --------
    >>> from rust_bertscore.catalog.configs import with_remote_model_type
    >>> auto_map = {"AutoModel": "org/code--modeling_lora.XLMRobertaLoRA"}
    >>> with_remote_model_type({"auto_map": auto_map})["model_type"]
    'xlm-roberta'
    """
    if config.get("model_type") is None:
        declared = REMOTE_CONFIG_MODEL_TYPES.get(remote_code_class(config) or "")
        if declared is not None:
            return {**config, "model_type": declared}
    return config
