"""Clusters for the drain planner, as the lists it reads (``view_from_lists``): nodes, owners
with their pod template, member pods bound to a node, budgets over them, at a fixed ``NOW``."""

from __future__ import annotations

import copy
from typing import Any

from evictor.plan.types import ClusterView
from evictor.plan.view import view_from_lists

NOW = 1_800_000_000.0


def node(name: str, cpu: str = "4", *, zone: str = "a") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone}},
        "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}},
    }


def template(cpu: str, **spec: Any) -> dict[str, Any]:
    return {
        "terminationGracePeriodSeconds": 10,
        "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}],
        **spec,
    }


def owner(kind: str, name: str, replicas: int, cpu: str, **spec: Any) -> dict[str, Any]:
    group = "batch/v1" if kind == "Job" else "apps/v1"
    obj: dict[str, Any] = {
        "apiVersion": group,
        "kind": kind,
        "metadata": {"name": name, "namespace": "default", "uid": f"{name}-uid"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": template(cpu, **spec)},
        },
    }
    if kind == "Job":
        obj["spec"] = {"parallelism": replicas, "template": obj["spec"]["template"]}
    return obj


def member(
    o: dict[str, Any], name: str, node_name: str, *, ready: bool = True, **meta: Any
) -> dict[str, Any]:
    tmpl = o["spec"]["template"]
    return {
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"{name}-uid",
            "labels": dict(tmpl["metadata"]["labels"]),
            "ownerReferences": [
                {
                    "apiVersion": o["apiVersion"],
                    "kind": o["kind"],
                    "name": o["metadata"]["name"],
                    "uid": o["metadata"]["uid"],
                    "controller": True,
                }
            ],
            **meta,
        },
        "spec": {**copy.deepcopy(tmpl["spec"]), "nodeName": node_name},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def budget(
    name: str,
    pods: list[dict[str, Any]],
    *,
    min_available: int | None = None,
    max_unavailable: int | None = None,
    expected: int | None = None,
    policy: str | None = None,
) -> dict[str, Any]:
    """A PDB over ``app=name`` with the status the disruption controller would write."""
    selected = [p for p in pods if p["metadata"]["labels"].get("app") == name]
    healthy = sum(
        1
        for p in selected
        if any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"]["conditions"])
    )
    count = len(selected) if expected is None else expected
    if min_available is not None:
        desired, spec = min_available, {"minAvailable": min_available}
    else:
        assert max_unavailable is not None
        desired, spec = max(count - max_unavailable, 0), {"maxUnavailable": max_unavailable}
    if policy:
        spec["unhealthyPodEvictionPolicy"] = policy
    return {
        "metadata": {"name": name, "namespace": "default", "generation": 1},
        "spec": {"selector": {"matchLabels": {"app": name}}, **spec},
        "status": {
            "observedGeneration": 1,
            "currentHealthy": healthy,
            "desiredHealthy": desired,
            "expectedPods": count,
            "disruptionsAllowed": max(healthy - desired, 0),
        },
    }


def cluster(
    nodes: list[dict[str, Any]],
    owners: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    pdbs: list[dict[str, Any]] = (),  # type: ignore[assignment]
    **extra: list[dict[str, Any]],
) -> ClusterView:
    lists: dict[str, list[dict[str, Any]]] = {
        "nodes": nodes,
        "pods": sorted(pods, key=lambda p: (p["metadata"]["namespace"], p["metadata"]["name"])),
        "poddisruptionbudgets": list(pdbs),
        **extra,
    }
    for o in owners:
        plural = {
            "ReplicaSet": "replicasets",
            "StatefulSet": "statefulsets",
            "Job": "jobs",
            "DaemonSet": "daemonsets",
        }[o["kind"]]
        lists.setdefault(plural, []).append(o)
    return view_from_lists(lists, now=NOW)


def many_workloads() -> ClusterView:
    """Eight workloads on one node, under budgets, competing for two nodes' room."""
    owners = [owner("ReplicaSet", f"w{i}", 2, "500m") for i in range(8)]
    pods = [
        member(o, f"w{i}-{j}", "n1" if j == 0 else "n2")
        for i, o in enumerate(owners)
        for j in range(2)
    ]
    pdbs = [budget(f"w{i}", pods, max_unavailable=1) for i in range(0, 8, 2)]
    return cluster([node("n1"), node("n2"), node("n3", "3"), node("n4", "3")], owners, pods, pdbs)
