"""What a drain plan reads, typed: ``LISTS`` names every list (cluster-wide, on kubectl's
paths) and ``view_from_lists`` turns what was listed into the ``ClusterView`` a plan plays on.
``evictor.clusterread`` sends the requests; this module does no I/O.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar

from evictor.plan.types import ClusterView, Workload
from kube.documents import controller_ref, meta_of
from kube.objects import (
    InvalidObject,
    KubeObject,
    Namespace,
    Node,
    Pod,
    PodDisruptionBudget,
    PriorityClass,
    ReplicaSet,
    ReplicationController,
    Service,
    StatefulSet,
)

__all__ = ["LISTS", "template_pod", "view_from_lists", "workloads"]

log = logging.getLogger("evictor.plan")

T = TypeVar("T")

# name -> path, in the order they are sent: what kube-scheduler and the controllers consult
# (Namespaces for namespace selectors; Services, ReplicationControllers, ReplicaSets and
# StatefulSets for the default spreading's selectors), the owners, and the DaemonSets.
LISTS: Final = {
    "nodes": "/api/v1/nodes",
    "pods": "/api/v1/pods",
    "poddisruptionbudgets": "/apis/policy/v1/poddisruptionbudgets",
    "priorityclasses": "/apis/scheduling.k8s.io/v1/priorityclasses",
    "namespaces": "/api/v1/namespaces",
    "services": "/api/v1/services",
    "replicationcontrollers": "/api/v1/replicationcontrollers",
    "replicasets": "/apis/apps/v1/replicasets",
    "statefulsets": "/apis/apps/v1/statefulsets",
    "deployments": "/apis/apps/v1/deployments",
    "jobs": "/apis/batch/v1/jobs",
    "daemonsets": "/apis/apps/v1/daemonsets",
}


def _typed(items: list[dict[str, Any]], convert: Callable[[Mapping[str, Any]], T]) -> list[T]:
    out: list[T] = []
    for raw in items:
        try:
            out.append(convert(raw))
        except InvalidObject as exc:
            log.warning("skipping malformed object: %s", exc)
    return out


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _int(value: Any, default: int) -> int:
    if value is None:
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def template_pod(owner: Mapping[str, Any], api_version: str, kind: str) -> Pod | None:
    """``spec.template`` of ``owner`` as the unbound pod its controller would create."""
    meta = meta_of(owner)
    template = _spec(owner).get("template")
    if not isinstance(template, Mapping):
        return None
    tmeta = template.get("metadata")
    tmeta = tmeta if isinstance(tmeta, Mapping) else {}
    name = str(meta.get("name", ""))
    manifest: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{name}-template",
            "namespace": str(meta.get("namespace", "")),
            "labels": dict(tmeta.get("labels") or {}),
            "annotations": dict(tmeta.get("annotations") or {}),
            "ownerReferences": [
                {
                    "apiVersion": api_version,
                    "kind": kind,
                    "name": name,
                    "uid": str(meta.get("uid", "")),
                    "controller": True,
                }
            ],
        },
        "spec": dict(template.get("spec") or {}),
    }
    try:
        return Pod.from_dict(manifest)
    except (InvalidObject, TypeError, ValueError) as exc:
        log.warning("the pod template of %s %s does not decode: %s", kind, name, exc)
        return None


def _controller(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    ref = controller_ref(obj)
    return None if ref is None else (str(ref.get("kind", "")), str(ref.get("name", "")))


def _job_active(job: Mapping[str, Any]) -> int:
    """How many pods a Job keeps running (``min(parallelism, completions - succeeded)``)."""
    status = job.get("status")
    status = status if isinstance(status, Mapping) else {}
    for c in status.get("conditions") or []:
        if (
            isinstance(c, Mapping)
            and c.get("type") in ("Complete", "Failed")
            and c.get("status") == "True"
        ):
            return 0
    spec = _spec(job)
    parallelism = _int(spec.get("parallelism"), 1)
    succeeded = _int(status.get("succeeded"), 0)
    completions = spec.get("completions")
    if completions is None:
        return 0 if succeeded else parallelism
    return max(0, min(parallelism, _int(completions, 1) - succeeded))


def workloads(lists: Mapping[str, list[dict[str, Any]]]) -> dict[tuple[str, str, str], Workload]:
    """The controllers of pods, by ``(kind, namespace, name)``: what each creates when one of
    its pods goes (``spec.template`` as an unbound pod) and how many pods it keeps
    (``spec.replicas``; a Job's ``min(parallelism, completions - succeeded)``, 0 once it is
    finished); a template that does not decode is logged, and the workload has none."""
    out: dict[tuple[str, str, str], Workload] = {}
    deployments = {
        (str(meta_of(d).get("namespace", "")), str(meta_of(d).get("name", "")))
        for d in lists.get("deployments", [])
    }

    def add(obj: Mapping[str, Any], api_version: str, kind: str, replicas: int, **kw: Any) -> None:
        meta = meta_of(obj)
        ns, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
        out[(kind, ns, name)] = Workload(
            kind=kind,
            namespace=ns,
            name=name,
            uid=str(meta.get("uid", "")),
            template=template_pod(obj, api_version, kind),
            replicas=replicas,
            **kw,
        )

    for rs in lists.get("replicasets", []):
        via = ""
        ctl = _controller(rs)
        if ctl is not None and ctl[0] == "Deployment":
            known = (str(meta_of(rs).get("namespace", "")), ctl[1]) in deployments
            via = f"Deployment {ctl[1]}" + ("" if known else " (not found)")
        add(rs, "apps/v1", "ReplicaSet", _int(_spec(rs).get("replicas"), 1), via=via)
    for rc in lists.get("replicationcontrollers", []):
        add(rc, "v1", "ReplicationController", _int(_spec(rc).get("replicas"), 1))
    for sts in lists.get("statefulsets", []):
        spec = _spec(sts)
        add(
            sts,
            "apps/v1",
            "StatefulSet",
            _int(spec.get("replicas"), 1),
            ordered_ready=spec.get("podManagementPolicy") != "Parallel",
        )
    for job in lists.get("jobs", []):
        add(job, "batch/v1", "Job", _job_active(job))
    for ds in lists.get("daemonsets", []):
        add(ds, "apps/v1", "DaemonSet", 0)
    return out


def view_from_lists(
    lists: Mapping[str, list[dict[str, Any]]], *, eviction: bool = True, now: float | None = None
) -> ClusterView:
    """Type what was listed (``LISTS`` names; a missing list is empty)."""

    def raw(name: str) -> list[dict[str, Any]]:
        return list(lists.get(name, []))

    objects: list[KubeObject] = []
    objects += _typed(raw("namespaces"), Namespace.from_dict)
    objects += _typed(raw("services"), Service.from_dict)
    objects += _typed(raw("replicationcontrollers"), ReplicationController.from_dict)
    objects += _typed(raw("replicasets"), ReplicaSet.from_dict)
    objects += _typed(raw("statefulsets"), StatefulSet.from_dict)
    return ClusterView(
        nodes=tuple(_typed(raw("nodes"), Node.from_dict)),
        pods=tuple(_typed(raw("pods"), Pod.from_dict)),
        pdbs=tuple(_typed(raw("poddisruptionbudgets"), PodDisruptionBudget.from_dict)),
        priority_classes=tuple(_typed(raw("priorityclasses"), PriorityClass.from_dict)),
        objects=tuple(objects),
        workloads=workloads(lists),
        daemonsets=frozenset(
            (str(meta_of(d).get("namespace", "")), str(meta_of(d).get("name", "")))
            for d in raw("daemonsets")
        ),
        eviction=eviction,
        now=time.time() if now is None else now,
    )
