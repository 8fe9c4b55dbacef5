"""The kube-scheduler feature gates this library models both ways, with kube 1.32's defaults.

A gate here changes how the scheduler behaves, not what a user may write, so a component that
runs the scheduler (``kubesim serve --feature-gates``, the scheduler_perf runner) offers exactly
these, by kube's names (``pkg/features/kube_features.go``). Kept free of imports: a command's
``--help`` names them.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Final

__all__ = ["FEATURE_GATES", "SCHEDULER_QUEUEING_HINTS"]

# On: each plugin's QueueingHintFn judges whether an event may make its rejected pod
# schedulable (scheduler.hints); off: every event a plugin registers moves the pod.
SCHEDULER_QUEUEING_HINTS: Final = "SchedulerQueueingHints"

FEATURE_GATES: Final = MappingProxyType({SCHEDULER_QUEUEING_HINTS: True})
