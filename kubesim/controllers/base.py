"""What the workload controllers share: the watch-driven sync loop and the pod helpers.

The helpers reproduce ``pkg/controller/controller_utils.go``: ``GetPodFromTemplate``,
``IsPodActive``, ``IsPodReady``/``IsPodAvailable`` and the ranking used to pick which pods to
delete on scale-down (``ActivePodsWithRanks``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final

from kube.conditions import get_pod_condition
from kube.labels import LabelSelector, SelectorError
from kube.times import parse_time
from kubesim.controllers.events import EventRecorder
from kubesim.core.conditions import is_pod_ready
from kubesim.core.errors import StatusError
from kubesim.core.objects import controller_ref, meta_of
from kubesim.core.scheme import ResourceType
from kubesim.core.store import DELETED, Event, Key, Subscription, clone
from kubesim.registry.generic import DeleteOptions

if TYPE_CHECKING:
    from kubesim.cluster import Cluster

__all__ = [
    "WorkloadController",
    "is_pod_active",
    "is_pod_available",
    "owner_reference",
    "pod_from_template",
    "pods_to_delete_order",
    "selector_of",
]

log = logging.getLogger("kubesim")

MIN_ROUND_GAP: Final = 0.005  # seconds of wall time between two rounds of syncs
# A round that only recomputed statuses is followed by a pause this many times its own
# duration: a big owner whose pods keep changing then takes at most a quarter of the event
# loop, which the scheduler and the kubelets share. A round that created or deleted pods
# (progress towards spec.replicas) is followed by a pause as long as itself.
ROUND_GAP_FACTOR: Final = 3.0
RETRY_AFTER: Final = 0.05  # seconds before a sync that met a conflict runs again


# --- object helpers ----------------------------------------------------------------------------


def owner_reference(owner: Mapping[str, Any]) -> dict[str, Any]:
    """``metav1.NewControllerRef``."""
    meta = meta_of(owner)
    return {
        "apiVersion": str(owner.get("apiVersion", "")),
        "kind": str(owner.get("kind", "")),
        "name": str(meta.get("name", "")),
        "uid": str(meta.get("uid", "")),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def selector_of(obj: Mapping[str, Any]) -> LabelSelector | None:
    """The owner's ``spec.selector`` as a selector; None (matches nothing) when invalid."""
    raw = (obj.get("spec") or {}).get("selector")
    try:
        return LabelSelector.from_dict(raw) if raw is not None else None
    except SelectorError:
        return None


def labels_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    labels = meta_of(obj).get("labels")
    return labels if isinstance(labels, dict) else {}


def is_pod_active(pod: Mapping[str, Any]) -> bool:
    """``IsPodActive``: not Succeeded, not Failed, not being deleted."""
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not meta_of(pod).get("deletionTimestamp")


def ready_since(pod: Mapping[str, Any]) -> float | None:
    """When the pod became Ready (None while it is not; 0 for an unreadable time)."""
    _, ready = get_pod_condition(pod.get("status"), "Ready")
    if ready is None or ready.get("status") != "True":
        return None
    try:
        return parse_time(ready.get("lastTransitionTime"))
    except ValueError:
        return 0.0


def is_pod_available(pod: Mapping[str, Any], min_ready_seconds: int, now: float) -> bool:
    """``podutil.IsPodAvailable``: Ready for ``minReadySeconds``."""
    if not is_pod_ready(pod):
        return False
    if min_ready_seconds <= 0:
        return True
    since = ready_since(pod)
    return since is not None and since + min_ready_seconds <= now


def pod_from_template(
    owner: Mapping[str, Any],
    template: Mapping[str, Any],
    *,
    name: str | None = None,
    extra_labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``GetPodFromTemplate``: a pod manifest owned by ``owner``.

    The template's labels, annotations, finalizers and spec, ``generateName`` of the owner's name
    plus ``-``, an owner reference with ``controller: true`` and ``blockOwnerDeletion: true``.
    """
    tmeta = template.get("metadata") or {}
    meta: dict[str, Any] = {"namespace": str(meta_of(owner).get("namespace", ""))}
    if name is not None:
        meta["name"] = name
    else:
        meta["generateName"] = f"{meta_of(owner).get('name', '')}-"
    labels = dict(tmeta.get("labels") or {})
    labels.update(extra_labels or {})
    if labels:
        meta["labels"] = labels
    if tmeta.get("annotations"):
        meta["annotations"] = dict(tmeta["annotations"])
    if tmeta.get("finalizers"):
        meta["finalizers"] = list(tmeta["finalizers"])
    meta["ownerReferences"] = [owner_reference(owner)]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": clone(template.get("spec") or {}),
    }


_PHASE_RANK: Final = {"Pending": 0, "Unknown": 1, "Running": 2}


def pods_to_delete_order(pods: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Pods in the order a scale-down deletes them (``ActivePodsWithRanks``, simplified):
    unassigned before assigned, Pending before Unknown before Running, not Ready before
    Ready, more recently Ready before older, then newer before older."""

    def rank(pod: Mapping[str, Any]) -> tuple[int, int, int, float, float]:
        spec = pod.get("spec") or {}
        phase = str((pod.get("status") or {}).get("phase") or "Pending")
        since = ready_since(pod)
        try:
            created = parse_time(meta_of(pod).get("creationTimestamp"))
        except ValueError:
            created = 0.0
        return (
            1 if spec.get("nodeName") else 0,
            _PHASE_RANK.get(phase, 0),
            0 if since is None else 1,
            -(since or 0.0),
            -created,
        )

    return sorted(pods, key=rank)


# --- the loop -----------------------------------------------------------------------------------


class WorkloadController:
    """Base of the watch-driven controllers: subclasses set ``name``, ``kind``, ``watched``
    and implement ``sync`` (and ``keys_for`` when other storages matter).

    kube-controller-manager's controllers are informers feeding a rate-limited work queue of
    ``namespace/name`` keys, and a ``sync`` that reads the owner and its pods from the caches and
    writes through the API. These are the same shape: ``run`` subscribes to the store's watch for
    the storages it cares about, maps each event to the keys of the owners to sync (the owner
    itself, or the controller of a changed pod), waits the configured reaction time
    (``ControllerSettings.reaction_delay`` × time scale; 0 reacts in the same event-loop burst) and
    calls ``sync``, which writes through ``cluster.registry`` (the generic store) as an API client
    does. No "expectations" are needed: a create through the generic store is in the store before
    the next sync.
    """

    name = ""
    component = ""  # the event source, e.g. ``replicaset-controller``
    storage = ""  # the owner's storage (first in ``watched``)
    watched: tuple[str, ...] = ()

    def __init__(self) -> None:
        self.recorder = EventRecorder(self.component or f"{self.name}-controller")
        self._cluster: Cluster | None = None
        self._dirty: set[Key] = set()
        self._wake: asyncio.Event | None = None
        self._timers: dict[Key, asyncio.TimerHandle] = {}
        self._subs: list[Subscription] = []
        # The pod informer's indexes: controller UID -> pod keys, namespace -> orphan keys.
        self._by_owner: dict[str, set[Key]] = {}
        self._orphans: dict[str, set[Key]] = {}
        self._pod_owner: dict[Key, str] = {}
        self._pod_writes = 0  # pods created or deleted, for the pause between rounds

    @property
    def cluster(self) -> Cluster:
        assert self._cluster is not None, f"{self.name} controller is not running"
        return self._cluster

    def owner_type(self) -> ResourceType:
        return self.cluster.scheme.for_storage(self.storage)

    def now(self) -> float:
        return self.cluster.registry.clock()

    def enqueue(self, key: Key) -> None:
        self._dirty.add(key)
        if self._wake is not None:
            self._wake.set()

    def enqueue_after(self, key: Key, seconds: float) -> None:
        """Re-sync ``key`` after ``seconds`` of wall time (``AddAfter``)."""
        current = self._timers.pop(key, None)
        if current is not None:
            current.cancel()
        loop = asyncio.get_running_loop()
        self._timers[key] = loop.call_later(max(0.0, seconds), self._fire, key)

    def _fire(self, key: Key) -> None:
        self._timers.pop(key, None)
        self.enqueue(key)

    async def run(self, cluster: Cluster) -> None:
        self._cluster = cluster
        self._wake = asyncio.Event()
        store = cluster.store
        self._subs = [store.subscribe(s) for s in self.watched]
        pumps = [asyncio.create_task(self._pump(sub)) for sub in self._subs]
        try:
            if "pods" in self.watched:
                for key, pod in list(store.objects("pods").items()):
                    self._index_pod(key, pod)
            for obj in list(store.items(self.storage)):
                meta = meta_of(obj)
                self.enqueue((str(meta.get("namespace", "")), str(meta.get("name", ""))))
            while True:
                await self._wake.wait()
                self._wake.clear()
                delay = cluster.settings.reaction_delay * cluster.time_scale
                # Let a burst of writes land first (one sync per owner per burst).
                await asyncio.sleep(delay)
                started = time.monotonic()
                writes = self._pod_writes
                self.drain()
                dirty, self._dirty = self._dirty, set()
                for key in sorted(dirty):
                    try:
                        self.sync(key)
                    except StatusError as err:
                        log.warning("kubesim: %s %s/%s: %s", self.name, *key, err.message)
                        if err.code in (409, 429) or err.code >= 500:
                            self.enqueue_after(key, RETRY_AFTER)  # the work queue's requeue
                    except Exception:  # a malformed object must not stop the controller
                        log.exception("kubesim: %s controller failed on %s/%s", self.name, *key)
                # Coalesce: a round of syncs is followed by a pause longer than the round took
                # (and MIN_ROUND_GAP), so big owners are not re-synced per pod event and the
                # scheduler and kubelets sharing this event loop keep most of it.
                took = time.monotonic() - started
                factor = 1.0 if self._pod_writes != writes else ROUND_GAP_FACTOR
                await asyncio.sleep(max(MIN_ROUND_GAP, factor * took))
        finally:
            for task in pumps:
                task.cancel()
            for sub in self._subs:
                store.unsubscribe(sub)
            self._subs = []
            for handle in self._timers.values():
                handle.cancel()
            self._timers.clear()
            self._by_owner.clear()
            self._orphans.clear()
            self._pod_owner.clear()
            self._cluster = None
            self._wake = None

    async def _pump(self, sub: Subscription) -> None:
        while True:
            self._handle(await sub.queue.get())

    def drain(self) -> None:
        """Handle every event already queued, so the indexes match the store right now."""
        for sub in self._subs:
            queue = sub.queue
            while not queue.empty():
                self._handle(queue.get_nowait())

    def _handle(self, ev: Event) -> None:
        try:
            if ev.storage == "pods":
                if ev.type == DELETED:
                    self._unindex_pod(ev.key)
                else:
                    self._index_pod(ev.key, ev.obj)
            for key in self.keys_for(ev):
                self.enqueue(key)
        except Exception:
            log.exception("kubesim: %s controller event failed", self.name)

    def _unindex_pod(self, key: Key) -> None:
        owner = self._pod_owner.pop(key, None)
        if owner is None:
            return
        if owner:
            keys = self._by_owner.get(owner)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._by_owner[owner]
        else:
            self._orphans.get(key[0], set()).discard(key)

    def _index_pod(self, key: Key, pod: Mapping[str, Any]) -> None:
        ref = controller_ref(pod)
        owner = str(ref.get("uid", "")) if ref is not None else ""
        if self._pod_owner.get(key) == owner:
            return
        self._unindex_pod(key)
        self._pod_owner[key] = owner
        if owner:
            self._by_owner.setdefault(owner, set()).add(key)
        else:
            self._orphans.setdefault(key[0], set()).add(key)

    def keys_for(self, ev: Event) -> Iterable[Key]:
        """Owner keys to sync for one event: the owner itself, or the controller of a pod."""
        if ev.storage == self.storage:
            return [ev.key]
        out: list[Key] = []
        for obj in (ev.obj, ev.prev):
            if obj is None:
                continue
            ref = controller_ref(obj)
            if ref is not None and ref.get("kind") == self.owner_type().kind:
                out.append((ev.key[0], str(ref.get("name", ""))))
            elif ev.storage == "pods" and ref is None:
                out.extend(self._orphan_owners(obj))
        return out

    def _orphan_owners(self, pod: Mapping[str, Any]) -> list[Key]:
        """Owners whose selector matches an orphan pod (they may adopt it)."""
        namespace = str(meta_of(pod).get("namespace", ""))
        labels = labels_of(pod)
        out: list[Key] = []
        for owner in self.cluster.store.items(self.storage, namespace):
            sel = selector_of(owner)
            if sel is not None and not sel.is_empty() and sel.matches(labels):
                out.append((namespace, str(meta_of(owner).get("name", ""))))
        return out

    def sync(self, key: Key) -> None:
        raise NotImplementedError

    # --- shared writes ----------------------------------------------------------------------

    def controlled_pods(self, uid: str, namespace: str) -> list[dict[str, Any]]:
        """Pods whose controller reference has this UID (from the index, current)."""
        self.drain()
        pods = self.cluster.store.objects("pods")
        out = []
        for key in sorted(self._by_owner.get(uid, ())):
            pod = pods.get(key)
            if pod is not None and key[0] == namespace:
                out.append(pod)
        return out

    def owned_pods(self, owner: Mapping[str, Any], *, adopt: bool = True) -> list[dict[str, Any]]:
        """``ClaimPods``: pods controlled by ``owner`` plus orphans its selector matches
        (adopted through an update); owned pods the selector no longer matches are released."""
        meta = meta_of(owner)
        namespace = str(meta.get("namespace", ""))
        uid = str(meta.get("uid", ""))
        sel = selector_of(owner)
        deleting = bool(meta.get("deletionTimestamp"))

        def matches(pod: Mapping[str, Any]) -> bool:
            return sel is not None and not sel.is_empty() and sel.matches(labels_of(pod))

        out: list[dict[str, Any]] = []
        for pod in self.controlled_pods(uid, namespace):
            if matches(pod) or deleting:
                out.append(pod)
            else:
                self._set_owner(pod, None, uid)
        if not adopt or deleting:
            return out
        pods = self.cluster.store.objects("pods")
        for key in sorted(self._orphans.get(namespace, ())):
            orphan = pods.get(key)
            if (
                orphan is not None
                and matches(orphan)
                and not meta_of(orphan).get("deletionTimestamp")
                and self._set_owner(orphan, owner, uid)
            ):
                refreshed = pods.get(key)
                if refreshed is not None:
                    out.append(refreshed)
        return out

    def _set_owner(self, pod: Mapping[str, Any], owner: Mapping[str, Any] | None, uid: str) -> bool:
        meta = meta_of(pod)
        new = clone(dict(pod))
        refs = [
            r
            for r in new["metadata"].get("ownerReferences") or []
            if not (isinstance(r, Mapping) and r.get("uid") == uid)
        ]
        if owner is not None:
            refs.append(owner_reference(owner))
        if refs:
            new["metadata"]["ownerReferences"] = refs
        else:
            new["metadata"].pop("ownerReferences", None)
        try:
            self.cluster.registry.update(
                self.cluster.scheme.for_storage("pods"),
                str(meta.get("namespace", "")),
                str(meta.get("name", "")),
                new,
            )
        except StatusError as err:
            log.info("kubesim: %s could not adopt/release pod %s: %s", self.name, meta, err)
            return False
        return True

    def created_message(self, owner: Mapping[str, Any], pod_name: str) -> str:
        return f"Created pod: {pod_name}"

    def deleted_message(self, owner: Mapping[str, Any], pod_name: str) -> str:
        return f"Deleted pod: {pod_name}"

    def record(
        self, obj: Mapping[str, Any], reason: str, message: str, *, warn: bool = False
    ) -> None:
        self.recorder.event(
            self.cluster, obj, type_="Warning" if warn else "Normal", reason=reason, message=message
        )

    def create_pod(
        self, manifest: dict[str, Any], *, owner: Mapping[str, Any] | None = None
    ) -> dict[str, Any] | None:
        namespace = str(manifest["metadata"].get("namespace", ""))
        # A taken generated name is retried by the API server (RetryGenerateName), not here.
        self._pod_writes += 1
        try:
            pod = self.cluster.registry.create(
                self.cluster.scheme.for_storage("pods"), namespace, manifest
            )
        except StatusError as err:
            log.warning(
                "kubesim: %s failed to create pod in %s: %s", self.name, namespace, err.message
            )
            if owner is not None:
                self.record(owner, "FailedCreate", f"Error creating: {err.message}", warn=True)
            return None
        if owner is not None:
            name = str(pod["metadata"].get("name", ""))
            self.record(owner, "SuccessfulCreate", self.created_message(owner, name))
        return pod

    def delete_pod(self, pod: Mapping[str, Any], *, owner: Mapping[str, Any] | None = None) -> None:
        meta = meta_of(pod)
        name = str(meta.get("name", ""))
        self._pod_writes += 1
        try:
            self.cluster.registry.delete(
                self.cluster.scheme.for_storage("pods"),
                str(meta.get("namespace", "")),
                name,
                DeleteOptions(uid=str(meta.get("uid", "")) or None),
            )
        except StatusError as err:
            if err.code not in (404, 409):
                log.warning("kubesim: %s failed to delete pod: %s", self.name, err.message)
                if owner is not None:
                    self.record(owner, "FailedDelete", f"Error deleting: {err.message}", warn=True)
            return
        if owner is not None:
            self.record(owner, "SuccessfulDelete", self.deleted_message(owner, name))

    def write_status(self, owner: Mapping[str, Any], status: dict[str, Any]) -> None:
        """``UpdateStatus`` when the status changed (no write, no event otherwise)."""
        if (owner.get("status") or {}) == status:
            return
        meta = meta_of(owner)
        new = clone(dict(owner))
        new["status"] = status
        self.cluster.registry.update(
            self.owner_type(),
            str(meta.get("namespace", "")),
            str(meta.get("name", "")),
            new,
            subresource="status",
        )


def set_condition(
    conditions: list[dict[str, Any]],
    *,
    type_: str,
    status: str,
    reason: str,
    message: str,
    now: str,
    with_update_time: bool = False,
) -> None:
    """Set a workload condition, keeping ``lastTransitionTime`` when the status is unchanged."""
    for cond in conditions:
        if cond.get("type") == type_:
            if cond.get("status") != status:
                cond["lastTransitionTime"] = now
            if with_update_time and (
                cond.get("status") != status
                or cond.get("reason") != reason
                or cond.get("message") != message
            ):
                cond["lastUpdateTime"] = now
            cond.update({"status": status, "reason": reason, "message": message})
            return
    new: dict[str, Any] = {"type": type_, "status": status}
    if with_update_time:
        new["lastUpdateTime"] = now
    new.update({"lastTransitionTime": now, "reason": reason, "message": message})
    conditions.append(new)
