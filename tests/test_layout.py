"""The package's layers, as data, and the rules that keep them: every module sits in a package
named for its layer, an import goes only to a layer the table below allows (imports inside
functions and ``if TYPE_CHECKING:`` ones included), no import cycle exists, ``import
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

# -- the package map ---------------------------------------------------------------------------
# Each layer, from the bottom up, with the layers it may import (its own modules always). The
# package root's modules errors, _version and the _core extension are the foundation ("root");
# the package's __init__ is the public front door and may import any library layer (not the CLI).
ROOT_MODULES = {"__init__", "__main__", "_version", "errors"}
FOUNDATION = {"root"}
LAYERS: dict[str, set[str]] = {
    "root": set(),
    "support": FOUNDATION,
    "catalog": {*FOUNDATION, "support"},
    "convert": {*FOUNDATION, "support", "catalog"},
    "stages": {*FOUNDATION, "support", "catalog"},
    "store": {*FOUNDATION, "support"},
    "models": {*FOUNDATION, "support", "catalog", "convert", "stages"},
    "engine": {*FOUNDATION, "support", "catalog", "stages", "store", "models"},
    "analyses": {*FOUNDATION, "support", "catalog", "stages", "store", "engine"},
    "scoring": {
        *FOUNDATION,
        *("support", "catalog", "stages", "store", "models", "engine", "analyses"),
    },
}
LIBRARY = set(LAYERS)
LAYERS.update(
    {
        "integrations": LIBRARY,
        "distributed": LIBRARY,
        "cli": {*LIBRARY, "integrations", "distributed"},
        "__main__": {"cli"},
        "": LIBRARY | {"integrations"},  # the front door: public names (integrations lazily)
    }
)


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(p for p in parts if p != "__init__")


def _modules() -> dict[str, Path]:
    """Every module of the installed package by dotted name ("" is the package itself)."""
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def layer_of(module: str) -> str:
    """The layer a module belongs to: its top-level package, "root" for the foundation."""
    if module in ("", "__main__"):
        return module
    top = module.split(".")[0]
    return "root" if top in ("errors", "_version", "_core") else top


def _imports(name: str, path: Path, known: set[str], type_checking: bool) -> set[str]:
    """Package modules ``name`` imports anywhere (functions included); ``if TYPE_CHECKING:``
    blocks count when ``type_checking``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = name.split(".") if name else []
    package = here if path.name == "__init__.py" else here[:-1]
    found: set[str] = set()

    def add(target: str, names: list[str]) -> None:
        for alias in names:
            sub = f"{target}.{alias}" if target else alias
            found.add(sub if sub in known or sub == "_core" else target)

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test) and not type_checking:
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
    known_or_core = known | {"_core"}
    out = {m for m in found if m in known_or_core and m != name}
    if path.name == "__init__.py":  # a package importing its own submodules makes the package
        out = {m for m in out if not (m.startswith(f"{name}.") or name == "")}
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


KNOWN = set(_modules())
# Every import, annotation-only ones included: what the layer rules and the cycle check read.
GRAPH = {name: _imports(name, path, KNOWN, type_checking=True) for name, path in _modules().items()}
# Imports that run (TYPE_CHECKING left out): what decides what ``import rust_bertscore`` loads.
RUNTIME_GRAPH = {
    name: _imports(name, path, KNOWN, type_checking=False) for name, path in _modules().items()
}


def _violations(graph: dict[str, set[str]]) -> list[str]:
    bad = []
    for name, targets in sorted(graph.items()):
        layer = layer_of(name)
        allowed = LAYERS.get(layer)
        if allowed is None:
            bad.append(f"{name}: layer {layer!r} is not in the package map")
            continue
        bad.extend(
            f"{name} ({layer}) imports {target} ({layer_of(target)})"
            for target in sorted(targets)
            if layer_of(target) != layer and layer_of(target) not in allowed
        )
    return bad


def test_every_import_goes_down_the_package_map() -> None:
    bad = _violations(GRAPH)
    assert not bad, "imports against the package map:\n" + "\n".join(bad)


def test_the_layer_check_finds_an_upward_import() -> None:
    # An analysis naming the front (even only in an annotation) is refused, and so is a stage
    # importing the engine.
    graph = {k: set(v) for k, v in GRAPH.items()}
    graph["analyses.align"].add("scoring.scorer")
    graph["stages.text"].add("engine.settings")
    bad = _violations(graph)
    assert "analyses.align (analyses) imports scoring.scorer (scoring)" in bad
    assert "stages.text (stages) imports engine.settings (engine)" in bad


def test_the_map_is_a_hierarchy() -> None:
    # No two layers may import each other, directly or through others.
    def below(layer: str, seen: set[str]) -> set[str]:
        for other in LAYERS[layer] - seen:
            seen.add(other)
            below(other, seen)
        return seen

    for layer in LAYERS:
        assert layer not in below(layer, set()), layer


def test_the_package_root_holds_only_the_front() -> None:
    modules = {p.stem for p in PACKAGE.glob("*.py")}
    assert modules <= ROOT_MODULES, sorted(modules - ROOT_MODULES)
    assert len(modules) <= 6
    assert (PACKAGE / "_core.pyi").is_file() and (PACKAGE / "py.typed").is_file()
    packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert packages == set(LAYERS) - {"root", "", "__main__"}, packages


def test_the_graph_sees_imports_inside_functions_and_annotations() -> None:
    # models.runtime imports the graph cache (and through it the converter) inside a function.
    assert "models.graph_cache" in RUNTIME_GRAPH["models.runtime"]
    assert "analyses.align" in GRAPH["scoring.methods"]
    # analyses.seams names the engine's types for annotations only
    assert "engine.pipeline" in GRAPH["analyses.seams"]
    assert "engine.pipeline" not in RUNTIME_GRAPH["analyses.seams"]


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
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
        for w in sorted(graph.get(v, ())):
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

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def test_cycle_finder_finds_a_cycle() -> None:
    graph = {k: set(v) for k, v in GRAPH.items()}
    graph["stages.text"].add("errors")
    graph["errors"].add("stages.text")
    assert ["errors", "stages.text"] in _cycles(graph)


def test_no_import_cycle_counting_annotation_only_imports() -> None:
    cycles = _cycles(GRAPH)
    assert not cycles, "import cycles: " + "; ".join(", ".join(c) for c in cycles)


def test_the_front_uses_the_analyses_and_the_engine() -> None:
    front_imports = GRAPH["scoring.scorer"] | GRAPH["scoring.methods"]
    assert {
        "analyses.align",
        "analyses.similarity",
        "analyses.heatmap",
        "analyses.compare",
        "analyses.pairwise",
        "analyses.mbr",
    } <= front_imports
    assert "engine.pipeline" in GRAPH["scoring.scorer"]


def test_no_module_over_500_lines() -> None:
    long = {
        name: n
        for name, path in _modules().items()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > 500
    }
    assert not long, long


HEAVY = (
    "onnxruntime",
    "matplotlib",
    "ray",
    "pyspark",
    "evaluate",
    "datasets",
    "torch",
    "starlette",
    "uvicorn",
)


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
    assert _loaded_after_import(("onnx", "onnxruntime", "rust_bertscore.convert")) == []


def test_import_loads_neither_cli_nor_plotting() -> None:
    code = (
        "import sys, rust_bertscore\n"
        "bad = [m for m in sys.modules if m.startswith(('rust_bertscore.cli', "
        "'rust_bertscore.integrations', 'matplotlib'))]\n"
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
