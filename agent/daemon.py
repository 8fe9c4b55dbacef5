"""``eviction-agent run`` assembled: the pod informer, the stats collector, the manager, the loop
and its wake-ups, the writes, HTTP and systemd. Kept apart from the CLI so tests drive exactly what
the daemon runs — against kubesim, with a fake stats source in place of the cgroup readers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.actions.disruption import DisruptionTargetWriter
from agent.actions.events import EventWriter
from agent.actions.evict import OUTCOMES, PodEviction
from agent.actions.node_conditions import NodeConditions
from agent.actions.node_taints import NodeTaints
from agent.config import SERVICE_ACCOUNT_CA, AgentConfig
from agent.eviction import (
    EvictionBrake,
    EvictionDecision,
    EvictionManager,
    Summary,
)
from agent.eviction.manager import (
    SIGNAL_EMPTY_DIR_FS_LIMIT,
    SIGNAL_EPHEMERAL_CONTAINER_FS_LIMIT,
    SIGNAL_EPHEMERAL_POD_FS_LIMIT,
)
from agent.http import HttpLimits, HttpServer, health_from, make_app, start_http
from agent.informer import PodInformer
from agent.loop import EvictionLoop, Stats, StatsSource, psi_wakeups
from agent.memwatch import MemoryWatches, WakeSource
from agent.metrics import AgentMetrics
from agent.systemd import Notifier, watchdog_loop
from agent.timeline import TimelineRecorder
from evictor.api.health import ApiHealth
from evictor.api.watching import WatchState
from evictor.client import Evictor
from kube.cliutil import VERSION

if TYPE_CHECKING:
    from agent.sources.collector import SummaryCollector

__all__ = ["Agent", "WallClock"]

log = logging.getLogger(__name__)

# PSI: wake when tasks stall on memory for 100 ms within 1 s (the kernel minimum window is 500 ms).
_PSI_TRIGGER = "some 100000 1000000"
PRESSURE_CONDITIONS = ("MemoryPressure", "DiskPressure", "PIDPressure")


def _watch_failure(state: WatchState) -> str:
    """Why the pod watch is down, as ``/readyz`` may say it: the status or the kind of error,
    never the answer's text (a server's message can quote anything)."""
    failures = state.consecutive_failures
    if not failures:
        return "restarting (no event or bookmark within its bound)"
    if state.last_status == 200:
        why = "an answer that could not be read"
    elif state.last_status:
        why = f"the API server answered {state.last_status}"
    else:
        why = f"no answer ({state.last_error.partition(':')[0] or 'error'})"
    return f"{why}, {failures} failed list or watch{'es' if failures > 1 else ''} in a row"


class WallClock:
    def now(self) -> float:
        return time.time()


class Agent:
    """One running agent; use ``async with Agent(cfg, api_client=...)``.

    Start order: HTTP first (probes answer while starting), the pod watch, the PSI monitors and the
    loop; ``READY=1`` goes to systemd after the first sync over listed pods, then ``WATCHDOG=1``
    while syncs keep completing. At stop the agent's conditions are written ``False`` and its taints
    removed (a taint left by an agent that is gone would bar the node for good).

    ``/healthz`` means "the process loop runs" (a stalled sync). ``/readyz`` and the watchdog also
    tell whether the agent can still see and act (``api_problem``). What can start a sync between
    intervals depends on the kernel and the install; ``wake_sources`` says which.
    """

    def __init__(
        self,
        config: AgentConfig,
        *,
        api_client: Any,
        stats: StatsSource | None = None,
        fast_check: Callable[[], Stats] | None = None,
        metrics: AgentMetrics | None = None,
        serve_http: bool = True,
        use_psi: bool = True,
        notifier: Notifier | None = None,
        cleanup_timeout: float = 30.0,
        fast_check_interval: float = 0.2,
        watch_timeout: int = 300,
        startup_timeout: float = 5.0,
        psi_triggers: bool = True,
        psi_poll_interval: float = 1.0,
        psi_rescan_interval: float = 10.0,
        http_limits: HttpLimits | None = None,
        memcg_notification: bool | None = None,
        usage_watch: bool = True,
        api_failure_bound: float = 60.0,
    ) -> None:
        self.config = config
        self.api_client = api_client
        self.api_failure_bound = api_failure_bound
        self.metrics = metrics or AgentMetrics()
        health = getattr(api_client, "health", None)
        if isinstance(health, ApiHealth):  # evictor.api.connect's client counts its answers
            health.listeners.append(
                lambda code: self.metrics.api_errors.labels(code=str(code)).inc()
            )
        self.notifier = notifier or Notifier()
        self.serve_http = serve_http
        self.http_limits = http_limits or HttpLimits()
        self.memcg_notification = (
            config.kernel_memcg_notification if memcg_notification is None else memcg_notification
        )
        self.use_psi = use_psi
        self.psi_triggers = psi_triggers
        self.psi_poll_interval = psi_poll_interval
        self.psi_rescan_interval = psi_rescan_interval
        self.startup_timeout = startup_timeout
        self.informer = PodInformer(api_client, config.node_name, watch_timeout=watch_timeout)
        self.collector: SummaryCollector | None = None
        node_stats: StatsSource | None = None
        if stats is None:
            stats, default_fast, node_stats = self._default_stats()
            fast_check = fast_check or default_fast
        self.manager = EvictionManager(config.manager_config(), WallClock())
        self.timeline = (
            TimelineRecorder(config.timeline_dir, node=config.node_name, agent_version=VERSION)
            if config.timeline_dir
            else None
        )
        if self.timeline is not None:
            node_stats = None  # the lead-in shows the pods' climb: every sync reads them
        # the writes: the eviction with its Event and condition, the node's conditions and taints
        self.events = EventWriter(api_client, node_name=config.node_name, dry_run=config.dry_run)
        self.evictions = PodEviction(
            Evictor(api_client) if api_client is not None else None,
            events=self.events,
            disruption=DisruptionTargetWriter(api_client),
            mode=config.eviction_mode,
            dry_run=config.dry_run,
            preference_namespaces=config.eviction_preference_namespaces,
        )
        self.node_conditions = NodeConditions(
            api_client,
            node_name=config.node_name,
            dry_run=config.dry_run,
            report_frequency=config.node_status_report_frequency,
        )
        self.node_taints = NodeTaints(
            api_client, node_name=config.node_name, dry_run=config.dry_run
        )
        self.loop = EvictionLoop(
            self.manager,
            stats=stats,
            pods=self.informer.active_pods,
            node_stats=node_stats,
            actions=self.evictions,
            cleanup=self.informer,
            metrics=self.metrics,
            interval=config.housekeeping_interval,
            fast_check=fast_check,
            fast_check_interval=fast_check_interval,
            cleanup_timeout=cleanup_timeout,
            on_sync=self._after_sync,
            brake=EvictionBrake(config.max_evictions_per_minute, WallClock()),
            on_held_back=self._held_back,
            timeline=self.timeline,
        )
        self.memory_watches = MemoryWatches(
            self.loop.wake,
            layout=lambda: self.collector.layout if self.collector is not None else None,
            node_cgroup=config.node_cgroup,
            kernel_notification=self.memcg_notification,
            usage_watch=usage_watch,
        )
        self.loop.wakers.append(self.memory_watches)  # re-armed by the loop after each sync
        self._wake_sources: list[WakeSource] | None = None
        self.metrics.start_at_zero(self._eviction_signals(), OUTCOMES)
        # evaluated at each scrape: readiness as /readyz would answer it now
        self.metrics.ready.set_function(lambda: 1.0 if self.ready()[0] else 0.0)
        self.http_port: int | None = None
        self._runner: HttpServer | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        self._ready_sent = False
        self._psi: list[Any] = []

    def _eviction_signals(self) -> list[str]:
        """The signals an eviction may name: the thresholds', and the local-storage limits'
        where pods carry disk figures (the kubelet's summary)."""
        signals = list(dict.fromkeys(t.signal for t in self.config.thresholds))
        if self.config.eviction.local_storage_capacity_isolation and (
            self.config.kubelet_summary_url
        ):
            signals += [
                SIGNAL_EMPTY_DIR_FS_LIMIT,
                SIGNAL_EPHEMERAL_POD_FS_LIMIT,
                SIGNAL_EPHEMERAL_CONTAINER_FS_LIMIT,
            ]
        return signals

    def _default_stats(
        self,
    ) -> tuple[StatsSource, Callable[[], Stats], StatsSource | None]:
        from agent.sources import KubeletSummaryConfig, Roots, SourceConfig, SummaryCollector
        from agent.sources.collector import MEMORY_SECTIONS

        cfg = self.config
        roots = Roots.from_strings(
            proc_root=cfg.proc_root,
            cgroup_root=cfg.cgroup_root,
            kubelet_root=cfg.kubelet_root,
            runtime_root=cfg.runtime_root,
        )
        kubelet = (
            KubeletSummaryConfig(
                url=cfg.kubelet_summary_url,
                token_path=Path(cfg.kubelet_token_file) if cfg.kubelet_token_file else None,
                ca_path=Path(cfg.kubelet_ca_file or SERVICE_ACCOUNT_CA),
            )
            if cfg.kubelet_summary_url
            else None
        )
        collector = SummaryCollector(
            SourceConfig(
                roots=roots,
                node_name=cfg.node_name,
                kubepods_parent=cfg.node_cgroup,
                node_cgroup=cfg.node_cgroup,
                memory_capacity=cfg.memory_capacity,
                kubelet_summary=kubelet,
            ),
            lookup=self.informer.lookup,
        )
        self.collector = collector
        if kubelet is not None:

            def kubelet_age() -> float:
                age = collector.kubelet_summary_age()
                return math.nan if age is None else age

            self.metrics.kubelet_summary_age.set_function(kubelet_age)

        def fast() -> Summary:
            return collector.collect(only=MEMORY_SECTIONS)

        async def node_only() -> Summary:
            # no pod cgroup read; the kubelet's pod disk figures (local-storage limits, checked
            # on every sync) still come along
            return await collector.get_summary(pods=False)

        return collector.get_summary, fast, node_only

    # --- state ---------------------------------------------------------------------------------

    def ready(self) -> tuple[bool, str]:
        if not self.informer.synced.is_set():
            return False, "pods not listed yet"
        if self.loop.stats.syncs == 0:
            return False, "no sync yet"
        why = self.api_problem()
        if why:
            return False, why
        return True, ""

    def api_problem(self) -> str:
        """Why the agent cannot see or act through the API for ``api_failure_bound`` seconds or
        longer ("": it can).

        When every API answer has been a 401 or 403 (after ``evictor.api.connect`` refreshed the
        credentials) or the pod watch has not been live for that long, ``/readyz`` answers 503 with
        this reason and the watchdog pings stop, so systemd restarts the agent (``Restart=`` in the
        unit) instead of leaving the node protected by a stale pod view. Failed answers count in
        ``eviction_agent_api_errors_total{code}``. The reason is the class of failure and its counts
        (status codes, the kind of request), never a namespace, a pod or the server's text: a
        probe's body is visible to whoever reaches the port.
        """
        bound = self.api_failure_bound
        health = getattr(self.api_client, "health", None)
        if isinstance(health, ApiHealth) and health.refused_since is not None:
            refused = health.refused_for()
            if refused >= bound:
                counts = ", ".join(f"{n}×{code}" for code, n in sorted(health.refusals.items()))
                return (
                    f"the API server refuses the agent's requests for {refused:.0f}s"
                    f" ({counts}; last: {health.last_refusal}), also after refreshing its"
                    " credentials"
                )
        state = self.informer.state
        if state.down_since is not None:
            down = time.monotonic() - state.down_since
            if down >= bound:
                return f"pod watch not live for {down:.0f}s: {_watch_failure(state)}"
        return ""

    def _after_sync(self) -> None:
        self.metrics.informer_connected.set(1 if self.informer.connected else 0)
        self._report_wake_sources()
        if self.config.node_conditions or self.config.node_taints:
            active = dict(
                zip(
                    PRESSURE_CONDITIONS,
                    (
                        self.manager.is_under_memory_pressure(),
                        self.manager.is_under_disk_pressure(),
                        self.manager.is_under_pid_pressure(),
                    ),
                    strict=True,
                )
            )
            self._spawn(self._report_node(active))
        if not self._ready_sent and self.ready()[0]:
            self._ready_sent = True
            self.notifier.ready(f"watching {len(self.informer.pods)} pods")
            log.info(
                "agent ready",
                extra={"node": self.config.node_name, "pods": len(self.informer.pods)},
            )

    async def _report_node(self, active: dict[str, bool]) -> None:
        """The taints, then the conditions, one after the other: the status patch would change
        the node's resourceVersion between the taints' read and write (a 409, read again)."""
        if self.config.node_taints:
            await self.node_taints.report(active)
        if self.config.node_conditions:
            await self.node_conditions.report(active)

    def wake_sources(self) -> list[WakeSource]:
        """What can start a sync, and how: kernel announcements armed, files polled, refusals with
        their reasons.

        It depends on the kernel and the install (cgroup v1 or v2, root or the DaemonSet's read-only
        mounts, Linux before or after 6.5 for PSI); it is logged once when the agent starts and
        again whenever it changes (kubepods created after the agent, a cgroup gone), and exported as
        ``eviction_agent_wake_source{source,target,mode}``.
        """
        out = self.memory_watches.report()
        for monitor in self._psi:
            mode = {"trigger": "announced", "poll": "polled"}.get(monitor.mode.value, "unavailable")
            out.append(WakeSource("psi", str(monitor.path), mode, monitor.reason))
        if self.loop.fast_check_active:
            out.append(
                WakeSource(
                    "fast-check",
                    "node memory",
                    "polled",
                    f"every {self.loop.fast_check_interval * 1000:g} ms",
                )
            )
        out.append(WakeSource("interval", "full sync", "polled", f"every {self.loop.interval:g}s"))
        return sorted(out)

    def _report_wake_sources(self) -> None:
        sources = self.wake_sources()
        if sources == self._wake_sources:
            return
        self._wake_sources = sources
        gauge = self.metrics.wake_source
        gauge.clear()
        for s in sources:
            gauge.labels(s.source, s.target, s.mode).set(1)
        log.info(
            "wake sources",
            extra={"sources": [f"{s.source} {s.target}: {s.mode} ({s.detail})" for s in sources]},
        )

    def _held_back(self, decision: EvictionDecision, note: str) -> None:
        self._spawn(self.events.held_back(decision, note))

    def _spawn(self, work: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.create_task(work)
        self._tasks.append(task)
        task.add_done_callback(self._forget)

    def _forget(self, task: asyncio.Task[Any]) -> None:
        with contextlib.suppress(ValueError):
            self._tasks.remove(task)

    # --- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> Agent:
        if self.serve_http:
            app = make_app(
                self.metrics,
                healthy=health_from(lambda: self.loop.stats.last_sync_at, self._stall_limit()),
                ready=self.ready,
            )
            host, port = self.config.listen
            self._runner, self.http_port = await start_http(
                app, host, port, limits=self.http_limits
            )
        self._tasks.append(asyncio.create_task(self.informer.run(), name="pod-informer"))
        # The first sync should see the node's pods; with the API down, protect the node anyway.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.informer.synced.wait(), self.startup_timeout)
        if self.use_psi:
            await self._start_psi()
        self._tasks.append(asyncio.create_task(self.loop.run(), name="eviction-loop"))
        if self.timeline is not None:
            self._tasks.append(
                asyncio.create_task(self._write_timeline(self.timeline), name="timeline")
            )
        self._tasks.append(
            asyncio.create_task(
                watchdog_loop(self.notifier, lambda: self.health()[0] and not self.api_problem()),
                name="watchdog",
            )
        )
        log.info(
            "agent started",
            extra={
                "node": self.config.node_name,
                "mode": self.config.eviction_mode,
                "dry_run": self.config.dry_run,
                "interval": self.config.housekeeping_interval,
                "listen": f"{self.config.listen[0]}:{self.http_port}",
            },
        )
        return self

    def _stall_limit(self) -> float:
        # a sync may legitimately block for one hard eviction and its bounded cleanup wait
        return (
            max(30.0, 10 * self.config.housekeeping_interval)
            + self.loop.cleanup_timeout
            + self.loop.hard_action_timeout
        )

    def health(self) -> tuple[bool, str]:
        last = self.loop.stats.last_sync_at
        if last and time.time() - last > self._stall_limit():
            return False, "loop stalled"
        return True, ""

    def psi_paths(self) -> list[Path]:
        """Memory PSI files to watch: the node's, and the kubepods cgroup's where it has one.

        ``/proc/pressure/memory`` counts every task on the host; the kubepods cgroup's
        ``memory.pressure`` (cgroup v2, or the ``unified`` tree of a hybrid host) counts the
        pods only — the stalls eviction can relieve — and is the node's own when the agent runs
        in a kind/kwok node container, where ``/proc/pressure`` is the host's.
        """
        from agent.sources.cgroups import CgroupError, detect_layout, pressure_path

        paths: list[Path] = []
        node = Path(self.config.proc_root) / "pressure" / "memory"
        if node.exists():
            paths.append(node)
        layout = None
        if self.collector is not None:
            layout = self.collector.layout
        else:
            with contextlib.suppress(CgroupError, OSError):
                layout = detect_layout(Path(self.config.cgroup_root))
        if layout is not None and layout.kubepods is not None:
            pods = pressure_path(layout, layout.kubepods)
            if pods is not None:
                paths.append(pods)
        return paths

    async def _start_psi(self) -> None:
        if not await self._arm_psi():
            log.info("PSI not available yet, interval syncs only")
        # the kubelet may create kubepods after us, and a removed cgroup ends its monitor
        self._tasks.append(asyncio.create_task(self._rescan_psi(), name="psi-rescan"))

    async def _arm_psi(self) -> int:
        """Start a monitor on every PSI file not watched yet; how many are watched."""
        from agent.sources.psi import PressureMonitor, Trigger

        watched = {m.path for m in self._psi}
        for path in self.psi_paths():
            if path in watched:
                continue
            monitor = PressureMonitor(
                path,
                Trigger.parse(_PSI_TRIGGER),
                poll_interval=self.psi_poll_interval,
                allow_triggers=self.psi_triggers,
            )
            try:
                await monitor.start()
            except Exception as exc:
                log.warning(
                    "PSI monitor failed to start", extra={"path": str(path), "err": str(exc)}
                )
                continue
            self._psi.append(monitor)
            self._tasks.append(asyncio.create_task(self._psi_wakeups(monitor), name=f"psi {path}"))
        return len(self._psi)

    async def _psi_wakeups(self, monitor: Any) -> None:
        try:
            await psi_wakeups(self.loop, monitor)
        finally:
            if monitor in self._psi:  # gone (cgroup removed): the rescan may arm it again
                self._psi.remove(monitor)
                await monitor.aclose()

    async def _rescan_psi(self) -> None:
        while True:
            await asyncio.sleep(self.psi_rescan_interval)
            await self._arm_psi()

    async def _write_timeline(self, timeline: TimelineRecorder) -> None:
        """Write the timeline's records every second, in a thread: a slow disk never delays a
        sync (the recorder bounds what waits)."""
        while True:
            await asyncio.sleep(1.0)
            await asyncio.to_thread(timeline.flush)

    async def stop(self) -> None:
        self.notifier.stopping()
        for task in self._tasks:
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        if self.timeline is not None:  # bounded: a hung disk must not hold the agent's stop
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.to_thread(self.timeline.close), 5.0)
        # A taint or a True condition left by an agent that is gone would keep pods off the
        # node (or mislead whoever reads it) for good; the kubelet's own stay in force.
        # Both writes share one bound: the DaemonSet's grace period is 10 s.
        clear_all = dict.fromkeys(PRESSURE_CONDITIONS, False)
        farewell: list[Coroutine[Any, Any, bool]] = []
        if self.config.node_conditions:
            farewell.append(self.node_conditions.report(clear_all, stopped=True))
        if self.config.node_taints:
            farewell.append(self.node_taints.report(clear_all, stopped=True))
        if farewell:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(5.0):
                    await asyncio.gather(*farewell, return_exceptions=True)
        for monitor in list(self._psi):
            await monitor.aclose()
        self._psi.clear()
        self.memory_watches.close()
        if self.collector is not None:
            await self.collector.aclose()
        if self.evictions.evictor is not None:
            with contextlib.suppress(Exception):
                await self.evictions.evictor.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> Agent:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
