"""The package's layers and its exception hierarchy: the library imports nothing from the CLI or
the plotting code, data flows one way, and every public error derives from one base."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import rust_bertscore as rb

PACKAGE = Path(rb.__file__).resolve().parent
# Integrations sit on top: nothing below them may import them at module level.
INTEGRATIONS = ("cli", "plot", "evaluate_metric", "baseline_estimation", "__main__")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(p for p in parts if p != "__init__")


def _top_level_imports(path: Path) -> set[str]:
    """Package modules imported at module level (not inside functions), as dotted names."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = _module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
            target = [p for p in base if p] + ([node.module] if node.module else [])
            if node.module:
                found.add(".".join(target))
            else:
                found.update(".".join([*target, alias.name]) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rust_bertscore."):
            found.add(node.module.removeprefix("rust_bertscore."))  # type: ignore[union-attr]
    return found


def _library_modules() -> list[Path]:
    return [
        p
        for p in PACKAGE.rglob("*.py")
        if not any(_module_name(p).split(".")[0] == top for top in INTEGRATIONS)
    ]


@pytest.mark.parametrize("path", _library_modules(), ids=_module_name)
def test_library_does_not_import_integrations(path: Path) -> None:
    for name in _top_level_imports(path):
        top = name.split(".")[0]
        assert top not in INTEGRATIONS, f"{_module_name(path)} imports {name} at module level"


def test_import_loads_neither_cli_nor_plotting() -> None:
    code = (
        "import sys, rust_bertscore\n"
        "bad = [m for m in sys.modules if m.startswith(('rust_bertscore.cli', "
        "'rust_bertscore.plot', 'matplotlib'))]\n"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_every_public_error_derives_from_the_base() -> None:
    errors = [
        getattr(rb, name)
        for name in rb.__all__
        if isinstance(getattr(rb, name), type)
        and issubclass(getattr(rb, name), Exception)
        and not issubclass(getattr(rb, name), Warning)
    ]
    assert {e.__name__ for e in errors} >= {
        "CheckpointError",
        "DeviceNotAvailableError",
        "DistributedInputError",
        "KernelError",
        "ModelLoadError",
        "ModelNotFoundError",
        "RustBertScoreError",
        "ThreadPoolError",
    }
    for error in errors:
        assert issubclass(error, rb.RustBertScoreError), error
    assert issubclass(rb.KernelError, ValueError)
    assert issubclass(rb.ThreadPoolError, RuntimeError)
    assert issubclass(rb.ModelNotFoundError, FileNotFoundError)
    assert issubclass(rb.RustBertScoreWarning, UserWarning)


def test_kernel_errors_are_kernel_error_and_value_error() -> None:
    import numpy as np

    with pytest.raises(rb.KernelError, match="pair 0"):
        rb.score_embeddings([np.zeros((2, 3), np.float32)], [np.zeros((2, 4), np.float32)])
    with pytest.raises(ValueError):
        rb.score_embeddings([np.full((2, 3), np.nan, np.float32)], [np.ones((2, 3), np.float32)])
    with pytest.raises(rb.KernelError, match="num_threads"):
        rb.set_num_threads(0)


def test_no_converter_family_imports_the_registry() -> None:
    """convert/families/*.py build graphs from the contract and the shared blocks; the registry
    above them imports them all, so none may import it back (imports inside functions count)."""
    families = PACKAGE / "convert" / "families"
    offenders = []
    for path in sorted(families.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or "", *(f"{node.module or ''}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            if any(n.split(".")[-1] == "registry" for n in names):
                offenders.append(f"{path.name}:{node.lineno}")
    assert len(list(families.glob("*.py"))) > 10
    assert offenders == []
