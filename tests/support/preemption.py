"""Builders for the DefaultPreemption tests: pods, nodes and budgets with only the fields
preemption reads, and upstream's error-raising test plugin."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from kube.objects import (
    Container,
    ContainerPort,
    Node,
    Pod,
    PodCondition,
    PodDisruptionBudget,
)
from scheduler.framework import Code, CycleState, Framework, Status
from scheduler.snapshot import NodeInfo, Snapshot

NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000


def mk_pod(
    name: str,
    *,
    prio: int | None = None,
    cpu: int = 0,
    mem: int = 0,
    node: str = "",
    ns: str = "default",
    labels: dict[str, str] | None = None,
    start: float | None = None,
    nominated: str = "",
    policy: str | None = None,
    deletion: float | None = None,
    conditions: Sequence[PodCondition] = (),
    host_ports: Sequence[int] = (),
) -> Pod:
    requests: dict[str, int] = {}
    if cpu:
        requests["cpu"] = cpu
    if mem:
        requests["memory"] = mem
    ports = tuple(ContainerPort(container_port=p, host_port=p) for p in host_ports)
    return Pod(
        name,
        namespace=ns,
        uid=name,
        labels=labels or {},
        containers=(Container("c", requests=requests, ports=ports),),
        spec_priority=prio,
        node_name=node,
        start_time=start,
        nominated_node_name=nominated,
        preemption_policy=policy,
        deletion_timestamp=deletion,
        conditions=tuple(conditions),
    )


def mk_node(name: str, *, cpu: int = 1000, mem: int = 10**9, pods: int = 110, **extra: Any) -> Node:
    alloc = {"cpu": cpu, "memory": mem, "pods": pods}
    return Node(name, allocatable=alloc, capacity=alloc, **extra)


def mk_pdb(
    name: str,
    *,
    match: dict[str, str] | None,
    allowed: int,
    ns: str = "default",
    disrupted: Iterable[str] = (),
) -> PodDisruptionBudget:
    spec: dict[str, Any] = {}
    if match is not None:
        spec["selector"] = {"matchLabels": match}
    return PodDisruptionBudget.from_dict(
        {
            "metadata": {"name": name, "namespace": ns},
            "spec": spec,
            "status": {
                "disruptionsAllowed": allowed,
                "disruptedPods": dict.fromkeys(disrupted, "2024-01-01T00:00:00Z"),
            },
        }
    )


def mk_snapshot(
    nodes: Iterable[Node], pods: Iterable[Pod] = (), pdbs: Iterable[Any] = ()
) -> Snapshot:
    return Snapshot.from_objects([*nodes, *pods, *pdbs])


def keys(pods: Iterable[Pod]) -> list[str]:
    return [p.key for p in pods]


def preempted_condition(
    reason: str = "PreemptionByScheduler", status: str = "True"
) -> PodCondition:
    return PodCondition(type="DisruptionTarget", status=status, reason=reason)


class ErrorPlugin:
    """upstream's TestPlugin: Error on AddPod/RemovePod for nodes labelled error=true."""

    name = "test-plugin"
    node_local = True

    def pre_filter(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> Status | None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return None

    def _check(self, pod: Pod, node_info: NodeInfo, verb: str) -> Status | None:
        assert node_info.node is not None
        if node_info.node.labels.get("error") == "true":
            return Status(Code.Error, f"failed to {verb} pod: {pod.name}")
        return None

    def add_pod(
        self, state: CycleState, pod: Pod, other: Pod, node_info: NodeInfo
    ) -> Status | None:
        return self._check(pod, node_info, "add")

    def remove_pod(
        self, state: CycleState, pod: Pod, other: Pod, node_info: NodeInfo
    ) -> Status | None:
        return self._check(pod, node_info, "remove")


def resources_framework(*extra: Any) -> Framework:
    from scheduler.plugins.noderesources.fit import NodeResourcesFit

    return Framework([NodeResourcesFit(), *extra])
