"""Which symbolic links in a model's folder are followed, and where they may lead.

A model folder is read as a whole (config, tokenizer files, weights, shards named by an index),
so its links are checked as a whole, once, when the folder is found
(:func:`check_model_links`), before any of its files is opened or hashed:

- **A folder the user names** (``model_type="path/to/dir"``): a link is followed only when its
  target lies inside that folder. A shard linked to another checkpoint's file, or a
  ``config.json`` linked to ``/etc/passwd``, is refused naming the link and its target; nothing
  behind it is read. The folder itself may be reached through links (the user chose it).
- **A Hugging Face cache snapshot** (``<cache>/models--org--name/snapshots/<commit>``): its files
  are links into the repository's ``blobs/`` (``../../blobs/<sha256>``), which is how
  ``huggingface_hub`` stores them once for every revision; links are followed within the
  repository's folder ``models--org--name`` and nowhere else. The snapshot must itself lie in
  the cache: a ``refs/main`` holding ``../`` that makes ``huggingface_hub`` hand over a folder
  outside it is refused.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import CheckpointError

MAX_ENTRIES = 100_000
"""Entries of a model folder examined at most (a checkpoint has tens; past this the folder is
refused rather than walked for ever)."""


def _real(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.realpath(path))


def allowed_root(model_dir: Path, hub_repo: Path | None = None) -> Path:
    """The folder every file of ``model_dir`` must lie in once links are followed: the
    repository folder ``hub_repo`` for a Hugging Face cache snapshot, else the model folder.

    >>> from pathlib import Path
    >>> allowed_root(Path("/m")) == Path("/m").resolve()
    True
    """
    return _real(hub_repo) if hub_repo is not None else _real(model_dir)


def check_model_links(model_dir: Path, hub_repo: Path | None = None) -> None:
    """Refuse (``CheckpointError``) a model folder any of whose links leads outside
    :func:`allowed_root`, or a Hub snapshot that is not a folder of ``hub_repo/snapshots``.

    Examples
    --------
    >>> import os, tempfile
    >>> from pathlib import Path
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     model = Path(tmp, "model"); model.mkdir()
    ...     os.symlink(Path(tmp, "secret"), model / "config.json")
    ...     try:
    ...         check_model_links(model)
    ...     except CheckpointError as e:
    ...         print("config.json: a symbolic link to" in str(e), "secret, outside" in str(e))
    True True
    """
    root = allowed_root(model_dir, hub_repo)
    if hub_repo is not None and not _real(model_dir).is_relative_to(_real(Path(hub_repo).parent)):
        raise CheckpointError(
            f"{model_dir}: the Hugging Face cache handed over {_real(model_dir)}, which is not a "
            f"snapshot of {hub_repo} (a refs/ file that leads out of the cache)"
        )
    try:
        entries = os.scandir(model_dir)
    except OSError as exc:
        raise CheckpointError(f"{model_dir}: cannot be listed ({exc.strerror or exc})") from None
    with entries:
        for count, entry in enumerate(entries):
            if count >= MAX_ENTRIES:
                raise CheckpointError(
                    f"{model_dir}: more than {MAX_ENTRIES} entries: not a model folder"
                )
            if not entry.is_symlink():
                continue
            target = _real(entry.path)
            if not target.is_relative_to(root):
                raise CheckpointError(
                    f"{entry.path}: a symbolic link to {target}, outside {root}: links are "
                    "followed only within the model's folder (a Hugging Face cache snapshot's "
                    "within its repository folder)"
                )
