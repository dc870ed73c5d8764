"""The licence travels: LICENSE and the bert_score notice are in the repository, the installed
wheel's metadata and the sdist; pyproject names the project's URLs."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LICENCE_FILES = ("LICENSE", "THIRD_PARTY_NOTICES.md")
BERT_SCORE_COPYRIGHT = (
    "Copyright (c) 2019 Tianyi Zhang, Varsha Kishore, Felix Wu, Kilian Q. Weinberger, "
    "and Yoav Artzi."
)


def test_the_repository_has_the_licence_and_the_notice() -> None:
    licence = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert licence.startswith("MIT License") and "rust-bertscore developers" in licence
    notice = (ROOT / "THIRD_PARTY_NOTICES.md").read_text(encoding="utf-8")
    assert BERT_SCORE_COPYRIGHT in notice and "Permission is hereby granted" in notice
    for shipped in ("baselines/", "catalog/", "WMT"):
        assert shipped in notice


def test_the_installed_wheel_carries_both() -> None:
    dist = metadata.distribution("rust-bertscore")
    names = {Path(str(f)).name for f in dist.files or [] if "licenses" in str(f)}
    assert set(LICENCE_FILES) <= names
    notice = next(f for f in dist.files or [] if str(f).endswith("licenses/THIRD_PARTY_NOTICES.md"))
    assert BERT_SCORE_COPYRIGHT in notice.read_text(encoding="utf-8")
    meta = dist.metadata
    assert meta["License-Expression"] == "MIT"
    urls = {u.split(",", 1)[0] for u in meta.get_all("Project-URL") or []}
    assert urls == {"Homepage", "Documentation", "Changelog", "Issues"}


def test_the_sdist_carries_both(tmp_path: Path) -> None:
    maturin = shutil.which("maturin", path=str(Path(sys.executable).parent))
    if maturin is None:
        pytest.skip("maturin is not installed beside this Python (make test installs it)")
    done = subprocess.run(
        [maturin, "sdist", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (sdist,) = tmp_path.glob("rust_bertscore-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {Path(n).relative_to(Path(n).parts[0]).as_posix() for n in archive.getnames()}
    assert set(LICENCE_FILES) <= names
    assert "rust/bertscore-core/LICENSE" in names  # the crate's own package (crates.io)
