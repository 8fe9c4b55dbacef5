"""Every request to the Kubernetes API except a watch: built, sent and read here (``send``).

Because every request passes here, so do kubectl's two per-request settings:
``--request-timeout`` (``request_timeout``) and the request lines of ``-v=6`` (``GET URL 200 OK
in N milliseconds`` on the ``evictor.requests`` logger). Watches are long-lived streams: they use
``request`` (the unread response, streamed by ``watching``), are not bounded by the request
timeout, and are read within a number of bytes by ``read_bounded``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import time
import urllib.parse
from collections.abc import Awaitable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kube.boundedjson import JSONTooDeep, loads

__all__ = [
    "HEAD_BYTES",
    "JSON_PATCH",
    "MERGE_PATCH",
    "STRATEGIC_MERGE_PATCH",
    "TURNS_TO_CONNECT",
    "TURNS_TO_SEND",
    "APIError",
    "BodyTooLarge",
    "Response",
    "TransportError",
    "api_error_text",
    "current_request_timeout",
    "let_requests_out",
    "list_items",
    "path_segment",
    "read_bounded",
    "request",
    "request_timeout",
    "send",
]

STRATEGIC_MERGE_PATCH: Final = "application/strategic-merge-patch+json"
# How much of a body too large to read is kept, to say what it was.
HEAD_BYTES: Final = 64 << 10
MERGE_PATCH: Final = "application/merge-patch+json"
JSON_PATCH: Final = "application/json-patch+json"


def path_segment(value: str) -> str:
    """``value`` escaped as one segment of a request path (a ``/`` in a name stays inside it),
    as the generated methods escape their path parameters."""
    return urllib.parse.quote(value, safe="")


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


class BodyTooLarge(Exception):
    """A body longer than the bound it is read within; ``head``: its first ``HEAD_BYTES``."""

    def __init__(self, start: bytes | bytearray) -> None:
        super().__init__("longer than the bound")
        self.head = bytes(start[:HEAD_BYTES])


async def read_bounded(resp: Any, limit: int) -> bytearray:
    """The body of an aiohttp response, read up to ``limit`` bytes: ``BodyTooLarge`` as soon as
    it is longer (at once, with only its head read, when its Content-Length says so)."""
    announced = resp.content_length
    want = limit if announced is None or announced <= limit else min(HEAD_BYTES, limit)
    body = bytearray()
    async for chunk in resp.content.iter_any():
        body += chunk
        if len(body) > limit or (want < limit and len(body) >= want):
            raise BodyTooLarge(body)
    if want < limit:  # announced as too long, and the connection ended early
        raise BodyTooLarge(body)
    return body


_requests_log = logging.getLogger("evictor.requests")
# DEBUG only when asked for (evict -v=6): its own level, so a process that logs at DEBUG, such as
# the agent, does not get a line per request by inheritance
_requests_log.setLevel(logging.INFO)
_REQUEST_TIMEOUT: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "evictor_request_timeout", default=None
)


@contextlib.contextmanager
def request_timeout(seconds: float | None) -> Iterator[None]:
    """Bound every request ``send`` makes within the block (and the tasks it starts) to
    ``seconds``; None or 0: no bound (kubectl's ``--request-timeout=0``)."""
    token = _REQUEST_TIMEOUT.set(seconds or None)
    try:
        yield
    finally:
        _REQUEST_TIMEOUT.reset(token)


def current_request_timeout() -> float | None:
    """The bound ``request_timeout`` set for this context (None: none)."""
    return _REQUEST_TIMEOUT.get()


# Event-loop turns for a request started with ``ensure_future`` to reach the socket: one on
# a pooled connection (headers written), 7 on a new one to a local server (connect, connection
# made, headers written), measured. Work done after yielding them overlaps the round trip; if
# a request needs more turns (a remote server's handshake), it leaves right after that work,
# never later than without the overlap.
TURNS_TO_SEND = 1
TURNS_TO_CONNECT = 8


async def let_requests_out(turns: int) -> None:
    """Yield ``turns`` event-loop turns, so requests just started are on the wire before the
    caller's next stretch of work."""
    for _ in range(turns):
        await asyncio.sleep(0)


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


async def _answer(request: Awaitable[Any]) -> Response:
    """Await a request made by ``request`` and read its answer."""
    import aiohttp
    from multidict import CIMultiDict

    limit = _REQUEST_TIMEOUT.get()
    started = time.monotonic()
    timer = asyncio.timeout(limit)
    try:
        async with timer:
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
        if timer.expired():
            raise TransportError(
                f"the server did not answer within the request timeout ({limit:g}s)"
            ) from exc
        raise TransportError(str(exc) or type(exc).__name__) from exc
    if _requests_log.isEnabledFor(logging.DEBUG):
        _requests_log.debug(
            "%s %s %d %s in %d milliseconds",
            getattr(resp, "method", "?"),
            getattr(resp, "url", "?"),
            status,
            getattr(resp, "reason", "") or "",
            (time.monotonic() - started) * 1000,
        )
    try:
        body: Any = loads(raw) if raw else None
    except JSONTooDeep as exc:  # never parsed: its text would be as deep in a message
        body = f"(a response body refused: {exc})"
    except ValueError:
        body = raw.decode("utf-8", errors="replace")
    return Response(status, headers, body)


async def send(
    api_client: Any,
    method: str,
    path: str,
    *,
    query: Sequence[tuple[str, Any]] = (),
    body: Any = None,
    content_type: str = "application/json",
    timeout: float | None = None,
) -> Response:
    """One request through ``api_client``, answered: the status, headers and parsed JSON of any
    HTTP answer, ``TransportError`` when there is none (connection refused or dropped, timed
    out). ``timeout`` bounds the request within the library (the ``request_timeout`` of the
    context bounds it in any case).

    Built through ``ApiClient.call_api``, the library's public entry point under every
    generated method (auth settings — the bearer token, refreshed by the library's own hooks
    —, headers, query encoding, body serialization and TLS stay the library's). The generated
    methods deserialize answers into models and raise on non-2xx; the eviction loop needs the
    status code, the ``Retry-After`` header and the Status body of *every* answer, and a drain
    lists thousands of pods, where building models costs more than the request. So the answer
    is asked for unread (``_preload_content=False``) and its JSON parsed once, here, refused
    unparsed when nested deeper than ``kube.boundedjson.MAX_DEPTH``."""
    return await _answer(
        request(
            api_client,
            method,
            path,
            query=query,
            body=body,
            content_type=content_type,
            timeout=timeout,
        )
    )


def api_error_text(status: int, body: Any, message: str) -> str:
    """kubectl's ``Error from server (Reason): message`` for a failed call."""
    reason = body.get("reason") if isinstance(body, Mapping) else ""
    if reason:
        return f"Error from server ({reason}): {message}"
    return f"Error from server: {message or status}"


class APIError(Exception):
    """An HTTP answer that is not 2xx where the caller needed one; ``response`` is it."""

    def __init__(self, response: Response) -> None:
        super().__init__(api_error_text(response.status, response.body, response.message))
        self.response = response


async def list_items(
    api_client: Any,
    path: str,
    *,
    query: Sequence[tuple[str, Any]] = (),
    chunk_size: int = 500,
) -> list[dict[str, Any]]:
    """Every item of a list, ``chunk_size`` at a time (``limit``/``continue``, as kubectl's
    ``--chunk-size``; 0 lists all at once). A failed page is ``APIError``."""
    items: list[dict[str, Any]] = []
    token = ""
    while True:
        page = [
            *query,
            ("continue", token or None),
            ("limit", chunk_size if chunk_size > 0 else None),
        ]
        resp = await send(api_client, "GET", path, query=page)
        if not resp.ok or not isinstance(resp.body, Mapping):
            raise APIError(resp)
        items.extend(i for i in resp.body.get("items") or [] if isinstance(i, dict))
        token = str((resp.body.get("metadata") or {}).get("continue") or "")
        if not token:
            return items
