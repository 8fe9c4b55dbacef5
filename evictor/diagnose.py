"""Why a drain is stuck behind a PodDisruptionBudget, and what can be done about it.

The Kubernetes docs' "stuck evictions" troubleshooting says evictions can answer 429 until
someone intervenes — replacement pods never become Ready, long grace periods — and lists the
remedies. ``explain`` (pure) turns a budget's status, the pods it selects (with the scheduler's
reason when one is unbound: a drain's replacements often have nowhere to go) and their
workloads' replica counts into those sentences; ``diagnose`` gathers the facts from the API.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evictor.pdbwatch import PdbState

__all__ = ["WorkloadStatus", "diagnose", "explain"]

_SCALABLE = {
    "ReplicaSet": "replicasets",
    "StatefulSet": "statefulsets",
    "Deployment": "deployments",
}


@dataclass(frozen=True, slots=True)
class WorkloadStatus:
    kind: str
    name: str
    replicas: int
    ready: int


def _unhealthy(pods: Sequence[Mapping[str, Any]]) -> list[str]:
    out: list[str] = []
    for item in pods:
        meta = item.get("metadata") or {}
        status = item.get("status") or {}
        conds = status.get("conditions") or []
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)
        if meta.get("deletionTimestamp"):
            out.append(f"{meta.get('name')} (terminating)")
        elif not ready:
            why = status.get("phase") or "Unknown"
            unscheduled = _unschedulable(conds)
            if unscheduled:
                why = f"{why}: {unscheduled}"
            out.append(f"{meta.get('name')} (not Ready, {why})")
    return out


def _unschedulable(conditions: Sequence[Mapping[str, Any]]) -> str:
    """The scheduler's reason a pod is unbound (``PodScheduled=False``), e.g. a replacement
    with no node left once the drained node is cordoned."""
    for c in conditions:
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            return str(c.get("message") or c.get("reason") or "unschedulable")
    return ""


def explain(
    state: PdbState,
    *,
    blocked: Sequence[str],
    selected: Sequence[Mapping[str, Any]],
    workloads: Sequence[WorkloadStatus] = (),
) -> list[str]:
    """Lines naming the budget, why it allows nothing, and the remedies."""
    lines = [
        f"diagnosis: PodDisruptionBudget {state.namespace}/{state.name} blocked "
        f"{len(blocked)} pod(s) ({', '.join(blocked)}): disruptionsAllowed="
        f"{state.disruptions_allowed}, currentHealthy={state.current_healthy}, desiredHealthy="
        f"{state.desired_healthy}, expectedPods={state.expected_pods}"
    ]
    if state.observed_generation < state.generation:
        lines.append("  the disruption controller has not processed the budget's latest spec yet")
    unhealthy = _unhealthy(selected)
    if unhealthy:
        lines.append(f"  unhealthy pods selected by it: {', '.join(unhealthy)}")
    short = [w for w in workloads if w.ready < w.replicas]
    if short:
        lines.append(
            "  replicas not Ready: "
            + ", ".join(f"{w.kind} {w.name} {w.ready}/{w.replicas}" for w in short)
        )
    if state.current_healthy <= state.desired_healthy:
        need = state.desired_healthy - state.current_healthy + 1
        lines.append(
            f"  it needs {state.desired_healthy} healthy pods and has {state.current_healthy}: "
            f"{need} more must be Ready before one of them may go"
        )
    lines.append(
        "  remedies: let the replacements become Ready (check their workload, scheduling and "
        "readiness probes); relax the budget (minAvailable/maxUnavailable); set "
        "unhealthyPodEvictionPolicy: AlwaysAllow if unready pods hold it; or delete the pods "
        "(--disable-eviction), accepting the disruption"
    )
    return lines


async def diagnose(api_client: Any, state: PdbState, *, blocked: Sequence[str]) -> list[str]:
    """Read the budget's pods and their workloads, then ``explain``."""
    from evictor.api.calls import TransportError, path_segment, send

    selected: list[dict[str, Any]] = []
    workloads: list[WorkloadStatus] = []
    if state.selector is not None:
        ns = path_segment(state.namespace)
        try:
            resp = await send(
                api_client,
                "GET",
                f"/api/v1/namespaces/{ns}/pods",
                query=[("labelSelector", str(state.selector))],
            )
            if resp.ok and isinstance(resp.body, dict):
                selected = [i for i in resp.body.get("items") or [] if isinstance(i, dict)]
        except TransportError:
            pass
        owners: set[tuple[str, str]] = set()
        for item in selected:
            for ref in (item.get("metadata") or {}).get("ownerReferences") or []:
                if ref.get("controller") and ref.get("kind") in _SCALABLE:
                    owners.add((str(ref["kind"]), str(ref.get("name", ""))))
        for kind, name in sorted(owners):
            path = f"/apis/apps/v1/namespaces/{ns}/{_SCALABLE[kind]}/{path_segment(name)}"
            try:
                resp = await send(api_client, "GET", path)
            except TransportError:
                continue
            if not resp.ok or not isinstance(resp.body, dict):
                continue
            spec = resp.body.get("spec") or {}
            status = resp.body.get("status") or {}
            workloads.append(
                WorkloadStatus(
                    kind,
                    name,
                    int(spec.get("replicas", 1) or 0),
                    int(status.get("readyReplicas", 0) or 0),
                )
            )
    return explain(state, blocked=blocked, selected=selected, workloads=workloads)
