"""The agent's HTTP surface: ``/metrics`` (``prometheus_client.aiohttp``'s handler over the agent's
own registry, no second server thread), ``/healthz`` (the loop is alive: a sync completed recently)
and ``/readyz`` (the first sync is done and the pod watch has listed once), where the DaemonSet's
probes point (deploy/daemonset.yaml). They answer while the node is under pressure, whoever else
connects (``HttpLimits``).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from aiohttp import web

from agent.metrics import AgentMetrics

__all__ = [
    "HttpLimits",
    "HttpServer",
    "listen_socket",
    "make_app",
    "start_http",
]

log = logging.getLogger(__name__)


def make_app(
    metrics: AgentMetrics,
    *,
    healthy: Callable[[], tuple[bool, str]],
    ready: Callable[[], tuple[bool, str]],
) -> web.Application:
    from prometheus_client.aiohttp import make_aiohttp_handler

    app = web.Application(client_max_size=_MAX_BODY)

    async def healthz(_: web.Request) -> web.Response:
        ok, why = healthy()
        return web.Response(status=200 if ok else 503, text=("ok" if ok else why) + "\n")

    async def readyz(_: web.Request) -> web.Response:
        ok, why = ready()
        return web.Response(status=200 if ok else 503, text=("ok" if ok else why) + "\n")

    app.router.add_get("/metrics", make_aiohttp_handler(metrics.registry))
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    return app


# every route is a GET without a body; a larger one is answered 413 without being read whole
_MAX_BODY: Final = 64 * 1024
# a request head longer than this (aiohttp refuses lines and fields of 8190 bytes) is not a probe
_MAX_HEAD: Final = 64 * 1024


@dataclass(frozen=True, slots=True)
class HttpLimits:
    """How long and how many: the HTTP server's defences.

    A probe that times out makes the kubelet restart the agent, and every open connection holds a
    descriptor the cgroup readers need. aiohttp alone keeps an idle or half-sent connection for
    about an hour (``keepalive_timeout`` defaults to 3630 s) and accepts any number of them, so 400
    clients that send half a request hold 400 descriptors. These bound them:

    - aiohttp's public knobs: ``keepalive_timeout`` (an idle connection is closed after
      ``idle_timeout``), ``lingering_time`` (an unread request body is drained for at most
      ``read_timeout``), header line and field sizes, and the application's ``client_max_size``;
    - what aiohttp has no option for lives in the protocol we own (``_Guard``, which wraps the
      protocol ``web.Server`` makes for each connection and forwards every call to it): a request —
      headers, and the body its ``Content-Length`` announces — must arrive within ``read_timeout``
      of its first byte (of the accept, for the first request), or the connection is dropped; at
      most ``max_connections`` are open, and one more drops the oldest whose request is incomplete
      (else the oldest), so a flood of slow clients costs a bounded number of descriptors and never
      locks out a probe.

    ``read_timeout``: a request must arrive whole within it (headers and announced body; a
    connection that sends nothing counts from the accept); ``idle_timeout``: a kept-alive connection
    with no request is closed after it; ``max_connections``: open connections at most (probes and a
    scrape need a handful).
    """

    read_timeout: float = 5.0
    idle_timeout: float = 5.0
    max_connections: int = 64
    max_line_size: int = 8190
    max_field_size: int = 8190

    def __post_init__(self) -> None:
        if not (self.read_timeout > 0 and self.idle_timeout > 0 and self.max_connections > 0):
            raise ValueError(f"HTTP limits must be positive: {self}")


_IDLE, _HEAD, _BODY, _CHUNKED = range(4)


class _Guard(asyncio.Protocol):
    """One connection: aiohttp's protocol inside, our deadline and accounting around it.

    Every protocol call is forwarded unchanged; the guard only reads the bytes on their way in
    to find where each request ends (the head's blank line, then ``Content-Length`` bytes) and
    closes the transport when a request has not arrived whole within ``read_timeout``. A chunked
    body's end is not looked for: such a request (no route takes a body) keeps its deadline.
    """

    def __init__(self, inner: asyncio.Protocol, owner: HttpServer) -> None:
        self._inner = inner
        self._owner = owner
        self._loop = asyncio.get_running_loop()
        self._transport: asyncio.Transport | None = None
        self._deadline: asyncio.TimerHandle | None = None
        self._state = _IDLE
        self._head = bytearray()
        self._body_left = 0

    @property
    def incomplete(self) -> bool:
        """A request (or the first one) is still arriving."""
        return self._deadline is not None

    # --- asyncio.Protocol, forwarded ---------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        self._state = _HEAD  # the first request is due from the accept on
        self._arm()
        self._owner._opened(self)
        self._inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self._scan(data):
            self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received()

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self._owner._closed(self)
        self._inner.connection_lost(exc)

    # --- the deadline -----------------------------------------------------------------------

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self._loop.call_later(self._owner.limits.read_timeout, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        log.debug("HTTP request not received in time, connection closed")
        self.close()

    def close(self) -> None:
        """Drop the connection now (abort: a client that does not read must not hold it)."""
        self._disarm()
        if self._transport is not None and not self._transport.is_closing():
            self._transport.abort()

    def _scan(self, data: bytes) -> bool:
        """Follow request boundaries in ``data``; False when the connection was dropped."""
        i, n = 0, len(data)
        while i < n:
            if self._state == _IDLE:
                self._state = _HEAD
                self._arm()
            if self._state == _HEAD:
                before = len(self._head)
                self._head += data[i:]
                end = self._head.find(b"\r\n\r\n", max(0, before - 3))
                if end < 0:
                    if len(self._head) > _MAX_HEAD:
                        self.close()
                        return False
                    return True
                i += end + 4 - before
                head = bytes(self._head[:end])
                self._head.clear()
                self._body_starts(head)
            elif self._state == _BODY:
                take = min(self._body_left, n - i)
                self._body_left -= take
                i += take
                if self._body_left == 0:
                    self._request_done()
            else:  # _CHUNKED: the deadline stays armed
                return True
        return True

    def _body_starts(self, head: bytes) -> None:
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"transfer-encoding" and b"chunked" in value.lower():
                self._state = _CHUNKED
                return
            if name == b"content-length":
                with contextlib.suppress(ValueError):
                    length = max(0, int(value.strip()))
        if length:
            self._state, self._body_left = _BODY, length
        else:
            self._request_done()

    def _request_done(self) -> None:
        self._state = _IDLE
        self._disarm()  # from here aiohttp's keep-alive timer governs the idle connection


class HttpServer:
    """An aiohttp application behind our listening socket and connection guard."""

    def __init__(self, app: web.Application, limits: HttpLimits) -> None:
        self.limits = limits
        self.runner = web.AppRunner(
            app,
            access_log=None,
            handle_signals=False,
            # in-flight handlers get this long when the agent stops (aiohttp's default is 60 s)
            shutdown_timeout=1.0,
            # web.Server's handler arguments (RequestHandler's keywords)
            keepalive_timeout=limits.idle_timeout,
            lingering_time=limits.read_timeout,
            max_line_size=limits.max_line_size,
            max_field_size=limits.max_field_size,
        )
        self._server: asyncio.Server | None = None
        # insertion order is accept order: the first incomplete one is the oldest
        self._connections: dict[_Guard, None] = {}

    @property
    def connections(self) -> int:
        """Open connections."""
        return len(self._connections)

    async def start(self, host: str, port: int) -> int:
        """Listen on ``host:port`` (``::`` dual-stack); the bound port."""
        await self.runner.setup()
        factory = self.runner.server  # the public low-level web.Server: a protocol factory
        assert factory is not None
        sock = listen_socket(host, port)
        try:
            self._server = await asyncio.get_running_loop().create_server(
                lambda: _Guard(factory(), self), sock=sock, backlog=128
            )
        except BaseException:
            sock.close()
            await self.runner.cleanup()
            raise
        return int(sock.getsockname()[1])

    def _opened(self, conn: _Guard) -> None:
        if len(self._connections) >= self.limits.max_connections:
            victim = next((c for c in self._connections if c.incomplete), None)
            if victim is None:
                victim = next(iter(self._connections))
            log.debug("HTTP connection limit reached, oldest connection dropped")
            self._connections.pop(victim, None)
            victim.close()
        self._connections[conn] = None

    def _closed(self, conn: _Guard) -> None:
        self._connections.pop(conn, None)

    async def cleanup(self) -> None:
        if self._server is not None:
            self._server.close()
        for conn in list(self._connections):
            if conn.incomplete:
                conn.close()
        await self.runner.cleanup()
        if self._server is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(2.0):
                    await self._server.wait_closed()
            self._server = None


def _ipv6_socket() -> socket.socket:
    return socket.socket(socket.AF_INET6, socket.SOCK_STREAM)


def listen_socket(host: str, port: int) -> socket.socket:
    """A bound, non-blocking TCP socket; ``::`` or an empty host is dual-stack where possible.

    One IPv6 socket with ``IPV6_V6ONLY`` off, which also accepts IPv4 as mapped addresses (asyncio's
    own ``create_server`` turns V6ONLY on), falling back to ``0.0.0.0`` where the node has no IPv6:
    probes reach the pod on IPv4-only, IPv6-only and dual-stack clusters alike.
    """
    if host in ("", "::"):
        try:
            sock = _ipv6_socket()
        except OSError as exc:
            log.info("no IPv6 on this node, listening on IPv4 only", extra={"err": str(exc)})
        else:
            try:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind(("::", port))
            except OSError as exc:
                sock.close()
                if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                    raise
                log.info("no IPv6 on this node, listening on IPv4 only", extra={"err": str(exc)})
            else:
                sock.setblocking(False)
                return sock
        host = "0.0.0.0"
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except BaseException:
        sock.close()
        raise
    sock.setblocking(False)
    return sock


async def start_http(
    app: web.Application,
    host: str,
    port: int,
    *,
    limits: HttpLimits | None = None,
) -> tuple[HttpServer, int]:
    """Serve ``app`` with ``limits``; returns the server (call ``cleanup``) and the bound port."""
    server = HttpServer(app, limits or HttpLimits())
    return server, await server.start(host, port)


def health_from(
    last_sync_at: Callable[[], float], max_age: float
) -> Callable[[], tuple[bool, str]]:
    def check() -> tuple[bool, str]:
        last = last_sync_at()
        if last == 0:
            return True, ""  # starting: liveness must not kill a slow first sync
        age = time.time() - last
        if age > max_age:
            return False, f"last sync {age:.1f}s ago (limit {max_age:.0f}s)"
        return True, ""

    return check
