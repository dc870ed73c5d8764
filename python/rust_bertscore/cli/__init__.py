"""The ``rust-bertscore`` command line: one module per subcommand on top of the library.

Nothing in the library imports this package.
"""

from __future__ import annotations

from .app import main

__all__ = ["main"]
