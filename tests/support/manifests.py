"""API objects as the manifests a test seeds a kubesim with (plain dicts, as kubectl sends).

Pods carry an owner reference with the owner's UID, so a living cluster's controllers count
them as their own (no adoption, no surplus replicas) and their names stay predictable.
"""

from __future__ import annotations

import uuid
from typing import Any


def node(
    name: str,
    *,
    unschedulable: bool = False,
    labels: dict[str, str] | None = None,
    cpu: str = "64",
    memory: str = "256Gi",
    pods: str = "500",
) -> dict[str, Any]:
    """A Ready node (big enough for any test by default); allocatable is read as capacity."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"unschedulable": unschedulable} if unschedulable else {},
        "status": {
            "capacity": {"cpu": cpu, "memory": memory, "pods": pods},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def replicaset(name: str, *, namespace: str = "default", replicas: int = 3) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": namespace, "uid": f"{name}-uid"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }


def statefulset(
    name: str, *, namespace: str = "default", replicas: int = 3, parallel: bool = False
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "replicas": replicas,
        "serviceName": name,
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {"containers": [{"name": "c", "image": "postgres"}]},
        },
    }
    if parallel:
        spec["podManagementPolicy"] = "Parallel"
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": namespace, "uid": f"{name}-uid"},
        "spec": spec,
    }


def daemonset(name: str, *, namespace: str = "kube-system") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": namespace, "uid": f"{name}-uid"},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "agent"}]},
            },
        },
    }


def pod(
    name: str,
    *,
    namespace: str = "default",
    node_name: str = "node-1",
    app: str | None = None,
    owner: tuple[str, str, str] | None = ("apps/v1", "ReplicaSet", "web"),
    phase: str = "Running",
    ready: bool | None = True,
    empty_dir: bool = False,
    annotations: dict[str, str] | None = None,
    priority: int | None = None,
    grace: int | None = None,
    uid: str | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": uid or str(uuid.uuid4()),
        "labels": {"app": app or (owner[2] if owner else name)},
    }
    if owner is not None:
        api_version, kind, owner_name = owner
        meta["ownerReferences"] = [
            {
                "apiVersion": api_version,
                "kind": kind,
                "name": owner_name,
                "uid": f"{owner_name}-uid",
                "controller": True,
            }
        ]
    if annotations:
        meta["annotations"] = annotations
    spec: dict[str, Any] = {"nodeName": node_name, "containers": [{"name": "c", "image": "x"}]}
    if empty_dir:
        spec["volumes"] = [{"name": "scratch", "emptyDir": {}}]
    if priority is not None:
        spec["priority"] = priority
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    # ready=None: no Ready condition at all (a pod the kubelet has not reported on)
    conditions = (
        [] if ready is None else [{"type": "Ready", "status": "True" if ready else "False"}]
    )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": phase, "conditions": conditions},
    }


def pending_pod(
    name: str,
    *,
    cpu: str | None = "100m",
    memory: str | None = None,
    priority_class: str | None = None,
    node_name: str | None = None,
    grace: int | None = None,
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A pod for a scheduler to place (or a kubelet to admit, with ``node_name``): no owner, no
    status, a cpu request unless ``cpu=None`` — unlike ``pod`` above, a running pod of a
    controller. ``spec`` adds fields to the pod's spec as written."""
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    body: dict[str, Any] = {
        "containers": [{"name": "c", "image": "x", "resources": {"requests": requests}}],
        **spec,
    }
    if priority_class:
        body["priorityClassName"] = priority_class
    if node_name:
        body["nodeName"] = node_name
    if grace is not None:
        body["terminationGracePeriodSeconds"] = grace
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels or {"app": name}},
        "spec": body,
    }


def pdb(
    name: str,
    *,
    namespace: str = "default",
    app: str | None = None,
    selector: dict[str, Any] | None = None,
    min_available: int | str | None = None,
    max_unavailable: int | str | None = None,
    unhealthy_policy: str | None = None,
) -> dict[str, Any]:
    """A PodDisruptionBudget over ``app=<app or name>``, or over ``selector`` (a whole
    labelSelector) when given; budgets may be counts or percentages."""
    sel = {"matchLabels": {"app": app or name}} if selector is None else selector
    spec: dict[str, Any] = {"selector": sel}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    if unhealthy_policy is not None:
        spec["unhealthyPodEvictionPolicy"] = unhealthy_policy
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def new_event(name: str, note: str, *, regarding: str = "web-0") -> dict[str, Any]:
    """An ``events.k8s.io/v1`` Event (the group's required fields set) about pod ``regarding``."""
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": name},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "example.com/ctl",
        "reportingInstance": "ctl-1",
        "action": "Check",
        "reason": "Checked",
        "type": "Normal",
        "note": note,
        "regarding": {"kind": "Pod", "namespace": "default", "name": regarding},
    }
