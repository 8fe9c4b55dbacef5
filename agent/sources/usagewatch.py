"""Crossings the kernel does not announce, caught by a tight poll of one usage counter: where
cgroup v2 has no usage thresholds, or cgroup v1's may not be registered (no write access).
ARCHITECTURE.md ("What starts a sync") says why it is needed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import select
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Final

__all__ = [
    "MAX_DELAY",
    "MIN_DELAY",
    "PEAK_RATE",
    "UsageWatch",
    "poll_delay",
    "translate_line",
    "usage_file",
]

log = logging.getLogger(__name__)

PEAK_RATE: Final = 16 << 30  # bytes/s: the fastest growth the poll is paced for
MIN_DELAY: Final = 0.002
MAX_DELAY: Final = 0.1


def poll_delay(
    gap: int,
    *,
    peak_rate: float = PEAK_RATE,
    min_delay: float = MIN_DELAY,
    max_delay: float = MAX_DELAY,
) -> float:
    """Seconds until the next read: how long ``gap`` bytes last at ``peak_rate``, bounded."""
    if gap <= 0:
        return min_delay
    return min(max(gap / peak_rate, min_delay), max_delay)


def translate_line(line: int, *, cgroup_usage: int, watched_usage: int) -> int:
    """A usage line of one cgroup in the units of another's counter read at the same time: the
    watched counter's value at which the cgroup reaches ``line`` if the rest stays as it is.

    One file serves every memory signal: kubepods' counter where it exists (pods are what the
    agent can evict), the node cgroup's otherwise. The usage outside kubepods (system daemons)
    moves slowly and is re-read every sync, and the sync the watch wakes decides on fresh, exact
    figures.
    """
    return line - (cgroup_usage - watched_usage)


def usage_file(cgroup: Path, *, v1: bool) -> Path:
    """The usage counter of a memory cgroup directory."""
    return cgroup / ("memory.usage_in_bytes" if v1 else "memory.current")


class UsageWatch:
    """Poll one usage file in a thread; ``on_crossing`` runs in the event loop when the usage
    reaches the armed line. ``arm``/``disarm``/``close`` are called from the event loop.

    The file is ``memory.current`` (v2) or ``memory.usage_in_bytes`` (v1): a page-counter read
    with no ``memory.stat`` flush, one ``pread`` on a descriptor kept open. The line is the usage
    at which a hard memory threshold is met, ``capacity − threshold + inactive_file``
    (``memcg.usage_threshold``, the v1 notifier's arithmetic), re-armed after every sync. It reads
    only and writes nothing, so nothing the kubelet manages changes (unlike a ``memory.high``
    guard), and works alike on v1 and v2, in the DaemonSet and under systemd.

    Cost follows the distance to the line (``poll_delay``): the thread sleeps as long as usage
    could not reach the line growing at ``PEAK_RATE`` (16 GiB/s, above what one CPU faulting huge
    pages reaches, ~10 GiB/s), between ``MIN_DELAY`` (2 ms) and ``MAX_DELAY`` (100 ms): an idle
    node with gigabytes of headroom is read ten times a second, within 32 MiB of the line every
    2 ms. After a crossing the watch stays quiet until the next sync re-arms it (one wake per
    crossing, as the kernel's eventfd), one step above the usage when the line is already passed
    (``memcg.arm_at``).
    """

    def __init__(
        self,
        path: Path,
        on_crossing: Callable[[], None],
        *,
        peak_rate: float = PEAK_RATE,
        min_delay: float = MIN_DELAY,
        max_delay: float = MAX_DELAY,
    ) -> None:
        if not 0 < min_delay <= max_delay:
            raise ValueError(f"poll delays {min_delay}..{max_delay}s: must be 0 < min <= max")
        self.path = path
        self.on_crossing = on_crossing
        self.peak_rate = peak_rate
        self.min_delay = min_delay
        self.max_delay = max_delay
        self.line: int | None = None
        self.polls = 0
        self.crossings = 0
        self.refused: str | None = None
        self.gone = False
        self._generation = 0
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._wake_r: int | None = None
        self._wake_w: int | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> bool:
        """Open the file and start the thread (idle until armed); False, with ``refused``, when
        the file cannot be read."""
        if self._thread is not None:
            return self.running
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                int(os.pread(fd, 64, 0))
            except (OSError, ValueError):
                os.close(fd)
                raise
        except (OSError, ValueError) as exc:
            self.refused = f"{type(exc).__name__}: {exc}"
            log.info(
                "memory usage watch not available",
                extra={"path": str(self.path), "err": self.refused},
            )
            return False
        self._fd = fd
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._loop = asyncio.get_running_loop()
        self._thread = threading.Thread(
            target=self._run, name=f"usage-watch {self.path}", daemon=True
        )
        self._thread.start()
        return True

    def arm(self, line: int) -> None:
        """Wake the loop once the usage reaches ``line`` bytes."""
        with self._lock:
            if line == self.line:
                return
            self.line = line
            self._generation += 1
        self._poke()

    def disarm(self) -> None:
        with self._lock:
            self.line = None
            self._generation += 1

    def close(self) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:
            self._poke(b"q")
            thread.join()
        for fd in (self._fd, self._wake_r, self._wake_w):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._fd = self._wake_r = self._wake_w = None

    def _poke(self, what: bytes = b"w") -> None:
        if self._wake_w is not None:
            with contextlib.suppress(OSError):  # a full pipe is already a pending wake-up
                os.write(self._wake_w, what)

    # --- the thread ------------------------------------------------------------------------

    def _run(self) -> None:
        assert self._fd is not None and self._wake_r is not None
        poller = select.poll()
        poller.register(self._wake_r, select.POLLIN)
        while True:
            with self._lock:
                line, generation = self.line, self._generation
            timeout: float | None = None
            if line is not None:
                try:
                    data = os.pread(self._fd, 64, 0)
                except OSError:
                    self._post(gone=True)  # the cgroup was removed (ENODEV)
                    return
                self.polls += 1
                usage = _parse(data)
                if usage is None:  # not a number this time: read again at the slowest pace
                    timeout = 1000 * self.max_delay
                elif usage >= line:
                    with self._lock:
                        if self._generation == generation:
                            self.line = None
                    self._post(gone=False)
                    continue
                else:
                    timeout = 1000 * poll_delay(
                        line - usage,
                        peak_rate=self.peak_rate,
                        min_delay=self.min_delay,
                        max_delay=self.max_delay,
                    )
            if poller.poll(timeout) and b"q" in self._drain():
                return

    def _drain(self) -> bytes:
        assert self._wake_r is not None
        got = b""
        with contextlib.suppress(BlockingIOError, OSError):
            while chunk := os.read(self._wake_r, 64):
                got += chunk
        return got

    def _post(self, *, gone: bool) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(self._deliver, gone)

    def _deliver(self, gone: bool) -> None:
        if gone:
            self.gone = True
            log.info("memory usage watch stopped: file gone", extra={"path": str(self.path)})
            return
        self.crossings += 1
        self.on_crossing()


def _parse(data: bytes) -> int | None:
    try:
        return int(data)
    except ValueError:
        return None
