"""A process node's kubelet server: ``/stats/summary`` and ``/healthz`` over HTTP.

A real kubelet serves its summary on port 10250 (``daemonEndpoints.kubeletEndpoint.Port`` in
the Node's status), which is where the eviction agent's DaemonSet fetches per-pod disk figures
(``--kubelet-summary-url``). A process node serves the same path, computed by
``kubesim.node.stats`` from the node's real files and cgroups.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Final

from aiohttp import web

from kubesim.node.runtime import ProcessRuntime
from kubesim.node.stats import node_summary

__all__ = ["SUMMARY_PATH", "KubeletServer"]

log = logging.getLogger("kubesim.kubelet")

SUMMARY_PATH: Final = "/stats/summary"


class KubeletServer:
    """One node's server; ``start`` binds it (``port`` then holds the bound port).

    It listens on the loopback address and the port of its ``ProcessNode`` configuration (0: a free
    one), and the kubelet actor reports that port in the Node's status. It serves plain HTTP
    without authentication (a read-only view of figures on the machine's own loopback), so a client
    points at it with a token-less ``http://127.0.0.1:<port>/stats/summary`` (the agent:
    ``--kubelet-token-file=''``). The summary walks the pods' files, so it is computed in a worker
    thread: a node with many files never stalls the API server that shares the event loop.
    """

    def __init__(
        self,
        node_name: str,
        runtime: ProcessRuntime,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.node_name = node_name
        self.runtime = runtime
        self.host = host
        self.port = port
        self.clock = clock
        self.started_at = clock()
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start(self) -> KubeletServer:
        app = web.Application()
        app.router.add_get(SUMMARY_PATH, self._summary)
        app.router.add_get("/healthz", self._healthz)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        try:
            await site.start()
        except BaseException:
            await self._runner.cleanup()
            self._runner = None
            raise
        addresses = self._runner.addresses
        if addresses:
            self.port = int(addresses[0][1])
        log.info("kubelet of %s: serving %s%s", self.node_name, self.url, SUMMARY_PATH)
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _summary(self, _request: web.Request) -> web.StreamResponse:
        summary = await asyncio.to_thread(
            node_summary,
            self.node_name,
            self.runtime,
            started_at=self.started_at,
            clock=self.clock,
        )
        return web.json_response(summary)

    async def _healthz(self, _request: web.Request) -> web.StreamResponse:
        return web.Response(text="ok")
