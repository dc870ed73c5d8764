"""Make the ``rust-bertscore-gpu`` wheel from a built ``rust-bertscore`` wheel.

``pip install rust-bertscore-gpu`` is the one-command CUDA install (docs/gpu.md): the same
package, the same compiled extension and the same files, whose metadata requires ONNX Runtime's
GPU build (``onnxruntime-gpu``) instead of the CPU build (``onnxruntime``). The two ONNX Runtime
builds write the same ``onnxruntime`` module, so a distribution that depends on the CPU build can
never give a clean GPU install; this one depends on the GPU build alone.

No second compile: the wheel is rewritten, not rebuilt. Every file is copied byte for byte;
only ``METADATA`` changes (the name, the ``onnxruntime`` requirement, the ``gpu`` extra dropped,
since its one requirement is now a base requirement), the ``.dist-info`` folder is renamed to
the new distribution, and ``RECORD`` is written anew with each file's hash and size.

Usage::

    python packaging/gpu_wheel.py target/wheels/rust_bertscore-*.whl --out target/gpu-wheels
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import re
import sys
import zipfile
from pathlib import Path

CPU_NAME = "rust-bertscore"
GPU_NAME = "rust-bertscore-gpu"
CPU_RUNTIME = "onnxruntime"
GPU_RUNTIME = "onnxruntime-gpu"
SUMMARY_SUFFIX = " CUDA build: requires onnxruntime-gpu instead of onnxruntime."


class WheelError(Exception):
    """The input is not a rust-bertscore wheel this script can rewrite."""


def _wheel_name(name: str) -> str:
    """A distribution name as wheel file names and ``.dist-info`` folders spell it."""
    return re.sub(r"[-_.]+", "_", name).lower()


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode("ascii")


def gpu_metadata(metadata: str) -> str:
    """``METADATA`` of the GPU distribution: the name, the runtime requirement, no ``gpu`` extra.

    Examples
    --------
    >>> text = "Name: rust-bertscore\\nRequires-Dist: onnxruntime>=1.17\\n"
    >>> text += "Requires-Dist: onnxruntime-gpu>=1.17 ; extra == 'gpu'\\nProvides-Extra: gpu\\n"
    >>> print(gpu_metadata(text), end="")
    Name: rust-bertscore-gpu
    Requires-Dist: onnxruntime-gpu>=1.17
    """
    head, sep, body = metadata.partition("\n\n")
    lines: list[str] = []
    renamed = replaced = False
    for line in head.split("\n"):
        key, _, value = line.partition(": ")
        if key == "Name":
            if value.strip().lower().replace("_", "-") != CPU_NAME:
                raise WheelError(f"METADATA names {value!r}, not {CPU_NAME!r}")
            line, renamed = f"Name: {GPU_NAME}", True
        elif key == "Requires-Dist":
            requirement = value.split(";", 1)
            spec = requirement[0].strip()
            project = re.split(r"[<>=!~ \[(]", spec, maxsplit=1)[0].lower().replace("_", "-")
            marker = requirement[1].strip() if len(requirement) > 1 else ""
            if project == GPU_RUNTIME and re.fullmatch(r"""extra\s*==\s*["']gpu["']""", marker):
                continue  # the gpu extra's requirement is now a base requirement
            if project == CPU_RUNTIME and not marker:
                line, replaced = f"Requires-Dist: {GPU_RUNTIME}{spec[len(CPU_RUNTIME) :]}", True
        elif key == "Provides-Extra" and value.strip() == "gpu":
            continue
        elif key == "Summary":
            line = line + SUMMARY_SUFFIX
        lines.append(line)
    if not renamed or not replaced:
        raise WheelError(
            f"METADATA lacks {'the Name field' if not renamed else 'a requirement on onnxruntime'}"
        )
    return "\n".join(lines) + sep + body


def make_gpu_wheel(wheel: Path, out_dir: Path) -> Path:
    """Write the ``rust-bertscore-gpu`` twin of ``wheel`` into ``out_dir``; return its path.

    Examples
    --------
    >>> import tempfile, zipfile
    >>> from pathlib import Path
    >>> tmp = Path(tempfile.mkdtemp())
    >>> src = tmp / "rust_bertscore-1.0-cp310-abi3-linux_x86_64.whl"
    >>> info = "rust_bertscore-1.0.dist-info"
    >>> with zipfile.ZipFile(src, "w") as z:
    ...     z.writestr("rust_bertscore/__init__.py", "")
    ...     z.writestr(f"{info}/METADATA", "Name: rust-bertscore\\nRequires-Dist: onnxruntime\\n")
    ...     z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\\n")
    ...     z.writestr(f"{info}/RECORD", "")
    >>> make_gpu_wheel(src, tmp / "out").name
    'rust_bertscore_gpu-1.0-cp310-abi3-linux_x86_64.whl'
    """
    prefix = _wheel_name(CPU_NAME) + "-"
    if not wheel.name.startswith(prefix) or not wheel.name.endswith(".whl"):
        raise WheelError(f"{wheel}: not a {CPU_NAME} wheel (expected {prefix}*.whl)")
    version = wheel.name[len(prefix) :].split("-", 1)[0]
    old_info = f"{_wheel_name(CPU_NAME)}-{version}.dist-info/"
    new_info = f"{_wheel_name(GPU_NAME)}-{version}.dist-info/"
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / (_wheel_name(GPU_NAME) + "-" + wheel.name[len(prefix) :])
    partial = target.with_name(target.name + ".partial")
    records: list[str] = []
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(partial, "w") as dst:
        names = src.namelist()
        if old_info + "METADATA" not in names:
            raise WheelError(f"{wheel}: no {old_info}METADATA")
        for item in src.infolist():
            name = item.filename
            if name == old_info + "RECORD":
                continue
            data = src.read(item)
            if name.startswith(old_info):
                name = new_info + name[len(old_info) :]
                if name == new_info + "METADATA":
                    data = gpu_metadata(data.decode("utf-8")).encode("utf-8")
            copy = zipfile.ZipInfo(name, date_time=item.date_time)
            copy.external_attr = item.external_attr
            copy.compress_type = item.compress_type
            dst.writestr(copy, data)
            records.append(f"{name},{_record_hash(data)},{len(data)}")
        records.append(f"{new_info}RECORD,,")
        record = zipfile.ZipInfo(new_info + "RECORD", date_time=(1980, 1, 1, 0, 0, 0))
        record.compress_type = zipfile.ZIP_DEFLATED
        dst.writestr(record, "\n".join(records) + "\n")
    partial.replace(target)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheels", nargs="+", type=Path, help="rust-bertscore wheels")
    parser.add_argument("--out", type=Path, required=True, help="folder for the GPU wheels")
    args = parser.parse_args(argv)
    for wheel in args.wheels:
        try:
            print(make_gpu_wheel(wheel, args.out))
        except (WheelError, zipfile.BadZipFile, OSError) as err:
            print(f"gpu_wheel: {wheel}: {err}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
