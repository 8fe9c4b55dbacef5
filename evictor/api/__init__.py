"""The project's one room for talking to the Kubernetes API (ARCHITECTURE.md, issue 15).

One concern per module, in the manner of kopf's ``_cogs/clients``:

* ``calls``: one raw request through a kubernetes-asyncio ``ApiClient`` (``call_api``, the
  library's public entry point: auth settings, TLS, query encoding are the library's);
* ``watching``: one list-then-watch generator — resourceVersion resume, bookmarks, ``410 Gone``
  → relist, backoff with jitter, and a liveness bound that restarts a silent watch.

The agent's pod informer, the PDB watch and the deletion wait all watch through ``watching``, so
there is one policy for an expired resourceVersion and for a watch that stops delivering.
Importing this package imports nothing heavy: kubernetes-asyncio is loaded by the caller's
``ApiClient``.
"""
