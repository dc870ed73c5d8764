"""Faults: interrupted or damaged caches, corrupt files, Ctrl-C, memory errors, processes
sharing the model cache."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import rust_bertscore as rb
from conftest import TINY
from rust_bertscore.convert import writer

CANDS = ["the coffee was cold", "she took the road"]
REFS = ["the coffee is hot", "she would take the road"]


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """An empty model cache and a private copy of the tiny BERT checkpoint."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("RUST_BERTSCORE_CACHE", str(cache))
    model = tmp_path / "bert"
    shutil.copytree(TINY / "bert", model)
    rb.clear_cache()
    yield cache, model
    rb.clear_cache()


def _graphs(cache: Path) -> list[Path]:
    return sorted(cache.glob("onnx/*/model.onnx"))


def _leftovers(cache: Path) -> list[Path]:
    return [p for p in cache.rglob("*") if p.name.startswith(".") or p.suffix == ".tmp"]


def test_interrupted_conversion_leaves_no_entry(fresh, monkeypatch: pytest.MonkeyPatch) -> None:
    cache, model = fresh
    real_save = writer.save_model

    def save_half_then_interrupt(proto, path, external, *held):
        real_save(proto, path, external, *held)
        with open(path, "r+b") as f:
            f.truncate(path.stat().st_size // 2)
        raise KeyboardInterrupt

    monkeypatch.setattr(writer, "save_model", save_half_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        rb.score(CANDS, REFS, model_type=str(model))
    assert _graphs(cache) == []
    assert _leftovers(cache) == []
    monkeypatch.setattr(writer, "save_model", real_save)
    rb.clear_cache()
    *_, F = rb.score(CANDS, REFS, model_type=str(model))
    assert np.isfinite(F).all() and len(_graphs(cache)) == 1


@pytest.mark.parametrize("damage", ["truncate", "header"])
def test_damaged_cache_entry_is_rebuilt(fresh, damage: str) -> None:
    cache, model = fresh
    before = rb.score(CANDS, REFS, model_type=str(model))
    (graph,) = _graphs(cache)
    data = graph.read_bytes()
    if damage == "truncate":
        graph.write_bytes(data[: len(data) // 3])
    else:  # same size, unreadable protobuf
        graph.write_bytes(b"\xff" * 64 + data[64:])
    rb.clear_cache()
    after = rb.score(CANDS, REFS, model_type=str(model))
    for a, b in zip(before, after):
        assert a.tolist() == b.tolist()
    assert graph.read_bytes() == data


def test_corrupt_onnx_model_type(tmp_path: Path) -> None:
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt"):
        shutil.copy(TINY / "bert" / name, tmp_path / name)
    bad = tmp_path / "model.onnx"
    bad.write_bytes(b"this is not an onnx graph")
    with pytest.raises(ValueError, match=r"model\.onnx"):
        rb.score(CANDS, REFS, model_type=str(bad))


@pytest.mark.parametrize("damage", ["truncate", "garbage"])
def test_corrupt_safetensors_names_the_file(fresh, damage: str) -> None:
    _, model = fresh
    weights = model / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) // 2] if damage == "truncate" else b"\x00" * 100)
    with pytest.raises(ValueError, match=r"model\.safetensors"):
        rb.score(CANDS, REFS, model_type=str(model))


def test_tokenizer_that_does_not_match_the_model(fresh, minilm_dir: Path) -> None:
    _, model = fresh
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt"):
        shutil.copy(minilm_dir / name, model / name)  # 30,522 tokens for a 1,500-row table
    with pytest.raises(ValueError, match="tokenizer"):
        rb.score(CANDS, REFS, model_type=str(model))


def test_out_of_memory_names_the_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    scorer = rb.BERTScorer(model_type=str(TINY / "bert"), cache_bytes=0)
    session = scorer.runtime.encoder.session

    class FailingSession:
        def __getattr__(self, name):
            return getattr(session, name)

        def run(self, *args, **kwargs):
            raise RuntimeError("[ONNXRuntimeError] : 6 : Failed to allocate memory for 1 GB")

    monkeypatch.setattr(scorer.runtime.encoder, "session", FailingSession())
    with pytest.raises(MemoryError, match=r"batch of 4 texts.*batch_size"):
        scorer.score(CANDS * 2, REFS * 2, batch_size=4)


SHARED_CACHE_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import rust_bertscore as rb
    P, R, F = rb.score({cands!r}, {refs!r}, model_type=sys.argv[1])
    print(json.dumps(F.tolist()))
    """
)


def test_processes_share_the_model_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    model = tmp_path / "roberta"
    shutil.copytree(TINY / "roberta", model)
    env = dict(os.environ, RUST_BERTSCORE_CACHE=str(cache))
    script = SHARED_CACHE_SCRIPT.format(cands=CANDS, refs=REFS)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(model)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    outs = [p.communicate(timeout=180) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [err for _, err in outs]
    results = [json.loads(out) for out, _ in outs]
    assert results[0] == results[1] == results[2]
    assert len(_graphs(cache)) == 1
    assert _leftovers(cache) == []


LONG_RUN_SCRIPT = textwrap.dedent(
    """
    import sys
    import rust_bertscore as rb
    scorer = rb.BERTScorer(model_type=sys.argv[1], cache_bytes=0)
    texts = [f"sentence {i} " + "about coffee and the road " * (i % 20) for i in range(400)]
    print("ready", flush=True)
    for _ in range(1000):
        scorer.score(texts, texts[::-1], batch_size=8)
    """
)


def test_ctrl_c_returns_promptly() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", LONG_RUN_SCRIPT, str(TINY / "bert")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(1.0)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("the process did not stop within 10 s of SIGINT")
    assert time.monotonic() - sent < 10
    assert proc.returncode != 0
    assert "KeyboardInterrupt" in err
