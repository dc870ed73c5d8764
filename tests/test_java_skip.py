"""The Spark tests skip, naming the reason, where no Java 17+ is found (README: Java 17 is
needed only for them)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from conftest import java_major_version, skip_without_java


def fake_java(home: Path, version_line: str) -> None:
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text(f"#!/bin/sh\necho '{version_line}' >&2\n", encoding="utf-8")
    java.chmod(java.stat().st_mode | stat.S_IXUSR)


@pytest.mark.skipif(os.name == "nt", reason="a shell-script java stands in here")
@pytest.mark.parametrize(
    ("line", "major"),
    [('openjdk version "17.0.12" 2024-07-16', 17), ('java version "1.8.0_412"', 8)],
)
def test_the_version_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line: str, major: int
) -> None:
    fake_java(tmp_path, line)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    assert java_major_version() == major


def test_no_java_skips_with_the_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nowhere"))
    assert java_major_version() is None
    with pytest.raises(pytest.skip.Exception, match="Spark needs Java 17 or later"):
        skip_without_java()


@pytest.mark.skipif(os.name == "nt", reason="a shell-script java stands in here")
def test_an_old_java_skips(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_java(tmp_path, 'openjdk version "11.0.2" 2019-01-15')
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    with pytest.raises(pytest.skip.Exception, match="Java 11 found"):
        skip_without_java()
