"""One raw API request through a kubernetes-asyncio ``ApiClient``.

``ApiClient.call_api`` is the library's public entry point under every generated method: auth
settings (the bearer token, refreshed by the library's own hooks), headers, query encoding, body
serialization and TLS stay the library's. ``_preload_content=False`` hands back the aiohttp
response unread, because the agent and the watch read raw JSON (a model-deserialized watch
breaks on one malformed object, and models cost more than the requests).
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import Any, Final

__all__ = ["JSON_PATCH", "MERGE_PATCH", "STRATEGIC_MERGE_PATCH", "request"]

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
    """One call through ``api_client``; awaits to the raw aiohttp response (caller releases).
    Query values that are None are left out."""
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
