"""Background controllers: the tasks that run beside the API server, one module each.

kube-apiserver alone never changes objects; controllers do (kube-controller-manager, kubelets).
kubesim runs the ones its clients depend on as asyncio tasks started with the server and
cancelled when it stops. A controller is any object with a ``name`` and an
``async run(sim)``; ``default_controllers`` gives the built-in set (the namespace controller,
the node kubelet of ``kubesim.node`` and the disruption controller); more can be added with
``Simulator.add_controller`` (or replaced with the ``controllers=`` argument).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kubesim.controllers.namespace import NamespaceController

if TYPE_CHECKING:
    from kubesim.sim import Simulator

__all__ = ["Controller", "NamespaceController", "default_controllers"]


class Controller(Protocol):
    name: str

    async def run(self, sim: Simulator) -> None: ...


def default_controllers() -> list[Controller]:
    from kubesim.controllers.disruption import DisruptionController
    from kubesim.node.kubelet import Kubelet

    return [NamespaceController(), Kubelet(), DisruptionController()]
