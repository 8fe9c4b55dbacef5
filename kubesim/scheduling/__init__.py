"""kube-scheduler as a kubesim actor: ``scheduleOne`` driven live, the decisions ``scheduler``'s.

``loop`` is the ``SchedulerLoop`` controller (``sim.py`` starts it as ``scheduler``);
``metrics`` are kube-scheduler's metrics on the API server's ``/metrics``.
"""

from kubesim.scheduling.loop import (
    DEFAULT_SCHEDULER_NAME,
    Decision,
    SchedulerLoop,
    node_update_events,
    status_update,
)
from kubesim.scheduling.metrics import SchedulerMetrics

__all__ = [
    "DEFAULT_SCHEDULER_NAME",
    "Decision",
    "SchedulerLoop",
    "SchedulerMetrics",
    "node_update_events",
    "status_update",
]
