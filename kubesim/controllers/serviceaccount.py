"""The ServiceAccount controller: every namespace has a ``default`` ServiceAccount.

kube-controller-manager's ``serviceaccount-controller`` (``pkg/controller/serviceaccount``).
Pods name ``default`` when they name no ServiceAccount, and ``kubectl create token default``
needs it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from kubesim.core.errors import StatusError
from kubesim.core.store import DELETED, Event

if TYPE_CHECKING:
    from kubesim.cluster import Cluster

__all__ = ["DEFAULT_SERVICE_ACCOUNT", "ServiceAccountController"]

DEFAULT_SERVICE_ACCOUNT: Final = "default"


class ServiceAccountController:
    """The ServiceAccounts named in ``--service-account-names`` (``default``) in every active
    namespace: those that exist at start-up (``default``, ``kube-system``, ...), those created
    later, and again when one is deleted. A namespace being deleted gets none.

    The first pass runs before the controller's first ``await``, so the bootstrap namespaces have
    theirs as soon as the server has started.
    """

    name = "serviceaccount"

    def __init__(self, *, names: tuple[str, ...] = (DEFAULT_SERVICE_ACCOUNT,)) -> None:
        self.names = names

    async def run(self, cluster: Cluster) -> None:
        store = cluster.store
        merged: asyncio.Queue[tuple[bool, Event]] = asyncio.Queue()
        subs = {True: store.subscribe("namespaces"), False: store.subscribe("serviceaccounts")}

        async def forward(is_namespace: bool) -> None:
            while True:
                merged.put_nowait((is_namespace, await subs[is_namespace].queue.get()))

        for ns in list(store.items("namespaces")):
            self._ensure(cluster, ns)
        forwarders = [asyncio.create_task(forward(kind)) for kind in subs]
        try:
            while True:
                is_namespace, ev = await merged.get()
                self._on_event(cluster, ev, is_namespace)
        finally:
            for task in forwarders:
                task.cancel()
            for sub in subs.values():
                store.unsubscribe(sub)

    def _on_event(self, cluster: Cluster, ev: Event, is_namespace: bool) -> None:
        if is_namespace:
            if ev.type != DELETED:
                self._ensure(cluster, ev.obj)
            return
        if ev.type == DELETED:
            meta = ev.obj.get("metadata") or {}
            ns_rt = cluster.scheme.for_kind("v1", "Namespace")
            assert ns_rt is not None
            ns = cluster.registry.find(ns_rt, "", str(meta.get("namespace", "")))
            if ns is not None:
                self._ensure(cluster, ns)

    def _ensure(self, cluster: Cluster, namespace: Mapping[str, Any]) -> None:
        meta = namespace.get("metadata") or {}
        if (
            meta.get("deletionTimestamp")
            or (namespace.get("status") or {}).get("phase") == "Terminating"
        ):
            return
        ns = str(meta.get("name", ""))
        rt = cluster.scheme.for_kind("v1", "ServiceAccount")
        assert rt is not None
        for name in self.names:
            if cluster.registry.find(rt, ns, name) is not None:
                continue
            with contextlib.suppress(StatusError):  # the namespace went away meanwhile
                cluster.registry.create(rt, ns, {"metadata": {"name": name, "namespace": ns}})
