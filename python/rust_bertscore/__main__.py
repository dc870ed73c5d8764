"""``python -m rust_bertscore``: the ``rust-bertscore`` command."""

from __future__ import annotations

from .cli import main

raise SystemExit(main())
