"""Defaults that work as documented (issue 48, section 4): ``revision="main"`` wherever the
default works, Hub ids matched whatever their case, ``model_info()`` of a local directory, and
OpenVINO's and NNCF's telemetry off unless the user opts in. (A closed scorer's readable
settings: tests/test_close.py.)"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import rust_bertscore as rb
from conftest import TINY, fake_hub_cache
from rust_bertscore.catalog.registry import hub_spelling, table_name, tuned_layer
from rust_bertscore.models.files import offline_source, resolve_model

CANDS = ["the cat sat on the mat", "a dog barked"]
REFS = ["a cat was sitting on the mat", "the dog was barking"]


def test_revision_main_works_where_the_default_does(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    default = resolve_model(rb.DEFAULT_MODEL)
    assert default.source == "package"  # the offline package, no Hub cache needed
    main = resolve_model(rb.DEFAULT_MODEL, "main")
    assert main.model_dir == default.model_dir and main.source == "package"
    _, _, f_default = rb.score(CANDS, REFS)
    _, _, f_main = rb.score(CANDS, REFS, revision="main")
    np.testing.assert_array_equal(f_main, f_default)
    # Another revision is not the package's snapshot: the message does not ask to install it.
    with pytest.raises(rb.ModelNotFoundError) as caught:
        resolve_model(rb.DEFAULT_MODEL, "v0.9")
    assert "pip install" not in str(caught.value) and "default branch only" in str(caught.value)


def test_hub_ids_match_whatever_their_case(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert table_name("facebookai/roberta-large") == "roberta-large"
    assert tuned_layer("facebookai/roberta-large") == tuned_layer("FacebookAI/roberta-large") == 17
    assert tuned_layer("ROBERTA-LARGE") == 17 and tuned_layer("./roberta-large") is None
    assert rb.model_info("facebookai/roberta-large") == rb.model_info("roberta-large")
    assert hub_spelling("SENTENCE-TRANSFORMERS/all-minilm-l6-v2") == rb.DEFAULT_MODEL
    assert resolve_model("sentence-transformers/ALL-MiniLM-L6-v2").source == "package"
    # A model the cache holds under the Hub's spelling, asked for in lower case.
    fake_hub_cache(tmp_path, "SomeOrg/Tiny-BERT", TINY / "bert")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    found = resolve_model("someorg/tiny-bert")
    assert found.source == "hf-cache" and found.name == "SomeOrg/Tiny-BERT"
    assert offline_source("someorg/tiny-bert") == "hf-cache"
    _, _, f_lower = rb.score(CANDS, REFS, model_type="someorg/tiny-bert", num_layers=2)
    _, _, f_hub = rb.score(CANDS, REFS, model_type="SomeOrg/Tiny-BERT", num_layers=2)
    np.testing.assert_array_equal(f_lower, f_hub)


def test_model_info_of_a_local_directory_says_whether_it_converts(tmp_path: Path) -> None:
    info = rb.model_info(str(TINY / "bert"))
    assert info.convertible and info.model_type == "bert" and info.default_layer is None
    assert not info.in_bert_score and "converted on first use" in info.note
    # An exported graph runs as given.
    from rust_bertscore.models.export import export_model

    out = tmp_path / "export" / "model.onnx"
    export_model(str(TINY / "bert"), out, num_layers=2)
    graph = rb.model_info(str(out))
    assert graph.convertible and "ONNX graph" in graph.note
    # A family this version does not convert.
    other = tmp_path / "other"
    shutil.copytree(TINY / "bert", other, ignore=shutil.ignore_patterns("*.npz"))
    config = json.loads((other / "config.json").read_text())
    (other / "config.json").write_text(json.dumps(config | {"model_type": "made-up"}))
    info = rb.model_info(str(other))
    assert not info.convertible and "'made-up' is not converted" in info.note
    # No tokenizer files.
    bare = tmp_path / "bare"
    bare.mkdir()
    for name in ("config.json", "model.safetensors"):
        shutil.copy(TINY / "bert" / name, bare / name)
    info = rb.model_info(str(bare))
    assert not info.convertible and "no tokenizer files" in info.note
    # No weights.
    empty = tmp_path / "empty"
    empty.mkdir()
    shutil.copy(TINY / "bert" / "config.json", empty / "config.json")
    shutil.copy(TINY / "bert" / "tokenizer.json", empty / "tokenizer.json")
    assert "no weights" in rb.model_info(str(empty)).note


TELEMETRY_RUN = """
import sys
import rust_bertscore as rb
scorer = rb.BERTScorer(model_type=sys.argv[1], runtime="openvino", precision="int8")
scorer.score(["a cat sat"], ["the cat sat"])
"""


def run_in_home(home: Path, code: str, *args: str, **env: str) -> None:
    environ = {k: v for k, v in os.environ.items() if k not in ("CI", "NNCF_CI")}
    environ.pop("RUST_BERTSCORE_OPENVINO_TELEMETRY", None)
    environ |= {"HOME": str(home), "RUST_BERTSCORE_CACHE": str(home / "cache"), **env}
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        env=environ,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr


def test_openvino_telemetry_is_off_unless_the_user_opts_in(tmp_path: Path) -> None:
    pytest.importorskip("openvino")
    pytest.importorskip("nncf")
    model = str(TINY / "bert")
    ours = tmp_path / "ours"
    ours.mkdir()
    run_in_home(ours, TELEMETRY_RUN, model)  # imports openvino and nncf, quantises with NNCF
    assert not (ours / "intel").exists(), sorted(p.name for p in (ours / "intel").rglob("*"))
    # The same calls opted in do start it (so the check above can fail).
    opted_in = tmp_path / "opted-in"
    opted_in.mkdir()
    run_in_home(opted_in, TELEMETRY_RUN, model, RUST_BERTSCORE_OPENVINO_TELEMETRY="1")
    assert (opted_in / "intel" / "openvino_ga_cid").is_file()
