"""SchedulingGates' queueing hint (``isSchedulableAfterUpdatePodSchedulingGatesEliminated``):
only the gated pod's own update that removed its gates may move it."""

from __future__ import annotations

from scheduler.framework import QueueingHint
from scheduler.queue.gates import is_schedulable_after_scheduling_gates_eliminated as hint
from tests.support.objects import mkpod


def test_only_the_pods_own_update_counts() -> None:
    gated = mkpod("p", scheduling_gates=("g",))
    ungated = mkpod("p")
    other = mkpod("other")
    assert hint(gated, gated, ungated) is QueueingHint.Queue
    assert hint(gated, other, other) is QueueingHint.QueueSkip
    assert hint(gated, gated, "not a pod") is QueueingHint.Queue
