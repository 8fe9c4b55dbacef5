"""kube-scheduler as a kubesim actor: ``scheduleOne`` driven live, the decisions ``scheduler``'s.

``loop`` is the ``SchedulerLoop`` controller (``sim.py`` starts it as ``scheduler``): its
``informers`` keep the snapshot and the queue from the store's watch, ``api_calls`` are its
writes (binding, preemption's victims, the pod's status, events), and ``metrics`` are
kube-scheduler's metrics on the API server's ``/metrics``.
"""

from kubesim.scheduling.informers import node_update_events, status_update
from kubesim.scheduling.loop import Decision, SchedulerLoop
from kubesim.scheduling.metrics import SchedulerMetrics

__all__ = [
    "Decision",
    "SchedulerLoop",
    "SchedulerMetrics",
    "node_update_events",
    "status_update",
]
