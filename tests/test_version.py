"""One version: Cargo's workspace version is the source (the extension's ``__version__`` and the
wheel's come from it), and the CHANGELOG's newest release is that version."""

from __future__ import annotations

import re
from pathlib import Path

import rust_bertscore as rb

ROOT = Path(__file__).resolve().parents[1]
RELEASE = re.compile(r"^## \[(\d+\.\d+\.\d+[^\]]*)\] - (\d{4}-\d{2}-\d{2})\s*$", re.MULTILINE)


def cargo_workspace_version(text: str) -> str:
    """``version`` of ``[workspace.package]`` in a Cargo.toml's text."""
    section = re.search(r"^\[workspace\.package\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    assert section is not None, "Cargo.toml has no [workspace.package]"
    version = re.search(r'^version\s*=\s*"([^"]+)"', section.group(1), re.M)
    assert version is not None, "[workspace.package] has no version"
    return version.group(1)


def newest_release(changelog: str) -> str:
    """The version of the first ``## [x.y.z] - YYYY-MM-DD`` heading (``[Unreleased]`` is not a
    release)."""
    found = RELEASE.search(changelog)
    assert found is not None, "CHANGELOG.md has no release heading '## [x.y.z] - YYYY-MM-DD'"
    return found.group(1)


def test_the_readers_can_fail() -> None:
    assert cargo_workspace_version('[workspace.package]\nversion = "9.8.7"\n[x]\n') == "9.8.7"
    log = "## [Unreleased]\n\n- x\n\n## [1.2.0] - 2026-01-02\n\n## [1.1.0] - 2025-01-01\n"
    assert newest_release(log) == "1.2.0"


def test_changelog_newest_release_is_cargos_version() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    cargo = (ROOT / "Cargo.toml").read_text(encoding="utf-8")
    assert newest_release(changelog) == cargo_workspace_version(cargo)
    # [Unreleased] stays above the newest release.
    assert changelog.index("## [Unreleased]") < RELEASE.search(changelog).start()  # type: ignore[union-attr]


def test_the_package_version_is_cargos() -> None:
    # The extension is compiled with Cargo's workspace version: a build older than the bump
    # fails here (rebuild it: `make install`).
    cargo = (ROOT / "Cargo.toml").read_text(encoding="utf-8")
    assert rb.__version__ == cargo_workspace_version(cargo)
    assert newest_release((ROOT / "CHANGELOG.md").read_text(encoding="utf-8")) == rb.__version__
