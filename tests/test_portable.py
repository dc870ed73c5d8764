"""Windows' rules outside the store: atomic writes flush through a handle that may write and
retry a refused replace, the graph cache takes an entry another process finished while its
graph is open, the server's signal handling, and the pairwise spill store closed on an error.
(The store's own: ``test_store_portable.py``.)"""

from __future__ import annotations

import errno
import json
import os
import signal
import threading
from pathlib import Path

import numpy as np
import pytest

fcntl = pytest.importorskip(
    "fcntl", reason="simulates Windows on a Unix host; on Windows the suite runs natively"
)

import rust_bertscore as rb  # noqa: E402
from conftest import TINY_BERT, wmt_pairs  # noqa: E402
from rust_bertscore.models import graph_cache  # noqa: E402
from rust_bertscore.models.files import resolve_model  # noqa: E402
from rust_bertscore.store import EmbeddingStore  # noqa: E402
from rust_bertscore.support import atomic  # noqa: E402


def windows_fsync(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """``os.fsync`` as on Windows: ``EBADF`` through a read-only descriptor."""
    real_fsync, synced = os.fsync, []

    def fsync(fd: int) -> None:
        if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY:
            raise OSError(errno.EBADF, "Bad file descriptor")
        real_fsync(fd)
        synced.append(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return synced


def test_atomic_writes_flush_through_a_handle_that_may_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced = windows_fsync(monkeypatch)

    def write(path: Path) -> None:  # a graph and its external data
        path.write_bytes(b"graph")
        (path.parent / "weights.bin").write_bytes(b"data")

    out = atomic.write_files_atomic(tmp_path / "model.onnx", write)
    assert out.read_bytes() == b"graph" and (tmp_path / "weights.bin").read_bytes() == b"data"
    assert len(synced) == 2
    atomic.write_text_atomic(tmp_path / "manifest.json", "{}")
    assert (tmp_path / "manifest.json").read_text() == "{}"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "manifest.json",
        "model.onnx",
        "weights.bin",
    ]


def test_a_refused_replace_is_tried_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_replace, refusals = os.replace, [2]

    def replace(src: str | Path, dst: str | Path) -> None:
        if refusals[0]:  # a reader holds the target open for a moment
            refusals[0] -= 1
            raise PermissionError(errno.EACCES, "Access is denied", str(dst))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(atomic.time, "sleep", lambda s: None)
    monkeypatch.setattr(atomic, "REPLACE_RETRIES", 2)
    atomic.write_text_atomic(tmp_path / "a.json", "1")
    assert (tmp_path / "a.json").read_text() == "1"
    refusals[0] = 3  # more than the retries: raised, nothing left behind
    with pytest.raises(PermissionError):
        atomic.write_text_atomic(tmp_path / "a.json", "2")
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]
    assert (tmp_path / "a.json").read_text() == "1"


def test_the_graph_cache_takes_an_entry_finished_elsewhere_while_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RUST_BERTSCORE_CACHE", str(tmp_path / "cache"))
    files = resolve_model(TINY_BERT)
    config = files.config()
    built = graph_cache.converted_graph(files, config, 2)  # the other process's entry
    entry = built.parent
    saved = {p.name: p.read_bytes() for p in entry.iterdir()}

    def finished_elsewhere(*args: object) -> None:
        for name, data in saved.items():  # the other process wins the race ...
            (entry / name).write_bytes(data)
        raise PermissionError(errno.EACCES, "Access is denied", str(built))  # ... and has it open

    for path in entry.iterdir():
        path.unlink()
    monkeypatch.setattr(graph_cache, "_build", finished_elsewhere)
    assert graph_cache.converted_graph(files, config, 2) == built
    assert json.loads((entry / "manifest.json").read_bytes())["size"] == built.stat().st_size
    # Without a complete entry to take, the error stands (encoder_graph then warns).
    (entry / "manifest.json").unlink()
    saved.pop("manifest.json")
    with pytest.raises(PermissionError):
        graph_cache.converted_graph(files, config, 2)


def test_server_signals_windows_break_and_other_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    uvicorn = pytest.importorskip("uvicorn")
    from rust_bertscore.cli import serve

    assert serve.stop_signals() == (signal.SIGINT, signal.SIGTERM)
    monkeypatch.setattr(signal, "SIGBREAK", 21, raising=False)  # as on Windows
    assert serve.stop_signals() == (signal.SIGINT, signal.SIGTERM, 21)
    monkeypatch.delattr(signal, "SIGBREAK")
    server = serve._server_class(uvicorn)(uvicorn.Config(app=None))
    before = signal.getsignal(signal.SIGTERM)
    with server.capture_signals():
        assert signal.getsignal(signal.SIGTERM) == server.handle_exit
    assert signal.getsignal(signal.SIGTERM) is before
    failed: list[BaseException] = []

    def in_a_thread() -> None:  # signal.signal would raise ValueError here
        try:
            with server.capture_signals():
                pass
        except BaseException as e:
            failed.append(e)

    thread = threading.Thread(target=in_a_thread)
    thread.start()
    thread.join()
    assert failed == []


def test_pairwise_closes_its_spill_store_on_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    cands, refs = wmt_pairs()
    scorer = rb.BERTScorer(model_type=TINY_BERT, batch_independent=True)
    scorer.round_bytes = 300 * 4 * 128  # vectors wait in a spill store between blocks
    closed: list[tuple[str, bool]] = []
    real_close = EmbeddingStore.close

    def close(self: EmbeddingStore) -> None:  # Windows cannot delete the directory before
        closed.append((str(self.directory), self.directory.exists()))
        real_close(self)

    def failing_get_many(
        self: EmbeddingStore, keys: object, shapes: object = None
    ) -> list[np.ndarray | None]:
        raise KeyboardInterrupt

    monkeypatch.setattr(EmbeddingStore, "close", close)
    monkeypatch.setattr(EmbeddingStore, "get_many", failing_get_many)
    with pytest.raises(KeyboardInterrupt):
        scorer.pairwise(cands[:12], refs[:12])
    assert closed and "rbs-pairwise-" in closed[0][0] and closed[0][1]
