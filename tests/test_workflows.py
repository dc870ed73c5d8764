"""The GitHub workflows: valid YAML, the triggers, the three systems, and the Pythons that the
release smoke-tests agreeing with what pyproject.toml declares."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = ROOT / ".github" / "workflows"


def load(name: str) -> dict[str, Any]:
    data = yaml.safe_load((WORKFLOWS / name).read_text(encoding="utf-8"))
    assert isinstance(data, dict), f"{name}: not a YAML mapping"
    return data


def triggers(workflow: dict[str, Any]) -> dict[str, Any]:
    """The ``on:`` mapping (YAML 1.1 reads the bare key ``on`` as True)."""
    on = workflow.get("on", workflow.get(True))
    assert on is not None, "no on: triggers"
    return {k: None for k in on} if isinstance(on, list) else dict(on)


def declared_pythons() -> list[tuple[int, int]]:
    """The ``Programming Language :: Python :: 3.x`` classifiers of pyproject.toml, sorted."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    found = re.findall(r'"Programming Language :: Python :: (3)\.(\d+)"', text)
    return sorted((int(a), int(b)) for a, b in found)


def runs(job: dict[str, Any]) -> str:
    return "\n".join(str(step.get("run", "")) for step in job["steps"])


def uses(job: dict[str, Any]) -> list[str]:
    return [str(step["uses"]) for step in job["steps"] if "uses" in step]


def test_ci_runs_make_test_on_push_and_pull_request() -> None:
    ci = load("ci.yml")
    assert {"push", "pull_request"} <= set(triggers(ci))
    job = ci["jobs"]["test"]
    assert re.search(r"^make test\b", runs(job), re.M)
    assert job["timeout-minutes"] <= 90


def test_ci_runs_pytest_on_the_claimed_pythons_and_the_three_systems() -> None:
    job = load("ci.yml")["jobs"]["pytest"]
    cells = job["strategy"]["matrix"]["include"]
    required = [c for c in cells if not c["experimental"]]
    pythons = declared_pythons()
    oldest, newest = (f"{a}.{b}" for a, b in (pythons[0], pythons[-1]))
    linux = {c["python"] for c in required if c["os"].startswith("ubuntu")}
    assert {oldest, newest} <= linux
    assert {c["os"].split("-")[0] for c in required} == {"ubuntu", "windows", "macos"}
    newer = [tuple(map(int, c["python"].split("."))) for c in cells if c["experimental"]]
    assert all(v > pythons[-1] for v in newer)
    assert re.search(r"python -m pytest\b", runs(job))


def test_release_builds_wheels_for_the_three_systems() -> None:
    release = load("release.yml")
    on = triggers(release)
    assert on["push"]["tags"] == ["v*"]
    wheels = release["jobs"]["wheels"]
    assert any(u.startswith("PyO3/maturin-action@") for u in uses(wheels))
    platforms = wheels["strategy"]["matrix"]["platform"]
    built = {(p["runner"].split("-")[0], p["target"]) for p in platforms}
    assert built == {
        ("ubuntu", "x86_64"),
        ("ubuntu", "aarch64"),
        ("macos", "x86_64"),
        ("macos", "aarch64"),
        ("windows", "x64"),
    }
    linux = [p for p in platforms if p["runner"].startswith("ubuntu")]
    assert all("manylinux" in p for p in linux)
    assert "cp310-abi3" in runs(wheels)
    sdist = release["jobs"]["sdist"]
    assert any(s.get("with", {}).get("command") == "sdist" for s in sdist["steps"])


def test_release_smoke_tests_every_artifact_on_oldest_and_newest_python() -> None:
    release = load("release.yml")
    smoke = release["jobs"]["smoke"]
    assert set(smoke["needs"]) == {"wheels", "sdist"}
    matrix = smoke["strategy"]["matrix"]
    pythons = declared_pythons()
    assert pythons, "pyproject.toml declares no Python 3.x classifiers"
    oldest, newest = (f"{a}.{b}" for a, b in (pythons[0], pythons[-1]))
    assert matrix["python"] == [oldest, newest]
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert f'requires-python = ">={oldest}"' in text
    built = {
        f"wheel-{p['name']}" for p in release["jobs"]["wheels"]["strategy"]["matrix"]["platform"]
    }
    tested = {p["artifact"] for p in matrix["platform"]}
    assert tested == built | {"sdist"}
    systems = {p["runner"].split("-")[0] for p in matrix["platform"]}
    assert systems == {"ubuntu", "macos", "windows"}
    assert "tests/smoke.py" in runs(smoke)
    assert (ROOT / "tests" / "smoke.py").is_file()


@pytest.mark.parametrize("name", ["ci.yml", "release.yml"])
def test_workflow_jobs_have_steps(name: str) -> None:
    for job_name, job in load(name)["jobs"].items():
        assert job.get("runs-on"), f"{name}: job {job_name} has no runs-on"
        assert job.get("steps"), f"{name}: job {job_name} has no steps"


def test_publish_only_on_a_version_tag_with_trusted_publishing() -> None:
    release = load("release.yml")
    publish = release["jobs"]["publish"]
    assert publish["if"] == "startsWith(github.ref, 'refs/tags/v')"
    assert publish["needs"] == ["smoke", "gpu-wheels"]
    assert publish["permissions"] == {"id-token": "write"}
    assert any(u.startswith("pypa/gh-action-pypi-publish@") for u in uses(publish))
    assert "password" not in str(publish), "trusted publishing takes no token"


def test_release_makes_and_checks_the_gpu_wheels() -> None:
    """rust-bertscore-gpu comes from the built wheels (no second compile), for the platforms
    onnxruntime-gpu ships, and is installed and checked before publishing."""
    release = load("release.yml")
    gpu = release["jobs"]["gpu-wheels"]
    assert gpu["needs"] == ["wheels"]
    steps = str(gpu["steps"])
    assert "packaging/gpu_wheel.py" in steps and "tests/gpu_install.py" in steps
    assert "maturin" not in steps
    built = {p["name"] for p in release["jobs"]["wheels"]["strategy"]["matrix"]["platform"]}
    pattern = next(
        s["with"]["pattern"] for s in gpu["steps"] if "download-artifact" in s.get("uses", "")
    )
    platforms = pattern.removeprefix("wheel-{").removesuffix("}").split(",")
    assert set(platforms) <= built and "macos-arm64" not in platforms
