"""Raw calls through a kubernetes-asyncio ``ApiClient``: status, headers and parsed JSON.

The generated methods deserialize answers into models and raise on non-2xx; the eviction loop
needs the status code, the ``Retry-After`` header and the Status body of *every* answer, and
a drain lists thousands of pods, where building models costs more than the request. So calls go
through the generated methods with ``_preload_content=False`` and the JSON is parsed once here.

Because every request passes here, so do kubectl's two per-request settings: ``--request-timeout``
(``request_timeout``: a bound on each request, none by default, as kubectl's ``0``) and the
request lines of ``-v=6`` (``GET URL 200 OK in N milliseconds`` on the ``evictor.requests``
logger, silent unless its own level is set to DEBUG: a process that logs at DEBUG, such as the
agent, does not get a line per request by inheritance). Watches are long-lived streams and are
not bounded by the request timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import ipaddress
import json
import logging
import time
import urllib.parse
import urllib.request
from collections.abc import Awaitable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "TURNS_TO_CONNECT",
    "TURNS_TO_SEND",
    "Response",
    "TransportError",
    "call",
    "current_request_timeout",
    "let_requests_out",
    "request_timeout",
    "resolve_proxy_once",
]

_requests_log = logging.getLogger("evictor.requests")
_requests_log.setLevel(logging.INFO)  # DEBUG only when asked for (evict -v=6)
_REQUEST_TIMEOUT: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "evictor_request_timeout", default=None
)


@contextlib.contextmanager
def request_timeout(seconds: float | None) -> Iterator[None]:
    """Bound every request ``call`` makes within the block (and the tasks it starts) to
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


async def call(request: Awaitable[Any]) -> Response:
    """Await a generated API call made with ``_preload_content=False`` and read its answer."""
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
    text = raw.decode("utf-8", errors="replace")
    try:
        body: Any = json.loads(text) if text else None
    except ValueError:
        body = text
    return Response(status, headers, body)


def resolve_proxy_once(api_client: Any) -> str | None:
    """Choose the API server's proxy from the environment once, as kubectl does, and stop
    aiohttp from choosing it again on every request.

    kubernetes-asyncio opens its session with ``trust_env=True``: each request then looks up the
    proxy variables and reads ``~/.netrc``, two trips through a worker thread that delayed a
    1000-pod drain's first evictions by ~40 ms and its whole run by ~0.1 s — and a ``.netrc``
    entry would add credentials kubectl never sends. Go's ``ProxyFromEnvironment`` (kubectl's
    rule) is applied instead: ``HTTPS_PROXY``/``HTTP_PROXY`` by the server's scheme, ``NO_PROXY``
    exclusions, never for localhost or a loopback address. A ``proxy-url`` from the kubeconfig
    already on the configuration wins. Answers the proxy in use (None: direct).

    The session is replaced through aiohttp's public API only: the library's session hands its
    connector (TLS context, pool) over with ``detach()`` to a new ``ClientSession(trust_env=
    False)`` that owns it from then on; ``rest_client.pool_manager`` is the generated client's
    public attribute for its session.
    """
    import aiohttp

    rest = api_client.rest_client
    if not rest.proxy:
        url = urllib.parse.urlsplit(str(api_client.configuration.host))
        host = url.hostname or ""
        proxies = urllib.request.getproxies_environment()
        proxy = proxies.get(url.scheme or "https")
        if proxy and not _loopback(host) and not _no_proxy(url.netloc, proxies):
            rest.proxy = proxy
    session = rest.pool_manager
    if session.trust_env:
        connector = session.connector
        session.detach()
        rest.pool_manager = aiohttp.ClientSession(
            connector=connector, trust_env=False, read_bufsize=READ_BUFSIZE
        )
    return str(rest.proxy) if rest.proxy else None


# kubernetes-asyncio's session reads in chunks of 2 MiB (a watch line can be a large object)
READ_BUFSIZE = 2**21


def _no_proxy(netloc: str, proxies: dict[str, str]) -> bool:
    """``NO_PROXY`` names the host (or a domain of it); typeshed does not declare the helper."""
    from urllib.request import proxy_bypass_environment  # type: ignore[attr-defined]

    return bool(proxy_bypass_environment(netloc, proxies))


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
