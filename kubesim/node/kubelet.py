"""A built-in "kubelet" for every node: starts bound pods and finishes graceful deletion.

In a cluster the API server only marks a pod for deletion (``deletionTimestamp``,
``deletionGracePeriodSeconds``); the kubelet of its node stops the containers within the grace
period and then deletes the object for good with grace 0 and a UID precondition
(``statusManager`` → ``canBeDeleted`` → ``Delete(..., GracePeriodSeconds: 0, Preconditions:
UID)``). kubesim's kubelet does the same after ``grace × time_scale`` seconds of wall time,
unless a per-pod override says otherwise (``deletion_delay`` hook; returning ``None`` keeps the
pod Terminating forever, like a pod on a dead node). A shorter grace period given by a later
delete reschedules the removal.

It also starts pods: a pod created through the API (or seeded without a ``status``) that is
bound to an existing node (``spec.nodeName``) becomes ``Running`` with ``PodScheduled``,
``Initialized``, ``ContainersReady`` and ``Ready`` conditions, a pod IP and running container
statuses, as the kubelet reports after admitting it. Pods seeded with an explicit status keep
it. There is no scheduler: unbound pods stay ``Pending``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kubesim.apiserver.rest import DeleteOptions
from kubesim.apiserver.status import StatusError
from kubesim.apiserver.store import ADDED, DELETED, Key, clone
from scheduler.objects import format_time

if TYPE_CHECKING:
    from kubesim.sim import Simulator

__all__ = ["DeletionDelay", "Kubelet"]

log = logging.getLogger("kubesim")

# (pod, grace seconds, time scale) -> wall seconds until removal, or None = never.
DeletionDelay = Callable[[dict[str, Any], float, float], float | None]


def default_deletion_delay(pod: dict[str, Any], grace: float, time_scale: float) -> float:
    return grace * time_scale


class Kubelet:
    name = "kubelet"

    def __init__(self) -> None:
        self.deletion_delay: DeletionDelay = default_deletion_delay
        # (namespace, name) -> seconds (or None: never delete); consulted before deletion_delay.
        self.overrides: dict[Key, float | None] = {}
        self._timers: dict[Key, tuple[str, int, asyncio.TimerHandle]] = {}
        self._ips = itertools.count(2)
        self._sim: Simulator | None = None

    # --- hooks for tests and fault injection ------------------------------------------------

    def set_deletion_override(self, namespace: str, name: str, delay: float | None) -> None:
        """Finish the deletion of this pod after ``delay`` seconds, or never (None)."""
        self.overrides[(namespace, name)] = delay
        if self._sim is not None:
            pod = self._sim.store.get("pods", (namespace, name))
            if pod is not None:
                self._consider_deletion(pod, force=True)

    def clear_deletion_override(self, namespace: str, name: str) -> None:
        self.overrides.pop((namespace, name), None)

    # --- the loop ---------------------------------------------------------------------------

    async def run(self, sim: Simulator) -> None:
        self._sim = sim
        store = sim.store
        pods = store.subscribe("pods")
        nodes = store.subscribe("nodes")
        try:
            for pod in list(store.items("pods")):
                self._consider_start(pod)
                self._consider_deletion(pod)
            getters = {
                "pods": asyncio.ensure_future(pods.queue.get()),
                "nodes": asyncio.ensure_future(nodes.queue.get()),
            }
            while True:
                done, _ = await asyncio.wait(getters.values(), return_when=asyncio.FIRST_COMPLETED)
                for which, fut in list(getters.items()):
                    if fut not in done:
                        continue
                    ev = fut.result()
                    getters[which] = asyncio.ensure_future(
                        (pods if which == "pods" else nodes).queue.get()
                    )
                    if which == "nodes":
                        if ev.type == ADDED:
                            for pod in list(store.items("pods")):
                                self._consider_start(pod)
                        continue
                    if ev.type == DELETED:
                        self._cancel(ev.key)
                        continue
                    self._consider_start(ev.obj)
                    self._consider_deletion(ev.obj)
        finally:
            for fut in locals().get("getters", {}).values():
                fut.cancel()
            store.unsubscribe(pods)
            store.unsubscribe(nodes)
            for _, _, handle in self._timers.values():
                handle.cancel()
            self._timers.clear()
            self._sim = None

    # --- starting ---------------------------------------------------------------------------

    def _consider_start(self, pod: dict[str, Any]) -> None:
        sim = self._sim
        assert sim is not None
        meta = pod.get("metadata") or {}
        key = (meta.get("namespace", ""), meta.get("name", ""))
        if key not in sim.rest.pods_to_start:
            return
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name or meta.get("deletionTimestamp"):
            return
        node = sim.store.get("nodes", ("", node_name))
        if node is None:
            return
        sim.rest.pods_to_start.discard(key)
        self._start(pod, node)

    def _start(self, pod: dict[str, Any], node: dict[str, Any]) -> None:
        sim = self._sim
        assert sim is not None
        rt = sim.registry.for_kind("v1", "Pod")
        assert rt is not None
        now = format_time(sim.rest.clock())
        new = clone(pod)
        spec = new.get("spec") or {}
        status = new.setdefault("status", {})
        n = next(self._ips)
        addrs = {
            a.get("type"): a.get("address")
            for a in (node.get("status") or {}).get("addresses") or []
        }
        host_ip = addrs.get("InternalIP") or "10.0.0.1"
        pod_ip = f"10.244.{(n >> 8) & 255}.{n & 255}"
        status.update(
            {
                "phase": "Running",
                "conditions": [
                    {"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": now}
                    for t in (
                        "PodReadyToStartContainers",
                        "Initialized",
                        "Ready",
                        "ContainersReady",
                        "PodScheduled",
                    )
                ],
                "hostIP": host_ip,
                "hostIPs": [{"ip": host_ip}],
                "podIP": pod_ip,
                "podIPs": [{"ip": pod_ip}],
                "startTime": now,
                "containerStatuses": [
                    {
                        "name": c.get("name", ""),
                        "state": {"running": {"startedAt": now}},
                        "lastState": {},
                        "ready": True,
                        "restartCount": 0,
                        "image": c.get("image", ""),
                        "imageID": "",
                        "containerID": f"containerd://{n:064x}",
                        "started": True,
                    }
                    for c in spec.get("containers") or []
                    if isinstance(c, dict)
                ],
            }
        )
        meta = pod.get("metadata") or {}
        with contextlib.suppress(StatusError):
            sim.rest.update(
                rt, meta.get("namespace", ""), meta.get("name", ""), new, subresource="status"
            )

    # --- deleting ---------------------------------------------------------------------------

    def _consider_deletion(self, pod: dict[str, Any], *, force: bool = False) -> None:
        sim = self._sim
        assert sim is not None
        meta = pod.get("metadata") or {}
        if not meta.get("deletionTimestamp"):
            return
        if not (pod.get("spec") or {}).get("nodeName"):
            return
        key = (meta.get("namespace", ""), meta.get("name", ""))
        uid = str(meta.get("uid", ""))
        grace = int(meta.get("deletionGracePeriodSeconds") or 0)
        current = self._timers.get(key)
        if current is not None and not force and current[0] == uid and current[1] <= grace:
            return
        self._cancel(key)
        if key in self.overrides:
            delay = self.overrides[key]
        else:
            delay = self.deletion_delay(pod, float(grace), sim.time_scale)
        if delay is None:
            return
        loop = asyncio.get_running_loop()
        handle = loop.call_later(max(0.0, delay), self._finish, key, uid)
        self._timers[key] = (uid, grace, handle)

    def _cancel(self, key: Key) -> None:
        entry = self._timers.pop(key, None)
        if entry is not None:
            entry[2].cancel()

    def _finish(self, key: Key, uid: str) -> None:
        sim = self._sim
        self._timers.pop(key, None)
        if sim is None:
            return
        rt = sim.registry.for_kind("v1", "Pod")
        assert rt is not None
        try:
            sim.rest.delete(rt, key[0], key[1], DeleteOptions(grace_period_seconds=0, uid=uid))
        except StatusError as err:
            if err.code not in (404, 409):
                log.warning("kubelet: deleting pod %s/%s failed: %s", key[0], key[1], err)
