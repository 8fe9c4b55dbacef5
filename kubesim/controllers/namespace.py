"""The namespace controller: reproduces ``pkg/controller/namespace``.

A namespace being deleted (``phase: Terminating``) has every namespaced object in it deleted
(pods gracefully, so the kubelet still honours their grace period), and once nothing is left its
``kubernetes`` finalizer is removed, which removes the namespace.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from kubesim.core.errors import StatusError
from kubesim.core.store import DELETED
from kubesim.registry.generic import DeleteOptions

if TYPE_CHECKING:
    from kubesim.cluster import Cluster

__all__ = ["NamespaceController"]

log = logging.getLogger("kubesim")


class NamespaceController:
    name = "namespace"

    def __init__(self, *, poll: float = 0.05) -> None:
        self.poll = poll
        self._active: dict[str, asyncio.Task[None]] = {}

    async def run(self, cluster: Cluster) -> None:
        store = cluster.store
        sub = store.subscribe("namespaces")
        try:
            for ns in list(store.items("namespaces")):
                self._consider(cluster, ns)
            while True:
                ev = await sub.queue.get()
                if ev.type != DELETED:
                    self._consider(cluster, ev.obj)
        finally:
            store.unsubscribe(sub)
            for task in self._active.values():
                task.cancel()

    def _consider(self, cluster: Cluster, ns: dict[str, object]) -> None:
        meta = ns.get("metadata") or {}
        assert isinstance(meta, dict)
        name = str(meta.get("name", ""))
        if not meta.get("deletionTimestamp") or name in self._active:
            return
        self._active[name] = asyncio.create_task(self._drain(cluster, name))

    async def _drain(self, cluster: Cluster, namespace: str) -> None:
        registry = cluster.registry
        try:
            while True:
                remaining = 0
                for storage in cluster.store.storages():
                    rt = cluster.scheme.for_storage(storage)
                    if not rt.namespaced:
                        continue
                    for obj in list(cluster.store.items(storage, namespace)):
                        remaining += 1
                        meta = obj.get("metadata") or {}
                        if meta.get("deletionTimestamp"):
                            continue
                        with contextlib.suppress(StatusError):
                            registry.delete(rt, namespace, meta.get("name", ""), DeleteOptions())
                if remaining == 0:
                    registry.finalize_namespace(namespace)
                    return
                await asyncio.sleep(self.poll)
        finally:
            self._active.pop(namespace, None)
