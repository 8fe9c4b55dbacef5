"""Pod conditions set as kube's ``podutil.UpdatePodCondition`` sets them
(``pkg/api/v1/pod/util.go``), for every writer of pod status (kubesim's API server, scheduler
loop, kubelets and fault injection).
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any, Final

from kube.times import format_time

__all__ = ["DISRUPTION_TARGET", "get_pod_condition", "update_pod_condition"]

# v1.DisruptionTarget: the pod is about to be deleted by a disruption (preemption, the Eviction
# API, the kubelet's node-pressure eviction); the reason says which.
DISRUPTION_TARGET: Final = "DisruptionTarget"

_COMPARED = ("status", "reason", "message", "lastProbeTime", "lastTransitionTime")


def get_pod_condition(
    status: Mapping[str, Any] | None, type_: str
) -> tuple[int, Mapping[str, Any] | None]:
    """``GetPodCondition``: the index and the condition of ``type_``, or ``(-1, None)``."""
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    for i, cond in enumerate(conditions if isinstance(conditions, list) else ()):
        if isinstance(cond, Mapping) and cond.get("type") == type_:
            return i, cond
    return -1, None


def update_pod_condition(
    status: MutableMapping[str, Any], condition: Mapping[str, Any], *, now: str | float
) -> bool:
    """``UpdatePodCondition``: add ``condition`` (``type``, ``status``, and optionally
    ``reason``, ``message``, ``lastProbeTime``) to a pod's ``status`` or replace the one of its
    type; True when the conditions changed. ``now`` is the transition time to record, as
    ``metav1.Time`` text or epoch seconds.

    * A condition of a type the pod does not have yet is appended, its ``lastTransitionTime`` now.
    * Otherwise it replaces the one of its type, and ``lastTransitionTime`` moves only when the
      condition's ``status`` changes: a new reason or message with the same status keeps the time
      of the last transition, which is what ``kubectl describe`` and every controller reading
      "since when" rely on.
    * The answer says whether anything changed (status, reason, message, probe or transition time),
      so a writer can skip a write that would change nothing.

    Conditions are written in the Go encoder's key order (``type``, ``status``, ``lastProbeTime``,
    ``lastTransitionTime``, ``reason``, ``message``), with ``lastProbeTime`` ``null`` when unset as
    ``metav1.Time`` encodes it, and ``reason``/``message`` left out when empty (``omitempty``).
    """
    when = now if isinstance(now, str) else format_time(now)
    new: dict[str, Any] = {
        "type": condition["type"],
        "status": condition.get("status", ""),
        "lastProbeTime": condition.get("lastProbeTime"),
        "lastTransitionTime": when,
    }
    for key in ("reason", "message"):
        if condition.get(key):
            new[key] = condition[key]
    index, old = get_pod_condition(status, str(condition["type"]))
    if old is None:
        conditions = status.get("conditions")
        if not isinstance(conditions, list):
            conditions = status["conditions"] = []
        conditions.append(new)
        return True
    if old.get("status") == new["status"]:
        new["lastTransitionTime"] = old.get("lastTransitionTime")
    changed = any((old.get(k) or None) != (new.get(k) or None) for k in _COMPARED)
    status["conditions"][index] = new
    return changed
