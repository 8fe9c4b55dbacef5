"""The garbage collector: dependents go when their owners are gone.

Reproduces the outcome of ``pkg/controller/garbagecollector`` (``attemptToDeleteItem``,
``processDeletingDependentsItem``, ``orphanDependents``) from the store's watch
(``GarbageCollector``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from kubesim.core.errors import StatusError
from kubesim.core.objects import meta_of
from kubesim.core.scheme import ResourceType
from kubesim.core.store import DELETED, Event, Key, clone
from kubesim.registry.generic import DeleteOptions

if TYPE_CHECKING:
    from kubesim.cluster import Cluster

__all__ = ["GarbageCollector"]

log = logging.getLogger("kubesim")

FOREGROUND: Final = "foregroundDeletion"
ORPHAN: Final = "orphan"
SKIPPED: Final = frozenset({"events"})


class GarbageCollector:
    """Background, foreground and orphan propagation, as the collector's outcome.

    * an object whose ``ownerReferences`` all name objects that do not exist (no object of
      that kind, namespace and name with that UID) is deleted — background propagation, what
      ``kubectl delete deployment`` asks for, so the ReplicaSet and then its pods go. Pods are
      deleted gracefully, as the GC's delete without options does. An object that keeps at
      least one live owner only loses the dangling references (``_attempt_to_delete``);
    * foreground deletion: an owner being deleted with the ``foregroundDeletion`` finalizer
      has its dependents deleted, and the finalizer is removed once no dependent with
      ``blockOwnerDeletion: true`` is left (``_process_deleting_owner``);
    * orphaning: an owner being deleted with the ``orphan`` finalizer has itself removed from
      its dependents' owner references, then the finalizer removed.

    As upstream, dangling references found when the collector starts count too: a state that
    seeds pods owned by a ReplicaSet it does not contain loses those pods unless this
    controller is disabled (``Simulator(disabled_controllers={"garbagecollector"})``).
    """

    name = "garbagecollector"

    def __init__(self) -> None:
        self._cluster: Cluster | None = None
        # owner uid -> dependents (storage, key)
        self._dependents: dict[str, set[tuple[str, Key]]] = {}
        self._dirty: set[tuple[str, Key]] = set()
        self._owners_dirty: set[tuple[str, Key]] = set()
        self._wake: asyncio.Event | None = None

    async def run(self, cluster: Cluster) -> None:
        self._cluster = cluster
        self._wake = asyncio.Event()
        storages = [s for s in cluster.scheme.storages() if s not in SKIPPED]
        subs = [cluster.store.subscribe(s) for s in storages]
        pumps = [asyncio.create_task(self._pump(sub)) for sub in subs]
        try:
            for storage in storages:
                for key in list(cluster.store.keys(storage)):
                    obj = cluster.store.get(storage, key)
                    if obj is not None:
                        self._observe(storage, key, obj)
            self._wake.set()
            while True:
                await self._wake.wait()
                self._wake.clear()
                await asyncio.sleep(cluster.settings.reaction_delay * cluster.time_scale)
                owners, self._owners_dirty = self._owners_dirty, set()
                for storage, key in sorted(owners):
                    self._guard(self._process_deleting_owner, storage, key)
                dirty, self._dirty = self._dirty, set()
                for storage, key in sorted(dirty):
                    self._guard(self._attempt_to_delete, storage, key)
        finally:
            for task in pumps:
                task.cancel()
            for sub in subs:
                cluster.store.unsubscribe(sub)
            self._cluster = None
            self._wake = None

    def _guard(self, fn: Any, storage: str, key: Key) -> None:
        try:
            fn(storage, key)
        except StatusError as err:
            log.info("kubesim: garbage collector %s %s/%s: %s", storage, *key, err.message)
        except Exception:
            log.exception("kubesim: garbage collector failed on %s %s/%s", storage, *key)

    async def _pump(self, sub: Any) -> None:
        while True:
            ev: Event = await sub.queue.get()
            try:
                if ev.type == DELETED:
                    uid = str(meta_of(ev.obj).get("uid", ""))
                    for dep in self._dependents.pop(uid, set()):
                        self._mark(dep)
                    for ref in meta_of(ev.obj).get("ownerReferences") or []:
                        deps = self._dependents.get(str(ref.get("uid", "")))
                        if deps is not None:
                            deps.discard((ev.storage, ev.key))
                    if ev.prev is not None:
                        self._mark_owner_parent(ev.prev)
                else:
                    self._observe(ev.storage, ev.key, ev.obj)
            except Exception:
                log.exception("kubesim: garbage collector event failed")

    def _mark(self, item: tuple[str, Key]) -> None:
        self._dirty.add(item)
        if self._wake is not None:
            self._wake.set()

    def _mark_owner_parent(self, obj: Mapping[str, Any]) -> None:
        """A dependent went away: owners waiting in foreground deletion may finish."""
        cluster = self._cluster
        assert cluster is not None
        for ref in meta_of(obj).get("ownerReferences") or []:
            if not isinstance(ref, Mapping):
                continue
            found = self._find_owner(ref, str(meta_of(obj).get("namespace", "")))
            if found is not None:
                self._owners_dirty.add(found)
                if self._wake is not None:
                    self._wake.set()

    def _observe(self, storage: str, key: Key, obj: Mapping[str, Any]) -> None:
        meta = meta_of(obj)
        refs = meta.get("ownerReferences") or []
        for ref in refs:
            if isinstance(ref, Mapping) and ref.get("uid"):
                self._dependents.setdefault(str(ref["uid"]), set()).add((storage, key))
                if self._find_owner(ref, key[0]) is None:
                    self._mark((storage, key))
        finalizers = meta.get("finalizers") or []
        if meta.get("deletionTimestamp") and (FOREGROUND in finalizers or ORPHAN in finalizers):
            self._owners_dirty.add((storage, key))
            if self._wake is not None:
                self._wake.set()

    def _type_of(self, ref: Mapping[str, Any]) -> ResourceType | None:
        cluster = self._cluster
        assert cluster is not None
        return cluster.scheme.for_kind(str(ref.get("apiVersion", "")), str(ref.get("kind", "")))

    def _find_owner(self, ref: Mapping[str, Any], namespace: str) -> tuple[str, Key] | None:
        """The live owner a reference names (UID must match), as (storage, key)."""
        cluster = self._cluster
        assert cluster is not None
        rt = self._type_of(ref)
        if rt is None:
            return None
        key = (namespace if rt.namespaced else "", str(ref.get("name", "")))
        obj = cluster.store.get(rt.storage_name, key)
        if obj is None or str(meta_of(obj).get("uid", "")) != str(ref.get("uid", "")):
            return None
        return rt.storage_name, key

    def _attempt_to_delete(self, storage: str, key: Key) -> None:
        cluster = self._cluster
        assert cluster is not None
        obj = cluster.store.get(storage, key)
        if obj is None:
            return
        meta = meta_of(obj)
        refs = [r for r in meta.get("ownerReferences") or [] if isinstance(r, Mapping)]
        if not refs:
            return
        dangling = [r for r in refs if self._find_owner(r, key[0]) is None]
        if not dangling:
            return
        rt = cluster.scheme.for_storage(storage)
        if len(dangling) < len(refs):
            gone = {str(r.get("uid", "")) for r in dangling}
            new = clone(dict(obj))
            new["metadata"]["ownerReferences"] = [
                r for r in refs if str(r.get("uid", "")) not in gone
            ]
            cluster.registry.update(rt, key[0], key[1], new)
            return
        if meta.get("deletionTimestamp"):
            return
        cluster.registry.delete(
            rt, key[0], key[1], DeleteOptions(uid=str(meta.get("uid", "")) or None)
        )

    def _process_deleting_owner(self, storage: str, key: Key) -> None:
        cluster = self._cluster
        assert cluster is not None
        owner = cluster.store.get(storage, key)
        if owner is None:
            return
        meta = meta_of(owner)
        finalizers = list(meta.get("finalizers") or [])
        if not meta.get("deletionTimestamp"):
            return
        uid = str(meta.get("uid", ""))
        dependents = []
        for dep_storage, dep_key in list(self._dependents.get(uid, set())):
            dep = cluster.store.get(dep_storage, dep_key)
            if dep is None:
                continue
            refs = [
                r
                for r in meta_of(dep).get("ownerReferences") or []
                if isinstance(r, Mapping) and str(r.get("uid", "")) == uid
            ]
            if refs:
                dependents.append((dep_storage, dep_key, dep, refs[0]))
        rt = cluster.scheme.for_storage(storage)
        if ORPHAN in finalizers:
            for dep_storage, dep_key, dep, _ in dependents:
                new = clone(dep)
                new["metadata"]["ownerReferences"] = [
                    r
                    for r in new["metadata"].get("ownerReferences") or []
                    if str(r.get("uid", "")) != uid
                ]
                if not new["metadata"]["ownerReferences"]:
                    del new["metadata"]["ownerReferences"]
                cluster.registry.update(cluster.scheme.for_storage(dep_storage), *dep_key, new)
            self._remove_finalizer(rt, key, ORPHAN)
            return
        if FOREGROUND not in finalizers:
            return
        blocking = False
        for dep_storage, dep_key, dep, ref in dependents:
            if ref.get("blockOwnerDeletion") is True:
                blocking = True
            if meta_of(dep).get("deletionTimestamp"):
                continue
            dep_rt = cluster.scheme.for_storage(dep_storage)
            dep_finalizers = meta_of(dep).get("finalizers") or []
            if dep_rt.kind != "Pod" and FOREGROUND not in dep_finalizers:
                # Dependents are deleted in the foreground too, so the chain waits.
                new = clone(dep)
                new["metadata"]["finalizers"] = [*dep_finalizers, FOREGROUND]
                cluster.registry.update(dep_rt, *dep_key, new)
            cluster.registry.delete(dep_rt, dep_key[0], dep_key[1], DeleteOptions())
        if not blocking:
            self._remove_finalizer(rt, key, FOREGROUND)

    def _remove_finalizer(self, rt: ResourceType, key: Key, finalizer: str) -> None:
        cluster = self._cluster
        assert cluster is not None
        obj = cluster.store.get(rt.storage_name, key)
        if obj is None:
            return
        new = clone(obj)
        new["metadata"]["finalizers"] = [
            f for f in new["metadata"].get("finalizers") or [] if f != finalizer
        ]
        if not new["metadata"]["finalizers"]:
            del new["metadata"]["finalizers"]
        cluster.registry.update(rt, key[0], key[1], new)
