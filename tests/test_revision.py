"""``revision=`` (``--revision``): which Hub snapshot of a model is scored, offline from a Hugging
Face cache holding two revisions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import rust_bertscore as rb
from conftest import REVISION, TINY, fake_hub_cache
from rust_bertscore.cli import main
from rust_bertscore.models import graph_cache
from rust_bertscore.models.files import resolve_model

REPO = "acme/tiny-rev"
V2 = "fedcba9876543210fedcba9876543210fedcba98"
"""The commit of the second revision (branch ``v2``); ``main`` is conftest's REVISION."""
CANDS, REFS = ["the cat sat on the mat", "it rained"], ["a cat sat on a mat", "rain fell all day"]


def other_weights(dst: Path) -> Path:
    """The tiny BERT with other weights (its word embeddings reversed and scaled)."""
    from safetensors.numpy import load_file, save_file

    shutil.copytree(TINY / "bert", dst, ignore=shutil.ignore_patterns("*.npz"))
    weights = load_file(str(dst / "model.safetensors"))
    key = next(k for k in weights if k.endswith("word_embeddings.weight"))
    weights[key] = np.ascontiguousarray(weights[key][::-1] * 0.5)
    save_file(weights, str(dst / "model.safetensors"))
    return dst


@pytest.fixture(scope="module")
def two_revisions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An HF cache of REPO: refs/main -> REVISION (tiny BERT), refs/v2 -> V2 (other weights)."""
    root = tmp_path_factory.mktemp("revisions")
    fake_hub_cache(root / "hub", REPO, TINY / "bert")
    second = other_weights(root / "v2")
    repo = root / "hub" / ("models--" + REPO.replace("/", "--"))
    shutil.copytree(second, repo / "snapshots" / V2)
    (repo / "refs" / "v2").write_text(V2)
    return root


@pytest.fixture
def hub(two_revisions: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HF_HUB_CACHE", str(two_revisions / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return two_revisions


def scores(**kwargs: object) -> np.ndarray:
    return np.stack(rb.score(CANDS, REFS, num_layers=2, **kwargs))  # type: ignore[arg-type]


def test_revision_picks_the_snapshot(hub: Path) -> None:
    main_dir = resolve_model(REPO).model_dir
    assert main_dir.name == REVISION and resolve_model(REPO, "main").model_dir == main_dir
    assert resolve_model(REPO, "v2").model_dir.name == V2
    assert resolve_model(REPO, V2).model_dir.name == V2
    assert resolve_model(REPO, "v2").revision == "v2" and resolve_model(REPO).revision is None

    default = scores(model_type=REPO)
    np.testing.assert_array_equal(default, scores(model_type=str(TINY / "bert")))
    np.testing.assert_array_equal(default, scores(model_type=REPO, revision="main"))
    second = scores(model_type=REPO, revision="v2")
    np.testing.assert_array_equal(second, scores(model_type=str(hub / "v2")))
    np.testing.assert_array_equal(second, scores(model_type=REPO, revision=V2))
    assert np.abs(second - default).max() > 1e-3


def test_the_hash_names_a_revision_other_than_main(hub: Path) -> None:
    assert "revision" not in rb.BERTScorer(REPO, num_layers=2).hash
    assert "revision" not in rb.BERTScorer(REPO, num_layers=2, revision="main").hash
    scorer = rb.BERTScorer(REPO, num_layers=2, revision="v2")
    assert scorer.revision == "v2" and scorer.hash.endswith("_revision=v2")
    assert "revision='v2'" not in repr(scorer) and "_revision=v2" in repr(scorer)


def test_the_signature_names_the_revision_and_its_weights(hub: Path) -> None:
    from rust_bertscore.scoring.signature import parse_signature

    plain = parse_signature(rb.BERTScorer(REPO, num_layers=2).signature)
    second = parse_signature(rb.BERTScorer(REPO, num_layers=2, revision="v2").signature)
    assert "rev" not in plain and second["rev"] == "v2"
    assert second["weights"] != plain["weights"]  # the v2 snapshot holds other weights


def test_two_revisions_do_not_share_a_converted_graph(hub: Path) -> None:
    graphs = {}
    for revision in (None, "v2"):
        files = resolve_model(REPO, revision)
        graphs[revision] = graph_cache.converted_graph(files, files.config(), 2)
    assert graphs[None] != graphs["v2"]
    manifest = json.loads((graphs["v2"].parent / "manifest.json").read_text())
    assert manifest["revision"] == "v2" and manifest["model"] == REPO


def test_a_revision_of_a_local_model_is_refused(tmp_path: Path) -> None:
    with pytest.raises(rb.InputValueError, match=r"revision='v2'.*local directory"):
        rb.BERTScorer(str(TINY / "bert"), revision="v2")
    graph = tmp_path / "model.onnx"
    graph.write_bytes(b"")
    with pytest.raises(rb.InputValueError, match=r"revision='v2'.*local file"):
        resolve_model(str(graph), "v2")
    for bad in ("", 3, ["main"]):
        with pytest.raises(rb.InputTypeError, match="revision must be"):
            rb.BERTScorer(REPO, revision=bad)  # type: ignore[arg-type]


def test_a_missing_revision_names_itself(hub: Path) -> None:
    with pytest.raises(
        rb.ModelNotFoundError, match=r"'acme/tiny-rev' at revision 'v3'.*--revision v3"
    ):
        resolve_model(REPO, "v3")


def test_an_explicit_revision_of_the_default_model_asks_the_hub(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, minilm_dir: Path
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    assert resolve_model(rb.DEFAULT_MODEL).source == "package"
    # "main", the default branch, finds what no revision finds (issue 48); another one asks.
    assert resolve_model(rb.DEFAULT_MODEL, "main").source == "package"
    with pytest.raises(rb.ModelNotFoundError, match="at revision 'v1'"):
        resolve_model(rb.DEFAULT_MODEL, "v1")


def test_the_download_gets_the_revision(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub

    calls: list[dict] = []

    def fake_snapshot_download(repo_id: str, **kwargs):
        calls.append(kwargs)
        if kwargs["local_files_only"]:
            raise huggingface_hub.errors.LocalEntryNotFoundError("not cached")
        return str(fake_hub_cache(Path(kwargs["cache_dir"]), repo_id, TINY / "bert"))

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot_download)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    assert resolve_model("acme/fetched", "v7").source == "download"
    assert [c["revision"] for c in calls] == ["v7", "v7"]


def test_cli_revision(hub: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["-c", CANDS[0], "-r", REFS[0], "-m", REPO, "-l", "2", "-q"]
    assert main(args) == 0
    first = capsys.readouterr().out
    assert main([*args, "--revision", "v2"]) == 0
    second = capsys.readouterr().out
    assert "_revision=v2 P:" in second and "revision" not in first
    assert first.split(" P: ")[1] != second.split(" P: ")[1]
    assert (
        main(["-c", "a", "-r", "b", "-m", str(TINY / "bert"), "-l", "2", "--revision", "v2"]) == 2
    )
    assert "local directory" in capsys.readouterr().err


def test_cli_export_and_baseline_take_a_revision(hub: Path, tmp_path: Path) -> None:
    out = tmp_path / "g" / "model.onnx"
    assert main(["export", REPO, "--revision", "v2", "-l", "2", "-o", str(out), "-q"]) == 0
    info = json.loads(out.with_name("model.onnx.json").read_text())
    assert info["revision"] == "v2" and info["model"] == REPO
    np.testing.assert_allclose(
        scores(model_type=str(out)), scores(model_type=REPO, revision="v2"), atol=1e-6
    )
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join([*CANDS, *REFS]) + "\n")
    files = {}
    for revision in ("main", "v2"):
        files[revision] = tmp_path / f"{revision}.csv"
        command = ["baseline", "--corpus", str(corpus), "-m", REPO, "--revision", revision]
        assert main([*command, "--pairs", "20", "-o", str(files[revision]), "-q"]) == 0
    assert files["main"].read_text() != files["v2"].read_text()


def test_the_distributed_engines_take_the_revision(hub: Path) -> None:
    from rust_bertscore.distributed import BERTScoreBatch
    from rust_bertscore.distributed.passes import load_tokenizer

    assert load_tokenizer(REPO, None, "v2").model_dir.name == V2  # the first pass's tokenizer
    assert load_tokenizer(REPO).model_dir.name == REVISION
    op = BERTScoreBatch("hyp", "ref", model_type=REPO, num_layers=2, revision="v2")
    out = op({"hyp": CANDS, "ref": REFS})
    np.testing.assert_array_equal(out["F"], scores(model_type=REPO, revision="v2")[2])
