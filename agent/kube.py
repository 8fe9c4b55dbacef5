"""The agent's API access: kubernetes-asyncio's config and ``ApiClient``, without its models.

The agent runs on every node, so its footprint is budgeted (≤ 60 MiB RSS, issue 9).
The generated models cost about 30 MiB that the agent never uses: it reads and writes raw JSON
(``_preload_content=False``), because a model-deserialized watch breaks on one malformed pod and
models cost more than the requests. ``defer_client_models()`` (``evictor.api.deferred``, shared with
the ``evict`` command) keeps them unimported until someone asks for one.

The agent's requests go through ``evictor.api.calls.send`` (the room for talking to the API,
issue 15).
"""

from __future__ import annotations

from evictor.api.deferred import defer_client_models

__all__ = ["defer_client_models"]
