"""The agent's API access: kubernetes-asyncio's config and ``ApiClient``, without its models.

The agent runs on every node, so its footprint is budgeted (≤ 60 MiB RSS, issue 9).
The generated models cost about 30 MiB that the agent never uses: it reads and writes raw JSON
(``_preload_content=False``), because a model-deserialized watch breaks on one malformed pod and
models cost more than the requests. ``defer_client_models()`` (``evictor.deferred``, shared with
the ``evict`` command) keeps them unimported until someone asks for one.

``request()`` is one API call through ``ApiClient.call_api`` (auth settings, headers, query
encoding, body serialization and TLS are the library's) answering the raw aiohttp response.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import Any, Final

from evictor.deferred import defer_client_models

__all__ = ["JSON_PATCH", "MERGE_PATCH", "STRATEGIC_MERGE_PATCH", "defer_client_models", "request"]

STRATEGIC_MERGE_PATCH: Final = "application/strategic-merge-patch+json"
MERGE_PATCH: Final = "application/merge-patch+json"
JSON_PATCH: Final = "application/json-patch+json"


def request(
    api_client: Any,
    method: str,
    path: str,
    *,
    query: Sequence[tuple[str, Any]] = (),
    body: Any = None,
    content_type: str = "application/json",
    timeout: float | None = None,
) -> Awaitable[Any]:
    """One call through ``api_client``; awaits to the raw aiohttp response (caller releases)."""
    headers = {"Accept": "application/json"}
    if body is not None:
        headers["Content-Type"] = content_type
    result: Awaitable[Any] = api_client.call_api(
        path,
        method,
        query_params=[(k, v) for k, v in query if v is not None],
        header_params=headers,
        body=body,
        auth_settings=["BearerToken"],
        _preload_content=False,
        _request_timeout=timeout,
    )
    return result
