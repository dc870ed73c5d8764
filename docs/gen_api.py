"""Writes ``docs/api.md``, the API reference, from the docstrings of the importable package.

Usage (``make docs`` runs it against the installed wheel)::

    python docs/gen_api.py [--out docs/api.md]

The public API is walked here once, for the page and for ``tests/test_doctests.py`` (which
checks that every public function, class and method named by :func:`public_api` has a ``>>>``
example): the ``__all__`` of the modules in :data:`MODULES` (or, without ``__all__``, the
functions and classes a module defines), the methods of every public class, and the kernel's
functions, whose documentation is in ``_core.pyi`` (a compiled function carries only a one-line
docstring) and is read from there.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

# The public modules, in the order of the page, each with a line saying what it holds.
MODULES: dict[str, str] = {
    "rust_bertscore": "The top level: `score()`, `BERTScorer`, statistics, the kernel's "
    "common functions, errors.",
    "rust_bertscore._core": "The Rust kernel: BERTScore of precomputed token embeddings, "
    "IDF, padding floors, rescaling, threads.",
    "rust_bertscore.analyses.stats": "Significance statistics: bootstrap intervals, "
    "paired bootstrap, paired permutation.",
    "rust_bertscore.analyses.compare": "Comparing systems over the same references.",
    "rust_bertscore.analyses.align": "Token alignments of scored pairs.",
    "rust_bertscore.analyses.report": "The data of the HTML comparison report "
    "(`BERTScorer.report`).",
    "rust_bertscore.analyses.similarity": "Token similarity matrices of one pair.",
    "rust_bertscore.scoring.signature": "The citable signature of a scorer's settings "
    "(`BERTScorer.signature`).",
    "rust_bertscore.engine.pipeline": "The scoring pipeline (texts to token ids, vectors, "
    "weights and kernel calls) under `BERTScorer`.",
    "rust_bertscore.catalog.listing": "The models this package can score with.",
    "rust_bertscore.models.identity": "What identifies a model: its weights' values, the "
    "configuration that builds its graph, its tokenizer, an export's graph.",
    "rust_bertscore.convert": "Torch-free conversion of encoder checkpoints to ONNX graphs.",
    "rust_bertscore.distributed": "Scoring datasets on Ray Data and Apache Spark.",
    "rust_bertscore.errors": "Exceptions and warnings.",
}

# Modules without ``__all__`` whose public names are fewer than what they define.
ONLY: dict[str, tuple[str, ...]] = {
    "rust_bertscore.engine.pipeline": ("ScoringPipeline",),
}

# Classes whose every public method needs an example of its own (the fronts users call); the
# methods of the other classes (results, records) are shown in their class's example.
METHOD_EXAMPLES: tuple[str, ...] = (
    "rust_bertscore.scoring.scorer.BERTScorer",
    "rust_bertscore.engine.pipeline.ScoringPipeline",
)

CORE = "rust_bertscore._core"


@dataclass(frozen=True)
class Entry:
    """One documented object of the public API.

    ``name`` is how users reach it (``rust_bertscore.kernel.dot``,
    ``rust_bertscore.BERTScorer.score``); ``home`` is where it is defined (so an object
    re-exported by several modules is one entry, under the first module that names it).
    """

    name: str
    kind: str  # "function", "class", "method", "property", "constant" or "alias"
    signature: str
    doc: str
    home: str

    @property
    def needs_example(self) -> bool:
        """Functions, classes and the methods of :data:`METHOD_EXAMPLES`' classes need a
        ``>>>`` example; properties and constants are documented on their class or module."""
        if self.kind == "method":
            return self.home.rsplit(".", 1)[0] in METHOD_EXAMPLES
        return self.kind in ("function", "class")


def _stub_nodes() -> dict[str, ast.FunctionDef | ast.ClassDef]:
    core = importlib.import_module(CORE)
    stub = Path(inspect.getfile(core)).with_name("_core.pyi")
    tree = ast.parse(stub.read_text(encoding="utf-8"))
    return {
        node.name: node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))
    }


def stub_docstrings() -> dict[str, str]:
    """The docstrings of ``_core.pyi``'s functions and classes (the kernel's documentation)."""
    return {name: ast.get_docstring(node) or "" for name, node in _stub_nodes().items()}


def _stub_signature(node: ast.FunctionDef | ast.ClassDef) -> str:
    if isinstance(node, ast.ClassDef):
        bases = ", ".join(ast.unparse(b) for b in node.bases)
        return f"({bases})" if bases else ""
    returns = f" -> {ast.unparse(node.returns)}" if node.returns is not None else ""
    return f"({ast.unparse(node.args)}){returns}"


class _Text:
    """An annotation written as text (``from __future__ import annotations``), shown bare."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _signature(obj: object) -> str:
    try:
        sig = inspect.signature(obj)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return ""

    def bare(annotation: object) -> object:
        return _Text(annotation) if isinstance(annotation, str) else annotation

    params = [p.replace(annotation=bare(p.annotation)) for p in sig.parameters.values()]
    return str(sig.replace(parameters=params, return_annotation=bare(sig.return_annotation)))


def _constant(value: object) -> str:
    text = repr(value)
    if len(text) <= 90:
        return f" = {text}"
    size = f", {len(value)} entries" if hasattr(value, "__len__") else ""  # type: ignore[arg-type]
    return f": {type(value).__name__}{size}"


def _stub_all() -> list[str]:
    """``_core.pyi``'s ``__all__``: the extension's public names (it has no ``__all__`` itself)."""
    core = importlib.import_module(CORE)
    stub = Path(inspect.getfile(core)).with_name("_core.pyi")
    for node in ast.parse(stub.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return [ast.literal_eval(e) for e in node.value.elts]  # type: ignore[attr-defined]
    return []


def _public_names(module: ModuleType) -> list[str]:
    if module.__name__ == CORE:
        return [n for n in _stub_all() if not n.startswith("__")]
    if module.__name__ in ONLY:
        return list(ONLY[module.__name__])
    names = getattr(module, "__all__", None)
    if names is not None:
        return [n for n in names if not n.startswith("__")]
    return [
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and (inspect.isfunction(value) or inspect.isclass(value))
        and value.__module__ == module.__name__
    ]


def _home(obj: object, fallback: str) -> str:
    module = getattr(obj, "__module__", None) or fallback
    return f"{module}.{getattr(obj, '__qualname__', fallback)}"


def _members(cls: type, prefix: str, home: str) -> Iterator[Entry]:
    # The class's own names and those of its bases (BERTScorer's analysis methods come from a
    # mixin), each once, the nearest definition first.
    seen: dict[str, object] = {}
    for klass in cls.__mro__[:-1]:
        for name, value in vars(klass).items():
            seen.setdefault(name, value)
    for name, value in seen.items():
        if name.startswith("_"):
            continue
        if isinstance(value, property):
            yield Entry(f"{prefix}.{name}", "property", "", inspect.getdoc(value) or "", "")
        elif inspect.isfunction(value) or isinstance(value, (classmethod, staticmethod)):
            func = getattr(cls, name)
            yield Entry(
                f"{prefix}.{name}",
                "method",
                _signature(func),
                inspect.getdoc(func) or "",
                f"{home}.{name}",
            )


def public_api() -> list[Entry]:
    """Every documented object of the public API, in page order, each once."""
    core = importlib.import_module(CORE)
    stubs = _stub_nodes()
    entries: list[Entry] = []
    seen: dict[str, str] = {}
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for name in _public_names(module):
            obj = getattr(module, name)
            qualified = f"{module_name}.{name}"
            from_core = getattr(core, name, None) is obj and name in stubs
            if from_core:
                node = stubs[name]
                kind = "class" if isinstance(node, ast.ClassDef) else "function"
                home = f"{CORE}.{name}"
                signature, doc = _stub_signature(node), ast.get_docstring(node) or ""
            elif inspect.isclass(obj):
                kind, home = "class", _home(obj, qualified)
                signature, doc = _signature(obj), inspect.getdoc(obj) or ""
            elif callable(obj):
                kind, home = "function", _home(obj, qualified)
                signature, doc = _signature(obj), inspect.getdoc(obj) or ""
            else:
                kind, home, signature, doc = "constant", qualified, _constant(obj), ""
            if home in seen:
                # A re-export: listed, pointing at the entry that documents it.
                entries.append(Entry(qualified, "alias", "", seen[home], home))
                continue
            seen[home] = qualified
            entries.append(Entry(qualified, kind, signature, doc, home))
            if kind == "class" and not from_core and not issubclass(obj, BaseException):
                entries.extend(_members(obj, qualified, home))
    return entries


_ROLE = re.compile(r":(?:[a-z]+:)?[a-z]+:`~?([^`]+)`")
_SECTION = re.compile(r"^(\S[^\n]*)\n-{3,}\n", re.MULTILINE)


def markdown(doc: str) -> list[str]:
    """A NumPy-style docstring as Markdown: the prose as text (Sphinx roles and double
    backticks as code, examples fenced), the sections from the first one on (Parameters,
    Returns, Examples, ...) as one fenced block, as written."""
    doc = _ROLE.sub(lambda m: f"`{m.group(1)}`", doc.strip()).replace("``", "`")
    if not doc:
        return ["(no docstring)"]
    first = _SECTION.search(doc)
    prose, sections = (doc, "") if first is None else (doc[: first.start()], doc[first.start() :])
    lines: list[str] = []
    in_example = False
    for line in prose.rstrip().splitlines():
        example = line.lstrip().startswith((">>>", "..."))
        if example and not in_example:
            lines.append("```pycon")
        elif in_example and not line.strip():
            lines.append("```")
            example = False
        in_example = example or (in_example and bool(line.strip()))
        lines.append(line)
    if in_example:
        lines.append("```")
    if sections:
        lines += ["", "```text", *sections.rstrip().splitlines(), "```"]
    return lines


def render(entries: list[Entry]) -> str:
    """The Markdown page of ``entries``."""
    lines = [
        "# API reference",
        "",
        "Generated from the docstrings by `docs/gen_api.py` (`make docs`); do not edit by hand.",
        "The examples run as doctests in `make test` (`make test-doctest`; the kernel's, from",
        "`_core.pyi`, in `tests/test_doctests.py`).",
        "",
    ]
    by_module: dict[str, list[Entry]] = {m: [] for m in MODULES}
    for entry in entries:
        module = max((m for m in MODULES if entry.name.startswith(m + ".")), key=len)
        by_module[module].append(entry)
    lines.append("## Contents")
    lines.append("")
    for module, what in MODULES.items():
        lines.append(f"- [`{module}`](#{module.replace('.', '')}): {what}")
    for module, module_entries in by_module.items():
        lines += ["", f"## {module}", "", MODULES[module], ""]
        constants = [e for e in module_entries if e.kind == "constant"]
        if constants:
            lines += ["Constants:", ""]
            lines += [f"- `{e.name.rsplit('.', 1)[1]}{e.signature}`" for e in constants]
        aliases = [e for e in module_entries if e.kind == "alias"]
        if aliases:
            lines += ["", "Also here (documented where first listed):", ""]
            lines += [f"- `{e.name.rsplit('.', 1)[1]}`: `{e.doc}`" for e in aliases]
        for entry in module_entries:
            short = entry.name[len(module) + 1 :]
            if entry.kind in ("constant", "alias"):
                continue
            if entry.kind == "property":
                summary = entry.doc.strip().split("\n\n")[0].replace("\n", " ")
                summary = _ROLE.sub(lambda m: f"`{m.group(1)}`", summary).replace("``", "`")
                lines += ["", f"- `{short}` (property): {summary or '(no docstring)'}"]
                continue
            level = "####" if entry.kind == "method" else "###"
            lines += ["", f"{level} `{short}`", ""]
            label = "class " if entry.kind == "class" else ""
            lines += ["```python", f"{label}{short}{entry.signature}", "```", ""]
            lines += markdown(entry.doc)
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("api.md"))
    args = parser.parse_args(argv)
    entries = public_api()
    args.out.write_text(render(entries), encoding="utf-8")
    print(f"{args.out}: {len(entries)} entries", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
