"""Every public function, class and front method has an example that runs.

The examples of the Python modules run in ``make test-doctest`` (``pytest --doctest-modules``
on the installed package). The kernel's functions are compiled: their documentation, examples
included, is in ``_core.pyi``, which pytest does not collect, so their examples run here. The
public API is walked by ``docs/gen_api.py``, which also writes ``docs/api.md`` from it.
"""

from __future__ import annotations

import doctest
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

import rust_bertscore

GEN_API = Path(__file__).resolve().parents[1] / "docs" / "gen_api.py"


def _load_gen_api() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_api", GEN_API)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_api", module)
    spec.loader.exec_module(module)
    return module


gen_api = _load_gen_api()
STUB_DOCS = gen_api.stub_docstrings()
STUB_EXAMPLES = sorted(name for name, doc in STUB_DOCS.items() if ">>>" in doc)


def test_the_walk_sees_the_installed_package() -> None:
    # The stub read is the one beside the imported extension (the installed wheel's in
    # `make test`), and the walk finds the names every user meets first.
    names = {e.name for e in gen_api.public_api()}
    for expected in (
        "rust_bertscore.score",
        "rust_bertscore.BERTScorer",
        "rust_bertscore.BERTScorer.score",
        "rust_bertscore._core.score_ragged",
        "rust_bertscore.engine.pipeline.ScoringPipeline.score_pairs",
        "rust_bertscore.distributed.score_spark",
        "rust_bertscore.convert.export_onnx",
        "rust_bertscore.distributed.WorkerPythonError",
        "rust_bertscore._core.dot",
    ):
        assert expected in names
    assert Path(rust_bertscore.__file__).with_name("_core.pyi").is_file()


def test_every_public_name_has_an_example() -> None:
    missing = [e.name for e in gen_api.public_api() if e.needs_example and ">>>" not in e.doc]
    assert not missing, (
        f"{len(missing)} public names without a '>>>' example in their docstring "
        "(or, for the kernel's functions, in _core.pyi): " + ", ".join(missing)
    )


def test_every_stub_function_has_an_example() -> None:
    # _core.pyi documents names the package does not re-export (active_isa, ...): the rule
    # holds for all of them, since `help()` readers of the stub meet them too.
    missing = sorted(name for name, doc in STUB_DOCS.items() if ">>>" not in doc)
    assert not missing, f"_core.pyi entries without an example: {missing}"


@pytest.mark.parametrize("name", STUB_EXAMPLES)
def test_stub_examples_run(name: str) -> None:
    test = doctest.DocTestParser().get_doctest(
        STUB_DOCS[name], {}, f"rust_bertscore._core.{name}", str(GEN_API), 0
    )
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    out: list[str] = []
    result = runner.run(test, out=out.append)
    assert result.attempted > 0
    assert result.failed == 0, "".join(out)


def test_api_reference_covers_every_public_name(tmp_path: Path) -> None:
    out = tmp_path / "api.md"
    assert gen_api.main(["--out", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    for entry in gen_api.public_api():
        module = max((m for m in gen_api.MODULES if entry.name.startswith(m + ".")), key=len)
        assert f"`{entry.name[len(module) + 1 :]}" in page, entry.name
