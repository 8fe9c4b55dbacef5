"""What wakes the loop on memory between syncs — cgroup v1 thresholds, cgroup v2
``memory.events.local``, the usage watch — re-armed by the loop after every sync
(``MemoryWatches.rearm``). ARCHITECTURE.md ("What starts a sync") says which runs where.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from agent.eviction import (
    MEMORY_SIGNALS,
    Observation,
    Signal,
    Threshold,
    get_threshold_quantity,
    is_hard_memory_threshold,
)
from agent.sources.cgroups import CgroupLayout, read_cgroup_memory
from agent.sources.memcg import MemoryEventsWatch, MemoryThreshold, arm_at, usage_threshold
from agent.sources.usagewatch import (
    MAX_DELAY,
    MIN_DELAY,
    UsageWatch,
    translate_line,
    usage_file,
)

__all__ = ["MemoryWatches", "WakeSource"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, order=True)
class WakeSource:
    """One thing that can start a sync: ``mode`` is ``announced`` (the kernel signals),
    ``polled`` (the agent reads at a pace), or ``refused``/``unavailable`` (with the reason)."""

    source: str
    target: str
    mode: str
    detail: str


def _rel_for(signal: str, *, node_cgroup: str, layout: CgroupLayout) -> str | None:
    if signal == Signal.MEMORY_AVAILABLE:
        return node_cgroup
    return layout.kubepods


class MemoryWatches:
    """The memory wake-ups of one agent; the loop calls ``rearm`` after every sync, ``close`` at
    stop.

    Three mechanisms, from the most to the least announced:

    - cgroup v1 memory thresholds (``agent.sources.memcg.MemoryThreshold``), the kubelet's
      ``--kernel-memcg-notification``: the kernel signals the crossing itself; where refused (no
      write access) they are logged once;
    - cgroup v2 ``memory.events.local`` of kubepods (and of a non-root node cgroup), through inotify
      (``MemoryEventsWatch``): the cgroup itself reached ``memory.high`` or its limit — kubepods at
      its limit is allocatable memory exhausted;
    - the usage watch (``agent.sources.usagewatch``): wherever a hard memory threshold has no armed
      kernel threshold — always on v2, and on v1 without write access.

    ``report()`` lists what is armed and what is polled, for the daemon's wake-source log line and
    metric (``eviction_agent_wake_source``).
    """

    def __init__(
        self,
        wake: Callable[[str], None],
        *,
        layout: Callable[[], CgroupLayout | None],
        node_cgroup: str = "",
        kernel_notification: bool = True,
        usage_watch: bool = True,
        usage_min_delay: float = MIN_DELAY,
        usage_max_delay: float = MAX_DELAY,
    ) -> None:
        self.wake = wake
        self.layout = layout  # the collector's, re-detected until kubepods exists
        self.node_cgroup = node_cgroup
        self.kernel_notification = kernel_notification
        self.usage_watch_enabled = usage_watch
        self.usage_min_delay = usage_min_delay
        self.usage_max_delay = usage_max_delay
        # "<signal><<bytes>" -> v1 threshold; events path -> v2 watch
        self.thresholds: dict[str, MemoryThreshold] = {}
        self.events: dict[str, MemoryEventsWatch] = {}
        self.usage: UsageWatch | None = None
        self._usage_armed = False

    # --- arming ------------------------------------------------------------------------------

    def rearm(
        self, thresholds: Sequence[Threshold], observations: Mapping[str, Observation]
    ) -> None:
        """Arm the wake-ups at the lines of ``thresholds`` from this sync's ``observations``
        (the loop calls it after every sync)."""
        layout = self.layout()
        if layout is None:
            return
        memory = [t for t in thresholds if t.signal in MEMORY_SIGNALS and t.operator]
        announced: set[Threshold] = set()
        if self.kernel_notification:
            if layout.is_v1_memory:
                announced = self._arm_v1(layout, memory, observations)
            else:
                self._watch_events(layout)
        hard = [t for t in memory if is_hard_memory_threshold(t) and t not in announced]
        if self.usage_watch_enabled and hard:
            self._arm_usage(layout, hard, observations)
        else:
            self._disarm_usage()

    def _cgroup(self, layout: CgroupLayout, rel: str) -> Path:
        return layout.memory_root / rel if rel else layout.memory_root

    def _arm_v1(
        self,
        layout: CgroupLayout,
        memory: Sequence[Threshold],
        observations: Mapping[str, Observation],
    ) -> set[Threshold]:
        """A kernel threshold per memory threshold; the ones armed."""
        armed: set[Threshold] = set()
        for threshold in memory:
            rel = _rel_for(threshold.signal, node_cgroup=self.node_cgroup, layout=layout)
            observed = observations.get(threshold.signal)
            if observed is None or rel is None:
                continue
            mem = read_cgroup_memory(layout, rel)
            if mem is None:
                continue
            available = get_threshold_quantity(threshold.value, observed.capacity)
            key = f"{threshold.signal}<{available}"
            notifier = self.thresholds.get(key)
            if notifier is None:
                notifier = MemoryThreshold(
                    self._cgroup(layout, rel), lambda: self.wake("memcg"), name=key
                )
                self.thresholds[key] = notifier
            if notifier.refused is not None:
                continue
            line = usage_threshold(
                capacity=observed.capacity,
                available=available,
                inactive_file=mem.usage - mem.working_set,
            )
            if notifier.update(arm_at(threshold=line, usage=mem.usage)):
                armed.add(threshold)
        return armed

    def _watch_events(self, layout: CgroupLayout) -> None:
        for rel in {self.node_cgroup, layout.kubepods} - {None, ""}:
            directory = self._cgroup(layout, str(rel))
            path = directory / "memory.events.local"
            if not path.exists():  # before Linux 5.2 memory.events was not hierarchical
                path = directory / "memory.events"
            if str(path) not in self.events and path.exists():
                watch = MemoryEventsWatch(path, lambda: self.wake("memcg"))
                watch.start()
                self.events[str(path)] = watch

    def _arm_usage(
        self,
        layout: CgroupLayout,
        hard: Sequence[Threshold],
        observations: Mapping[str, Observation],
    ) -> None:
        """Arm the watch at the nearest line of the hard thresholds no kernel announces."""
        watched = self._usage_target(layout)
        watched_mem = read_cgroup_memory(layout, watched) if watched is not None else None
        lines: list[int] = []
        for threshold in hard if watched_mem is not None else ():
            assert watched_mem is not None
            rel = _rel_for(threshold.signal, node_cgroup=self.node_cgroup, layout=layout)
            observed = observations.get(threshold.signal)
            if rel is None or observed is None:
                continue
            mem = watched_mem if rel == watched else read_cgroup_memory(layout, rel)
            if mem is None:
                continue
            line = usage_threshold(
                capacity=observed.capacity,
                available=get_threshold_quantity(threshold.value, observed.capacity),
                inactive_file=mem.usage - mem.working_set,
            )
            if rel != watched:
                line = translate_line(line, cgroup_usage=mem.usage, watched_usage=watched_mem.usage)
            lines.append(line)
        if not lines or watched_mem is None or watched is None:
            self._disarm_usage()
            return
        watch = self._usage_on(usage_file(self._cgroup(layout, watched), v1=layout.is_v1_memory))
        if watch is not None:
            watch.arm(arm_at(threshold=min(lines), usage=watched_mem.usage))
            self._usage_armed = True

    def _disarm_usage(self) -> None:
        if self.usage is not None:
            self.usage.disarm()
        self._usage_armed = False

    def _usage_target(self, layout: CgroupLayout) -> str | None:
        """The cgroup whose counter the usage watch reads: kubepods where it exists (it may
        appear after the agent started), else the node cgroup; None where neither has one (the
        v2 root has no ``memory.current``) or the kernel refused it (said once, not retried)."""
        candidates = [layout.kubepods] if layout.kubepods is not None else []
        candidates.append(self.node_cgroup)
        for rel in candidates:
            path = usage_file(self._cgroup(layout, rel), v1=layout.is_v1_memory)
            if self.usage is not None and self.usage.path == path and self.usage.refused:
                return None
            if path.is_file():
                return rel
        return None

    def _usage_on(self, path: Path) -> UsageWatch | None:
        """The running watch on ``path``, started (and the previous one closed) if needed."""
        current = self.usage
        if current is not None and current.path == path and current.running:
            return current
        if current is not None:
            current.close()
        self.usage = UsageWatch(
            path,
            lambda: self.wake("usage"),
            min_delay=self.usage_min_delay,
            max_delay=self.usage_max_delay,
        )
        if not self.usage.start():
            return None
        log.info("memory usage watch started", extra={"path": str(path)})
        return self.usage

    # --- reporting, stopping -----------------------------------------------------------------

    def report(self) -> list[WakeSource]:
        out: list[WakeSource] = []
        for notifier in self.thresholds.values():
            if notifier.refused is not None:
                out.append(
                    WakeSource("memcg-threshold", str(notifier.cgroup), "refused", notifier.refused)
                )
            elif notifier.armed:
                out.append(
                    WakeSource(
                        "memcg-threshold",
                        str(notifier.cgroup),
                        "announced",
                        f"{notifier.name} (cgroup.event_control)",
                    )
                )
        for path, watch in self.events.items():
            if watch.refused is not None:
                out.append(WakeSource("memory-events", path, "refused", watch.refused))
            elif watch.watching:
                out.append(
                    WakeSource(
                        "memory-events", path, "announced", "the cgroup at memory.high or its limit"
                    )
                )
        usage = self.usage
        if usage is not None:
            if usage.refused is not None:
                out.append(WakeSource("usage-watch", str(usage.path), "refused", usage.refused))
            elif usage.running and self._usage_armed:
                out.append(
                    WakeSource(
                        "usage-watch",
                        str(usage.path),
                        "polled",
                        f"every {usage.min_delay * 1000:g}-{usage.max_delay * 1000:g} ms by "
                        "distance to the line",
                    )
                )
        return sorted(out)

    def close(self) -> None:
        for notifier in self.thresholds.values():
            notifier.close()
        self.thresholds.clear()
        for watch in self.events.values():
            watch.close()
        self.events.clear()
        if self.usage is not None:
            self.usage.close()
            self.usage = None
