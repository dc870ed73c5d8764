"""A fork while another thread loads a model (issue 46): the child scores with the runtimes
already loaded, within seconds; no lock the parent's loading thread held is inherited held."""

from __future__ import annotations

import json
import os
import threading
import time

import numpy as np
import pytest

import rust_bertscore as rb
from conftest import TINY, TINY_BERT
from rust_bertscore.models import runtime

CANDS = ["a cup of coffee on the table", "the cat sat"]
REFS = ["coffee in a cup", "a cat was sitting there"]

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")


def _wait(pid: int, seconds: float) -> int | None:
    """The child's exit status, or None when it is still running after ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.05)
    return None


def test_a_fork_during_a_slow_load_scores_in_the_child(monkeypatch: pytest.MonkeyPatch) -> None:
    want = [
        np.asarray(x).tolist() for x in rb.score(CANDS, REFS, model_type=TINY_BERT, num_layers=2)
    ]
    started, release = threading.Event(), threading.Event()
    real = runtime._load_runtime

    def slow_load(*args, **kwargs):  # a conversion or int8 build that takes a while
        started.set()
        release.wait(120)
        return real(*args, **kwargs)

    monkeypatch.setattr(runtime, "_load_runtime", slow_load)
    loader = threading.Thread(
        target=rb.score, args=(CANDS, REFS), kwargs={"model_type": str(TINY / "roberta")}
    )
    loader.start()
    try:
        assert started.wait(60)
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: one thread, the parent's loader is not in it
            code = 1
            try:
                os.close(read)
                got = rb.score(CANDS, REFS, model_type=TINY_BERT, num_layers=2)
                os.write(write, json.dumps([np.asarray(x).tolist() for x in got]).encode())
                code = 0
            finally:
                os._exit(code)
        os.close(write)
        status = _wait(pid, 60)
        if status is None:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        out = os.read(read, 1 << 20)
        os.close(read)
        assert status is not None, "the forked child hung on a lock its parent's loader held"
        assert os.waitstatus_to_exitcode(status) == 0
        assert json.loads(out) == want
    finally:
        release.set()
        loader.join(120)
    # the parent's own load finished, and is cached once
    assert not loader.is_alive()
    info = runtime.RUNTIMES.cache_info()
    assert info.currsize >= 2


def test_loads_still_run_one_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two threads asking for the same model load it once; a cached one is returned while
    another model loads."""
    cache = runtime.RuntimeCache(maxsize=4)
    calls: list[str] = []
    gate = threading.Event()

    def load(name: str):
        def run():
            calls.append(name)
            if name == "slow":
                gate.wait(30)
            return name

        return run

    cache.get("fast", load("fast"))
    threads = [threading.Thread(target=cache.get, args=("slow", load("slow"))) for _ in range(2)]
    for t in threads:
        t.start()
    time.sleep(0.2)
    start = time.monotonic()
    assert cache.get("fast", load("fast")) == "fast"  # not behind the slow load
    assert time.monotonic() - start < 5
    gate.set()
    for t in threads:
        t.join(30)
    assert calls == ["fast", "slow"]
    assert cache.cache_info().hits == 2 and cache.cache_info().misses == 2
