"""Raw calls through a kubernetes-asyncio ``ApiClient``: status, headers and parsed JSON.

The generated methods deserialize answers into models and raise on non-2xx; the eviction loop
needs the status code, the ``Retry-After`` header and the Status body of *every* answer, and
a drain lists thousands of pods, where building models costs more than the request. So calls go
through the generated methods with ``_preload_content=False`` and the JSON is parsed once here.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Response", "TransportError", "call", "raw_watch"]


class TransportError(Exception):
    """No HTTP answer: connection refused or dropped, or the request timed out."""


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    headers: Mapping[str, str]
    body: Any  # parsed JSON, or the text when it is not JSON

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def message(self) -> str:
        if isinstance(self.body, Mapping):
            return str(self.body.get("message") or "")
        return str(self.body or "").strip()


async def call(request: Awaitable[Any]) -> Response:
    """Await a generated API call made with ``_preload_content=False`` and read its answer."""
    import aiohttp
    from multidict import CIMultiDict

    try:
        resp = await request
        try:
            raw = await resp.read()
            status = int(resp.status)
            headers = CIMultiDict(resp.headers)
        finally:
            resp.release()
    except (TimeoutError, aiohttp.ClientError, OSError) as exc:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            # aiohttp can turn a cancellation into a connection error; keep it a cancellation
            raise asyncio.CancelledError from exc
        raise TransportError(str(exc) or type(exc).__name__) from exc
    text = raw.decode("utf-8", errors="replace")
    try:
        body: Any = json.loads(text) if text else None
    except ValueError:
        body = text
    return Response(status, headers, body)


def raw_watch() -> Any:
    """A kubernetes-asyncio ``Watch`` whose events carry the object only as the server sent it.

    ``Watch(return_type="object")`` re-serialises every event's object to JSON and parses it
    again to "deserialise" it; a drain's watch of a node sees thousands of events and only
    reads ``raw_object``. Without a return type the watch skips that step.
    """
    return _raw_watch_class()()


@functools.cache
def _raw_watch_class() -> Any:
    from kubernetes_asyncio import watch

    class RawWatch(watch.Watch):
        def get_return_type(self, func: Any) -> str:
            return ""  # falsy: ``unmarshal_event`` leaves ``object`` as parsed

    return RawWatch
