"""Background controllers: the tasks that run beside the API server, one module each.

kube-apiserver alone never changes objects; controllers do (kube-controller-manager, kubelets).
kubesim runs the ones its clients depend on as asyncio tasks started with the server and
cancelled when it stops. A controller is any object with a ``name`` and an
``async run(sim)``; ``default_controllers`` gives the built-in set, in ``CONTROLLER_NAMES``
order: the namespace controller, the node kubelet of ``kubesim.node``, the disruption
controller, the workload controllers (ReplicaSet, ReplicationController, Deployment,
StatefulSet, DaemonSet, Job), the garbage collector, the ServiceAccount controller (a
``default`` ServiceAccount in every namespace), the ClusterRole aggregation controller
and the default scheduler
(``kubesim.scheduler_loop``). Each can be switched off by name
(``Simulator(disabled_controllers={"replicaset"})``) for tests that want a frozen cluster;
more can be added with ``Simulator.add_controller`` (or the set replaced with
``controllers=``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final, Protocol

if TYPE_CHECKING:
    from kubesim.controllers.base import ControllerSettings
    from kubesim.controllers.namespace import NamespaceController
    from kubesim.sim import Simulator

__all__ = [
    "CONTROLLER_NAMES",
    "FROZEN",
    "Controller",
    "ControllerSettings",
    "NamespaceController",
    "check_controller_names",
    "default_controllers",
]

CONTROLLER_NAMES: Final = (
    "namespace",
    "kubelet",
    "disruption",
    "replicaset",
    "replicationcontroller",
    "deployment",
    "statefulset",
    "daemonset",
    "job",
    "garbagecollector",
    "serviceaccount",
    "clusterrole-aggregation",
    "scheduler",
)

# The controllers that change what a test seeded: the workload controllers, the garbage
# collector and the scheduler. ``Simulator(disabled_controllers=FROZEN)`` keeps the namespace
# controller, the kubelet (graceful deletion, readiness) and the disruption controller: a
# cluster where objects stay as they were written, for tests of the API itself or of a client
# that stands in for the controllers with fault injection.
FROZEN: Final = frozenset(
    {
        "replicaset",
        "replicationcontroller",
        "deployment",
        "statefulset",
        "daemonset",
        "job",
        "garbagecollector",
        "scheduler",
    }
)


def __getattr__(name: str) -> Any:
    # Loaded on first use (PEP 562): ``kubesim serve --help`` reads CONTROLLER_NAMES without
    # paying for aiohttp and the API server that the controllers import.
    if name == "ControllerSettings":
        from kubesim.controllers.base import ControllerSettings

        return ControllerSettings
    if name == "NamespaceController":
        from kubesim.controllers.namespace import NamespaceController

        return NamespaceController
    raise AttributeError(f"module 'kubesim.controllers' has no attribute {name!r}")


class Controller(Protocol):
    name: str

    async def run(self, sim: Simulator) -> None: ...


def check_controller_names(names: Iterable[str]) -> frozenset[str]:
    """The names as a set; ValueError naming any that is not a built-in controller."""
    out = frozenset(names)
    unknown = sorted(out - set(CONTROLLER_NAMES))
    if unknown:
        raise ValueError(
            f"disabled_controllers: unknown controller(s) {', '.join(unknown)};"
            f" known: {', '.join(CONTROLLER_NAMES)}"
        )
    return out


def default_controllers(disabled: Iterable[str] = ()) -> list[Controller]:
    from kubesim.controllers.clusterroleaggregation import ClusterRoleAggregationController
    from kubesim.controllers.daemonset import DaemonSetController
    from kubesim.controllers.deployment import DeploymentController
    from kubesim.controllers.disruption import DisruptionController
    from kubesim.controllers.garbagecollector import GarbageCollector
    from kubesim.controllers.job import JobController
    from kubesim.controllers.namespace import NamespaceController
    from kubesim.controllers.replicaset import (
        ReplicaSetController,
        ReplicationControllerController,
    )
    from kubesim.controllers.serviceaccount import ServiceAccountController
    from kubesim.controllers.statefulset import StatefulSetController
    from kubesim.node.kubelet import Kubelet
    from kubesim.scheduler_loop import SchedulerLoop

    off = check_controller_names(disabled)
    every: list[Controller] = [
        NamespaceController(),
        Kubelet(),
        DisruptionController(),
        ReplicaSetController(),
        ReplicationControllerController(),
        DeploymentController(),
        StatefulSetController(),
        DaemonSetController(),
        JobController(),
        GarbageCollector(),
        ServiceAccountController(),
        ClusterRoleAggregationController(),
        SchedulerLoop(),
    ]
    return [c for c in every if c.name not in off]
