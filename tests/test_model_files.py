"""Model resolution: local paths, the offline default package, the Hub cache, downloads."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import rust_bertscore as rb
from conftest import REVISION, TINY, fake_hub_cache
from rust_bertscore.models import files as model_files
from rust_bertscore.models.files import resolve_model


def test_local_directory(tmp_path: Path) -> None:
    files = resolve_model(str(TINY / "bert"))
    assert files.source == "local" and files.onnx_path is None
    assert files.config()["model_type"] == "bert"


def test_default_model_comes_from_the_offline_package(minilm_dir: Path) -> None:
    files = resolve_model(rb.DEFAULT_MODEL)
    assert files.source == "package"
    assert files.model_dir == minilm_dir


def test_hub_cache_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    snapshot = fake_hub_cache(tmp_path, "acme/tiny-bert", TINY / "bert")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    files = resolve_model("acme/tiny-bert")
    assert files.source == "hf-cache"
    assert files.model_dir == snapshot


def test_scoring_a_model_from_the_hub_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_hub_cache(tmp_path, "acme/tiny-roberta", TINY / "roberta")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    by_id = rb.score(["a cup of coffee"], ["coffee in a cup"], model_type="acme/tiny-roberta")
    by_dir = rb.score(["a cup of coffee"], ["coffee in a cup"], model_type=str(TINY / "roberta"))
    for a, b in zip(by_id, by_dir):
        assert a.tolist() == b.tolist()


def test_offline_and_missing_names_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(rb.ModelNotFoundError, match=r"acme/absent.*HF_HUB_OFFLINE"):
        resolve_model("acme/absent")
    with pytest.raises(rb.ModelNotFoundError, match="acme/absent"):
        rb.score(["a"], ["b"], model_type="acme/absent")


def test_download_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Online, a model missing from the cache is fetched with snapshot_download."""
    import huggingface_hub

    calls: list[dict] = []

    def fake_snapshot_download(repo_id: str, **kwargs):
        calls.append(dict(kwargs, repo_id=repo_id))
        cache = Path(kwargs["cache_dir"])
        snapshot = cache / ("models--" + repo_id.replace("/", "--")) / "snapshots" / REVISION
        if kwargs["local_files_only"]:
            if snapshot.is_dir():
                return str(snapshot)
            raise huggingface_hub.errors.LocalEntryNotFoundError("not cached")
        return str(fake_hub_cache(cache, repo_id, TINY / "distilbert"))

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot_download)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    files = resolve_model("acme/tiny-distilbert")
    assert files.source == "download"
    assert [c["local_files_only"] for c in calls] == [True, False]
    assert "*.safetensors" in calls[1]["allow_patterns"]
    # the second time it is in the cache
    assert resolve_model("acme/tiny-distilbert").source == "hf-cache"


def test_missing_local_path() -> None:
    with pytest.raises(rb.ModelNotFoundError, match="does not exist"):
        resolve_model("./no/such/model")


def test_hub_cache_dir_follows_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    assert model_files.hub_cache_dir() == tmp_path / "hub"


def test_interrupted_download_is_fetched_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A snapshot left without its weights is not taken as cached: offline it is reported
    missing, online it is downloaded again."""
    import huggingface_hub

    snapshot = fake_hub_cache(tmp_path, "acme/cut-off", TINY / "bert")
    (snapshot / "model.safetensors").unlink()
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(rb.ModelNotFoundError, match="acme/cut-off"):
        resolve_model("acme/cut-off")

    real = huggingface_hub.snapshot_download

    def resume(repo_id: str, **kwargs):
        if not kwargs["local_files_only"]:
            shutil.copy(TINY / "bert" / "model.safetensors", snapshot / "model.safetensors")
        return real(repo_id, **dict(kwargs, local_files_only=True))

    monkeypatch.setattr(huggingface_hub, "snapshot_download", resume)
    monkeypatch.delenv("HF_HUB_OFFLINE")
    files = resolve_model("acme/cut-off")
    assert files.source == "download" and (files.model_dir / "model.safetensors").is_file()
