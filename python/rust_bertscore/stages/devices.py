"""Where the encoder runs: ONNX Runtime's execution providers with their options, TF32, and the
token budget of an encoder call on each device.

TF32 is off by default on CUDA: ONNX Runtime's CUDA provider runs float32 MatMul/GEMM in TF32
unless its ``use_tf32`` option is ``0`` (on by default since onnxruntime PR #19357), while
PyTorch keeps TF32 off for matmuls, so bert_score's numbers are true float32. TF32 comes back
only with ``precision="tf32"`` (named in the scorer's hash). The process environment is changed
only for graphs with convolutions (:func:`prepare_tf32`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from types import ModuleType

from ..errors import DeviceNotAvailableError, InputTypeError, InputValueError, warn_user

CUDA_PROVIDER = "CUDAExecutionProvider"
CPU_PROVIDER = "CPUExecutionProvider"

Providers = list[str | tuple[str, dict[str, str]]]
"""What ``onnxruntime.InferenceSession(providers=...)`` takes."""

DEFAULT_MAX_TOKENS = 4096
"""Padded tokens (rows x width) per encoder call on the CPU. Texts are sorted longest first and
cut into batches of at most ``batch_size`` texts and this many tokens: short texts go many to a
call, long ones few, so GEMMs keep a useful size and activation memory stays bounded."""

CUDA_MAX_TOKENS = 65536
"""Padded tokens per encoder call on CUDA: GPUs want far larger GEMMs than the CPU's 4,096
tokens (issue 28's H100 runs used 65,536; raising the budget from 4,096 changed fp32 speed by
under 10% there, fp16 needs it). An encoder call that runs out of device memory is split in
two and the budget halved for the rest of the call (``Encoder.embed_packed``)."""

MAX_TOKENS_ENV = "RUST_BERTSCORE_MAX_TOKENS"
"""Overrides the token budget of every encoder call, on any device (a positive int)."""

TF32_OVERRIDE_ENV = "NVIDIA_TF32_OVERRIDE"
"""NVIDIA's process-wide switch: ``0`` turns TF32 off in cuBLAS and cuDNN (convolutions
included, which ``use_tf32`` may not reach). Read when those libraries initialise."""


def onnxruntime() -> ModuleType:
    """The ``onnxruntime`` module, imported on first use (when a session is made or providers
    are listed), so that ``import rust_bertscore`` does not load it.

    On that first use the install is checked once per process (:func:`install_problem`): two
    ONNX Runtime builds, or both this package's distributions, installed together get a
    :class:`~rust_bertscore.errors.RustBertScoreWarning` that names the fix.

    Examples
    --------
    >>> from rust_bertscore.stages.devices import CPU_PROVIDER, onnxruntime
    >>> CPU_PROVIDER in onnxruntime().get_available_providers()
    True
    """
    import onnxruntime

    if not _INSTALL_CHECKED:
        _INSTALL_CHECKED.append(True)
        problem = install_problem()
        if problem is not None:
            warn_user(problem)
    return onnxruntime


_INSTALL_CHECKED: list[bool] = []
"""Holds one item once :func:`onnxruntime` has checked the install in this process."""

GPU_PACKAGE = "rust-bertscore-gpu"
"""This package's CUDA distribution: the same files, requiring ``onnxruntime-gpu`` instead of
``onnxruntime`` (made from the same wheel by ``packaging/gpu_wheel.py``)."""

CPU_PACKAGE = "rust-bertscore"

GPU_INSTALL = f"pip install {GPU_PACKAGE}"
"""The one-command CUDA install (docs/gpu.md)."""

GPU_REINSTALL = (
    f"pip uninstall -y {CPU_PACKAGE} {GPU_PACKAGE} onnxruntime onnxruntime-gpu && {GPU_INSTALL}"
)
"""The fix for a mixed install: every build out, the GPU distribution alone back in (it brings
``onnxruntime-gpu`` and no CPU build)."""


def _installed(prefix: str, module: str) -> list[str]:
    from importlib import metadata

    names = set()
    for dist in metadata.distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if not name.startswith(prefix):
            continue
        # boundary-exempt: importlib.metadata of an installed package
        top_level = dist.read_text("top_level.txt") or module
        if module in top_level.split():
            names.add(name)
    return sorted(names)


def onnxruntime_distributions() -> list[str]:
    """The installed distributions that provide the ``onnxruntime`` module (``onnxruntime``,
    ``onnxruntime-gpu``, ...), by their metadata.

    Examples
    --------
    >>> from rust_bertscore.stages.devices import onnxruntime_distributions
    >>> "onnxruntime" in onnxruntime_distributions()  # this project's test venv: the CPU build
    True
    """
    return _installed("onnxruntime", "onnxruntime")


def package_distributions() -> list[str]:
    """The installed distributions of this package: ``rust-bertscore`` (requires the CPU
    ONNX Runtime) and ``rust-bertscore-gpu`` (requires the GPU build). They hold the same files.

    Examples
    --------
    >>> from rust_bertscore.stages.devices import package_distributions
    >>> package_distributions()  # this project's test venv: the CPU distribution
    ['rust-bertscore']
    """
    return [n for n in _installed(CPU_PACKAGE, "rust_bertscore") if n in (CPU_PACKAGE, GPU_PACKAGE)]


def install_problem(
    distributions: Sequence[str] | None = None, packages: Sequence[str] | None = None
) -> str | None:
    """What is wrong with the install, or None: two ONNX Runtime builds installed together
    (they overwrite each other's files, and which one wins is luck), or both this package's
    distributions (one of them pulls the CPU build back in on its next upgrade).

    ``distributions`` and ``packages`` stand in for :func:`onnxruntime_distributions` and
    :func:`package_distributions`.

    Examples
    --------
    >>> from rust_bertscore.stages.devices import install_problem
    >>> install_problem(["onnxruntime"], ["rust-bertscore"]) is None
    True
    >>> print(install_problem(["onnxruntime", "onnxruntime-gpu"]))  # doctest: +ELLIPSIS
    onnxruntime and onnxruntime-gpu are both installed ... && pip install rust-bertscore-gpu
    """
    if distributions is None:
        distributions = onnxruntime_distributions()
    if packages is None:
        packages = package_distributions()
    found = []
    if len(distributions) > 1:
        found.append(
            f"{' and '.join(distributions)} are both installed and overwrite each other's files"
        )
    if len(packages) > 1:
        found.append(
            f"{' and '.join(packages)} are both installed "
            "(the same files, different ONNX Runtime builds)"
        )
    if not found:
        return None
    return "; ".join(found) + f"; for CUDA keep the GPU builds alone: {GPU_REINSTALL}"


def cuda_options(device_id: int | None = None, *, tf32: bool = False) -> dict[str, str]:
    """The CUDA execution provider's options: TF32 off unless ``tf32``.

    Examples
    --------
    >>> from rust_bertscore.stages.devices import cuda_options
    >>> cuda_options()
    {'use_tf32': '0'}
    >>> cuda_options(1, tf32=True)
    {'device_id': '1', 'use_tf32': '1'}
    """
    options = {} if device_id is None else {"device_id": str(int(device_id))}
    options["use_tf32"] = "1" if tf32 else "0"
    return options


def select_providers(
    device: str | None, *, tf32: bool = False, available: Sequence[str] | None = None
) -> Providers:
    """ONNX Runtime execution providers for ``device``.

    ``None`` picks CUDA when this onnxruntime build offers it, else the CPU; ``"cuda"`` or
    ``"cuda:N"`` require CUDA; ``"cpu"`` forces the CPU. CUDA comes with :func:`cuda_options`
    (TF32 off unless ``tf32``). ``available`` stands in for
    ``onnxruntime.get_available_providers()`` (tests without a GPU).

    Examples
    --------
    >>> from rust_bertscore.stages.devices import select_providers
    >>> select_providers("cpu")
    ['CPUExecutionProvider']
    >>> select_providers(None, available=["CUDAExecutionProvider", "CPUExecutionProvider"])
    [('CUDAExecutionProvider', {'use_tf32': '0'}), 'CPUExecutionProvider']
    """
    if available is None:
        available = onnxruntime().get_available_providers()
    available = list(available)
    if device is None:
        if CUDA_PROVIDER in available:
            return [(CUDA_PROVIDER, cuda_options(tf32=tf32)), CPU_PROVIDER]
        return [CPU_PROVIDER]
    if not isinstance(device, str):
        raise InputTypeError(f"device must be None, 'cpu' or 'cuda[:N]', got {device!r}")
    name, _, index = device.strip().lower().partition(":")
    if name == "cpu":
        return [CPU_PROVIDER]
    if name == "cuda":
        if CUDA_PROVIDER not in available:
            problem = install_problem()
            raise DeviceNotAvailableError(
                f"device={device!r} needs ONNX Runtime's CUDA execution provider, which this "
                f"onnxruntime build does not offer (it has {available}); "
                + (problem or f"install the GPU build ({GPU_REINSTALL}; docs/gpu.md)")
                + ", or use device='cpu'"
            )
        if index and not index.isdigit():
            raise InputValueError(f"device {device!r}: expected 'cuda' or 'cuda:N'")
        options = cuda_options(int(index) if index else None, tf32=tf32)
        return [(CUDA_PROVIDER, options), CPU_PROVIDER]
    raise InputValueError(f"unknown device {device!r}: expected None, 'cpu', 'cuda' or 'cuda:N'")


def uses_cuda(providers: Sequence[str | tuple[str, dict[str, str]]]) -> bool:
    """Whether ``providers`` (as passed, or a session's ``get_providers()``) starts with CUDA.

    Examples
    --------
    >>> from rust_bertscore.stages.devices import uses_cuda
    >>> uses_cuda(["CPUExecutionProvider"]), uses_cuda([("CUDAExecutionProvider", {})])
    (False, True)
    """
    if not providers:
        return False
    first = providers[0]
    return (first[0] if isinstance(first, tuple) else first) == CUDA_PROVIDER


def prepare_tf32(
    providers: Providers, *, tf32: bool = False, convolutions: bool = False, model: str = ""
) -> bool:
    """Before a CUDA session starts: set ``NVIDIA_TF32_OVERRIDE=0`` for the process when the
    graph has convolutions, CUDA runs it without TF32 and the variable is not set already; True
    when it was set here, with a :class:`~rust_bertscore.errors.RustBertScoreWarning` that
    says so.

    ``use_tf32=0`` (:func:`cuda_options`) keeps a session's own MatMul/GEMM out of TF32, and
    nothing else is needed for a graph without convolutions: the process environment is left
    alone. cuDNN's convolutions (``convolutions``: ConvBERT's dynamic convolution, DeBERTa-v2's
    conv layer; :func:`~rust_bertscore.catalog.configs.has_convolutions`) may pick TF32
    kernels whatever ``use_tf32`` says, and this variable turns TF32 off in cuBLAS and cuDNN
    alike, for the whole process: every CUDA library that starts after it (a PyTorch trainer's
    matmuls included), and a later ``precision="tf32"`` scorer (slower, not less exact). It is
    read when those libraries initialise. A value the user set is left alone
    (``NVIDIA_TF32_OVERRIDE=1`` keeps TF32 on), and ``tf32`` never sets it.

    Examples
    --------
    >>> from rust_bertscore.stages.devices import prepare_tf32
    >>> prepare_tf32(["CPUExecutionProvider"], convolutions=True)  # nothing to do without CUDA
    False
    >>> prepare_tf32([("CUDAExecutionProvider", {"use_tf32": "0"})])  # no convolutions
    False
    """
    if tf32 or not convolutions or not uses_cuda(providers) or TF32_OVERRIDE_ENV in os.environ:
        return False
    os.environ[TF32_OVERRIDE_ENV] = "0"
    warn_user(
        f"{TF32_OVERRIDE_ENV}=0 was set for this process: {model or 'the model'}'s graph has "
        "convolutions, which cuDNN may run in TF32 whatever ONNX Runtime's use_tf32=0 says. The "
        "variable turns TF32 off in cuBLAS and cuDNN for every CUDA library of the process that "
        "starts after it (a PyTorch trainer's matmuls too). To avoid this, set "
        f"{TF32_OVERRIDE_ENV} yourself before Python starts (0: float32 everywhere; 1: TF32 "
        "stays on, and these convolutions may use it), or pass precision='tf32' (docs/gpu.md)"
    )
    return True


def default_max_tokens(providers: Sequence[str | tuple[str, dict[str, str]]]) -> int:
    """The token budget of one encoder call: ``RUST_BERTSCORE_MAX_TOKENS`` when set, else
    :data:`CUDA_MAX_TOKENS` on CUDA and :data:`DEFAULT_MAX_TOKENS` on the CPU.

    Examples
    --------
    >>> from rust_bertscore.stages.devices import default_max_tokens
    >>> default_max_tokens(["CPUExecutionProvider"])
    4096
    >>> default_max_tokens(["CUDAExecutionProvider", "CPUExecutionProvider"])
    65536
    """
    env = os.environ.get(MAX_TOKENS_ENV, "").strip()
    if env:
        try:
            value = int(env)
        except ValueError:
            value = 0
        if value < 1:
            raise InputValueError(f"{MAX_TOKENS_ENV} must be a positive int, got {env!r}")
        return value
    return CUDA_MAX_TOKENS if uses_cuda(providers) else DEFAULT_MAX_TOKENS
