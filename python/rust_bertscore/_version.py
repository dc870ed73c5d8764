"""The package version: Cargo's workspace version, compiled into the extension (maturin gives
the wheel the same one, so there is one source of truth)."""

from __future__ import annotations

from ._core import __version__

__all__ = ["__version__"]
