"""Background controllers: the registry of tasks that run beside the API server.

kube-apiserver alone never changes objects; controllers do (kube-controller-manager, kubelets).
kubesim runs the ones its clients depend on as asyncio tasks started with the server and
cancelled when it stops. A controller is any object with a ``name`` and an
``async run(sim)``; ``default_controllers`` gives the built-in set (the namespace controller
the graceful-deletion kubelet and the disruption controller of ``kubesim.disruption``); more can
be added with ``Simulator.add_controller`` (or replaced with the ``controllers=`` argument).

The namespace controller reproduces ``pkg/controller/namespace``: a namespace being deleted
(``phase: Terminating``) has every namespaced object in it deleted (pods gracefully, so the
kubelet still honours their grace period), and once nothing is left its ``kubernetes``
finalizer is removed, which removes the namespace.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Protocol

from kubesim.rest import DeleteOptions
from kubesim.status import StatusError
from kubesim.store import DELETED

if TYPE_CHECKING:
    from kubesim.sim import Simulator

__all__ = ["Controller", "NamespaceController", "default_controllers"]

log = logging.getLogger("kubesim")


class Controller(Protocol):
    name: str

    async def run(self, sim: Simulator) -> None: ...


class NamespaceController:
    name = "namespace"

    def __init__(self, *, poll: float = 0.05) -> None:
        self.poll = poll
        self._active: dict[str, asyncio.Task[None]] = {}

    async def run(self, sim: Simulator) -> None:
        store = sim.store
        sub = store.subscribe("namespaces")
        try:
            for ns in list(store.items("namespaces")):
                self._consider(sim, ns)
            while True:
                ev = await sub.queue.get()
                if ev.type != DELETED:
                    self._consider(sim, ev.obj)
        finally:
            store.unsubscribe(sub)
            for task in self._active.values():
                task.cancel()

    def _consider(self, sim: Simulator, ns: dict[str, object]) -> None:
        meta = ns.get("metadata") or {}
        assert isinstance(meta, dict)
        name = str(meta.get("name", ""))
        if not meta.get("deletionTimestamp") or name in self._active:
            return
        self._active[name] = asyncio.create_task(self._drain(sim, name))

    async def _drain(self, sim: Simulator, namespace: str) -> None:
        rest = sim.rest
        try:
            while True:
                remaining = 0
                for storage in sim.store.storages():
                    rt = sim.registry.for_storage(storage)
                    if not rt.namespaced:
                        continue
                    for obj in list(sim.store.items(storage, namespace)):
                        remaining += 1
                        meta = obj.get("metadata") or {}
                        if meta.get("deletionTimestamp"):
                            continue
                        with contextlib.suppress(StatusError):
                            rest.delete(rt, namespace, meta.get("name", ""), DeleteOptions())
                if remaining == 0:
                    rest.finalize_namespace(namespace)
                    return
                await asyncio.sleep(self.poll)
        finally:
            self._active.pop(namespace, None)


def default_controllers() -> list[Controller]:
    from kubesim.disruption import DisruptionController
    from kubesim.kubelet import Kubelet

    return [NamespaceController(), Kubelet(), DisruptionController()]
