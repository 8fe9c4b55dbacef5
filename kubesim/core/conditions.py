"""Conditions read and set as kube's helpers do, for every writer of a status: ``podutil``'s
``IsPodReady``, ``apimeta.SetStatusCondition`` for ``metav1.Condition`` lists
(PodDisruptionBudgets), and ``pdbhelper.UpdateDisruptionAllowedCondition``.

Pod conditions (``PodCondition``, no observed generation) are set with
``kube.conditions.update_pod_condition``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kube.conditions import get_pod_condition
from kube.times import format_time

__all__ = [
    "DISRUPTION_ALLOWED",
    "is_pod_ready",
    "set_status_condition",
    "update_disruption_allowed_condition",
]

DISRUPTION_ALLOWED: Final = "DisruptionAllowed"


def is_pod_ready(pod: Mapping[str, Any]) -> bool:
    """``podutil.IsPodReady``: a ``Ready`` condition with status ``True``."""
    _, ready = get_pod_condition(pod.get("status"), "Ready")
    return ready is not None and ready.get("status") == "True"


def set_status_condition(
    conditions: list[dict[str, Any]],
    *,
    type_: str,
    status: str,
    reason: str,
    message: str,
    observed_generation: int,
    now: float,
) -> None:
    """``apimeta.SetStatusCondition``: the transition time moves only when the status does."""
    for i, cond in enumerate(conditions):
        if cond.get("type") != type_:
            continue
        when = cond.get("lastTransitionTime")
        if cond.get("status") != status or not when:
            when = format_time(now)
        conditions[i] = _condition(type_, status, observed_generation, when, (reason, message))
        return
    when = format_time(now)
    conditions.append(_condition(type_, status, observed_generation, when, (reason, message)))


def _condition(
    type_: str, status: str, observed_generation: int, when: str, text: tuple[str, str]
) -> dict[str, Any]:
    """A ``metav1.Condition`` in the Go encoder's key order."""
    out: dict[str, Any] = {"type": type_, "status": status}
    if observed_generation:
        out["observedGeneration"] = observed_generation
    out.update({"lastTransitionTime": when, "reason": text[0], "message": text[1]})
    return out


def update_disruption_allowed_condition(status: dict[str, Any], *, now: float) -> None:
    """``pdbhelper.UpdateDisruptionAllowedCondition`` on a PDB status dict: the
    ``DisruptionAllowed`` condition from its ``disruptionsAllowed``, which the eviction subresource
    and the disruption controller both keep.
    """
    conditions = status.setdefault("conditions", [])
    allowed = int(status.get("disruptionsAllowed") or 0) > 0
    set_status_condition(
        conditions,
        type_=DISRUPTION_ALLOWED,
        status="True" if allowed else "False",
        reason="SufficientPods" if allowed else "InsufficientPods",
        message="",
        observed_generation=int(status.get("observedGeneration") or 0),
        now=now,
    )
