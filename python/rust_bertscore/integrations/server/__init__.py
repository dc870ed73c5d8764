"""The scoring server (``rust-bertscore serve``): one model kept loaded, JSON over HTTP.

* ``batching``: :class:`~rust_bertscore.integrations.server.batching.RequestScorer` (requests
  encoded together, each scored on its own, as ``score()``, each text tokenised once);
* ``scheduler``: ``Batcher`` (the worker thread: bounded wait and batch size, large requests
  in slices between which small ones are served, shortest first with ageing, requests that
  cannot finish refused, abandoned work stopped at the next encoder batch); no web framework;
* ``slices``: a large request in chunks scored as ``score()`` and slices of bounded token rows;
  long texts tokenised by prefixes;
* ``admission``: the queued-token budget requests are charged against before their body is
  kept;
* ``requests``: checking a ``POST /score`` body, errors naming field and index;
* ``app``: the Starlette application (extra ``[serve]``: Starlette and uvicorn);
* ``connections``: uvicorn's protocol with a read timeout, connection caps (in all, per client),
  framing errors as JSON, requests received before a shutdown answered, and accept errors
  logged once per interval (used by ``rust-bertscore serve``).

This ``__init__`` imports nothing, so ``batching``, ``scheduler``, ``slices``, ``admission`` and
``requests`` load without Starlette.
docs/serving.md.
"""
