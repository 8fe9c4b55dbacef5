"""The agent's HTTP surface and log format.

One aiohttp app serves ``/metrics`` (``prometheus_client.aiohttp``'s handler over the agent's own
registry — no second server thread), ``/healthz`` (the loop is alive: a sync completed recently)
and ``/readyz`` (the first sync is done and the pod watch has listed once). Probes in the
DaemonSet point at them (deploy/daemonset.yaml).

Logs are JSON lines on stderr in the shape of KEP-1602 structured logging: ``ts`` (Unix float),
``v`` (klog verbosity: 0 for info and above, 4 for debug), ``msg`` (a constant string), ``err``,
object references as ``{"pod": {"name": ..., "namespace": ...}}`` and other key/value pairs from
``extra=``. Errors and warnings add ``level`` so they stand out.
"""

from __future__ import annotations

import json
import logging
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any, Final

from aiohttp import web

from agent.metrics import AgentMetrics

__all__ = ["JsonFormatter", "make_app", "setup_logging", "start_http"]

_STANDARD: Final = frozenset(
    vars(logging.LogRecord("", 0, "", 0, "", (), None)).keys() | {"message", "asctime"}
)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": round(record.created, 6),
            "v": 4 if record.levelno < logging.INFO else 0,
            "msg": record.getMessage(),
        }
        if record.levelno >= logging.WARNING:
            out["level"] = record.levelname.lower()
        out["logger"] = record.name
        out.update(
            (k, v)
            for k, v in vars(record).items()
            if k not in _STANDARD and not k.startswith("_") and v is not None
        )
        if record.exc_info and record.exc_info[1] is not None:
            out.setdefault("err", str(record.exc_info[1]) or type(record.exc_info[1]).__name__)
            out["stacktrace"] = "".join(traceback.format_exception(*record.exc_info))
        return json.dumps(out, default=str)


def setup_logging(*, debug: bool = False, stream: Any = None) -> None:
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if debug else logging.INFO)
    for noisy in ("aiohttp.access", "asyncio"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def make_app(
    metrics: AgentMetrics,
    *,
    healthy: Callable[[], tuple[bool, str]],
    ready: Callable[[], tuple[bool, str]],
) -> web.Application:
    from prometheus_client.aiohttp import make_aiohttp_handler

    app = web.Application()

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


async def start_http(app: web.Application, host: str, port: int) -> tuple[web.AppRunner, int]:
    """Serve ``app``; returns the runner (call ``cleanup``) and the bound port."""
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = port
    for addr in runner.addresses:
        if isinstance(addr, tuple) and len(addr) >= 2:
            bound = int(addr[1])
            break
    return runner, bound


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
