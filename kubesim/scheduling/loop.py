"""The scheduler loop: kube-scheduler's ``scheduleOne`` driven live, decisions from ``scheduler``.

``SchedulerLoop`` is a kubesim controller: its informers (``informers``) keep a ``Snapshot``
and a ``SchedulingQueue`` current from the store's watch, as kube-scheduler's keep its cache and
queue from the API; each cycle pops one pod, decides with ``schedule_one`` (and ``preempt`` when
it fits nowhere), and acts through the API (``api_calls``). So the decision kubesim acts on is
the one ``python -m scheduler simulate`` gives for the same snapshot. ARCHITECTURE.md says what
is reproduced of ``pkg/scheduler/schedule_one.go`` and what is kept simple.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

from kube.objects import DEFAULT_SCHEDULER_NAME
from kubesim.core.errors import StatusError
from kubesim.core.store import ADDED, Event, Subscription
from kubesim.scheduling.api_calls import APICalls, truncate
from kubesim.scheduling.informers import WATCHED, Informers
from kubesim.scheduling.metrics import SchedulerMetrics
from scheduler import (
    Code,
    Framework,
    NominatingInfo,
    NominatingMode,
    PreemptionResult,
    QueuedPodInfo,
    ScheduleResult,
    SchedulingQueue,
    Snapshot,
    default_framework,
    fit_error_message,
    preempt,
    schedule_one,
)
from scheduler.config import KubeSchedulerConfiguration, default_configuration
from scheduler.hints import DEFAULT_PLUGIN_HINTS
from scheduler.queue import PodAlreadyPresentError
from scheduler.queue import events as qev

if TYPE_CHECKING:
    from kube.objects import Pod
    from kubesim.cluster import Cluster

__all__ = ["Decision", "SchedulerLoop"]

log = logging.getLogger("kubesim")

BACKOFF_FLUSH_PERIOD: Final = 1.0  # seconds of scheduler time, as upstream's flusher
LEFTOVER_FLUSH_PERIOD: Final = 30.0
MIN_TICK: Final = 0.005  # wall seconds: the flushers' period at tiny time scales
BATCH_SECONDS: Final = 0.02  # wall time scheduled before yielding to the API server
LIST_SLICE: Final = 500  # objects applied between yields while the first list is read
REASON_UNSCHEDULABLE: Final = "Unschedulable"
REASON_SCHEDULER_ERROR: Final = "SchedulerError"


@dataclass(frozen=True, slots=True)
class Decision:
    """One scheduling cycle as the loop acted on it (kept for tests and the demo).

    ``start_index`` is the round-robin index the cycle's ``schedule_one`` started from, so a
    caller can replay the decision on the same snapshot.
    """

    pod: str
    uid: str
    cycle: int
    start_index: int
    node: str = ""
    message: str = ""
    nominated_node: str | None = None
    victims: tuple[str, ...] = ()


class SchedulerLoop:
    """A kubesim controller: the default scheduler, or every profile of a
    KubeSchedulerConfiguration (``config``, ``kubesim serve --scheduler-config``).

    With a configuration, the loop is kube-scheduler run with that ``--config``: one queue
    (profiles share the queue sort), pods of every profile's ``schedulerName`` enter it, each
    is scheduled and preempts through its profile, its events are reported by its profile's
    name; a pod naming no profile is another scheduler's and is left alone. The queue's
    backoffs and ``percentageOfNodesToScore`` are the configuration's.

    A pod that fits nowhere preempts as kube-scheduler's DefaultPreemption does
    (``preemption_mode="sampled"``: a sample of the nodes from a random offset, drawn from the
    loop's ``rng``, seeded by ``seed``); ``"exhaustive"`` weighs every node and breaks full ties
    by node order, the decision ``scheduler simulate`` explains by default.

    The queue's periodic flushes (backoff every second, leftovers every 30 s) run on a clock
    scaled by the cluster's ``time_scale``, so backoffs are ``time_scale`` times shorter in wall
    time. The loop's work per pod does not grow with the number of pods: watch events are
    drained in bursts and applied in one pass, the snapshot is changed in place, a pod update
    that touches only status, ``spec.nodeName`` or bookkeeping carries the typed pod over
    (``status_update``), a bind is one shallow copy and one store write, and scheduling runs in
    slices of ``BATCH_SECONDS`` so the API server and the kubelets keep answering
    (``bench/kubesim_cluster.py`` measures it).
    """

    name = "scheduler"

    def __init__(
        self,
        *,
        scheduler_name: str = DEFAULT_SCHEDULER_NAME,
        percentage_of_nodes_to_score: int = 0,
        pod_initial_backoff: float = 1.0,
        pod_max_backoff: float = 10.0,
        pod_max_in_unschedulable_pods: float = 300.0,
        preemption_mode: Literal["exhaustive", "sampled"] = "sampled",
        seed: int = 0,
        framework: Framework | None = None,
        history: int = 10000,
        cross_node_preemption: bool = False,
        config: KubeSchedulerConfiguration | None = None,
        queueing_hints: bool = True,
    ) -> None:
        self.scheduler_name = scheduler_name
        # SchedulerQueueingHints (kube 1.32's default, on): the queue asks the in-tree plugins'
        # hints (scheduler.hints) whether an event may help a pod they rejected.
        self.queueing_hints = queueing_hints
        self.config = config
        self.percentage_of_nodes_to_score: int | None = percentage_of_nodes_to_score
        if config is not None:
            self.scheduler_name = config.scheduler_names[0]
            self.percentage_of_nodes_to_score = None  # each profile's, or the configuration's
            pod_initial_backoff = float(config.pod_initial_backoff_seconds)
            pod_max_backoff = float(config.pod_max_backoff_seconds)
        self.pod_initial_backoff = pod_initial_backoff
        self.pod_max_backoff = pod_max_backoff
        self.pod_max_in_unschedulable_pods = pod_max_in_unschedulable_pods
        self.preemption_mode: Literal["exhaustive", "sampled"] = preemption_mode
        self.rng = random.Random(seed)  # the sampled search's offsets, one draw per search
        # Beyond kube (``scheduler.preemption.crossnode``); off: kube's DefaultPreemption.
        self.cross_node_preemption = cross_node_preemption
        # An explicit framework replaces every profile's Filter plugins (tests); else the
        # profiles' own (the configuration's, or kube's default profile).
        self._framework = framework
        self.framework = framework if framework is not None else default_framework()
        self.history = history
        self.snapshot = Snapshot()
        self.queue = self._new_queue()
        self.next_start_index = 0
        self.decisions: list[Decision] = []
        self.bound = 0  # pods bound by this loop since it started
        self.informers = Informers(
            self.snapshot,
            self.queue,
            scheduler_name=self.scheduler_name,
            scheduler_names=config.scheduler_names if config is not None else (),
        )
        self.api: APICalls | None = None  # the API writes, while the loop runs
        self._cluster: Cluster | None = None
        self._pending_events: list[Event] = []
        self._wake: asyncio.Event | None = None
        self._clock_origin = (0.0, 0.0)
        self._time_scale = 1.0
        self._idle: asyncio.Event | None = None
        self._subs: list[Subscription] = []
        # kube-scheduler's metrics; served on the API server's /metrics while the loop runs.
        self.metrics = SchedulerMetrics(lambda: self.queue)

    # --- time ---------------------------------------------------------------------------------

    def clock(self) -> float:
        """The scheduler's clock: wall time since start, divided by the time scale."""
        wall0, virt0 = self._clock_origin
        return virt0 + (time.monotonic() - wall0) / self._time_scale

    def _new_queue(self) -> SchedulingQueue:
        return SchedulingQueue(
            self.clock,
            pod_initial_backoff=self.pod_initial_backoff,
            pod_max_backoff=self.pod_max_backoff,
            pod_max_in_unschedulable_pods=self.pod_max_in_unschedulable_pods,
            pod_lister=self.snapshot,
            namespace_labels=self.snapshot.namespace_labels,
            queueing_hints=DEFAULT_PLUGIN_HINTS if self.queueing_hints else None,
        )

    # --- lifecycle ------------------------------------------------------------------------------

    async def run(self, cluster: Cluster) -> None:
        self._cluster = cluster
        self.informers.resolve_priority = cluster.priority_admission
        self._time_scale = max(float(cluster.time_scale), 1e-9)
        self._clock_origin = (time.monotonic(), cluster.registry.clock())
        self.api = APICalls(cluster, scheduler_name=self.scheduler_name)
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        store = cluster.store
        subs = self._subs = [store.subscribe(s) for s in WATCHED]
        pumps = [asyncio.create_task(self._pump(sub)) for sub in subs]
        ticker = asyncio.create_task(self._ticker())
        collectors = cluster.metrics
        collectors.register(self.metrics)
        try:
            await self._initial_list()
            while True:
                self._apply_events()
                busy = self._schedule_batch()
                if busy:
                    await asyncio.sleep(0)
                    continue
                if not self._pending_events:
                    self._idle.set()
                    await self._wake.wait()
                    self._wake.clear()
                    self._idle.clear()
                # Let the rest of a burst of writes land: one drain applies them all.
                await asyncio.sleep(0)
        finally:
            collectors.unregister(self.metrics)
            ticker.cancel()
            for task in pumps:
                task.cancel()
            for sub in subs:
                store.unsubscribe(sub)
            with contextlib.suppress(asyncio.CancelledError):
                await ticker
            self._cluster = None

    async def _pump(self, sub: Subscription) -> None:
        queue = sub.queue
        while True:
            ev = await queue.get()
            self._pending_events.append(ev)
            while not queue.empty():
                self._pending_events.append(queue.get_nowait())
            assert self._wake is not None
            self._wake.set()

    async def _ticker(self) -> None:
        """Upstream's flushers: backoff completions each second, pool leftovers each 30 s."""
        period = max(BACKOFF_FLUSH_PERIOD * self._time_scale, MIN_TICK)
        last_leftover = self.clock()
        while True:
            await asyncio.sleep(period)
            moved = bool(self.queue.flush_backoff_q_completed())
            if self.clock() - last_leftover >= LEFTOVER_FLUSH_PERIOD:
                last_leftover = self.clock()
                before = len(self.queue.unschedulable_pods())
                self.queue.flush_unschedulable_pods_leftover()
                moved = moved or len(self.queue.unschedulable_pods()) != before
            if moved and self._wake is not None:
                self._wake.set()

    async def wait_idle(self, timeout: float = 5.0) -> None:
        """Wait until every event seen so far is applied and activeQ is empty (for tests)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if (
                self._idle is not None
                and self._idle.is_set()
                and not self._pending_events
                and all(sub.queue.empty() for sub in self._subs)
            ):
                return
            await asyncio.sleep(0.005)
        raise TimeoutError("the scheduler loop did not become idle")

    # --- the informers' events ---------------------------------------------------------------

    async def _initial_list(self) -> None:
        """List everything at one resourceVersion, then apply it in slices so a large state
        does not stall the API server; later events wait in the watch queues."""
        cluster = self._cluster
        assert cluster is not None
        store = cluster.store
        list_rv = store.resource_version
        listed = [(s, list(store.objects(s).items())) for s in WATCHED]
        done = 0
        for storage, items in listed:
            for key, obj in items:
                self.informers.on_event(Event(ADDED, 0, storage, key, obj, None))
                done += 1
                if done % LIST_SLICE == 0:
                    await asyncio.sleep(0)
        # Events already reflected by the list are dropped (the informer's resourceVersion).
        self._pending_events = [e for e in self._pending_events if e.rv > list_rv]

    def _apply_events(self) -> None:
        if not self._pending_events:
            return
        batch, self._pending_events = self._pending_events, []
        batch.sort(key=lambda e: e.rv)
        for ev in batch:
            try:
                self.informers.on_event(ev)
            except Exception:  # one bad object must not stop the scheduler
                log.exception("kubesim: scheduler event %s %s failed", ev.type, ev.key)

    # --- scheduling cycles ------------------------------------------------------------------

    def _schedule_batch(self) -> bool:
        """Pop and schedule pods for up to ``BATCH_SECONDS``; True when time ran out."""
        deadline = time.monotonic() + BATCH_SECONDS
        queue = self.queue
        while True:
            pinfo = queue.pop()
            if pinfo is None:
                return False
            try:
                self.schedule_pod(pinfo)
            except Exception:  # a bug in one cycle must not stop the scheduler
                log.exception("kubesim: scheduling %s failed", pinfo.pod.key)
            finally:
                queue.done(pinfo.pod.uid)  # scheduleOne's deferred Done
            if time.monotonic() >= deadline:
                return True

    def schedule_pod(self, pinfo: QueuedPodInfo) -> None:
        """One ``scheduleOne``: decide, then bind or handle the failure."""
        pod = self.informers.pods.get(pinfo.pod.key)
        if pod is None or pod.uid != pinfo.pod.uid or pod.node_name or pod.is_terminating:
            return  # skipPodSchedule: deleted, bound or being deleted meanwhile
        pinfo.pod = pod
        cycle = self.queue.scheduling_cycle
        start = self.next_start_index
        result = schedule_one(
            pod,
            self.snapshot,
            framework=self._framework if self.config is not None else self.framework,
            percentage_of_nodes_to_score=self.percentage_of_nodes_to_score,
            start_index=start,
            config=self.config or default_configuration(self.scheduler_name),
        )
        self.next_start_index = result.next_start_index
        if result.succeeded:
            self._assume_and_bind(pinfo, result, cycle=cycle, start=start)
            return
        self._handle_failure(pinfo, result, cycle=cycle, start=start)

    def _record(self, decision: Decision) -> None:
        self.decisions.append(decision)
        if len(self.decisions) > self.history:
            del self.decisions[: len(self.decisions) - self.history]

    def _assume_and_bind(
        self, pinfo: QueuedPodInfo, result: ScheduleResult, *, cycle: int, start: int
    ) -> None:
        """Assume (bind in the snapshot), then bind through the API and record the
        ``Scheduled`` event ``Successfully assigned ns/name to node``. A failed bind forgets the
        assumed pod, moves pods nominated to that node, and fails the cycle with an error
        (``running Bind plugin "DefaultBinder": <API error>``, nomination cleared)."""
        pod = pinfo.pod
        host = result.suggested_host
        assumed = self.snapshot.bind_pod(pod, host)
        api = self.api
        assert api is not None
        try:
            stored = api.bind(pod, host)
        except StatusError as err:
            # ForgetPod, then the failure handler with an error (no rejecting plugin).
            self.snapshot.remove_pod(assumed)
            current = self.informers.pods.get(pod.key)
            if current is not None and current.uid == pod.uid and not current.node_name:
                self.snapshot.add_pod(current)
            # handleBindingCycleError: the room it held may let pods nominated there in.
            self.queue.move_all_to_active_or_backoff_queue(
                qev.AssignedPodDelete,
                lambda p: p.nominated_node_name == host,
                old_obj=assumed,
            )
            message = f'running Bind plugin "DefaultBinder": {err.message}'
            self.metrics.schedule_attempt("error", self._profile(pod))
            self._record(Decision(pod.key, pod.uid, cycle, start, message=message))
            pinfo.unschedulable_plugins = set()
            pinfo.pending_plugins = set()
            self._fail(
                pinfo,
                message,
                reason=REASON_SCHEDULER_ERROR,
                cycle=cycle,
                nominating=NominatingInfo(NominatingMode.Override, ""),
            )
            return
        self.bound += 1
        self.metrics.schedule_attempt("scheduled", self._profile(pod))
        self._record(Decision(pod.key, pod.uid, cycle, start, node=host))
        api.event(
            stored,
            type_="Normal",
            reason="Scheduled",
            action="Binding",
            note=f"Successfully assigned {pod.namespace}/{pod.name} to {host}",
            reporting_controller=self._profile(pod),
        )

    def _profile(self, pod: Pod) -> str:
        """The name of the profile scheduling ``pod`` (its events' reportingController)."""
        if self.config is None:
            return self.scheduler_name
        return pod.scheduler_name or self.scheduler_name

    def _handle_failure(
        self, pinfo: QueuedPodInfo, result: ScheduleResult, *, cycle: int, start: int
    ) -> None:
        """A cycle that found no node: for an Unschedulable fit error DefaultPreemption runs
        (``preempt``, with the cycle's filter statuses) and its message is appended to the fit
        error (``0/N nodes are available: …. preemption: …``); anything else is an error."""
        pod = pinfo.pod
        status = result.status
        if status.code is not Code.Unschedulable:
            message = status.message or "scheduling failed"
            self.metrics.schedule_attempt("error", self._profile(pod))
            self._record(Decision(pod.key, pod.uid, cycle, start, message=message))
            pinfo.unschedulable_plugins = set()
            pinfo.pending_plugins = set()
            self._fail(pinfo, message, reason=REASON_SCHEDULER_ERROR, cycle=cycle, nominating=None)
            return
        diagnosis = result.diagnosis
        pinfo.unschedulable_plugins = set(diagnosis.unschedulable_plugins)
        pinfo.pending_plugins = set(diagnosis.pending_plugins)
        self.metrics.schedule_attempt("unschedulable", self._profile(pod))
        self.metrics.preemption_attempt()
        now = self._cluster.registry.clock() if self._cluster is not None else None
        if now is not None and self.informers.latest_start_time < now:
            # kube reads time.Now() for a pod without status.startTime. While every start
            # time is earlier, "later than any start time" (None) orders pods the same, and
            # the preemption cache keeps its outcomes from one decision to the next.
            now = None
        outcome = preempt(
            pod,
            self.snapshot,
            node_statuses=result.node_statuses,
            mode=self.preemption_mode,
            rng=self.rng,
            framework=self._framework if self.config is not None else self.framework,
            now=now,
            cross_node=self.cross_node_preemption,
            config=self.config,
        )
        nominating: NominatingInfo | None = None
        victims: tuple[str, ...] = ()
        if outcome.nominated_node_name is not None:
            nominating = NominatingInfo(NominatingMode.Override, outcome.nominated_node_name)
        if outcome.nominated_node_name:
            victims = self._prepare_candidate(pod, outcome)
            self.metrics.preemption_victims(len(outcome.victims))
        post_filter_msg = "" if outcome.status.code is Code.Success else outcome.status.message
        message = fit_error_message(
            len(self.snapshot.node_info_list),
            result.node_statuses,
            pre_filter_msg=diagnosis.pre_filter_msg,
            post_filter_msg=post_filter_msg,
        )
        self._record(
            Decision(
                pod.key,
                pod.uid,
                cycle,
                start,
                message=message,
                nominated_node=outcome.nominated_node_name,
                victims=victims,
            )
        )
        self._fail(pinfo, message, reason=REASON_UNSCHEDULABLE, cycle=cycle, nominating=nominating)

    def _prepare_candidate(self, preemptor: Pod, outcome: PreemptionResult) -> tuple[str, ...]:
        """``prepareCandidate``: the victims preempted through the API; lower-priority pods
        nominated to the node lose their ``status.nominatedNodeName``."""
        api = self.api
        assert api is not None
        done = api.preempt_victims(
            preemptor, outcome.victims, node=outcome.nominated_node_name or ""
        )
        for other in outcome.nominated_pods_to_clear:
            current = self.snapshot.get_pod(other.key)
            if current is not None and not current.node_name:
                self.snapshot.update_pod(current.with_changes(nominated_node_name=""))
            api.write_pod_status(other, nominated_node_name="")
        return done

    def _fail(
        self,
        pinfo: QueuedPodInfo,
        message: str,
        *,
        reason: str,
        cycle: int,
        nominating: NominatingInfo | None,
    ) -> None:
        """``handleSchedulingFailure``: the ``FailedScheduling`` warning event, back to the
        queue (``AddUnschedulableIfNotPresent``) unless the pod was deleted or bound meanwhile,
        then ``PodScheduled=False`` (reason ``Unschedulable`` or ``SchedulerError``, message as
        the event's) and ``status.nominatedNodeName`` as the preemption decided (Override with
        the node or "", or left as is), in one status write made only when something changed."""
        api = self.api
        assert api is not None
        pod = pinfo.pod
        current = self.informers.pods.get(pod.key)
        note = truncate(message)
        regarding = api.stored(pod) or {
            "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid}
        }
        api.event(
            regarding,
            type_="Warning",
            reason="FailedScheduling",
            action="Scheduling",
            note=note,
            reporting_controller=self._profile(pod),
        )
        if current is None or current.uid != pod.uid or current.node_name:
            return  # deleted or bound meanwhile: nothing to requeue
        if nominating is not None and nominating.mode is NominatingMode.Override:
            current = current.with_changes(nominated_node_name=nominating.nominated_node_name)
            self.informers.pods[pod.key] = current
            self.snapshot.update_pod(current)
        pinfo.pod = current
        self.queue.nominator.add_nominated_pod(current, nominating)
        try:
            self.queue.add_unschedulable_if_not_present(pinfo, cycle)
        except PodAlreadyPresentError as exc:
            log.debug("kubesim: %s", exc)
        api.write_pod_status(
            pod,
            condition=(reason, note),
            nominated_node_name=(
                nominating.nominated_node_name
                if nominating is not None and nominating.mode is NominatingMode.Override
                else None
            ),
        )
