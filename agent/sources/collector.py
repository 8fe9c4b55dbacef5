"""The agent's own readings as one typed ``Summary``, with the kubelet's disk figures merged in.

The core takes them as it takes a kubelet's ``/stats/summary`` (``agent.eviction.summary``, the
types of ``k8s.io/kubelet/pkg/apis/stats/v1alpha1``); they are built here straight from the
cgroup, statvfs and ``/proc`` readers (``agent.sources.node``, ``agent.sources.pods``), with no
JSON in between.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import aiohttp

from agent.eviction.summary import NodeStats, PodStats, RuntimeStats, Summary
from agent.sources.cgroups import CgroupError, CgroupLayout, detect_layout
from agent.sources.kubelet import (
    KubeletSummaryConfig,
    KubeletSummaryError,
    fetch_summary,
    kubelet_pod_stats,
    merge_kubelet_pod_storage,
)
from agent.sources.node import fs_stats, read_node_memory, read_runtime_fs, rlimit_stats
from agent.sources.pods import PodLookup, read_pods, read_pods_system_container
from agent.sources.roots import Roots
from kube.cgroups import CgroupDriver

log = logging.getLogger(__name__)

KUBELET_SUMMARY_MAX_AGE_INTERVALS = 3


@dataclass(frozen=True)
class SourceConfig:
    roots: Roots = field(default_factory=Roots)
    node_name: str = ""
    # None: detect from which of kubepods.slice / kubepods exists.
    cgroup_driver: CgroupDriver | None = None
    # The kubelet's --cgroup-root: where kubepods lives, relative to each hierarchy root.
    kubepods_parent: str = ""
    # The cgroup that *is* the node (root by default; a node container's cgroup in kind/kwok).
    node_cgroup: str = ""
    # Explicit node memory capacity in bytes (else the node cgroup's limit, else MemTotal).
    memory_capacity: int | None = None
    kubelet_summary: KubeletSummaryConfig | None = None
    kubelet_summary_interval: float = 10.0


@dataclass
class CollectContext:
    config: SourceConfig
    layout: CgroupLayout | None
    time: float  # seconds since the epoch: every figure of one collection has this time
    lookup: PodLookup


# A section's reader returns its typed block (``MemoryStats``, ``FsStats``, ``RuntimeStats``,
# ``RlimitStats``; the system containers' and the pods' stats as sequences), None when absent.
Reader = Callable[[CollectContext], Any]


def _memory(ctx: CollectContext) -> Any:
    if ctx.layout is None:
        return None
    return read_node_memory(
        ctx.layout,
        ctx.config.roots.proc_root,
        time=ctx.time,
        node_cgroup=ctx.config.node_cgroup,
        capacity_override=ctx.config.memory_capacity,
    )


def _fs(ctx: CollectContext) -> Any:
    return fs_stats(ctx.config.roots.kubelet_root, time=ctx.time)


def _runtime(ctx: CollectContext) -> Any:
    roots = ctx.config.roots
    runtime = read_runtime_fs(
        roots.runtime_root, container_fs_root=roots.container_fs_root, time=ctx.time
    )
    if runtime is None:
        # No runtime root to stat (kubesim, a misconfigured path): images then live on nodefs,
        # the kubelet's "single filesystem" layout.
        nodefs = fs_stats(roots.kubelet_root, time=ctx.time)
        if nodefs is not None:
            runtime = RuntimeStats(image_fs=nodefs, container_fs=nodefs)
    return runtime


def _rlimit(ctx: CollectContext) -> Any:
    return rlimit_stats(ctx.config.roots.proc_root, time=ctx.time)


def _pods(ctx: CollectContext) -> Any:
    if ctx.layout is None:
        return []
    return read_pods(ctx.layout, time=ctx.time, lookup=ctx.lookup)


def _system_containers(ctx: CollectContext) -> Any:
    if ctx.layout is None:
        return []
    pods = read_pods_system_container(ctx.layout, time=ctx.time)
    return [pods] if pods is not None else []


# the sections that are not per pod
NODE_SECTIONS: frozenset[str] = frozenset({"memory", "fs", "runtime", "rlimit", "systemContainers"})
# what the fast memory check reads: the node's memory and kubepods' (allocatable)
MEMORY_SECTIONS: frozenset[str] = frozenset({"memory", "systemContainers"})

DEFAULT_READERS: Mapping[str, Reader] = {
    "memory": _memory,
    "fs": _fs,
    "runtime": _runtime,
    "rlimit": _rlimit,
    "systemContainers": _system_containers,
    "pods": _pods,
}


def _no_lookup(_uid: str) -> None:
    return None


class SummaryCollector:
    """Reads a fresh Summary on demand; merges the kubelet's (cached) disk figures when set.

    A section (``DEFAULT_READERS``) is a plain function over the filesystem roots, replaceable
    with ``readers=`` (how tests plug in their own figures). A block whose source is missing
    is left out, as the kubelet leaves it out, and the core then makes no observation for its
    signals; the kubepods cgroup is the system container named "pods", where the kubelet reads
    ``allocatableMemory.available``. Every figure of one collection has the wall clock's time to
    the microsecond: the core drops an observation whose time did not advance since the last
    sync (``thresholds_updated_stats``), and the agent syncs more than once a second.

    The kubelet's own summary is fetched in the background at its own (slow) pace, its pod
    entries read once per fetch, and merged in for disk usage only. Its figures expire: once the
    last good fetch is older than three fetch intervals (``KUBELET_SUMMARY_MAX_AGE_INTERVALS`` ×
    ``kubelet_summary_interval``, 30 s with the default 10 s — the kubelet's own housekeeping
    period, so two fetches in a row may fail first) they are no longer merged, and the pods
    carry no disk figures until a fetch succeeds again: an emptyDir that was over its limit a
    minute ago must not get a pod evicted now. Their age is ``kubelet_summary_age()`` (the
    ``eviction_agent_kubelet_summary_age_seconds`` metric).
    """

    def __init__(
        self,
        config: SourceConfig,
        *,
        lookup: PodLookup = _no_lookup,
        readers: Mapping[str, Reader] | None = None,
        wall_clock: Callable[[], float] = time.time,
        start_time: float | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        unknown = set(readers or {}) - set(DEFAULT_READERS)
        if unknown:
            raise ValueError(
                f"unknown summary readers {sorted(unknown)}: "
                f"must be among {sorted(DEFAULT_READERS)}"
            )
        self.config = config
        self.lookup = lookup
        self.readers = {**DEFAULT_READERS, **(readers or {})}
        self._clock = wall_clock
        self._start = start_time if start_time is not None else wall_clock()
        self._layout: CgroupLayout | None = None
        self.layout_error: str | None = None
        self.errors: list[str] = []
        self._monotonic = monotonic
        # the kubelet's pod entries, as kubelet.read_summary keeps them and read once
        self._kubelet_pods: tuple[PodStats, ...] | None = None
        self._kubelet_cached_at: float | None = None
        self._kubelet_fetched_at = float("-inf")
        self._kubelet_task: asyncio.Task[tuple[PodStats, ...] | None] | None = None
        self._session: aiohttp.ClientSession | None = None

    @property
    def layout(self) -> CgroupLayout | None:
        # Re-detect until kubepods exists: the kubelet may create it after we start.
        if self._layout is None or self._layout.kubepods is None:
            try:
                self._layout = detect_layout(
                    self.config.roots.cgroup_root,
                    driver=self.config.cgroup_driver,
                    kubepods_parent=self.config.kubepods_parent,
                )
                self.layout_error = None
            except CgroupError as exc:
                self.layout_error = str(exc)
        return self._layout

    def collect(self, only: Collection[str] | None = None) -> Summary:
        """One fresh Summary from the local readers only (synchronous, no network).

        ``only`` restricts the sections read: ``MEMORY_SECTIONS`` for the fast memory check
        between full syncs, ``NODE_SECTIONS`` for a sync that reads no pod cgroup.
        """
        ctx = CollectContext(
            config=self.config, layout=self.layout, time=self._clock(), lookup=self.lookup
        )
        self.errors = [self.layout_error] if self.layout_error else []
        read: dict[str, Any] = {}
        for name, reader in self.readers.items():
            if only is not None and name not in only:
                continue
            try:
                read[name] = reader(ctx)
            except Exception as exc:  # a broken reader must not take the agent down
                log.exception("summary reader %s failed", name)
                self.errors.append(f"{name}: {type(exc).__name__}: {exc}")
        return Summary(
            node=NodeStats(
                node_name=self.config.node_name,
                start_time=self._start,
                system_containers=tuple(read.get("systemContainers") or ()),
                memory=read.get("memory"),
                fs=read.get("fs"),
                runtime=read.get("runtime"),
                rlimit=read.get("rlimit"),
            ),
            pods=tuple(read.get("pods") or ()),
        )

    async def get_summary(self, *, pods: bool = True) -> Summary:
        """Fresh local readings plus the latest kubelet disk figures (refreshed in background).

        ``pods=False`` reads the node-level sections only (``NODE_SECTIONS``); the kubelet's
        per-pod disk figures are still merged in, as pods of their own, so the local-storage
        limit pass sees them on a sync that reads no pod cgroup.
        """
        summary = self.collect(only=None if pods else NODE_SECTIONS)
        if self.config.kubelet_summary is not None:
            self._maybe_refresh_kubelet()
            self._expire_kubelet()
            if self._kubelet_pods is not None:
                merged = merge_kubelet_pod_storage(summary.pods, self._kubelet_pods)
                summary = replace(summary, pods=tuple(merged))
        return summary

    @property
    def kubelet_summary_max_age(self) -> float:
        return KUBELET_SUMMARY_MAX_AGE_INTERVALS * self.config.kubelet_summary_interval

    def kubelet_summary_age(self) -> float | None:
        """Seconds since the last good kubelet fetch; None before the first."""
        if self._kubelet_cached_at is None:
            return None
        return max(self._monotonic() - self._kubelet_cached_at, 0.0)

    def _expire_kubelet(self) -> None:
        age = self.kubelet_summary_age()
        if (
            self._kubelet_pods is not None
            and age is not None
            and age > self.kubelet_summary_max_age
        ):
            log.warning(
                "kubelet summary expired (%.0fs old, bound %.0fs): pod disk figures dropped",
                age,
                self.kubelet_summary_max_age,
            )
            self._kubelet_pods = None

    async def refresh_kubelet(self) -> tuple[PodStats, ...] | None:
        """Fetch the kubelet summary now; its pod entries the core accepts (malformed or absurd
        ones are logged and dropped), None (logged) on failure."""
        cfg = self.config.kubelet_summary
        if cfg is None:
            return None
        if self._session is None:
            self._session = aiohttp.ClientSession()
        self._kubelet_fetched_at = self._monotonic()
        try:
            data = await fetch_summary(cfg, session=self._session, previous=self._kubelet_pods)
        except KubeletSummaryError as exc:
            log.warning("kubelet summary unavailable: %s", exc)
            return None
        self._kubelet_pods = kubelet_pod_stats(data)
        self._kubelet_cached_at = self._monotonic()
        return self._kubelet_pods

    def _maybe_refresh_kubelet(self) -> None:
        due = self._monotonic() - self._kubelet_fetched_at >= self.config.kubelet_summary_interval
        if due and (self._kubelet_task is None or self._kubelet_task.done()):
            self._kubelet_task = asyncio.create_task(self.refresh_kubelet())

    async def aclose(self) -> None:
        if self._kubelet_task is not None:
            self._kubelet_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._kubelet_task
        if self._session is not None:
            await self._session.close()
            self._session = None
