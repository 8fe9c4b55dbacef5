"""Budgets for the DefaultPreemption tests (pods and nodes are ``tests.support.objects``'
``mkpod``/``mknode``), snapshots and upstream's error-raising test plugin."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kube.objects import (
    Node,
    Pod,
    PodCondition,
    PodDisruptionBudget,
)
from scheduler.framework import Code, CycleState, Framework, Status
from scheduler.snapshot import NodeInfo, Snapshot

NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000


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
