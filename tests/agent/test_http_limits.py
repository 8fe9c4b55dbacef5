"""The agent's HTTP endpoints cannot be starved: slow clients are timed out and bounded.

Small limits are injected so every case finishes within a few seconds. What each case asserts
holds however slow the machine is: a probe is answered before the half-sent requests' own
deadline could have freed a slot, a trickled head is cut before it could be complete, a kept-
alive connection outlives the read timeout and is closed by the idle one — timings are lower
bounds or races between the server's deadlines and the test's own slower pace, never "took
under N s".
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import socket
import time
from collections.abc import AsyncIterator

import aiohttp
import pytest

from agent import http
from agent.http import HttpLimits, HttpServer, listen_socket, make_app, start_http
from agent.metrics import AgentMetrics
from tests.support.wait import until

HALF_SENT = b"GET /healthz HTTP/1.1\r\nHost: agent\r\nUser-Agent: slow"
LIMITS = HttpLimits(read_timeout=0.3, idle_timeout=0.3, max_connections=64)


@contextlib.asynccontextmanager
async def serving(limits: HttpLimits) -> AsyncIterator[tuple[HttpServer, int]]:
    app = make_app(AgentMetrics(), healthy=lambda: (True, ""), ready=lambda: (True, ""))
    srv, port = await start_http(app, "127.0.0.1", port=0, limits=limits)
    try:
        yield srv, port
    finally:
        await srv.cleanup()


@pytest.fixture
async def server() -> AsyncIterator[tuple[HttpServer, int]]:
    async with serving(LIMITS) as served:
        yield served


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def _eof_within(reader: asyncio.StreamReader, timeout: float) -> bool:
    try:
        async with asyncio.timeout(timeout):
            while await reader.read(4096):
                pass
    except TimeoutError:
        return False
    except ConnectionError:
        pass  # an aborted connection reads as a reset: closed all the same
    return True


async def test_400_half_sent_requests_do_not_starve_healthz() -> None:
    # A read timeout long enough that no half-sent request can time out before the probe is
    # answered, on however loaded a machine: only the connection bound can make room for it.
    limits = HttpLimits(read_timeout=3.0, idle_timeout=3.0, max_connections=64)
    async with serving(limits) as (srv, port):
        baseline = _open_fds()
        clients = []
        for _ in range(400):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(HALF_SENT)
            clients.append((reader, writer))
        await asyncio.sleep(0)
        # the bound holds while they pile up: the oldest incomplete ones were dropped
        assert srv.connections <= 64

        async with (
            aiohttp.ClientSession() as session,
            session.get(
                f"http://127.0.0.1:{port}/healthz", timeout=aiohttp.ClientTimeout(total=60)
            ) as resp,
        ):
            assert resp.status == 200
            assert await resp.text() == "ok\n"
            # answered while half-sent requests still hold their slots: the probe took the
            # place of the oldest, it did not wait for their read timeout to free one
            assert srv.connections > 1

        # every half-sent request is closed by the server: dropped, or at its read timeout
        closed = await asyncio.gather(*(_eof_within(r, 60) for r, _ in clients))
        assert all(closed)
        await until(lambda: srv.connections == 0, timeout=30.0)
        for _, writer in clients:
            writer.close()
        await asyncio.gather(*(w.wait_closed() for _, w in clients), return_exceptions=True)
        # the server's descriptors are back too (the clients' are closed: same process)
        await until(lambda: _open_fds() <= baseline, timeout=30.0)


async def test_a_trickled_head_is_cut_at_the_read_timeout(server: tuple[HttpServer, int]) -> None:
    _, port = server
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    started = time.monotonic()
    sent = 0
    try:
        # One byte every 0.1 s: the head takes 5 s to arrive, far longer than the 0.3 s read
        # timeout — progress does not extend the deadline, so the server cuts it midway.
        for byte in HALF_SENT:
            writer.write(bytes([byte]))
            sent += 1
            try:
                await writer.drain()
            except ConnectionError:
                break
            await asyncio.sleep(0.1)
            if reader.at_eof():
                break
        assert await _eof_within(reader, 60)
        assert sent < len(HALF_SENT), "the connection outlived the trickled head"
        assert time.monotonic() - started >= LIMITS.read_timeout * 0.9
    finally:
        writer.close()


async def test_a_body_that_never_arrives_is_cut(server: tuple[HttpServer, int]) -> None:
    _, port = server
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n123")
        # aiohttp may answer the GET before its body: what matters is that the connection goes,
        # well before aiohttp's own 10 s lingering time or hour-long keep-alive would let it
        assert await _eof_within(reader, 5.0)
    finally:
        writer.close()


async def test_whole_requests_keep_alive_then_idle_out() -> None:
    limits = HttpLimits(read_timeout=0.3, idle_timeout=2.0, max_connections=64)
    async with serving(limits) as (srv, port):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            for _ in range(3):  # a complete request, body included, disarms the read deadline
                # the server's idle timer starts once it has this request: no sooner than now
                last_sent = time.monotonic()
                writer.write(b"GET /readyz HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi")
                status = await asyncio.wait_for(reader.readline(), 30)
                assert status.startswith(b"HTTP/1.1 200")
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
                length = next(
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length")
                )
                assert await reader.readexactly(length) == b"ok\n"
                # past the read timeout, short of the idle one: still open
                await asyncio.sleep(limits.read_timeout * 1.5)
                assert not reader.at_eof()
            # idle: aiohttp's keep-alive timeout closes it, not before idle_timeout after the
            # last request (the event loop's timers may fire up to a clock tick early)
            assert await _eof_within(reader, 60)
            assert time.monotonic() - last_sent >= limits.idle_timeout - 0.01
            await until(lambda: srv.connections == 0, timeout=30.0)
        finally:
            writer.close()


def test_listen_on_any_is_dual_stack() -> None:
    if not socket.has_ipv6:
        pytest.skip("this Python has no IPv6 support")
    try:
        sock = listen_socket("::", 0)
    except OSError as exc:  # pragma: no cover - depends on the machine
        pytest.skip(f"no IPv6 here: {exc}")
    with sock:
        assert sock.family == socket.AF_INET6
        assert sock.getsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY) == 0
        sock.setblocking(True)
        sock.listen()
        port = sock.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            conn, peer = sock.accept()
            conn.close()
        assert peer[0] == "::ffff:127.0.0.1"  # IPv4 arrives as a mapped address


def test_listen_falls_back_to_ipv4_without_ipv6(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_ipv6() -> socket.socket:
        raise OSError(errno.EAFNOSUPPORT, "Address family not supported by protocol")

    monkeypatch.setattr(http, "_ipv6_socket", no_ipv6)
    with listen_socket("::", 0) as sock:
        assert sock.family == socket.AF_INET
        assert sock.getsockname()[0] == "0.0.0.0"


def test_a_busy_port_is_an_error_not_a_fallback() -> None:
    with listen_socket("::", 0) as first:
        first.listen()
        with pytest.raises(OSError) as info:
            listen_socket("::", first.getsockname()[1])
        assert info.value.errno == errno.EADDRINUSE


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        HttpLimits(read_timeout=0)
