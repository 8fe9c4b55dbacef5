"""kube-scheduler's scheduling queue: activeQ, backoff, the unschedulable pool, gates, nominator.

The behaviour reproduced (SchedulerQueueingHints on or off, SchedulerPopFromBackoffQ on) is
described in ``scheduler.queue.scheduling_queue``; the pieces live in their own modules:

* ``types`` — ``QueuedPodInfo``, ``less`` (PrioritySort), ``backoff_duration``;
* ``events`` — ``ClusterEvent`` and the named events (``NodeAdd``, ``UnschedulableTimeout``, …);
* ``gates`` — PreEnqueue plugins and ``SchedulingGates`` (and its queueing hint);
* ``nominator`` — ``Nominator``, ``NominatingInfo``, ``NominatingMode``;
* ``validation`` — ``validate_pod_update_while_gated`` (KEP-3838 mutable scheduling directives).
"""

from scheduler.queue.events import ActionType, ClusterEvent
from scheduler.queue.gates import (
    PreEnqueuePlugin,
    SchedulingGates,
    scheduling_gates_pre_enqueue,
)
from scheduler.queue.nominator import NominatingInfo, NominatingMode, Nominator, PodLister
from scheduler.queue.scheduling_queue import (
    PodAlreadyPresentError,
    SchedulingQueue,
    is_pod_updated,
)
from scheduler.queue.types import QueuedPodInfo, backoff_duration, less
from scheduler.queue.validation import FieldError, validate_pod_update_while_gated

__all__ = [
    "ActionType",
    "ClusterEvent",
    "FieldError",
    "NominatingInfo",
    "NominatingMode",
    "Nominator",
    "PodAlreadyPresentError",
    "PodLister",
    "PreEnqueuePlugin",
    "QueuedPodInfo",
    "SchedulingGates",
    "SchedulingQueue",
    "backoff_duration",
    "is_pod_updated",
    "less",
    "scheduling_gates_pre_enqueue",
    "validate_pod_update_while_gated",
]
