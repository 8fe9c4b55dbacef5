"""The kernel's own announcement of memory trouble: cgroup v1 usage thresholds (the kubelet's
``--kernel-memcg-notification``), cgroup v2 ``memory.events``. Why the agent needs them, and
what stands in where they are refused, is in ARCHITECTURE.md ("What starts a sync").
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Final

__all__ = ["MemoryEventsWatch", "MemoryThreshold", "read_memory_events", "usage_threshold"]

log = logging.getLogger(__name__)

_REARM_STEP: Final = 1 << 20  # re-register only when the value moved this much


def usage_threshold(*, capacity: int, available: int, inactive_file: int) -> int:
    """The ``memory.usage_in_bytes`` at which ``capacity − (usage − inactive)`` < ``available``.

    The kubelet's value (``pkg/kubelet/eviction/memory_threshold_notifier.go``):
    ``memory.available`` is ``capacity − working set`` and the working set is ``usage −
    inactive_file``, so a threshold of ``T`` available is crossed when usage exceeds ``capacity −
    T + inactive_file``. ``inactive_file`` moves, so the line is re-armed after every sync.
    """
    return max(capacity - available + inactive_file, 0)


def arm_at(*, threshold: int, usage: int | None) -> int:
    """Where to arm: ``threshold``, or just above the current usage once it is past it.

    A v1 threshold wakes the agent only when usage *crosses* it. A sync that ran while usage
    was already past the line and found no pressure yet (an allocation still under way,
    ``inactive_file`` not yet reclaimable) would otherwise never be woken again by further
    growth: arming one step above the usage makes every further step a crossing.
    """
    if usage is None or usage < threshold:
        return threshold
    return usage + _REARM_STEP


def read_inactive_file(cgroup: Path) -> int | None:
    """``total_inactive_file`` of a v1 memory cgroup (hierarchical), None when unreadable."""
    try:
        text = (cgroup / "memory.stat").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == "total_inactive_file":
            try:
                return int(value)
            except ValueError:
                return None
    return None


class MemoryThreshold:
    """One cgroup v1 memory threshold; ``on_crossing`` runs in the event loop when it fires.

    The kernel interface (https://docs.kernel.org/admin-guide/cgroup-v1/memory.html, "Memory
    thresholds"): create an eventfd, open the cgroup's ``memory.usage_in_bytes``, write
    ``"<eventfd> <usage fd> <bytes>"`` to its ``cgroup.event_control``; the kernel then signals
    the eventfd each time usage crosses ``bytes`` in either direction, and closing the eventfd
    removes the registration. An eventfd is an ordinary readable descriptor, so asyncio's
    ``add_reader`` waits on it directly. ``update`` re-registers only when the value moved by a
    MiB or more (re-arming costs a few syscalls).

    Registering needs write access to ``cgroup.event_control``, a root-owned ``0200`` file: root,
    or CAP_DAC_OVERRIDE. A refusal (no ``cgroup.event_control``: a kernel without memcg events;
    EACCES or EROFS: not root, a read-only mount) is kept in ``refused``, logged once, never an
    error.
    """

    def __init__(self, cgroup: Path, on_crossing: Callable[[], None], *, name: str = "") -> None:
        self.cgroup = cgroup
        self.on_crossing = on_crossing
        self.name = name or str(cgroup)
        self.value: int | None = None
        self.crossings = 0
        self.refused: str | None = None
        self._efd: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def armed(self) -> bool:
        return self._efd is not None

    def update(self, value: int) -> bool:
        """Arm at ``value`` bytes of usage (re-arm when it moved ≥ 1 MiB); True when armed."""
        if self.refused is not None:
            return False
        if self.value is not None and self.armed and abs(value - self.value) < _REARM_STEP:
            return True
        try:
            efd = self._register(value)
        except OSError as exc:
            self.refused = f"{type(exc).__name__}: {exc}"
            log.info(
                "memory threshold notification not available, polling instead",
                extra={"cgroup": str(self.cgroup), "err": self.refused},
            )
            self.close()
            return False
        self.close()  # the previous registration goes with its eventfd
        self._efd = efd
        self.value = value
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(efd, self._readable)
        log.debug(
            "memory threshold armed",
            extra={"cgroup": str(self.cgroup), "usage_bytes": value, "threshold": self.name},
        )
        return True

    def _register(self, value: int) -> int:
        efd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        try:
            usage = os.open(self.cgroup / "memory.usage_in_bytes", os.O_RDONLY | os.O_CLOEXEC)
            try:
                control = os.open(self.cgroup / "cgroup.event_control", os.O_WRONLY | os.O_CLOEXEC)
                try:
                    os.write(control, f"{efd} {usage} {value}".encode())
                finally:
                    os.close(control)
            finally:
                os.close(usage)  # the kernel holds its own reference
        except BaseException:
            os.close(efd)
            raise
        return efd

    def _readable(self) -> None:
        if self._efd is None:
            return
        try:
            os.eventfd_read(self._efd)
        except BlockingIOError:
            return
        except OSError:
            self.close()
            return
        self.crossings += 1
        self.on_crossing()

    def close(self) -> None:
        efd, self._efd = self._efd, None
        if efd is None:
            return
        if self._loop is not None and not self._loop.is_closed():
            self._loop.remove_reader(efd)
        with contextlib.suppress(OSError):
            os.close(efd)


# inotify(7): IN_MODIFY, and inotify_init1's flags (the O_ values)
_IN_MODIFY: Final = 0x00000002
_IN_NONBLOCK: Final = os.O_NONBLOCK
_IN_CLOEXEC: Final = os.O_CLOEXEC
# counters that mean the cgroup ran into memory.high or its limit
WATCHED_EVENTS: Final = ("high", "max", "oom", "oom_kill")


def read_memory_events(path: Path) -> dict[str, int]:
    """A v2 ``memory.events`` file as counters; empty when unreadable."""
    out: dict[str, int] = {}
    try:
        text = path.read_text()
    except OSError:
        return out
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        with contextlib.suppress(ValueError):
            out[key] = int(value)
    return out


class MemoryEventsWatch:
    """cgroup v2: ``on_event`` runs in the event loop when ``memory.events`` counts a
    ``high``, ``max``, ``oom`` or ``oom_kill`` event.

    cgroup v2 has no usage thresholds (the kubelet's notifier is a no-op there,
    kubernetes/kubernetes#106331). The kernel raises a "file modified" event on ``memory.events``
    when a cgroup reaches ``memory.high`` or its limit
    (https://docs.kernel.org/admin-guide/cgroup-v2.html), received here through inotify — a
    readable descriptor, and read access is all it needs. Since Linux 5.2 ``memory.events``
    counts every descendant's events, so every container at its own limit would wake the agent;
    the caller watches ``memory.events.local`` (the cgroup's own) where it exists. It is the last
    moment before the OOM killer, not the crossing of the agent's line. A refusal (no inotify, no
    file) is kept in ``refused``, logged once.
    """

    def __init__(self, events_file: Path, on_event: Callable[[], None]) -> None:
        self.path = events_file
        self.on_event = on_event
        self.counts: dict[str, int] = {}
        self.events = 0
        self.refused: str | None = None
        self._fd: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def watching(self) -> bool:
        return self._fd is not None

    def start(self) -> bool:
        if self._fd is not None:
            return True
        if self.refused is not None:
            return False
        try:
            fd = _inotify_watch(self.path)
        except OSError as exc:
            self.refused = f"{type(exc).__name__}: {exc}"
            log.info(
                "memory.events notification not available",
                extra={"path": str(self.path), "err": self.refused},
            )
            return False
        self._fd = fd
        self.counts = read_memory_events(self.path)
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(fd, self._readable)
        return True

    def _readable(self) -> None:
        if self._fd is None:
            return
        try:
            while os.read(self._fd, 4096):
                pass
        except BlockingIOError:
            pass
        except OSError:
            self.close()
            return
        counts = read_memory_events(self.path)
        moved = any(counts.get(k, 0) > self.counts.get(k, 0) for k in WATCHED_EVENTS)
        self.counts = counts or self.counts
        if moved:
            self.events += 1
            self.on_event()

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        if self._loop is not None and not self._loop.is_closed():
            self._loop.remove_reader(fd)
        with contextlib.suppress(OSError):
            os.close(fd)


def _inotify_watch(path: Path) -> int:
    """An inotify descriptor watching ``path`` for modification (plain libc calls)."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = int(libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC))
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    wd = int(libc.inotify_add_watch(fd, os.fsencode(path), _IN_MODIFY))
    if wd < 0:
        err = ctypes.get_errno()
        os.close(fd)
        raise OSError(err, f"{os.strerror(err)}: {path}")
    return fd
