"""Typed scheduler objects for the filter/score/schedule tests: each builder writes the manifest a
client would send and reads it with the type's own ``from_dict``, so the objects carry exactly
what kube-apiserver's decoding would give the scheduler. (``tests.support.manifests`` builds the
same kinds as plain dicts, for a kubesim to store.)"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kube.objects import Container, ContainerPort, Namespace, Node, Pod
from scheduler.framework import Code, CycleState, FilterPlugin, Status
from scheduler.snapshot import NodeInfo, Snapshot


def node(
    name: str,
    labels: Mapping[str, str] | None = None,
    *,
    cpu: str = "4",
    memory: str = "32Gi",
    pods: str = "110",
    taints: Sequence[Mapping[str, str]] = (),
    unschedulable: bool = False,
    extra: Mapping[str, str] | None = None,
    capacity: Mapping[str, str] | None = None,
) -> Node:
    """A node; ``capacity`` replaces cpu/memory/pods/extra entirely, as upstream's tables list
    exact resources (allocatable is read as capacity when not given)."""
    if capacity is None:
        capacity = {"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})}
    return Node.from_dict(
        {
            "kind": "Node",
            "metadata": {"name": name, "labels": dict(labels or {})},
            "spec": {"taints": [dict(t) for t in taints], "unschedulable": unschedulable},
            "status": {"capacity": dict(capacity)},
        }
    )


def pod(
    name: str,
    *,
    namespace: str = "default",
    labels: Mapping[str, str] | None = None,
    cpu: str | None = None,
    memory: str | None = None,
    requests: Mapping[str, str] | None = None,
    node_name: str = "",
    node_selector: Mapping[str, str] | None = None,
    affinity: Mapping[str, Any] | None = None,
    tolerations: Sequence[Mapping[str, Any]] = (),
    priority: int | None = None,
    host_ports: Iterable[int | tuple[int, str, str]] = (),
    nominated: str = "",
    spread: Sequence[Mapping[str, Any]] = (),
    owner: tuple[str, str, str] | None = None,
    terminating: bool = False,
    containers: Sequence[Mapping[str, str]] | None = None,
) -> Pod:
    """A pod; ``owner`` is (apiVersion, kind, name) of its controller, ``spread`` its
    topologySpreadConstraints, ``terminating`` sets a deletionTimestamp. ``containers`` gives each
    container's requests (containers c0, c1, …) instead of the one container ``c`` of
    cpu/memory/requests/host_ports."""
    req: dict[str, str] = dict(requests or {})
    if cpu is not None:
        req["cpu"] = cpu
    if memory is not None:
        req["memory"] = memory
    ports = []
    for hp in host_ports:
        if isinstance(hp, int):
            ports.append({"containerPort": hp, "hostPort": hp})
        else:
            port, protocol, ip = hp
            ports.append(
                {"containerPort": port, "hostPort": port, "protocol": protocol, "hostIP": ip}
            )
    if containers is None:
        cs = [{"name": "c", "resources": {"requests": req}, "ports": ports}]
    else:
        assert not req and not ports, "containers replaces cpu/memory/requests/host_ports"
        cs = [
            {"name": f"c{i}", "resources": {"requests": dict(r)}} for i, r in enumerate(containers)
        ]
    spec: dict[str, Any] = {
        "containers": cs,
        "nodeName": node_name,
        "tolerations": [dict(t) for t in tolerations],
    }
    if node_selector is not None:
        spec["nodeSelector"] = dict(node_selector)
    if affinity is not None:
        spec["affinity"] = dict(affinity)
    if priority is not None:
        spec["priority"] = priority
    if spread:
        spec["topologySpreadConstraints"] = [dict(c) for c in spread]
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(labels or {})}
    if terminating:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
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
    return Pod.from_dict(
        {
            "kind": "Pod",
            "metadata": meta,
            "spec": spec,
            "status": {"nominatedNodeName": nominated} if nominated else {},
        }
    )


def namespace(name: str, labels: Mapping[str, str] | None = None) -> Namespace:
    return Namespace.from_dict({"kind": "Namespace", "metadata": {"name": name, "labels": labels}})


def run_plugin(
    plugin: FilterPlugin, p: Pod, node_info: NodeInfo, snapshot: Snapshot | None = None
) -> Status | None:
    """PreFilter then Filter of one plugin, as the framework runs them (Skip -> passes)."""
    state = CycleState()
    snap = (
        snapshot
        if snapshot is not None
        else Snapshot.from_objects([node_info.node] if node_info.node else [])
    )
    pre = plugin.pre_filter(state, p, snap)
    if pre is not None and pre.code is Code.Skip:
        return None
    if pre is not None and pre.code is not Code.Success:
        return pre
    return plugin.filter(state, p, node_info)


def term(
    selector: Mapping[str, Any] | None,
    topology_key: str,
    **extra: Any,
) -> dict[str, Any]:
    """A podAffinityTerm manifest."""
    out: dict[str, Any] = {"topologyKey": topology_key, **extra}
    if selector is not None:
        out["labelSelector"] = dict(selector)
    return out


def required(kind: str, *terms: Mapping[str, Any]) -> dict[str, Any]:
    """``{kind: {requiredDuringScheduling...: terms}}`` for podAffinity/podAntiAffinity."""
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}


def preferred(kind: str, *weighted: tuple[int, Mapping[str, Any]]) -> dict[str, Any]:
    return {
        kind: {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "podAffinityTerm": dict(t)} for w, t in weighted
            ]
        }
    }


def mkpod(
    name: str,
    priority: int | None = None,
    *,
    ns: str = "default",
    cpu: int = 0,
    mem: int = 0,
    requests: Mapping[str, int] | None = None,
    host_ports: Sequence[int] = (),
    **kw: Any,
) -> Pod:
    """A pod made with ``Pod``'s constructor, for the queue, preemption and framework tests that
    set the scheduler's fields directly: ``cpu`` in millicores, ``mem`` in bytes and other
    ``requests`` (one container, unless ``containers`` is given), the uid ``uid-<ns>-<name>``,
    ``kw`` any other ``Pod`` field. ``pod`` above goes through a manifest instead, with
    quantities as strings."""
    kw.setdefault("uid", f"uid-{ns}-{name}")
    if "containers" not in kw:
        req = {k: v for k, v in (("cpu", cpu), ("memory", mem)) if v} | dict(requests or {})
        ports = tuple(ContainerPort(container_port=p, host_port=p) for p in host_ports)
        kw["containers"] = (Container("c", requests=req, ports=ports),)
    return Pod(name, namespace=ns, spec_priority=priority, **kw)


def mknode(name: str, *, cpu: int = 1000, mem: int = 10**9, pods: int = 110, **extra: Any) -> Node:
    """A node made with ``Node``'s constructor (``mkpod``'s counterpart): ``cpu`` in millicores and
    ``mem`` in bytes, allocatable and capacity alike; ``extra`` any other ``Node`` field."""
    alloc = {"cpu": cpu, "memory": mem, "pods": pods}
    return Node(name, allocatable=alloc, capacity=alloc, **extra)
