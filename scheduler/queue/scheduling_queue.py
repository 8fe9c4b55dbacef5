"""kube-scheduler's ``PriorityQueue`` (pkg/scheduler/backend/queue/scheduling_queue.go).

activeQ, the two backoff heaps and the unschedulable pool, with SchedulerPopFromBackoffQ on and
SchedulerQueueingHints either way (``SchedulingQueue`` says how); time comes only from the
injected clock.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Final, Protocol

import scheduler.queue.events as ev
from kube.objects import Pod, pod_updated
from scheduler.framework import Code, QueueingHint
from scheduler.queue.events import ClusterEvent, ClusterEventWithHint, QueueingHintFn
from scheduler.queue.gates import EnqueueExtensions, PreEnqueuePlugin, SchedulingGates
from scheduler.queue.heaps import KeyedHeap
from scheduler.queue.nominator import Nominator, PodLister
from scheduler.queue.types import QueuedPodInfo, backoff_duration

__all__ = [
    "ACTIVE_Q",
    "BACKOFF_Q",
    "DEFAULT_POD_INITIAL_BACKOFF",
    "DEFAULT_POD_MAX_BACKOFF",
    "DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS",
    "UNSCHEDULABLE_Q",
    "Clock",
    "PodAlreadyPresentError",
    "SchedulingQueue",
    "is_pod_updated",
]

DEFAULT_POD_INITIAL_BACKOFF: Final = 1.0
DEFAULT_POD_MAX_BACKOFF: Final = 10.0
DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS: Final = 300.0

# Queue names (used in logs and returned by the requeue helpers).
ACTIVE_Q: Final = "Active"
BACKOFF_Q: Final = "Backoff"
UNSCHEDULABLE_Q: Final = "Unschedulable"

POD_TOPOLOGY_SPREAD: Final = "PodTopologySpread"

_ZERO_TIME: Final = -math.inf  # Go's zero time.Time sorts before every real time

# Labels of the events after which a pod entering activeQ is (re)added to the nominator.
_UNSCHEDULED_POD_ADD: Final = ev.UnscheduledPodAdd.label
_UNSCHEDULED_POD_UPDATE: Final = ev.UnscheduledPodUpdate.label
_FORCE_ACTIVATE: Final = ev.ForceActivate.label


class Clock(Protocol):
    def now(self) -> float: ...


class PodAlreadyPresentError(ValueError):
    """``AddUnschedulableIfNotPresent`` refused a pod the queue already holds."""


class _Strategy(enum.Enum):
    """``queueingStrategy``."""

    SKIP = 0
    AFTER_BACKOFF = 1
    IMMEDIATELY = 2


def _may_cross_topology(pinfo: QueuedPodInfo) -> bool:
    """Whether ``getUnschedulablePodsWithCrossTopologyTerm`` may return the pod."""
    return POD_TOPOLOGY_SPREAD in pinfo.unschedulable_plugins or bool(pinfo.required_affinity_terms)


def _klog_kobj(pod: Pod) -> str:
    """``klog.KObj(pod)`` as ``%v`` prints it."""
    return f"{pod.namespace}/{pod.name}" if pod.namespace else pod.name


# ``isPodUpdated``, as kube names it (one definition, with the typed Pod).
is_pod_updated: Final = pod_updated


class SchedulingQueue:
    """``PriorityQueue`` with PopFromBackoffQ on, queueing hints on or off.

    Three places hold a pending pod, and a pod is in at most one of them (identity is
    ``namespace/name``):

    * **activeQ** — a heap ordered by the QueueSort ``less`` (priority, then queue timestamp);
      ``pop`` takes its head.
    * **backoffQ** — two heaps, as upstream: ``podBackoffQ`` for pods a plugin rejected and
      ``podErrorBackoffQ`` for pods that failed with no rejecting plugin (an error).
    * **unschedulable pool** — pods a plugin rejected, and gated pods, waiting for an event.

    SchedulerQueueingHints (on by default in kube 1.32) is on when ``queueing_hints`` maps each
    plugin to its ``ClusterEventWithHint`` entries (``scheduler.hints.DEFAULT_PLUGIN_HINTS``
    for the in-tree plugins; this package may not import them). Then an event moves a rejected
    pod only when a hint of a rejecting plugin's matching entry answers Queue; ``pop`` marks
    the pod in flight and the events that arrive until ``done`` are kept, so that a pod coming
    back unschedulable (``add_unschedulable_if_not_present``) is judged by them rather than by
    the move-request cycle; an update of a pod in flight is recorded instead of queued, and an
    update of a pod in the pool is put to the hints as the events it amounts to.

    With the gate off, the queue's decisions depend only on what plugins *registered*
    (``EventsToRegister``, ``plugin_events``). In that mode ``done`` is a no-op (no in-flight
    tracking), a pod rejected during its cycle goes to the backoff queue rather than the pool
    when a move request happened at or after that cycle or no plugin rejected it
    (``add_unschedulable_if_not_present``), an update of a pod in the pool requeues it when
    ``is_pod_updated`` says anything but status or bookkeeping changed, and an update of a pod
    the queue does not hold (one being scheduled) adds it to activeQ.

    SchedulerPopFromBackoffQ (beta, default on since 1.33) is reproduced in full: the
    1 s backoff windows (``is_pod_backing_off``), PreEnqueue on entering the backoff queue
    (``_move_to_backoff_q``), ``pop`` from podBackoffQ when activeQ is empty.

    Upstream's periodic goroutines (flush completed backoffs every second, leftover pods every
    30 s) are the caller's: ``flush_backoff_q_completed`` and
    ``flush_unschedulable_pods_leftover``.

    ``plugin_events`` maps each enabled plugin to the events it registers (default: the events
    of ``queueing_hints`` when given, else the in-tree plugins' ``events.DEFAULT_PLUGIN_EVENTS``);
    a rejecting plugin missing from it is taken for
    an enabled plugin without ``EventsToRegister``: registered for every event of every
    resource, which also makes those events "of interest" once it has rejected a pod.
    ``pre_enqueue_plugins`` are extra PreEnqueue plugins run after ``SchedulingGates``; one that
    has ``events_to_register`` registers those events. ``namespace_labels`` gives a namespace's
    labels for affinity-term matching (``Snapshot.namespace_labels`` fits); without it a
    namespace carries only ``kubernetes.io/metadata.name``.
    """

    def __init__(
        self,
        clock: Clock | Callable[[], float],
        *,
        pod_initial_backoff: float = DEFAULT_POD_INITIAL_BACKOFF,
        pod_max_backoff: float = DEFAULT_POD_MAX_BACKOFF,
        pod_max_in_unschedulable_pods: float = DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS,
        pod_lister: PodLister | None = None,
        plugin_events: Mapping[str, Iterable[ClusterEvent]] | None = None,
        pre_enqueue_plugins: Sequence[PreEnqueuePlugin] = (),
        namespace_labels: Callable[[str], Mapping[str, str]] | None = None,
        queueing_hints: Mapping[str, Sequence[ClusterEventWithHint]] | None = None,
    ) -> None:
        now = getattr(clock, "now", None)
        if callable(now):
            self._now: Callable[[], float] = now
        elif callable(clock):
            self._now = clock
        else:
            raise TypeError(f"clock must have a now() method or be callable, not {clock!r}")
        if pod_initial_backoff < 0 or pod_max_backoff < 0:
            raise ValueError(
                f"backoff durations must not be negative: initial={pod_initial_backoff},"
                f" max={pod_max_backoff}"
            )
        self.pod_initial_backoff = pod_initial_backoff
        self.pod_max_backoff = pod_max_backoff
        self.pod_max_in_unschedulable_pods = pod_max_in_unschedulable_pods
        self.nominator = Nominator(pod_lister)
        self._namespace_labels = namespace_labels

        self.pre_enqueue_plugins: tuple[PreEnqueuePlugin, ...] = (
            SchedulingGates(),
            *pre_enqueue_plugins,
        )
        self._pre_enqueue_by_name: dict[str, PreEnqueuePlugin] = {}
        for plugin in self.pre_enqueue_plugins:
            if plugin.name in self._pre_enqueue_by_name:
                raise ValueError(f'PreEnqueue plugin "{plugin.name}" is registered twice')
            self._pre_enqueue_by_name[plugin.name] = plugin

        # SchedulerQueueingHints: on when the plugins' hints are given (scheduler.hints has
        # the in-tree ones); then they also are the registered events, unless plugin_events
        # says otherwise.
        self.queueing_hints_enabled = queueing_hints is not None
        self._hints: dict[str, tuple[ClusterEventWithHint, ...]] = {
            name: tuple(entries) for name, entries in (queueing_hints or {}).items()
        }
        if plugin_events is None:
            plugin_events = (
                {name: tuple(h.event for h in hs) for name, hs in self._hints.items()}
                if self.queueing_hints_enabled
                else ev.DEFAULT_PLUGIN_EVENTS
            )
        registry: dict[str, tuple[ClusterEvent, ...]] = {
            name: tuple(events) for name, events in plugin_events.items()
        }
        for plugin in self.pre_enqueue_plugins:
            if plugin.name not in registry and isinstance(plugin, EnqueueExtensions):
                registry[plugin.name] = tuple(plugin.events_to_register())
        self.plugin_events: Mapping[str, tuple[ClusterEvent, ...]] = registry
        self._registered_events: tuple[ClusterEvent, ...] = tuple(
            {e: None for events in registry.values() for e in events}
        )
        self._interest_cache: dict[ClusterEvent, bool] = {}
        self._plugin_match_cache: dict[tuple[str, ClusterEvent], bool] = {}
        # (plugin, event) -> the hint functions of the plugin's entries matching the event
        # (None: an entry without one, which answers Queue); empty: no entry matches.
        self._hint_cache: dict[tuple[str, ClusterEvent], tuple[QueueingHintFn | None, ...]] = {}
        # In-flight tracking (hints on): the pods popped and not yet done, by uid, with the
        # sequence number of their pop, and the events recorded while any was in flight.
        self._in_flight_pods: dict[str, int] = {}
        self._in_flight_events: list[tuple[int, ClusterEvent, object, object]] = []
        self._in_flight_seq = 0
        # Rejecting plugins absent from the registry: enabled plugins without EventsToRegister.
        self._unregistered_plugins: set[str] = set()

        self._active: KeyedHeap[QueuedPodInfo] = KeyedHeap()
        self._backoff: KeyedHeap[QueuedPodInfo] = KeyedHeap()  # podBackoffQ
        self._error_backoff: KeyedHeap[QueuedPodInfo] = KeyedHeap()  # podErrorBackoffQ
        self._unschedulable: dict[str, QueuedPodInfo] = {}
        # Pool pods that may have a cross-topology term, in pool order (see _pool_set);
        # None: to be rebuilt from the pool.
        self._cross: dict[str, QueuedPodInfo] | None = {}
        # Pool pods that were not gated when they entered (a superset of the ungated ones
        # there), in pool order; None: to be rebuilt.
        self._ungated: dict[str, QueuedPodInfo] | None = {}
        # Both at once: pool pods that may have a cross-topology term and were not gated when
        # they entered, in pool order; None: to be rebuilt.
        self._cross_ungated: dict[str, QueuedPodInfo] | None = {}
        # Event tuples of every gating plugin that gated a pod of this queue, by identity.
        self._gating_events: dict[int, tuple[ClusterEvent, ...]] = {}
        self._moves_gated: dict[ClusterEvent, bool] = {}  # event -> may move a gated pod
        self._gate_match: dict[tuple[int, ClusterEvent], bool] = {}
        self._events_by_plugin: dict[str, tuple[ClusterEvent, ...]] = {}
        self.scheduling_cycle = 0
        self.move_request_cycle = -1

    # --- time and backoff ----------------------------------------------------------------

    def now(self) -> float:
        return self._now()

    def get_backoff_time(self, pinfo: QueuedPodInfo) -> float | None:
        """``getBackoffTime``: the cached, window-aligned expiration; None when none applies.

        ``count`` is ``consecutive_errors_count`` if positive, else ``unschedulable_count``; the
        expiration is ``timestamp + backoff_duration(count, initial, max)`` truncated to whole
        seconds; ``pod_max_backoff == 0`` disables backoff."""
        if self.pod_max_backoff == 0:
            return None
        count = pinfo.consecutive_errors_count or pinfo.unschedulable_count
        if count == 0:
            return None
        if pinfo.backoff_expiration is None:
            duration = backoff_duration(count, self.pod_initial_backoff, self.pod_max_backoff)
            pinfo.backoff_expiration = float(math.floor(pinfo.timestamp + duration))
        return pinfo.backoff_expiration

    def is_pod_backing_off(self, pinfo: QueuedPodInfo) -> bool:
        """``isPodBackingoff``: the expiration is not before the current 1 s window — the
        whole second of its expiration still counts as backing off."""
        expiration = self.get_backoff_time(pinfo)
        if expiration is None:
            return False
        return not expiration < math.floor(self._now())

    def _backoff_key(self, pinfo: QueuedPodInfo) -> tuple[float, ...]:
        """podBackoffQ's order: the expiration window, then ``less``."""
        expiration = self.get_backoff_time(pinfo)
        exp = _ZERO_TIME if expiration is None else expiration
        return (exp, -pinfo.pod.priority, pinfo.timestamp)

    def _error_backoff_key(self, pinfo: QueuedPodInfo) -> tuple[float, ...]:
        """podErrorBackoffQ's order: the expiration alone."""
        expiration = self.get_backoff_time(pinfo)
        return (_ZERO_TIME if expiration is None else expiration,)

    @staticmethod
    def _active_key(pinfo: QueuedPodInfo) -> tuple[float, ...]:
        return (-pinfo.pod.priority, pinfo.timestamp)

    # --- PreEnqueue ----------------------------------------------------------------------

    def _run_pre_enqueue_plugins(self, pinfo: QueuedPodInfo) -> None:
        """``runPreEnqueuePlugins``: the gating plugin first, then the rest, in order."""
        gating = pinfo.gating_plugin
        if gating is not None:
            plugin = self._pre_enqueue_by_name.get(gating)
            if plugin is not None and not self._run_pre_enqueue_plugin(plugin, pinfo):
                return
        for plugin in self.pre_enqueue_plugins:
            if plugin.name == gating:
                continue
            if not self._run_pre_enqueue_plugin(plugin, pinfo):
                return
        pinfo.gating_plugin = None
        pinfo.gating_plugin_events = ()

    def _run_pre_enqueue_plugin(self, plugin: PreEnqueuePlugin, pinfo: QueuedPodInfo) -> bool:
        status = plugin.pre_enqueue(pinfo.pod)
        if status is None or status.code is Code.Success:
            return True
        pinfo.unschedulable_plugins.add(plugin.name)
        self._note_plugins((plugin.name,))
        pinfo.gating_plugin = plugin.name
        pinfo.gating_plugin_events = self._events_for(plugin.name)
        self._note_gating(pinfo.gating_plugin_events)
        return False

    def _events_for(self, plugin: str) -> tuple[ClusterEvent, ...]:
        """The events ``plugin`` registered (one shared tuple per plugin)."""
        events = self._events_by_plugin.get(plugin)
        if events is None:
            events = self._events_by_plugin[plugin] = ev.events_for_plugin(
                plugin, self.plugin_events
            )
        return events

    def _note_gating(self, events: tuple[ClusterEvent, ...]) -> None:
        if id(events) not in self._gating_events:
            self._gating_events[id(events)] = events
            self._moves_gated.clear()

    def _gated_pod_moves(self, events: tuple[ClusterEvent, ...], event: ClusterEvent) -> bool:
        """Whether ``event`` moves a pod gated by a plugin that registered ``events``."""
        found = self._gate_match.get((id(events), event))
        if found is None:
            self._note_gating(events)  # kept alive, so the id stays this tuple's
            found = self._gate_match[(id(events), event)] = ev.match_any_cluster_event(
                event, events
            )
        return found

    def _event_moves_gated(self, event: ClusterEvent) -> bool:
        """Whether ``event`` may move some gated pod of this queue (a gating plugin of one
        registered it)."""
        moves_gated = self._moves_gated.get(event)
        if moves_gated is None:
            moves_gated = self._moves_gated[event] = any(
                self._gated_pod_moves(events, event) for events in self._gating_events.values()
            )
        return moves_gated

    def _note_plugins(self, plugins: Iterable[str]) -> None:
        """A plugin that rejects pods is enabled; one missing from the registry registered
        no events and so is interested in every event of every resource."""
        for plugin in plugins:
            if plugin not in self.plugin_events and plugin not in self._unregistered_plugins:
                self._unregistered_plugins.add(plugin)
                self._interest_cache.clear()

    # --- moving between sub-queues -------------------------------------------------------

    def _delete_from_backoff(self, key: str) -> QueuedPodInfo | None:
        pinfo = self._backoff.delete(key)
        if pinfo is None:
            pinfo = self._error_backoff.delete(key)
        return pinfo

    def _in_backoff(self, key: str) -> bool:
        return key in self._backoff or key in self._error_backoff

    def _move_to_active_q(
        self, pinfo: QueuedPodInfo, event: str, *, moves_from_backoff_q: bool = False
    ) -> bool:
        """``moveToActiveQ``; a pod failing PreEnqueue lands in the pool instead. PreEnqueue
        does not run again for a pod coming from the backoff queue (``moves_from_backoff_q``):
        it ran when the pod entered it."""
        if not moves_from_backoff_q:
            self._run_pre_enqueue_plugins(pinfo)
        key = pinfo.pod.key
        if pinfo.gated:
            if key in self._active or self._in_backoff(key) or key in self._unschedulable:
                return False
            self._pool_set(key, pinfo)
            return False
        if pinfo.initial_attempt_timestamp is None:
            pinfo.initial_attempt_timestamp = self._now()
        self._pool_pop(key)
        self._delete_from_backoff(key)
        self._active.add_or_update(key, self._active_key(pinfo), pinfo)
        if event in (_UNSCHEDULED_POD_ADD, _UNSCHEDULED_POD_UPDATE):
            self.nominator.add_nominated_pod(pinfo.pod, None)
        return True

    def _move_to_backoff_q(self, pinfo: QueuedPodInfo, event: str) -> bool:
        """``moveToBackoffQ``: PreEnqueue runs here too (PopFromBackoffQ)."""
        self._run_pre_enqueue_plugins(pinfo)
        key = pinfo.pod.key
        if pinfo.gated:
            if key not in self._unschedulable:
                self._pool_set(key, pinfo)
            return False
        self._pool_pop(key)
        self._add_to_backoff(pinfo)
        return True

    def _add_to_backoff(self, pinfo: QueuedPodInfo) -> None:
        key = pinfo.pod.key
        if not pinfo.unschedulable_plugins and not pinfo.pending_plugins:
            self._backoff.delete(key)
            self._error_backoff.add_or_update(key, self._error_backoff_key(pinfo), pinfo)
        else:
            self._error_backoff.delete(key)
            self._backoff.add_or_update(key, self._backoff_key(pinfo), pinfo)

    def _new_queued_pod_info(self, pod: Pod) -> QueuedPodInfo:
        return QueuedPodInfo(pod, self._now())

    # --- public operations ---------------------------------------------------------------

    def add(self, pod: Pod) -> None:
        """``Add``: a new pod enters activeQ, or the pool when a PreEnqueue plugin gates it."""
        self._move_to_active_q(self._new_queued_pod_info(pod), _UNSCHEDULED_POD_ADD)

    def pop(self) -> QueuedPodInfo | None:
        """``Pop``: the head of activeQ, else of podBackoffQ (never of podErrorBackoffQ); None
        when both are empty.

        Increments the pod's ``attempts`` and the scheduling cycle. Never blocks.
        """
        pinfo = self._active.pop()
        if pinfo is None:
            pinfo = self._backoff.pop()
            if pinfo is None:
                return None
        pinfo.attempts += 1
        self.scheduling_cycle += 1
        if self.queueing_hints_enabled:
            self._in_flight_seq += 1
            self._in_flight_pods[pinfo.pod.uid] = self._in_flight_seq
        return pinfo

    def done(self, uid: str) -> None:
        """``Done``: the pod's scheduling is over; events older than every pod still in
        flight are released. A no-op with queueing hints off (nothing is tracked)."""
        if self._in_flight_pods.pop(uid, None) is None:
            return
        if not self._in_flight_pods:
            self._in_flight_events.clear()
            return
        oldest = min(self._in_flight_pods.values())
        events = self._in_flight_events
        drop = 0
        while drop < len(events) and events[drop][0] < oldest:
            drop += 1
        if drop:
            del events[:drop]

    def in_flight_pods(self) -> list[str]:
        """The uids of the pods popped and not yet done (hints on), oldest first."""
        return sorted(self._in_flight_pods, key=self._in_flight_pods.__getitem__)

    def _add_event_if_any_in_flight(
        self, event: ClusterEvent, old_obj: object, new_obj: object
    ) -> None:
        """``addEventIfAnyInFlight``: kept for the pods being scheduled to be judged by when
        they come back unschedulable."""
        if self._in_flight_pods:
            self._in_flight_seq += 1
            self._in_flight_events.append((self._in_flight_seq, event, old_obj, new_obj))

    def _add_events_if_pod_in_flight(
        self, old_obj: object, new: Pod, events: Iterable[ClusterEvent]
    ) -> bool:
        """``addEventsIfPodInFlight``: record ``events`` when ``new`` is being scheduled."""
        if new.uid not in self._in_flight_pods:
            return False
        for event in events:
            self._in_flight_seq += 1
            self._in_flight_events.append((self._in_flight_seq, event, old_obj, new))
        return True

    def _hint_for_in_flight_pod(self, pinfo: QueuedPodInfo) -> _Strategy:
        """``determineSchedulingHintForInFlightPod``: the strongest strategy any event seen
        while the pod was being scheduled gives it (after backoff when it was not tracked or
        nothing rejected it)."""
        since = self._in_flight_pods.get(pinfo.pod.uid)
        if since is None or not pinfo.rejector_plugins():
            return _Strategy.AFTER_BACKOFF
        strategy = _Strategy.SKIP
        for seq, event, old_obj, new_obj in self._in_flight_events:
            if seq <= since:
                continue
            found = self._is_pod_worth_requeuing(pinfo, event, new_obj, old_obj=old_obj)
            if found is _Strategy.IMMEDIATELY:
                return found
            if found is _Strategy.AFTER_BACKOFF:
                strategy = found
        return strategy

    def add_unschedulable_if_not_present(self, pinfo: QueuedPodInfo, cycle: int) -> None:
        """``AddUnschedulableIfNotPresent``: put back a pod whose scheduling attempt failed.

        Raises ``PodAlreadyPresentError`` with upstream's message when the queue already holds
        the pod. Refreshes the timestamp and the counters, then sends the pod to the backoff
        queue when a move request happened at or after ``cycle`` or no plugin rejected it,
        and to the unschedulable pool otherwise.
        """
        pod = pinfo.pod
        key = pod.key
        if key in self._unschedulable:
            raise PodAlreadyPresentError(
                f"Pod {_klog_kobj(pod)} is already present in unschedulable queue"
            )
        if key in self._active:
            raise PodAlreadyPresentError(
                f"Pod {_klog_kobj(pod)} is already present in the active queue"
            )
        if self._in_backoff(key):
            raise PodAlreadyPresentError(
                f"Pod {_klog_kobj(pod)} is already present in the backoff queue"
            )
        if not pinfo.unschedulable_plugins and not pinfo.pending_plugins:
            pinfo.consecutive_errors_count += 1
        else:
            pinfo.unschedulable_count += 1
            pinfo.consecutive_errors_count = 0
        pinfo.timestamp = self._now()
        pinfo.backoff_expiration = None
        self._note_plugins(pinfo.rejector_plugins())
        if self.queueing_hints_enabled:
            strategy = self._hint_for_in_flight_pod(pinfo)
            self.done(pod.uid)  # whatever happens, the pod is back in the queue
            self._requeue(pinfo, strategy, ev.ScheduleAttemptFailure)
            return
        if self.move_request_cycle >= cycle or not pinfo.rejector_plugins():
            self._move_to_backoff_q(pinfo, ev.ScheduleAttemptFailure)
        else:
            self._pool_set(key, pinfo)

    def flush_backoff_q_completed(self) -> list[QueuedPodInfo]:
        """``flushBackoffQCompleted``: move every pod whose backoff is over to activeQ.

        podBackoffQ first, then podErrorBackoffQ, each in its own order; returns the pods moved.
        """
        completed: list[QueuedPodInfo] = []
        for heap in (self._backoff, self._error_backoff):
            while True:
                head = heap.peek()
                if head is None or self.is_pod_backing_off(head):
                    break
                heap.pop()
                completed.append(head)
        return [
            p
            for p in completed
            if self._move_to_active_q(p, ev.BackoffComplete, moves_from_backoff_q=True)
        ]

    def flush_unschedulable_pods_leftover(self) -> None:
        """``flushUnschedulablePodsLeftover``: pods in the pool longer than the limit move on.

        Uses the wildcard ``UnschedulableTimeout`` event, which gated pods ignore.
        """
        now = self._now()
        limit = self.pod_max_in_unschedulable_pods
        to_move = [p for p in self._unschedulable.values() if now - p.timestamp > limit]
        if to_move:
            self._move_pods_to_active_or_backoff_queue(to_move, ev.UnschedulableTimeout)

    def update(self, old: Pod | None, new: Pod) -> None:
        """``Update``.

        In activeQ or the backoff queue: updated in place. In the pool, with queueing hints
        off: requeued when ``is_pod_updated`` (backoff queue if still backing off, else
        activeQ, both through PreEnqueue), otherwise kept; with hints on: each event the
        update amounts to (``pod_scheduling_properties_change``) is put to the pod's rejecting
        plugins' hints until one moves it. Unknown to the queue: added to activeQ like a new
        pod — unless, with hints on, it is being scheduled: then the update is recorded for
        when it comes back.
        """
        if self.queueing_hints_enabled and old is not None:
            changes = ev.pod_scheduling_properties_change(new, old)
            if self._add_events_if_pod_in_flight(old, new, changes):
                return
        if old is not None:
            key = old.key
            for heap, key_fn in (
                (self._active, self._active_key),
                (self._backoff, self._backoff_key),
                (self._error_backoff, self._error_backoff_key),
            ):
                pinfo = heap.get(key)
                if pinfo is not None:
                    pinfo.pod = new
                    heap.add_or_update(key, key_fn(pinfo), pinfo)
                    self.nominator.update_nominated_pod(old, new)
                    return
        pinfo = self._unschedulable.get(new.key)
        if pinfo is not None:
            pinfo.pod = new
            if self._cross is None or _may_cross_topology(pinfo) != (new.key in self._cross):
                # may qualify differently in place (is_pod_updated moves it)
                self._cross = self._cross_ungated = None
            self.nominator.update_nominated_pod(old, new)
            if self.queueing_hints_enabled and old is not None:
                for change in ev.pod_scheduling_properties_change(new, old):
                    strategy = self._is_pod_worth_requeuing(pinfo, change, new, old_obj=old)
                    if strategy is _Strategy.SKIP:
                        continue
                    self._pool_pop(new.key)
                    if self._requeue(pinfo, strategy, change.label) != UNSCHEDULABLE_Q:
                        return
                return
            if old is None or is_pod_updated(old, new):
                if self.is_pod_backing_off(pinfo):
                    self._move_to_backoff_q(pinfo, _UNSCHEDULED_POD_UPDATE)
                    return
                self._move_to_active_q(pinfo, _UNSCHEDULED_POD_UPDATE)
            return
        self._move_to_active_q(self._new_queued_pod_info(new), _UNSCHEDULED_POD_UPDATE)

    def delete(self, pod: Pod) -> None:
        """``Delete``: drop the nomination and the pod from whichever sub-queue holds it."""
        self.nominator.delete_nominated_pod_if_exists(pod)
        key = pod.key
        if self._active.delete(key) is not None:
            return
        if self._delete_from_backoff(key) is not None:
            return
        self._pool_pop(key)

    def activate(self, pods: Iterable[Pod] | Mapping[str, Pod]) -> None:
        """``Activate``: move pods from the pool or the backoff queue to activeQ.

        Pods already in activeQ stay; a pod that cannot be activated (unknown — possibly being
        scheduled — or still gated) records a move request so that it is retried when it comes
        back.
        """
        items = pods.values() if isinstance(pods, Mapping) else pods
        for pod in items:
            if not self._activate(pod):
                self._add_events_if_pod_in_flight(None, pod, (ev.ForceActivate,))
                self.move_request_cycle = self.scheduling_cycle

    def _activate(self, pod: Pod) -> bool:
        key = pod.key
        pinfo = self._unschedulable.get(key)
        from_backoff = False
        if pinfo is None:
            pinfo = self._delete_from_backoff(key)
            if pinfo is None:
                return False
            from_backoff = True
        return self._move_to_active_q(pinfo, _FORCE_ACTIVATE, moves_from_backoff_q=from_backoff)

    def move_all_to_active_or_backoff_queue(
        self,
        event: ClusterEvent,
        pre_check: Callable[[Pod], bool] | None = None,
        *,
        old_obj: object = None,
        new_obj: object = None,
    ) -> None:
        """``MoveAllToActiveOrBackoffQueue``: pool pods passing ``pre_check`` may move on."""
        if not self.is_event_of_interest(event):
            return
        if self._event_moves_gated(event):
            pool: Iterable[QueuedPodInfo] = self._unschedulable.values()
        else:  # gated pods stay where they are: leave them out
            ungated = self._ungated
            if ungated is None:
                ungated = self._ungated = {
                    k: p for k, p in self._unschedulable.items() if not p.gated
                }
            pool = ungated.values()
        candidates = [p for p in pool if pre_check is None or pre_check(p.pod)]
        self._move_pods_to_active_or_backoff_queue(candidates, event, old_obj, new_obj)

    def assigned_pod_added(self, pod: Pod) -> None:
        """``AssignedPodAdded``: a bound pod appeared; affinity/spread-rejected pods may move."""
        self._move_pods_to_active_or_backoff_queue(
            self._pods_with_cross_topology_term(pod, ev.AssignedPodAdd),
            ev.AssignedPodAdd,
            None,
            pod,
        )

    def assigned_pod_updated(self, old: Pod, new: Pod, event: ClusterEvent | None = None) -> None:
        """``AssignedPodUpdated`` for ``event``, or for each event the update amounts to.

        A scale-down event may free resources for any pool pod; other events only concern
        pods with a cross-topology term towards the updated pod.
        """
        events = [event] if event is not None else ev.pod_scheduling_properties_change(new, old)
        scale_down = ClusterEvent(ev.PodResource, ev.ActionType.UpdatePodScaleDown)
        for e in events:
            if ev.match_cluster_events(scale_down, e):
                self.move_all_to_active_or_backoff_queue(e, old_obj=old, new_obj=new)
            else:
                self._move_pods_to_active_or_backoff_queue(
                    self._pods_with_cross_topology_term(new, e), e, old, new
                )

    def is_event_of_interest(self, event: ClusterEvent) -> bool:
        """``isEventOfInterest``: a wildcard, or an event some enabled plugin registered."""
        if event.is_wildcard():
            return True
        cached = self._interest_cache.get(event)
        if cached is None:
            cached = ev.match_any_cluster_event(event, self._registered_events) or (
                bool(self._unregistered_plugins)
                and ev.match_any_cluster_event(event, ev.ALL_RESOURCES_EVENTS)
            )
            self._interest_cache[event] = cached
        return cached

    def _is_pod_worth_requeuing(
        self,
        pinfo: QueuedPodInfo,
        event: ClusterEvent,
        new_obj: object,
        *,
        old_obj: object = None,
    ) -> _Strategy:
        """``isPodWorthRequeuing``: with queueing hints on, the hints of the rejecting
        plugins' matching entries are asked (one answering Queue is enough); off, every
        registered event answers Queue."""
        rejectors = pinfo.rejector_plugins()
        if not rejectors:
            return _Strategy.AFTER_BACKOFF
        if event.is_wildcard():
            if new_obj is not None and (
                not isinstance(new_obj, Pod) or new_obj.uid != pinfo.pod.uid
            ):
                return _Strategy.SKIP
            return _Strategy.AFTER_BACKOFF
        if self.queueing_hints_enabled:
            return self._hinted_strategy(pinfo, rejectors, event, old_obj, new_obj)
        strategy = _Strategy.SKIP
        cache = self._plugin_match_cache
        for plugin in rejectors:
            matched = cache.get((plugin, event))
            if matched is None:
                matched = ev.match_any_cluster_event(event, self._events_for(plugin))
                cache[(plugin, event)] = matched
            if matched:
                if plugin in pinfo.pending_plugins:
                    return _Strategy.IMMEDIATELY
                strategy = _Strategy.AFTER_BACKOFF
        return strategy

    def _hints_for(self, plugin: str, event: ClusterEvent) -> tuple[QueueingHintFn | None, ...]:
        key = (plugin, event)
        fns = self._hint_cache.get(key)
        if fns is None:
            entries = self._hints.get(plugin)
            if entries is None:  # registered without hints (or not at all): always Queue
                fns = (None,) if ev.match_any_cluster_event(event, self._events_for(plugin)) else ()
            else:
                fns = tuple(h.hint for h in entries if ev.match_cluster_events(h.event, event))
            self._hint_cache[key] = fns
        return fns

    def _hinted_strategy(
        self,
        pinfo: QueuedPodInfo,
        rejectors: Iterable[str],
        event: ClusterEvent,
        old_obj: object,
        new_obj: object,
    ) -> _Strategy:
        strategy = _Strategy.SKIP
        for plugin in sorted(rejectors):
            for fn in self._hints_for(plugin, event):
                if fn is not None and fn(pinfo.pod, old_obj, new_obj) is QueueingHint.QueueSkip:
                    continue
                if plugin in pinfo.pending_plugins:
                    return _Strategy.IMMEDIATELY
                strategy = _Strategy.AFTER_BACKOFF
        return strategy

    def _requeue(self, pinfo: QueuedPodInfo, strategy: _Strategy, event: str) -> str:
        """``requeuePodWithQueueingStrategy``; returns the queue the pod went to."""
        if strategy is _Strategy.SKIP:
            self._pool_set(pinfo.pod.key, pinfo)
            return UNSCHEDULABLE_Q
        if strategy is _Strategy.AFTER_BACKOFF and self.is_pod_backing_off(pinfo):
            return BACKOFF_Q if self._move_to_backoff_q(pinfo, event) else UNSCHEDULABLE_Q
        return ACTIVE_Q if self._move_to_active_q(pinfo, event) else UNSCHEDULABLE_Q

    def _move_pods_to_active_or_backoff_queue(
        self,
        pods: Sequence[QueuedPodInfo],
        event: ClusterEvent,
        old_obj: object = None,
        new_obj: object = None,
    ) -> None:
        """``movePodsToActiveOrBackoffQueue``; records the move request cycle.

        Nothing happens for an event no enabled plugin registered (wildcards always count); a
        gated pod moves only on an event its gating plugin registered; otherwise a pod moves
        when one of its rejecting plugins registered the event (or it has no rejecting plugin,
        or the event is a wildcard), to the backoff queue while it is still backing off and to
        activeQ otherwise (a *pending* plugin's event skips the backoff)."""
        if not self.is_event_of_interest(event):
            return
        for pinfo in pods:
            if pinfo.gated and not self._gated_pod_moves(pinfo.gating_plugin_events, event):
                continue
            strategy = self._is_pod_worth_requeuing(pinfo, event, new_obj, old_obj=old_obj)
            if strategy is _Strategy.SKIP:
                continue
            self._pool_pop(pinfo.pod.key)
            self._requeue(pinfo, strategy, event.label)
        self.move_request_cycle = self.scheduling_cycle
        if self.queueing_hints_enabled:
            self._add_event_if_any_in_flight(event, old_obj, new_obj)

    def _ns_labels(self, namespace: str) -> Mapping[str, str]:
        if self._namespace_labels is not None:
            return self._namespace_labels(namespace)
        return {"kubernetes.io/metadata.name": namespace}

    def _pool_set(self, key: str, pinfo: QueuedPodInfo) -> None:
        """``self._unschedulable[key] = pinfo``, keeping the side indexes in pool order.

        The indexes are for speed (kubernetes#124384: thousands of gated pods in the pool, a
        bind or a deletion every few milliseconds): the pods that could have a cross-topology
        term (PodTopologySpread among their rejectors, or required pod-affinity terms) and the
        pods that were not gated when they entered. An event no gating plugin of the pool's
        gated pods registered can move only the latter, so ``assigned_pod_added`` and
        ``move_all_to_active_or_backoff_queue`` do not walk the gated pods; whether an event
        moves a gated pod is worked out once per (gating plugin, event). Pods are still judged
        one by one, in pool order, so what moves and in which order does not change."""
        if pinfo.gated:
            self._note_gating(pinfo.gating_plugin_events)
        if key in self._unschedulable:  # keeps its place in the pool: rebuild the indexes
            self._cross = self._ungated = self._cross_ungated = None
        else:
            if self._cross is not None and _may_cross_topology(pinfo):
                self._cross[key] = pinfo
            if self._ungated is not None and not pinfo.gated:
                self._ungated[key] = pinfo
            if self._cross_ungated is not None and not pinfo.gated and _may_cross_topology(pinfo):
                self._cross_ungated[key] = pinfo
        self._unschedulable[key] = pinfo

    def _pool_pop(self, key: str) -> None:
        if self._unschedulable.pop(key, None) is not None:
            if self._cross is not None:
                self._cross.pop(key, None)
            if self._ungated is not None:
                self._ungated.pop(key, None)
            if self._cross_ungated is not None:
                self._cross_ungated.pop(key, None)

    def _pods_with_cross_topology_term(self, pod: Pod, event: ClusterEvent) -> list[QueuedPodInfo]:
        """``getUnschedulablePodsWithCrossTopologyTerm``, over the pool pods that may have
        such a term (in pool order): those PodTopologySpread rejected in ``pod``'s namespace,
        and those whose *required pod-affinity* terms match it. Upstream uses
        ``PodInfo.RequiredAffinityTerms``, which leaves out anti-affinity terms (a new pod can
        only make anti-affinity worse), and so does this port. Gated pods that ``event``
        cannot move are left out before their terms are matched: the move would skip them
        (kubernetes#124384's thousands of gated pods with affinity, a bind every few ms)."""
        if self._event_moves_gated(event):
            cross = self._cross
            if cross is None:
                cross = self._cross = {
                    k: p for k, p in self._unschedulable.items() if _may_cross_topology(p)
                }
        else:
            cross = self._cross_ungated
            if cross is None:
                cross = self._cross_ungated = {
                    k: p
                    for k, p in self._unschedulable.items()
                    if not p.gated and _may_cross_topology(p)
                }
        ns_labels: Mapping[str, str] | None = None
        out: list[QueuedPodInfo] = []
        for pinfo in cross.values():
            if pinfo.gated and not self._gated_pod_moves(pinfo.gating_plugin_events, event):
                continue
            if (
                POD_TOPOLOGY_SPREAD in pinfo.unschedulable_plugins
                and pod.namespace == pinfo.pod.namespace
            ):
                out.append(pinfo)
                continue
            terms = pinfo.required_affinity_terms
            if not terms:
                continue
            if ns_labels is None:
                ns_labels = self._ns_labels(pod.namespace)
            if any(term.matches(pod, ns_labels) for term in terms):
                out.append(pinfo)
        return out

    # --- inspection ----------------------------------------------------------------------

    def get_pod(self, name: str, namespace: str = "default") -> QueuedPodInfo | None:
        """``GetPod``: the record of a pod in any sub-queue."""
        key = f"{namespace}/{name}"
        return (
            self._backoff.get(key)
            or self._error_backoff.get(key)
            or self._unschedulable.get(key)
            or self._active.get(key)
        )

    def pods_in_active_q(self) -> list[Pod]:
        return [p.pod for p in self._active.items()]

    def pods_in_backoff_q(self) -> list[Pod]:
        """podBackoffQ then podErrorBackoffQ."""
        return [p.pod for p in self._backoff.items()] + [p.pod for p in self._error_backoff.items()]

    def unschedulable_pods(self) -> list[Pod]:
        return [p.pod for p in self._unschedulable.values()]

    def queued_pod_infos(self) -> Iterator[tuple[str, QueuedPodInfo]]:
        """Every record with the name of its sub-queue (for tests and debugging)."""
        for p in self._active.items():
            yield ACTIVE_Q, p
        for p in self._backoff.items():
            yield BACKOFF_Q, p
        for p in self._error_backoff.items():
            yield BACKOFF_Q, p
        for p in self._unschedulable.values():
            yield UNSCHEDULABLE_Q, p

    def where(self, pod: Pod | str) -> str | None:
        """Which sub-queue holds the pod (by ``namespace/name``), or None."""
        key = pod if isinstance(pod, str) else pod.key
        if key in self._active:
            return ACTIVE_Q
        if self._in_backoff(key):
            return BACKOFF_Q
        if key in self._unschedulable:
            return UNSCHEDULABLE_Q
        return None

    def pending_pods(self) -> tuple[list[Pod], str]:
        """``PendingPods``: every pod, and ``activeQ:N; backoffQ:N; unschedulablePods:N``."""
        active = self.pods_in_active_q()
        backoff = self.pods_in_backoff_q()
        pool = self.unschedulable_pods()
        summary = f"activeQ:{len(active)}; backoffQ:{len(backoff)}; unschedulablePods:{len(pool)}"
        return active + backoff + pool, summary

    def nominated_pods_for_node(self, node_name: str) -> list[Pod]:
        return self.nominator.nominated_pods_for_node(node_name)

    def __len__(self) -> int:
        return (
            len(self._active)
            + len(self._backoff)
            + len(self._error_backoff)
            + len(self._unschedulable)
        )

    def __repr__(self) -> str:
        return f"<SchedulingQueue {self.pending_pods()[1]} cycle={self.scheduling_cycle}>"
