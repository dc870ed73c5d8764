"""The copies of tiny checkpoints that ``make_precedence_refs.py`` and
``tests/test_file_precedence.py`` both make (no transformers needed here)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

TINY = Path(__file__).resolve().parent / "reference" / "tiny"


def make_case(root: Path, family: str, edits: dict, drop: list[str]) -> Path:
    """A copy of the tiny ``family`` with ``edits`` (file: keys set; file: None removes the
    file) and tokenizer_config.json keys ``drop``ped (the rest as the tiny checkpoint has it,
    ``tokenizer.json`` included)."""
    folder = root / family
    shutil.copytree(TINY / family, folder, ignore=shutil.ignore_patterns("*.npz", "*.safetensors"))
    for name, values in edits.items():
        path = folder / name
        if values is None:
            path.unlink()
            continue
        data = json.loads(path.read_text()) if path.exists() else {}
        data.update(values)
        path.write_text(json.dumps(data))
    config = folder / "tokenizer_config.json"
    data = json.loads(config.read_text())
    for key in drop:
        data.pop(key, None)
    config.write_text(json.dumps(data))
    return folder
