"""Background controllers: the tasks that run beside the API server, one module each.

kube-apiserver alone never changes objects; controllers do (kube-controller-manager, kubelets).
kubesim runs the ones its clients depend on as asyncio tasks started with the server and
cancelled when it stops. The built-in set is ``CONTROLLER_NAMES``, in order (assembled by
``kubesim.sim``; the kubelet is ``kubesim.node``'s, the scheduler ``kubesim.scheduling``'s).
Each can be switched off by name (``Simulator(disabled_controllers={"replicaset"})``) for tests
that want a frozen cluster; more can be added with ``Simulator.add_controller`` (or the set
replaced with ``controllers=``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final, Protocol

from kubesim.cluster import ControllerSettings

if TYPE_CHECKING:
    from kubesim.cluster import Cluster
    from kubesim.controllers.namespace import NamespaceController

__all__ = [
    "CONTROLLER_NAMES",
    "FROZEN",
    "Controller",
    "ControllerSettings",
    "NamespaceController",
    "check_controller_names",
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
    if name == "NamespaceController":
        from kubesim.controllers.namespace import NamespaceController

        return NamespaceController
    raise AttributeError(f"module 'kubesim.controllers' has no attribute {name!r}")


class Controller(Protocol):
    """A task beside the API server: any object with a ``name`` and an
    ``async run(cluster)``, started with the server and cancelled when it stops; it sees the
    cluster only through the ``Cluster`` it is given (``kubesim.cluster``).
    """

    name: str

    async def run(self, cluster: Cluster) -> None: ...


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
