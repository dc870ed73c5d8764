"""The package's layers and its exception hierarchy: the library imports nothing from the CLI or
the plotting code, data flows one way (no import cycle, imports inside functions included), the
pipeline sits below the analyses and the analyses below the scorer front, ``import
rust_bertscore`` loads no heavy dependency, no module is over 500 lines, and every public error
derives from one base."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import rust_bertscore as rb

PACKAGE = Path(rb.__file__).resolve().parent
# Integrations sit on top: nothing below them may import them at module level.
INTEGRATIONS = (
    "cli",
    "distributed",
    "integrations",
    "plot",
    "hf_evaluate",
    "baseline_estimation",
    "__main__",
)


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


# -- the whole import graph: imports inside functions count, ``if TYPE_CHECKING:`` ones do not ----


def _modules() -> dict[str, Path]:
    """Every module of the installed package by dotted name ("" is the package itself)."""
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """Package modules ``name`` imports anywhere (functions included), TYPE_CHECKING left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = name.split(".") if name else []
    package = here if path.name == "__init__.py" else here[:-1]
    found: set[str] = set()

    def add(target: str, names: list[str]) -> None:
        for alias in names:
            sub = f"{target}.{alias}" if target else alias
            found.add(sub if sub in known else target)

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for other in child.orelse:
                    visit_one(other)
                continue
            visit_one(child)

    def visit_one(node: ast.AST) -> None:
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
                add(target, [a.name for a in node.names])
            elif (node.module or "") == "rust_bertscore" or (node.module or "").startswith(
                "rust_bertscore."
            ):
                target = (node.module or "").removeprefix("rust_bertscore").lstrip(".")
                add(target, [a.name for a in node.names])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("rust_bertscore."):
                    found.add(alias.name.removeprefix("rust_bertscore."))
        visit(node)

    visit(tree)
    out = {m for m in found if m in known and m != name}
    if (
        path.name == "__init__.py"
    ):  # a package importing its own submodules is how packages are made
        out = {m for m in out if not (m.startswith(f"{name}.") or name == "")}
    return out


GRAPH = {name: _imports(name, path, set(_modules())) for name, path in _modules().items()}


def _reachable(start: str) -> set[str]:
    seen: set[str] = set()
    todo = list(GRAPH[start])
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo.extend(GRAPH[m])
    return seen


def test_the_graph_sees_imports_inside_functions() -> None:
    # models.loading imports the graph cache (and through it the converter) inside a function.
    assert "models.graph_cache" in GRAPH["models.loading"]
    assert "align" in GRAPH["scoring.analyses"]


def _cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(GRAPH[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(GRAPH):
        if v not in index:
            strong(v)
    return out


def test_cycle_finder_finds_a_cycle() -> None:
    saved = dict(GRAPH)
    try:
        GRAPH.update({"text": {*GRAPH["text"], "errors"}, "errors": {*GRAPH["errors"], "text"}})
        assert ["errors", "text"] in _cycles()
    finally:
        GRAPH.clear()
        GRAPH.update(saved)


def test_no_import_cycle() -> None:
    cycles = _cycles()
    outside = [c for c in cycles if not all(m.startswith("convert.") for m in c)]
    assert not outside, "import cycles: " + "; ".join(", ".join(c) for c in outside)
    if cycles:
        pytest.xfail(f"convert/ still has an import cycle (issue 19, s19-convert's part): {cycles}")


ANALYSES = (
    "align",
    "similarity",
    "heatmap",
    "compare",
    "compare_layout",
    "stats",
    "pairwise",
    "mbr",
    "text_embedding",
)
FRONT = ("scoring.scorer", "scoring.properties", "scoring.analyses", "scoring.api", "scores")
ENGINE = ("scoring.settings", "scoring.rounds", "scoring.rules", "scoring.pipeline")


def _is_integration(name: str) -> bool:
    return name.split(".")[0] in INTEGRATIONS


def test_only_integrations_and_the_package_root_import_integrations() -> None:
    bad = [
        f"{name} imports {target}"
        for name, targets in GRAPH.items()
        if name and not _is_integration(name)
        for target in targets
        if _is_integration(target)
    ]
    assert not bad, bad


def test_the_pipeline_is_below_the_analyses_and_the_analyses_below_the_front() -> None:
    for name in ENGINE:
        above = _reachable(name) & {*FRONT, *ANALYSES}
        assert not above, f"{name} imports {sorted(above)}"
    for name in ANALYSES:
        above = _reachable(name) & set(FRONT)
        assert not above, f"{name} imports {sorted(above)}"
    # and the front does use them: its convenience methods call the analyses
    front_imports = GRAPH["scoring.scorer"] | GRAPH["scoring.analyses"]
    assert {"align", "similarity", "heatmap", "compare", "pairwise", "mbr"} <= front_imports
    assert "scoring.pipeline" in GRAPH["scoring.scorer"]


def test_no_module_over_500_lines() -> None:
    long = {
        name: n
        for name, path in _modules().items()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > 500
    }
    assert not long, long


HEAVY = ("onnxruntime", "matplotlib", "ray", "pyspark", "evaluate", "datasets", "torch")


def _loaded_after_import(prefixes: tuple[str, ...]) -> list[str]:
    code = (
        "import sys, rust_bertscore\n"
        f"prefixes = {prefixes!r}\n"
        "print(','.join(sorted(m for m in sys.modules if m in prefixes or "
        "m.startswith(tuple(p + '.' for p in prefixes)))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return [m for m in out.stdout.strip().split(",") if m]


def test_import_loads_no_heavy_dependency() -> None:
    assert _loaded_after_import(HEAVY) == []


def test_import_loads_no_onnx() -> None:
    if "convert" in _reachable("tokenization.tokenizer"):
        pytest.xfail("the tokenizer still imports the converter (issue 19, s19-convert's part)")
    assert _loaded_after_import(("onnx", "onnxruntime", "rust_bertscore.convert")) == []


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
