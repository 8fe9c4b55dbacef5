"""The kernel's own announcement of a memory crossing: cgroup v1 memory thresholds.

Why: between two syncs a pod can allocate faster than any poll. On ``make demo``'s node (640Mi,
``memory.available<200Mi``) the 200 MiB of headroom last 62 ms at 3,200 MiB/s, less than the
fast memory check's 200 ms period, and the kernel OOM killer wins the race. The kubelet has the
same problem and the same answer: ``--kernel-memcg-notification``
(``pkg/kubelet/eviction/threshold_notifier_linux.go``, ``memory_threshold_notifier.go``) asks the
kernel to signal an eventfd when a cgroup's ``memory.usage_in_bytes`` crosses a value, then runs
its eviction manager at once.

Kernel interface (cgroup v1, Documentation/admin-guide/cgroup-v1/memory.rst §9): create an
eventfd, open the cgroup's ``memory.usage_in_bytes``, write ``"<eventfd> <usage fd> <bytes>"``
to its ``cgroup.event_control``; the kernel then signals the eventfd each time usage crosses
``bytes`` in either direction. Closing the eventfd removes the registration. An eventfd is an
ordinary readable descriptor, so asyncio's ``add_reader`` waits on it directly (unlike PSI's
POLLPRI, which needs a thread; ``agent.sources.psi``).

The value is the kubelet's: ``memory.available`` is ``capacity − working set`` and the working set
is ``usage − inactive_file``, so a threshold of ``T`` available is crossed when usage exceeds
``capacity − T + inactive_file``. ``inactive_file`` moves, so the daemon re-arms after every sync
(``update``: only when the value moved by a MiB or more, as re-arming costs a few syscalls).

cgroup v2 has no usage thresholds; there the agent relies on PSI triggers (``psi.py``: the
node's ``/proc/pressure/memory`` and kubepods' ``memory.pressure``) and its fast check. Refusals
(no ``cgroup.event_control``: v2 or a kernel without memcg events; EACCES or EROFS: not root, a
read-only mount) are logged once and leave the agent on polling — never an error.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Final

__all__ = ["MemoryThreshold", "usage_threshold"]

log = logging.getLogger(__name__)

_REARM_STEP: Final = 1 << 20  # re-register only when the value moved this much


def usage_threshold(*, capacity: int, available: int, inactive_file: int) -> int:
    """The ``memory.usage_in_bytes`` at which ``capacity − (usage − inactive)`` < ``available``."""
    return max(capacity - available + inactive_file, 0)


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
    """One cgroup v1 memory threshold; ``on_crossing`` runs in the event loop when it fires."""

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
