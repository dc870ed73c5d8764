"""The task adapter of a LoRA checkpoint (jina-embeddings-v3): how a user picks it, and where the
choice lives once picked.

jina-embeddings-v3 (``auto_map`` ``AutoModel``: ``XLMRobertaLoRA``) carries five LoRA adapters
(config.json's ``lora_adaptations``). Its own ``encode()`` without ``task`` disables every
adapter (the base weights); with a task it uses that task's adapter. Here the task is named in
the model id, ``"jinaai/jina-embeddings-v3@text-matching"`` (:func:`split_task`); without a
suffix the base weights are scored, as the model's own default.

Once picked, the task is written into the model's parsed config under :data:`LORA_TASK_KEY`
(:func:`with_lora_task`), so that everything derived from the config names it: the converter
merges that adapter, the graph caches' keys (:func:`graph_family`), the model identity's config
digest and the scorer's signature.
"""

from __future__ import annotations

from typing import Any

from ..errors import InputValueError
from .configs import model_family, remote_code_class

__all__ = [
    "LORA_MODEL_CLASS",
    "LORA_TASK_KEY",
    "graph_family",
    "lora_task",
    "lora_tasks",
    "split_task",
    "with_lora_task",
]

LORA_MODEL_CLASS = "XLMRobertaLoRA"
"""The remote class (config.json's ``auto_map`` ``AutoModel``) of jina-embeddings-v3."""

LORA_TASK_KEY = "rust_bertscore.lora_task"
"""The key of the parsed config that holds the chosen task (never a key of a real config.json):
part of the config digest (``models.identity.GRAPH_CONFIG_FIELDS``)."""


def split_task(model_type: str) -> tuple[str, str | None]:
    """``model_type`` without its ``@<task>`` suffix, and the task (None without one).

    Examples
    --------
    >>> from rust_bertscore.catalog.lora_tasks import split_task
    >>> split_task("jinaai/jina-embeddings-v3@text-matching")
    ('jinaai/jina-embeddings-v3', 'text-matching')
    >>> split_task("jinaai/jina-embeddings-v3")
    ('jinaai/jina-embeddings-v3', None)
    """
    name, at, task = model_type.rpartition("@")
    if not at or not name or "/" in task or "\\" in task:
        return model_type, None
    if not task:
        raise InputValueError(
            f"model_type {model_type!r} ends with '@' but names no task: write "
            "'<model>@<task>' (e.g. 'jinaai/jina-embeddings-v3@text-matching'), or leave the "
            "suffix out for the base weights"
        )
    return name, task


def lora_tasks(config: dict[str, Any]) -> list[str]:
    """The task adapters of a LoRA checkpoint's config (``lora_adaptations``); empty for other
    models.

    Examples
    --------
    >>> from rust_bertscore.catalog.lora_tasks import lora_tasks
    >>> auto_map = {"AutoModel": "org/code--modeling_lora.XLMRobertaLoRA"}
    >>> lora_tasks({"auto_map": auto_map, "lora_adaptations": ["separation", "text-matching"]})
    ['separation', 'text-matching']
    >>> lora_tasks({"model_type": "bert"})
    []
    """
    if remote_code_class(config) != LORA_MODEL_CLASS:
        return []
    tasks = config.get("lora_adaptations")
    if not isinstance(tasks, list) or not all(isinstance(t, str) for t in tasks):
        raise InputValueError(
            f"config.json's lora_adaptations must be a list of task names, got {tasks!r}"
        )
    return list(tasks)


def with_lora_task(config: dict[str, Any], task: str | None, where: str = "") -> dict[str, Any]:
    """``config`` with ``task`` recorded under :data:`LORA_TASK_KEY` (``config`` itself when
    ``task`` is None).

    Raises
    ------
    InputValueError
        For a task the checkpoint has no adapter for (the message lists its tasks), or a task
        given for a model without adapters.

    Examples
    --------
    >>> from rust_bertscore.catalog.lora_tasks import LORA_TASK_KEY, with_lora_task
    >>> auto_map = {"AutoModel": "org/code--modeling_lora.XLMRobertaLoRA"}
    >>> config = {"auto_map": auto_map, "lora_adaptations": ["separation", "text-matching"]}
    >>> with_lora_task(config, "text-matching")[LORA_TASK_KEY]
    'text-matching'
    >>> with_lora_task(config, "retrieval")  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    rust_bertscore.errors.InputValueError: unknown task 'retrieval' ...
    """
    if task is None:
        return config
    tasks = lora_tasks(config)
    place = f" ({where})" if where else ""
    if not tasks:
        raise InputValueError(
            f"task {task!r} was asked for (a '@{task}' suffix), but the model{place} has no "
            f"task adapters: only jina-embeddings-v3's {LORA_MODEL_CLASS} checkpoints take one"
        )
    if task not in tasks:
        raise InputValueError(
            f"unknown task {task!r} for this model{place}: its tasks are "
            f"{', '.join(tasks)}; leave the '@<task>' suffix out for the base weights"
        )
    return {**config, LORA_TASK_KEY: task}


def lora_task(config: dict[str, Any]) -> str | None:
    """The task recorded in ``config`` by :func:`with_lora_task` (None: the base weights).

    >>> from rust_bertscore.catalog.lora_tasks import lora_task
    >>> lora_task({"model_type": "bert"}) is None
    True
    """
    task = config.get(LORA_TASK_KEY)
    return task if isinstance(task, str) else None


def graph_family(config: dict[str, Any]) -> str:
    """What a graph cache's key says of the model's kind: its family, and ``@<task>`` for a
    LoRA task (two tasks of one checkpoint never share a cached graph).

    >>> from rust_bertscore.catalog.lora_tasks import graph_family
    >>> graph_family({"model_type": "bert"})
    'bert'
    """
    family = model_family(config)
    task = lora_task(config)
    return family if task is None else f"{family}@{task}"
