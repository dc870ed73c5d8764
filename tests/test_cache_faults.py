"""A model cache that cannot be written (full disk, read-only directory) does not stop scoring:
the graph is converted in memory, the numbers are those of the cached graph, and one
``RustBertScoreWarning`` names the cache directory and ``RUST_BERTSCORE_CACHE``."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import subprocess
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

import rust_bertscore as rb
from rust_bertscore.convert import writer
from rust_bertscore.errors import RustBertScoreWarning

CANDS = ["the coffee was cold", "she took the road"]
REFS = ["the coffee is hot", "she would take the road"]


@pytest.fixture
def model(tiny_bert_copy: Path) -> Path:
    return tiny_bert_copy


def score_with_warnings(
    model: Path, precision: str = "fp32"
) -> tuple[tuple, list[warnings.WarningMessage]]:
    rb.clear_cache()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # num_layers: the tiny model has no tuned layer, and its warning is not the cache's
        out = rb.score(
            CANDS,
            REFS,
            model_type=str(model),
            num_layers=3,
            precision=precision,
            runtime="onnxruntime",
        )
    # int8 on a CPU without VNNI or AMX warns that it is slower there: not the cache's warning
    return out, [
        w
        for w in caught
        if issubclass(w.category, RustBertScoreWarning)
        and "is likely slower than fp32" not in str(w.message)
    ]


def expected(model: Path, cache: Path, precision: str) -> list[list[float]]:
    """P, R, F of the same model through a writable cache (the graph on disk)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RUST_BERTSCORE_CACHE", str(cache))
        (out, caught) = score_with_warnings(model, precision)
    assert caught == []
    assert list(cache.glob("onnx/*/model.onnx")), "the reference run did not use the cache"
    return [a.tolist() for a in out]


def check_one_warning(caught: list[warnings.WarningMessage], cache: Path) -> None:
    assert len(caught) == 1, [str(w.message) for w in caught]
    message = str(caught[0].message)
    assert str(cache) in message and "RUST_BERTSCORE_CACHE" in message
    assert "in memory" in message


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_full_disk_converts_in_memory(
    model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, precision: str
) -> None:
    want = expected(model, tmp_path / "writable", precision)

    def no_space(proto: object, path: Path, external: bool, *held: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(writer, "save_model", no_space)
    full = tmp_path / "cache"
    out, caught = score_with_warnings(model, precision)  # no bare [Errno 28]
    check_one_warning(caught, full)
    assert "No space left on device" in str(caught[0].message)
    assert [a.tolist() for a in out] == want
    assert not list(full.glob("onnx/*/model.onnx"))
    assert not [p for p in full.rglob("*") if p.suffix == ".tmp" or p.name.startswith(".")]


def test_other_write_errors_are_raised(model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def io_error(proto: object, path: Path, external: bool, *held: object) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO), str(path))

    monkeypatch.setattr(writer, "save_model", io_error)
    with pytest.raises(OSError) as caught:
        score_with_warnings(model)
    assert caught.value.errno == errno.EIO


@contextlib.contextmanager
def read_only(directory: Path) -> Iterator[None]:
    """``directory`` read-only: mode 0555, and for root (whom modes do not stop) the immutable
    attribute; skips when neither holds."""
    directory.mkdir(parents=True, exist_ok=True)
    mode = directory.stat().st_mode
    directory.chmod(stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH)
    immutable = False
    try:
        if os.access(directory, os.W_OK):
            chattr = shutil.which("chattr")
            done = chattr and subprocess.run([chattr, "+i", str(directory)], capture_output=True)
            if not done or done.returncode:
                pytest.skip("cannot make a directory read-only here (root, no chattr +i)")
            immutable = True
        probe = directory / "probe"
        with pytest.raises(OSError):
            probe.mkdir()
        yield
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(directory)], check=True)
        directory.chmod(mode)


def test_read_only_cache_converts_in_memory(model: Path, tmp_path: Path) -> None:
    want = expected(model, tmp_path / "writable", "fp32")
    cache = tmp_path / "cache"
    with read_only(cache):
        out, caught = score_with_warnings(model)
    check_one_warning(caught, cache)
    assert [a.tolist() for a in out] == want


def test_read_only_cache_that_holds_the_graph_loads_it(model: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    want = expected(model, cache, "fp32")  # fills the cache
    with read_only(cache), read_only(next(cache.glob("onnx/*"))):
        out, caught = score_with_warnings(model)
    assert caught == []
    assert [a.tolist() for a in out] == want
