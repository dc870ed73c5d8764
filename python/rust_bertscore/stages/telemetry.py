"""OpenVINO's and NNCF's usage telemetry, kept off for this package's calls unless the user opts
in (docs/cpu_precisions.md, "Telemetry").

``import openvino`` starts OpenVINO's telemetry (``openvino_telemetry``): it sends an "import"
event and writes a client id to ``~/intel/openvino_ga_cid``, counting a missing consent file as
consent; NNCF's ``quantize`` sends events through the same client. A scoring library should not
turn that on unannounced, so :func:`telemetry_off` wraps every import of and call into them with
their own opt-outs:

- OpenVINO's: ``openvino_telemetry`` declines consent in a CI job (its ``disable_in_ci``, the
  ``CI=true`` environment variable), so ``CI`` is ``true`` while ``openvino`` (and its client)
  is imported: no event is sent and no client id file is written. An OpenVINO client made
  earlier (the user imported ``openvino`` first) has its ``consent`` off during the calls.
- NNCF's: ``NNCF_CI`` is set while ``nncf`` is imported (NNCF then uses its telemetry stub).

The environment is restored after each call. Opting in: ``RUST_BERTSCORE_OPENVINO_TELEMETRY=1``,
or OpenVINO's own ``opt_in_out --opt_in`` (a consent file holding ``1``), and nothing is changed.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import RustBertScoreError
from ..support.inputs import read_bytes

TELEMETRY_ENV = "RUST_BERTSCORE_OPENVINO_TELEMETRY"
"""Set to ``1`` to leave OpenVINO's and NNCF's telemetry as they would be without this package."""

_OPT_OUTS = {"CI": "true", "NNCF_CI": "1"}
_LOCK = threading.RLock()


def consent_file() -> Path:
    """Where ``openvino_telemetry`` keeps the user's answer (``opt_in_out``):
    ``~/intel/openvino_telemetry`` (``%LOCALAPPDATA%\\Intel Corporation`` on Windows).

    >>> from rust_bertscore.stages.telemetry import consent_file
    >>> consent_file().name
    'openvino_telemetry'
    """
    if sys.platform == "win32":
        base = Path(os.path.expandvars("$LOCALAPPDATA")) / "Intel Corporation"
    else:
        base = Path.home() / "intel"
    return base / "openvino_telemetry"


def telemetry_opted_in() -> bool:
    """True when the user turned OpenVINO's telemetry on: :data:`TELEMETRY_ENV` is ``1`` (or
    ``true``, ``yes``, ``on``), or OpenVINO's consent file says ``1``.

    >>> import os
    >>> from rust_bertscore.stages.telemetry import TELEMETRY_ENV, telemetry_opted_in
    >>> os.environ.get(TELEMETRY_ENV) is None and not telemetry_opted_in()
    True
    """
    if os.environ.get(TELEMETRY_ENV, "").strip().lower() in ("1", "true", "yes", "on"):
        return True
    try:
        answer = read_bytes(consent_file(), max_bytes=4096, error=RustBertScoreError)
    except (OSError, RustBertScoreError):  # missing, a FIFO, a directory, too large
        return False
    return answer.strip() == b"1"


def _existing_client() -> Any:
    module = sys.modules.get("openvino_telemetry")
    client_class = getattr(module, "Telemetry", None)
    if client_class is None:
        return None
    try:
        return client_class()  # the process's client when there is one; else it raises
    except Exception:
        return None


@contextlib.contextmanager
def telemetry_off() -> Iterator[None]:
    """Run the block with OpenVINO's and NNCF's telemetry off (see the module docstring),
    unless :func:`telemetry_opted_in`.

    Examples
    --------
    >>> import os
    >>> from rust_bertscore.stages.telemetry import telemetry_off
    >>> with telemetry_off():
    ...     os.environ["NNCF_CI"]
    '1'
    >>> "NNCF_CI" in os.environ
    False
    """
    if telemetry_opted_in():
        yield
        return
    with _LOCK:
        saved = {key: os.environ.get(key) for key in _OPT_OUTS}
        os.environ.update(_OPT_OUTS)
        client = _existing_client()
        consent = getattr(client, "consent", None)
        if consent:
            client.consent = False
        try:
            yield
        finally:
            if consent:
                client.consent = consent
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
