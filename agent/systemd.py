"""sd_notify over ``$NOTIFY_SOCKET``, in plain socket code: the unit runs the agent as
``Type=notify`` with a watchdog (systemd/eviction-agent.service), so systemd considers it started
after ``READY=1`` and restarts it when ``WATCHDOG=1`` stops arriving within ``WatchdogSec``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Callable, Mapping

log = logging.getLogger(__name__)


def _address(value: str) -> str | None:
    if value.startswith("@"):
        return "\0" + value[1:]
    if value.startswith("/"):
        return value
    return None


class Notifier:
    """Sends sd_notify messages; inert when the process was not started by systemd.

    The protocol is stable and tiny — newline-separated ``KEY=value`` assignments in one datagram to
    the AF_UNIX socket named by ``$NOTIFY_SOCKET``, where a leading ``@`` means the Linux abstract
    namespace (sd_notify(3)) — so no library is needed (libsystemd bindings need headers to build;
    the pure-Python packages are unmaintained). Without ``$NOTIFY_SOCKET`` (a DaemonSet, a terminal)
    every call is a no-op. A failed send is logged and reported as False, never raised: notification
    must not be able to kill the daemon. The watchdog interval is honoured only when
    ``$WATCHDOG_PID`` is unset or names this process (sd_watchdog_enabled(3)).
    """

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        environ = os.environ if env is None else env
        self.socket_path = environ.get("NOTIFY_SOCKET") or None
        self._address = _address(self.socket_path) if self.socket_path else None
        if self.socket_path and self._address is None:
            log.warning(
                "NOTIFY_SOCKET %r: only absolute paths and @abstract names are supported; "
                "notifications disabled",
                self.socket_path,
            )
        self._watchdog_usec = self._parse_watchdog(environ)

    @staticmethod
    def _parse_watchdog(environ: Mapping[str, str]) -> int | None:
        pid = environ.get("WATCHDOG_PID")
        if pid and pid != str(os.getpid()):
            return None
        try:
            usec = int(environ.get("WATCHDOG_USEC", ""))
        except ValueError:
            return None
        return usec if usec > 0 else None

    @property
    def enabled(self) -> bool:
        return self._address is not None

    def watchdog_interval(self) -> float | None:
        """Seconds between WATCHDOG=1 pings (half of WatchdogSec), or None when not asked."""
        if self._watchdog_usec is None or not self.enabled:
            return None
        return self._watchdog_usec / 2e6

    def notify(self, *assignments: str) -> bool:
        """Send `KEY=value` lines in one datagram; True if delivered, False otherwise."""
        if self._address is None:
            return False
        for a in assignments:
            if "=" not in a or "\n" in a:
                raise ValueError(f"sd_notify assignment {a!r}: must be one KEY=value line")
        payload = "\n".join(assignments).encode()
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as s:
                s.connect(self._address)
                s.sendall(payload)
        except OSError as exc:
            log.warning("sd_notify to %s failed: %s", self.socket_path, exc)
            return False
        return True

    def ready(self, status: str | None = None) -> bool:
        return self.notify("READY=1", *([f"STATUS={status}"] if status else []))

    def status(self, text: str) -> bool:
        return self.notify(f"STATUS={' '.join(text.splitlines())}")

    def watchdog(self) -> bool:
        return self.notify("WATCHDOG=1")

    def stopping(self, status: str | None = None) -> bool:
        return self.notify("STOPPING=1", *([f"STATUS={status}"] if status else []))


async def watchdog_loop(notifier: Notifier, healthy: Callable[[], bool] = lambda: True) -> None:
    """Ping the watchdog at half its interval (as systemd recommends) while ``healthy()``; returns
    at once if not asked.

    A wedged event loop stops the pings by itself, which is the point: systemd then restarts us.
    ``healthy`` lets the caller withhold pings when the loop runs but the agent is stuck.
    """
    interval = notifier.watchdog_interval()
    if interval is None:
        return
    while True:
        if healthy():
            notifier.watchdog()
        await asyncio.sleep(interval)
