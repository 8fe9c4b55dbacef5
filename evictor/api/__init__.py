"""The project's one room for talking to the Kubernetes API (ARCHITECTURE.md).

One concern per module, in the manner of kopf's ``_cogs/clients``:

* ``connect``: one factory for ``evict``'s and the agent's client, kubeconfig or in-cluster,
  with credentials that refresh as client-go's do and a 401 that refreshes once;
* ``calls``: every request but a watch, through ``send``: built through a kubernetes-asyncio
  ``ApiClient`` (``call_api``, the library's public entry point: auth settings, TLS, query
  encoding are the library's) on kubectl's paths, and its answer read into status, headers and
  JSON (``TransportError`` when there is none), within ``--request-timeout``, logged at ``-v=6``;
  and ``read_bounded``, a body read up to a number of bytes (the watch's pages and lines, the
  agent's kubelet summary);
* ``watching``: one list-then-watch generator — resourceVersion resume, bookmarks, ``410 Gone``
  → relist, backoff with jitter, and a liveness bound that restarts a silent watch;
* ``health``: how the API answers this process, for the agent's ``/readyz`` and watchdog;
* ``deferred``: the one place that relies on dependencies' internals (measured start-up
  savings), checked by a test that fails when an upgrade moves them.

The agent's pod informer, the PDB watch and the deletion wait all watch through ``watching``, so
there is one policy for an expired resourceVersion and for a watch that stops delivering.
Importing this package imports nothing heavy: kubernetes-asyncio is loaded by the caller's
``ApiClient``.
"""
