"""PreEnqueue plugins and the SchedulingGates plugin (KEP-3521,
``pkg/scheduler/framework/plugins/schedulinggates``).

A PreEnqueue plugin is asked whether a pod may enter activeQ (and, with SchedulerPopFromBackoffQ,
the backoff queue). Any non-success status keeps the pod in the unschedulable pool, *gated*:
``gating_plugin`` names the plugin, which is also added to ``unschedulable_plugins``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Protocol, runtime_checkable

from kube.objects import Pod
from scheduler.framework import Code, QueueingHint, Status
from scheduler.queue.events import ClusterEvent

__all__ = [
    "SCHEDULING_GATES",
    "EnqueueExtensions",
    "PreEnqueuePlugin",
    "SchedulingGates",
    "is_schedulable_after_scheduling_gates_eliminated",
    "scheduling_gates_pre_enqueue",
]

SCHEDULING_GATES: Final = "SchedulingGates"


class PreEnqueuePlugin(Protocol):
    """``fwk.PreEnqueuePlugin``: ``pre_enqueue`` returns None (Success) or a rejection."""

    @property
    def name(self) -> str: ...

    def pre_enqueue(self, pod: Pod) -> Status | None: ...


@runtime_checkable
class EnqueueExtensions(Protocol):
    """``fwk.EnqueueExtensions``: the events that may make a rejected pod schedulable."""

    def events_to_register(self) -> Sequence[ClusterEvent]: ...


def scheduling_gates_pre_enqueue(pod: Pod) -> Status | None:
    """``SchedulingGates.PreEnqueue``: a pod whose ``spec.schedulingGates`` is non-empty is
    UnschedulableAndUnresolvable ``waiting for scheduling gates: [g1 g2]`` (Go's ``%v`` of a
    string slice: names space-separated, in spec order)."""
    if not pod.scheduling_gates:
        return None
    return Status(
        Code.UnschedulableAndUnresolvable,
        f"waiting for scheduling gates: [{' '.join(pod.scheduling_gates)}]",
        plugin=SCHEDULING_GATES,
    )


class SchedulingGates:
    """The ``SchedulingGates`` PreEnqueue plugin; ``events_to_register`` is what it registers
    with queueing hints off (``scheduler.hints`` has its entry with them on).

    With queueing hints off it registers no events, so a gated pod is released only by an
    update of the pod itself that passes PreEnqueue; with them on it registers the pod's own
    ``UpdatePodSchedulingGatesEliminated``, judged by
    ``is_schedulable_after_scheduling_gates_eliminated``.
    """

    name: Final = SCHEDULING_GATES

    def pre_enqueue(self, pod: Pod) -> Status | None:
        return scheduling_gates_pre_enqueue(pod)

    def events_to_register(self) -> Sequence[ClusterEvent]:
        # The pod's own update re-runs PreEnqueue; no cluster event can lift a gate.
        return ()


def is_schedulable_after_scheduling_gates_eliminated(
    pod: Pod, old: object, new: object
) -> QueueingHint:
    """``isSchedulableAfterUpdatePodSchedulingGatesEliminated``: only the gated pod's own
    update that removed its last gate."""
    if not isinstance(new, Pod):
        return QueueingHint.Queue
    return QueueingHint.Queue if new.uid == pod.uid else QueueingHint.QueueSkip
