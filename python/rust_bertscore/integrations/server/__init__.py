"""The scoring server (``rust-bertscore serve``): one model kept loaded, JSON over HTTP.

* ``batching``: :class:`~rust_bertscore.integrations.server.batching.RequestScorer` (requests
  encoded together, each scored on its own, as ``score()``, each text tokenised once);
* ``scheduler``: ``Batcher`` (the worker thread: bounded wait and batch size, large requests
  in slices between which small ones are served, shortest first with ageing, requests that
  cannot finish refused, abandoned work stopped at the next encoder batch); no web framework;
* ``slices``: a large request in chunks scored as ``score()`` and slices of bounded token rows;
  long texts tokenised by prefixes;
* ``admission``: the queued-token budget requests are charged against before their body is
  kept, and each client address's share of it;
* ``requests``: checking a ``POST /score`` body (parsed in Rust, GIL released), errors naming
  field and index;
* ``rows``: a text's token rows counted, or bounded for any text;
* ``intake``: a request's body read and charged as it arrives, then parsed off the event loop
  (Starlette);
* ``app``: the Starlette application (extra ``[serve]``: Starlette and uvicorn);
* ``connections``: uvicorn's protocol with a read timeout, connection caps (in all, per client),
  framing errors as JSON, requests received before a shutdown answered, and accept errors
  logged once per interval (used by ``rust-bertscore serve``).

This ``__init__`` imports nothing, so ``batching``, ``scheduler``, ``slices``, ``admission`` and
``requests`` load without Starlette.
docs/serving.md.
"""
