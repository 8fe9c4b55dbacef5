"""The eviction loop: fresh stats → ``EvictionManager.synchronize`` → at most one eviction,
within a second of a signal.

The kubelet syncs every 10 s on stats that may be another 10 s old, and one soft eviction of a
pod with a long grace period blocks its hard evictions for hours
(kubernetes/kubernetes#123872); ``EvictionLoop`` says what this loop does instead.
ARCHITECTURE.md ("The agent's inside") draws the path from a signal to the DELETE.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import AsyncIterable, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from agent.actions.evict import ActionResult
from agent.eviction import (
    BRAKE_WINDOW_SECONDS,
    EvictionBrake,
    EvictionDecision,
    EvictionManager,
    Observation,
    Summary,
    SummaryError,
    Threshold,
    get_threshold_quantity,
    is_hard_memory_threshold,
    kubelet_view,
    make_signal_observations,
    thresholds_met,
)
from agent.eviction.brake import Slot
from agent.logs import pod_ref
from agent.metrics import AgentMetrics
from agent.timeline import TimelineRecorder
from kube.objects import Pod

__all__ = ["EvictionLoop", "LoopStats", "Stats", "StatsRejected", "StatsSource", "psi_wakeups"]

log = logging.getLogger(__name__)

_FORGET_EVICTED_AFTER = 600.0


# What a stats source gives: the collector's typed readings, or the Summary API's JSON.
Stats = Summary | Mapping[str, Any]
StatsSource = Callable[[], Awaitable[Stats]]


class ActionRunner(Protocol):
    async def execute(
        self, decision: EvictionDecision, *, hard: bool, deadline: float
    ) -> ActionResult: ...


class CleanupWaiter(Protocol):
    async def wait_gone(self, uid: str, timeout: float) -> bool: ...


class Waker(Protocol):
    """What wakes the loop between syncs at a line the last sync draws (``wake``): re-armed
    after every sync with the thresholds and what was observed (``agent.memwatch``)."""

    def rearm(
        self, thresholds: Sequence[Threshold], observations: Mapping[str, Observation]
    ) -> None: ...


class StatsRejected(Exception):
    """The stats summary was refused by the core (``SummaryError``): skip this sync."""


@dataclass
class LoopStats:
    """Counters the tests and ``/readyz`` read."""

    syncs: int = 0
    errors: int = 0
    rejected: int = 0
    # the latest decisions and results only: a daemon in dry run decides every second
    decisions: deque[EvictionDecision] = field(default_factory=lambda: deque(maxlen=1000))
    results: deque[tuple[EvictionDecision, ActionResult]] = field(
        default_factory=lambda: deque(maxlen=1000)
    )
    last_sync_at: float = 0.0
    last_error: str = ""


def is_hard(decision: EvictionDecision) -> bool:
    """Hard thresholds and local-storage limit evictions act at once (grace 0 = hard)."""
    return decision.threshold is None or decision.threshold.grace_period == 0


class EvictionLoop:
    """Syncs on ``interval``, on a wake-up, and acts on the manager's decisions.

    - A sync runs every ``interval`` (``--housekeeping-interval``, 1 s) and at once when woken
      (``wake``): by a PSI trigger (``psi_wakeups``), by a waker the loop re-arms after every sync
      (``wakers``: the memory watches), or by the fast memory check (``check_memory``, every
      ``fast_check_interval``: the memory figures alone, a wake-up when a hard memory threshold
      becomes met). Every sync reads the stats afresh, and every iteration yields to the event
      loop at least once, even when a sync overruns its interval: HTTP probes, the pod watch and
      the systemd watchdog keep running while the node is under pressure.
    - Stats: the collector's typed ``Summary``, or the Summary API's JSON (a kubelet's, a test's)
      read once (``Summary.from_dict``). A Summary the core refuses (negative, non-finite, beyond
      int64, more available than capacity) is a skipped sync with a logged reason and
      ``eviction_agent_stats_rejected`` counted — never a decision. While no threshold is met and
      none was active last sync, a sync reads the node-level figures alone (``node_stats``): the
      decision is the same, and 110 pod cgroups are not read every second. What the core checks
      whatever the thresholds — the local-storage limits, on the kubelet's per-pod disk figures —
      must come with ``node_stats``.
    - The active pods are the kubelet's view of the node's API pods (``kubelet_view``), taken
      once per sync with that sync's pod UIDs, so the manager, its ranking and the actions' last
      check all judge criticality as the kubelet would on this node; pods disputing one static
      pod are logged once, as a warning. A pod whose eviction was accepted is left out until the
      informer sees it terminating or gone: never evicted twice. A failed attempt is retried by a
      later sync on fresh stats, so an unreachable API server delays an eviction but never
      duplicates one.
    - At most one pod per sync (the core's rule; the local-storage pass may return several). A
      hard eviction is carried out in line, then the loop waits for the pod to be gone (deleted or
      terminal, as the informer sees it), bounded by ``cleanup_timeout`` (the kubelet's 30 s). A
      soft eviction runs in the background: while it is in progress further soft decisions are
      not acted on, hard ones are — a hard decision for the same pod cancels the soft attempt and
      evicts the hard way.
    - The brake (``agent.eviction.brake``, ``--max-evictions-per-minute``): a soft or
      local-storage decision that finds the 60 s window full is held back — counted in
      ``eviction_agent_evictions_held_back``, logged and reported once per pod per window
      (``on_held_back``: the daemon's ``EvictionHeldBack`` Event) — and decided again by a later
      sync on fresh stats; a hard-threshold decision still proceeds and counts in the window.
    - Nothing a sync can raise stops the loop; with a timeline (``--timeline-dir``,
      ``agent.timeline``) every sync, attempt and hold-back is also recorded, and whatever the
      timeline raises is logged, never a failed sync.
    """

    def __init__(
        self,
        manager: EvictionManager,
        *,
        stats: StatsSource,
        pods: Callable[[], list[Pod]],
        node_stats: StatsSource | None = None,
        actions: ActionRunner,
        cleanup: CleanupWaiter | None = None,
        metrics: AgentMetrics | None = None,
        interval: float = 1.0,
        fast_check: Callable[[], Stats] | None = None,
        fast_check_interval: float = 0.2,
        cleanup_timeout: float = 30.0,
        hard_action_timeout: float = 5.0,
        soft_action_timeout: float = 300.0,
        on_sync: Callable[[], None] | None = None,
        wakers: Sequence[Waker] = (),
        clock: Callable[[], float] = time.time,
        brake: EvictionBrake | None = None,
        on_held_back: Callable[[EvictionDecision, str], None] | None = None,
        timeline: TimelineRecorder | None = None,
    ) -> None:
        self.manager = manager
        self.stats_source = stats
        self.node_stats = node_stats
        self.pods = pods
        self.actions = actions
        self.cleanup = cleanup
        self.metrics = metrics
        self.interval = interval
        self.fast_check = fast_check
        self.fast_check_interval = fast_check_interval
        self.cleanup_timeout = cleanup_timeout
        self.hard_action_timeout = hard_action_timeout
        self.soft_action_timeout = soft_action_timeout
        self.on_sync = on_sync
        self.wakers = list(wakers)
        self.clock = clock
        self.brake = brake
        self.on_held_back = on_held_back
        self.timeline = timeline
        self._held: dict[str, float] = {}  # pod uid → when its hold was last reported
        self._disputed: dict[str, tuple[str, ...]] = {}  # static pod UID → claims last logged
        self.stats = LoopStats()
        self.evicted: dict[str, float] = {}
        self._soft: tuple[str, asyncio.Task[None]] | None = None
        self._wake = asyncio.Event()
        self._wake_reason = "interval"
        self._memory_met = False

    # --- triggers ------------------------------------------------------------------------------

    def wake(self, reason: str) -> None:
        """Run a sync now (PSI trigger, memory check); coalesces with one already pending."""
        if not self._wake.is_set():
            self._wake_reason = reason
            self._wake.set()

    async def run(self) -> None:
        """Sync forever; cancel to stop (an in-flight soft eviction is cancelled with it)."""
        fast = asyncio.create_task(self._fast_check_loop()) if self.fast_check else None
        try:
            while True:
                started = time.monotonic()
                trigger = self._wake_reason if self._wake.is_set() else "interval"
                self._wake.clear()
                await self.sync_once(trigger)
                remaining = self.interval - (time.monotonic() - started)
                if remaining > 0 and not self._wake.is_set():
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._wake.wait(), remaining)
                else:
                    await asyncio.sleep(0)  # overran (or woken): still let the others run
        finally:
            if fast is not None:
                fast.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await fast
            await self.aclose()

    async def aclose(self) -> None:
        if self._soft is not None:
            task = self._soft[1]
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
            self._soft = None

    @property
    def fast_check_active(self) -> bool:
        """The fast memory check runs: a reader and a hard memory threshold to check."""
        return self.fast_check is not None and any(
            is_hard_memory_threshold(t) for t in self.manager.thresholds
        )

    async def _fast_check_loop(self) -> None:
        if not self.fast_check_active:
            return
        while True:
            await asyncio.sleep(self.fast_check_interval)
            self.check_memory()

    def check_memory(self) -> bool:
        """One fast memory check: read the memory figures alone and wake the loop when a hard
        memory threshold has just become met; whether one is met (False when the read fails:
        a broken reader must not stop the check)."""
        assert self.fast_check is not None
        hard = [t for t in self.manager.thresholds if is_hard_memory_threshold(t)]
        try:
            observations, _ = make_signal_observations(_summary(self.fast_check()))
            met = bool(thresholds_met(hard, observations, False))
        except Exception as exc:
            log.debug("fast memory check failed", extra={"err": str(exc)})
            return False
        if met and not self._memory_met:
            self.wake("memory")
        self._memory_met = met
        return met

    # --- one sync ------------------------------------------------------------------------------

    def _active_pods(self, summary: Summary) -> list[Pod]:
        """The pods this sync may rank: the kubelet's view (``kubelet_view``) of every active
        pod — a pod being evicted still counts as a claim —, less those already evicted."""
        now = self.clock()
        for uid, at in list(self.evicted.items()):
            if now - at > _FORGET_EVICTED_AFTER:
                del self.evicted[uid]
        view = kubelet_view(self.pods(), node_pod_uids=(s.pod_ref.uid for s in summary.pods))
        if summary.pods:  # node-level stats alone (``node_stats``) name no pod to dispute
            self._log_disputed(view.disputed)
        present = {p.uid for p in view.pods}
        for uid in list(self.evicted):
            if uid not in present:
                del self.evicted[uid]
        return [p for p in view.pods if p.uid not in self.evicted]

    def _log_disputed(self, disputed: Mapping[str, tuple[Pod, ...]]) -> None:
        """Warn once about each static pod that several pods claim as its mirror."""
        current = {uid: tuple(sorted(_key(p) for p in pods)) for uid, pods in disputed.items()}
        for uid, pods in current.items():
            if self._disputed.get(uid) != pods:
                log.warning(
                    "pods claim the same static pod as its mirror: none is trusted",
                    extra={"static_pod_uid": uid, "pods": list(pods)},
                )
        self._disputed = current

    async def sync_once(self, trigger: str = "interval") -> list[ActionResult]:
        """One sync; never raises (except cancellation)."""
        try:
            return await self._sync(trigger)
        except asyncio.CancelledError:
            raise
        except StatsRejected as exc:
            self.stats.errors += 1
            self.stats.rejected += 1
            self.stats.last_error = str(exc)
            if self.metrics is not None:
                self.metrics.sync_errors.inc()
                self.metrics.stats_rejected.inc()
            log.warning("stats summary rejected, sync skipped", extra={"reason": str(exc)})
            return []
        except Exception as exc:
            self.stats.errors += 1
            self.stats.last_error = f"{type(exc).__name__}: {exc}"
            if self.metrics is not None:
                self.metrics.sync_errors.inc()
            log.exception("sync failed", extra={"err": self.stats.last_error})
            return []

    async def _sync(self, trigger: str) -> list[ActionResult]:
        began = time.perf_counter()
        summary = await self._read_stats()
        active_pods = self._active_pods(summary)
        decisions = self.manager.synchronize(summary, active_pods)
        self.stats.syncs += 1
        self.stats.last_sync_at = self.clock()
        self._record_sync(trigger, time.perf_counter() - began)
        record = self.manager.last_sync
        if record is not None:
            self._to_timeline(
                lambda timeline: timeline.record_sync(
                    at=self.stats.last_sync_at,
                    observations=record.observations,
                    thresholds=self.manager.thresholds,
                    met=[t.signal for t in record.met],
                    summary=summary,
                )
            )
        self._rearm()
        if self.on_sync is not None:
            self.on_sync()
        results: list[ActionResult] = []
        hard_uids: list[str] = []
        for decision in decisions:
            self.stats.decisions.append(decision)
            hard = is_hard(decision)
            uid = decision.pod.uid
            if self._soft is not None and self._soft[1].done():
                self._soft = None
            if not hard:
                if self._soft is not None:
                    log.debug(
                        "soft eviction in progress, decision deferred",
                        extra={"pod": pod_ref(decision.pod)},
                    )
                    continue
                admitted, slot = self._admit(decision, force=False)
                if not admitted:
                    continue
                task = asyncio.create_task(self._soft_eviction(decision, summary, slot))
                self._soft = (uid, task)
                continue
            if self._soft is not None and self._soft[0] == uid:
                log.info(
                    "hard threshold: replacing the soft eviction in progress",
                    extra={"pod": pod_ref(decision.pod)},
                )
                await self.aclose()
            # hard thresholds pass the brake (one per sync); local-storage decisions do not
            admitted, slot = self._admit(decision, force=decision.threshold is not None)
            if not admitted:
                continue
            result = await self._act(decision, summary, hard=True, slot=slot)
            results.append(result)
            if result.done and uid:
                hard_uids.append(uid)
        if hard_uids and self.cleanup is not None:
            await asyncio.gather(
                *(self.cleanup.wait_gone(uid, self.cleanup_timeout) for uid in hard_uids)
            )
        return results

    def _rearm(self) -> None:
        """Re-arm the wakers on this sync's thresholds and observations; a waker that fails is
        logged and never stops the sync."""
        for waker in self.wakers:
            try:
                waker.rearm(self.manager.thresholds, self.manager.last_observations)
            except Exception as exc:
                log.warning("wake-up not re-armed", extra={"err": f"{type(exc).__name__}: {exc}"})

    async def _read_stats(self) -> Summary:
        """Fresh stats; node-level only while nothing is met (see ``node_stats``)."""
        if (
            self.node_stats is not None
            and self.manager.last_sync is not None
            and not self.manager.thresholds_met
        ):
            summary = _summary(await self.node_stats())
            observations, _ = make_signal_observations(summary)
            if not thresholds_met(self.manager.thresholds, observations, False):
                return summary
        return _summary(await self.stats_source())

    async def _soft_eviction(
        self, decision: EvictionDecision, summary: Summary, slot: Slot | None
    ) -> None:
        result = await self._act(decision, summary, hard=False, slot=slot)
        if result.done and self.cleanup is not None and decision.pod.uid:
            await self.cleanup.wait_gone(decision.pod.uid, self.cleanup_timeout)

    def _admit(self, decision: EvictionDecision, *, force: bool) -> tuple[bool, Slot | None]:
        """(may act, the brake's slot to release if nothing is evicted; None without a brake)."""
        if self.brake is None or not self.brake.enabled:
            return True, None
        slot = self.brake.acquire(force=force)
        if slot is None:
            self._hold(decision)
            return False, None
        if slot.forced:
            log.warning(
                "eviction brake full, hard threshold proceeds",
                extra={"pod": pod_ref(decision.pod), "signal": decision.signal},
            )
        return True, slot

    def _hold(self, decision: EvictionDecision) -> None:
        assert self.brake is not None
        if self.metrics is not None:
            self.metrics.evictions_held_back.labels(decision.signal).inc()
        now = self.clock()
        self._to_timeline(
            lambda timeline: timeline.record_held_back(
                at=now, pod=_key(decision.pod), signal=decision.signal
            )
        )
        for uid, at in list(self._held.items()):
            if now - at >= BRAKE_WINDOW_SECONDS:
                del self._held[uid]
        uid = decision.pod.uid
        if uid in self._held:
            return
        self._held[uid] = now
        note = (
            f"Eviction held back: {self.brake.in_window()} evictions in the last "
            f"{BRAKE_WINDOW_SECONDS:g}s reach the limit of {self.brake.limit} per minute "
            f"(--max-evictions-per-minute); next possible in {self.brake.retry_after():.0f}s. "
            f"{decision.message}"
        )
        log.warning(
            "eviction held back by the brake",
            extra={
                "pod": pod_ref(decision.pod),
                "signal": decision.signal,
                "limit": self.brake.limit,
                "retry_in": round(self.brake.retry_after(), 1),
            },
        )
        if self.on_held_back is not None:
            try:
                self.on_held_back(decision, note)
            except Exception as exc:  # reporting must never stop a sync
                log.warning("held-back report failed", extra={"err": str(exc)})

    async def _act(
        self, decision: EvictionDecision, summary: Summary, *, hard: bool, slot: Slot | None = None
    ) -> ActionResult:
        timeout = self.hard_action_timeout if hard else self.soft_action_timeout
        evicted = False
        try:
            result = await self.actions.execute(
                decision, hard=hard, deadline=self.clock() + timeout
            )
            evicted = result.done
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("eviction failed", extra={"pod": pod_ref(decision.pod), "err": str(exc)})
            result = ActionResult("failed", message=f"{type(exc).__name__}: {exc}")
        finally:
            if slot is not None and not evicted and self.brake is not None:
                self.brake.release(slot)  # the brake counts evictions, not attempts
        self.stats.results.append((decision, result))
        if result.done and decision.pod.uid:
            self.evicted[decision.pod.uid] = self.clock()
        self._record_action(decision, result)
        log.info(
            "eviction result",
            extra={
                "pod": pod_ref(decision.pod),
                "signal": decision.signal,
                "result": result.outcome,
                "method": result.method,
                "err": result.message if not result.done else None,
            },
        )
        return result

    # --- metrics -------------------------------------------------------------------------------

    def _record_sync(self, trigger: str, seconds: float) -> None:
        m = self.metrics
        if m is None:
            return
        m.syncs.labels(trigger).inc()
        m.sync_duration.observe(seconds)
        if self.brake is not None:
            m.brake_window.set(self.brake.in_window())
        m.last_sync.set(self.clock())
        record = self.manager.last_sync
        if record is None:
            return
        for signal, obs in record.observations.items():
            m.signal_available.labels(signal).set(obs.available)
            m.signal_capacity.labels(signal).set(obs.capacity)
        for t in self.manager.thresholds:
            if not t.operator:
                continue
            seen = record.observations.get(t.signal)
            capacity = seen.capacity if seen is not None else 0
            kind = "hard" if t.grace_period == 0 else "soft"
            m.threshold.labels(t.signal, kind).set(get_threshold_quantity(t.value, capacity))
        for condition in ("MemoryPressure", "DiskPressure", "PIDPressure"):
            m.node_condition.labels(condition).set(
                1 if condition in self.manager.node_conditions else 0
            )

    def _record_action(self, decision: EvictionDecision, result: ActionResult) -> None:
        first = _first_observed(self.manager, decision.threshold)
        reaction = (
            max(result.requested_at - first, 0)
            if result.requested_at and first is not None
            else None
        )
        self._to_timeline(
            lambda timeline: timeline.record_eviction(
                at=result.requested_at or self.clock(),
                pod=_key(decision.pod),
                signal=decision.signal,
                result=result.outcome,
                reaction_seconds=reaction,
                message=decision.message if result.done else result.message or decision.message,
            )
        )
        m = self.metrics
        if m is None:
            return
        m.evictions.labels(decision.signal, result.outcome).inc()
        if not result.requested_at:
            return
        obs_time = _observation_time(self.manager, decision.signal)
        if obs_time is not None:
            m.stats_age.labels(decision.signal).observe(max(result.requested_at - obs_time, 0))
        if reaction is not None:
            m.reaction_latency.labels(decision.signal).observe(reaction)

    def _to_timeline(self, write: Callable[[TimelineRecorder], None]) -> None:
        """Hand a record to the timeline (``--timeline-dir``); it must never stop a sync."""
        if self.timeline is None:
            return
        try:
            write(self.timeline)
        except Exception as exc:
            log.warning("timeline record failed", extra={"err": f"{type(exc).__name__}: {exc}"})


def _key(pod: Pod) -> str:
    return f"{pod.namespace}/{pod.name}"


def _summary(stats: Stats) -> Summary:
    """Typed readings as they are; the Summary API's JSON (a kubelet's, a test's) read and
    checked once, ``StatsRejected`` when the core refuses it."""
    if isinstance(stats, Summary):
        return stats
    try:
        return Summary.from_dict(stats)
    except SummaryError as exc:
        raise StatsRejected(str(exc)) from exc


def _observation_time(manager: EvictionManager, signal: str) -> float | None:
    record = manager.last_sync
    if record is None:
        return None
    obs = record.observations.get(signal)
    return obs.time if obs is not None else None


def _first_observed(manager: EvictionManager, threshold: Threshold | None) -> float | None:
    if threshold is None:
        return None
    return manager.thresholds_first_observed_at.get(threshold)


async def psi_wakeups(loop: EvictionLoop, events: AsyncIterable[Any]) -> None:
    """Wake the loop for every PSI event (``PressureMonitor`` iterates them)."""
    async for event in events:
        if getattr(event, "reason", "") != "gone":
            loop.wake("psi")
