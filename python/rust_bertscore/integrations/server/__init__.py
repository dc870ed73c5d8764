"""The scoring server (``rust-bertscore serve``): one model kept loaded, JSON over HTTP.

* ``batching``: :class:`~rust_bertscore.integrations.server.batching.RequestScorer` (requests
  encoded together, each scored on its own, as ``score()``) and ``Batcher`` (the worker thread,
  bounded wait and batch size); no web framework;
* ``requests``: checking a ``POST /score`` body, errors naming field and index;
* ``app``: the Starlette application (extra ``[serve]``: Starlette and uvicorn).

This ``__init__`` imports nothing, so ``batching`` and ``requests`` load without Starlette.
docs/serving.md.
"""
