"""A built-in "kubelet" for every node: pod lifecycle and graceful deletion; what it reports of
the node itself (status, labels, the node lease) is ``kubesim.node.nodestatus``.

What a real kubelet does with pods, without running anything — except on process nodes, where
the containers run for real in the node's ``ProcessRuntime``. ``Kubelet`` lists what it does.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final

from kube.conditions import update_pod_condition
from kube.objects import InvalidObject, Node, Pod
from kube.qos import InvalidPodResources, compute_pod_qos
from kube.times import format_time
from kubesim.cluster import READY_AFTER_ANNOTATION, RUN_FOR_ANNOTATION, annotation_seconds
from kubesim.controllers.events import EventRecorder
from kubesim.core.errors import StatusError
from kubesim.core.names import digest
from kubesim.core.objects import controller_ref
from kubesim.core.store import DELETED, Event, Key, clone
from kubesim.node.admission import admit, rejected_status
from kubesim.node.nodestatus import complete_node, node_is_up, renew_leases
from kubesim.node.runtime import ContainerStatus, PodSpecError, ProcessRuntime
from kubesim.node.server import KubeletServer
from kubesim.node.static import StaticPods
from kubesim.registry.generic import DeleteOptions

if TYPE_CHECKING:
    from kubesim.cluster import Cluster

__all__ = ["DeletionDelay", "Kubelet"]

log = logging.getLogger("kubesim")

# (pod, grace seconds, time scale) -> wall seconds until removal, or None = never.
DeletionDelay = Callable[[dict[str, Any], float, float], float | None]

TERMINAL_PHASES: Final = frozenset({"Succeeded", "Failed"})


def default_deletion_delay(pod: dict[str, Any], grace: float, time_scale: float) -> float:
    return grace * time_scale


class _PodNetwork:
    """Pod IPs of one node: hosts of its pod CIDR, none handed out twice while in use."""

    def __init__(self, cidr: str) -> None:
        self.cidr = cidr
        self.in_use: set[str] = set()
        self._hosts: Iterator[ipaddress.IPv4Address | ipaddress.IPv6Address] = iter(())
        self._reset()

    def _reset(self) -> None:
        net = ipaddress.ip_network(self.cidr, strict=False)
        gateway = next(net.hosts(), None)  # .1 is the bridge, as with the bridge CNI
        self._hosts = (h for h in net.hosts() if h != gateway)

    def allocate(self) -> str:
        for _ in range(2):
            for host in self._hosts:
                if str(host) not in self.in_use:
                    self.in_use.add(str(host))
                    return str(host)
            self._reset()
        raise RuntimeError(f"pod CIDR {self.cidr} is exhausted")

    def release(self, ip: str) -> None:
        self.in_use.discard(ip)


class Kubelet:
    """Every node's kubelet, as a controller of the living cluster.

    * **Admission** (``kubesim.node.admission``): before starting a bound pod the kubelet
      checks it against the pods it already admitted on the node; a pod without room (or not
      matching the node) ends ``Failed`` with ``OutOfcpu``/``OutOfmemory``/``OutOfpods``/… and
      a Warning event.
    * **Starting pods**: a pod created through the API (or seeded without a ``status``) that is
      bound to an existing node becomes ``Running`` with ``startTime``, ``hostIP``, a ``podIP``
      from the node's pod CIDR (``spec.podCIDR``, else ``10.244.<node index>.0/24``), started
      container statuses (image, imageID, containerID, ``state.running.startedAt``) and the
      PodReadyToStartContainers/Initialized/PodScheduled conditions. Ready and ContainersReady
      follow after the ready delay (``ready_delay``); with no delay all is written at once. Pods
      seeded with an explicit status keep it. Unbound pods wait for a scheduler.
    * **Pods that finish**: a pod with ``restartPolicy`` Never or OnFailure that a Job controls,
      or that carries ``kubesim.io/run-for``, Succeeds after that long (``run_duration``):
      phase ``Succeeded``, containers ``terminated`` with exit code 0 and reason
      ``Completed``, Ready/ContainersReady False with reason ``PodCompleted``.
    * **Graceful deletion**: the API server only marks a pod for deletion
      (``deletionTimestamp``, ``deletionGracePeriodSeconds``); the kubelet stops the containers
      within the grace period and then deletes the object for good with grace 0 and a UID
      precondition (``statusManager`` → ``canBeDeleted``). This one does the same after
      ``grace × time_scale`` seconds, unless a per-pod override says otherwise
      (``set_deletion_override``, ``deletion_delay``; ``None`` keeps the pod Terminating
      forever, like a pod on a dead node). A shorter grace period given later reschedules it.
    * **Process nodes** (``Simulator(process_nodes=...)``): the containers that have a
      ``command`` run in the node's ``ProcessRuntime``, their ``containerStatuses`` and the pod
      phase come from it (``_sync_process_status``), and a graceful deletion stops them
      (``_stop_process_pod``). The node's memory capacity is the runtime's
      ``memory_capacity`` and its allocatable the kubelet's capacity − reserved − hard
      eviction threshold (``kubesim.node.config``); its ephemeral storage is its disk's size.
      Each process node serves ``/stats/summary`` from its real files and cgroups
      (``kubesim.node.server``) on the port its status names in
      ``daemonEndpoints.kubeletEndpoint``, as a kubelet serves it on 10250. A process node
      with a ``staticPodPath`` also runs the pods of its manifests and keeps their mirror pods
      in the API (``kubesim.node.static``): a mirror pod is never started as a pod of its own.
    """

    name = "kubelet"

    def __init__(self) -> None:
        self.deletion_delay: DeletionDelay = default_deletion_delay
        # (namespace, name) -> seconds (or None: never delete); consulted before deletion_delay.
        self.overrides: dict[Key, float | None] = {}
        self._timers: dict[Key, tuple[str, int, asyncio.TimerHandle]] = {}
        self.recorder = EventRecorder("kubelet")
        # Ready and completion timers: (namespace, name) -> (uid, handle)
        self._ready_timers: dict[Key, tuple[str, asyncio.TimerHandle]] = {}
        self._finish_timers: dict[Key, tuple[str, asyncio.TimerHandle]] = {}
        self._networks: dict[str, _PodNetwork] = {}
        self._pod_ips: dict[Key, tuple[str, str]] = {}  # pod -> (node, ip)
        self._lease_task: asyncio.Task[None] | None = None
        self._cluster: Cluster | None = None
        # Pods run by a process runtime: uid -> (node, key), and their start / stop tasks.
        self._process_pods: dict[str, tuple[str, Key]] = {}
        self._starting: dict[str, asyncio.Task[None]] = {}
        self._stopping: dict[str, asyncio.Task[None]] = {}
        # Admitted, not terminal pods per node: what admission checks a new pod against.
        self._admitted: dict[str, dict[Key, Pod]] = {}
        self._admitted_on: dict[Key, str] = {}  # pod -> its node in ``_admitted``
        # The servers of the process nodes (``/stats/summary``), by node name.
        self._servers: dict[str, KubeletServer] = {}
        # The process nodes' static pods and their mirror pods.
        self.static_pods = StaticPods()

    # --- hooks for tests and fault injection ------------------------------------------------

    def set_deletion_override(self, namespace: str, name: str, delay: float | None) -> None:
        """Finish the deletion of this pod after ``delay`` seconds, or never (None)."""
        self.overrides[(namespace, name)] = delay
        if self._cluster is not None:
            pod = self._cluster.store.get("pods", (namespace, name))
            if pod is not None:
                self._consider_deletion(pod, force=True)

    # --- the loop ---------------------------------------------------------------------------

    async def run(self, cluster: Cluster) -> None:
        self._cluster = cluster
        store = cluster.store
        pods = store.subscribe("pods")
        nodes = store.subscribe("nodes")
        getters: dict[str, asyncio.Future[Event]] = {}
        for rt in cluster.runtimes.values():
            rt.on_exit = self._container_exited
        self._admitted.clear()
        self._admitted_on.clear()
        try:
            for node in list(store.items("nodes")):
                self._complete_node(node)
            for name, rt in cluster.runtimes.items():
                self._servers[name] = await KubeletServer(
                    name, rt, port=rt.node.kubelet_port, clock=cluster.registry.clock
                ).start()
                current = store.get("nodes", ("", name))
                if current is not None:  # its status names the server's port
                    self._complete_node(current)
            await self.static_pods.start(cluster)
            for pod in list(store.items("pods")):
                self._remember_ip(pod)
                self._track(pod)
            for pod in list(store.items("pods")):
                self._consider(pod)
            self._lease_task = asyncio.create_task(renew_leases(self.cluster))
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
                    try:
                        self._on_event(which, ev)
                    except Exception:  # one malformed object must not stop the kubelet
                        log.exception("kubesim: kubelet failed on %s %s/%s", which, *ev.key)
        finally:
            for fut in getters.values():
                fut.cancel()
            if self._lease_task is not None:
                self._lease_task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await self._lease_task
                self._lease_task = None
            store.unsubscribe(pods)
            store.unsubscribe(nodes)
            for rt in cluster.runtimes.values():
                rt.on_exit = None
            for server in self._servers.values():
                with contextlib.suppress(Exception):
                    await server.stop()
            self._servers.clear()
            self.static_pods.stop()
            for task in [*self._starting.values(), *self._stopping.values()]:
                task.cancel()
            for task in [*self._starting.values(), *self._stopping.values()]:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            self._starting.clear()
            self._stopping.clear()
            self._process_pods.clear()
            for _, _, handle in self._timers.values():
                handle.cancel()
            for timers in (self._ready_timers, self._finish_timers):
                for _, h in timers.values():
                    h.cancel()
                timers.clear()
            self._timers.clear()
            self._cluster = None

    def _on_event(self, which: str, ev: Event) -> None:
        store = self.cluster.store
        if which == "nodes":
            if ev.type == DELETED:
                return
            self._complete_node(ev.obj)
            self.static_pods.ensure_mirrors(ev.key[1])
            was_up = ev.prev is not None and node_is_up(ev.prev)
            if node_is_up(ev.obj) and not was_up:
                node_name = ev.key[1]
                for key in sorted(self.cluster.registry.pods_to_start):
                    pod = store.get("pods", key)
                    if pod is not None and (pod.get("spec") or {}).get("nodeName") == node_name:
                        self._consider_start(pod)
            return
        if ev.type == DELETED:
            self._cancel(ev.key)
            uid = str((ev.obj.get("metadata") or {}).get("uid", ""))
            self._untrack(ev.key)
            self._forget_pod(ev.key, uid)
            if uid in self._process_pods and uid not in self._stopping:
                # deleted without a graceful stop (grace 0, a force delete): kill at once
                self._stop_process_pod(ev.key, uid, 0.0, finish=False)
            self.static_pods.pod_deleted(ev.key)
            return
        self._track(ev.obj)
        self._consider(ev.obj)

    def _consider(self, pod: dict[str, Any]) -> None:
        """Start or stop a pod as its object says; a static pod's mirror only mirrors it."""
        if self.static_pods.is_mirror(pod):
            self.cluster.registry.pods_to_start.discard(_key(pod))
            self.static_pods.sync_mirror(pod)
            return
        self._consider_start(pod)
        self._consider_deletion(pod)

    @property
    def cluster(self) -> Cluster:
        assert self._cluster is not None, "the kubelet is not running"
        return self._cluster

    # --- the node ---------------------------------------------------------------------------

    def _node_network(self, node: Mapping[str, Any]) -> _PodNetwork:
        name = str((node.get("metadata") or {}).get("name", ""))
        net = self._networks.get(name)
        if net is None:
            cidr = (node.get("spec") or {}).get("podCIDR")
            if not cidr:
                index = len(self._networks)
                cidr = f"10.244.{index % 256}.0/24"
            try:
                net = _PodNetwork(str(cidr))
            except ValueError:
                log.warning("kubesim: node %s has an invalid podCIDR %r", name, cidr)
                net = _PodNetwork(f"10.244.{len(self._networks) % 256}.0/24")
            self._networks[name] = net
        return net

    def _complete_node(self, node: Mapping[str, Any]) -> None:
        self._node_network(node)
        server = self._servers.get(str((node.get("metadata") or {}).get("name", "")))
        complete_node(self.cluster, node, kubelet_port=None if server is None else server.port)

    # --- starting ---------------------------------------------------------------------------

    def _remember_ip(self, pod: Mapping[str, Any]) -> None:
        meta = pod.get("metadata") or {}
        ip = (pod.get("status") or {}).get("podIP")
        node_name = (pod.get("spec") or {}).get("nodeName")
        node = self.cluster.store.get("nodes", ("", str(node_name))) if node_name else None
        if ip and node is not None:
            self._node_network(node).in_use.add(str(ip))
            self._pod_ips[(str(meta.get("namespace", "")), str(meta.get("name", "")))] = (
                str(node_name),
                str(ip),
            )

    def _forget_pod(self, key: Key, uid: str) -> None:
        for timers in (self._ready_timers, self._finish_timers):
            entry = timers.pop(key, None)
            if entry is not None:
                entry[1].cancel()
        held = self._pod_ips.pop(key, None)
        if held is not None and held[0] in self._networks:
            self._networks[held[0]].release(held[1])

    def _track(self, pod: Mapping[str, Any]) -> None:
        """Keep ``_admitted`` current: bound, not terminal pods the kubelet is not about to
        admit (pods seeded running, or started earlier)."""
        meta = pod.get("metadata") or {}
        key = (str(meta.get("namespace", "")), str(meta.get("name", "")))
        node_name = (pod.get("spec") or {}).get("nodeName")
        phase = (pod.get("status") or {}).get("phase")
        if not node_name or phase in TERMINAL_PHASES:
            self._untrack(key)
            return
        if key in self.cluster.registry.pods_to_start:
            return
        held = self._admitted.get(str(node_name), {})
        known = held.get(key)
        if known is not None and known.uid == meta.get("uid"):
            return
        try:
            self._admit_record(str(node_name), key, Pod.from_dict(pod))
        except InvalidObject:
            self._untrack(key)

    def _admit_record(self, node_name: str, key: Key, pod: Pod) -> None:
        self._untrack(key)
        self._admitted.setdefault(node_name, {})[key] = pod
        self._admitted_on[key] = node_name

    def _untrack(self, key: Key) -> None:
        node_name = self._admitted_on.pop(key, None)
        if node_name is not None:
            self._admitted.get(node_name, {}).pop(key, None)

    def _admission(self, pod: Mapping[str, Any], node: Mapping[str, Any]) -> tuple[str, str] | None:
        """``canAdmitPod``: why the pod may not run on this node, or None."""
        try:
            typed, typed_node = Pod.from_dict(pod), Node.from_dict(node)
        except InvalidObject:
            return None  # the API server validated it; nothing the kubelet can judge
        name = typed_node.name
        others = [p for k, p in self._admitted.get(name, {}).items() if k != _key(pod)]
        return admit(typed, typed_node, others)

    def _reject(self, pod: dict[str, Any], node_name: str, reason: str, message: str) -> None:
        """``rejectPod``: a Warning event with the message, then the pod Failed."""
        self.recorder.event(
            self.cluster, pod, type_="Warning", reason=reason, message=message, host=node_name
        )
        new = clone(pod)
        now = format_time(self.cluster.registry.clock())
        new["status"] = rejected_status(new.get("status") or {}, reason, message, now)
        with contextlib.suppress(StatusError):
            self._write_status(_key(pod), new)

    def _consider_start(self, pod: dict[str, Any]) -> None:
        cluster = self.cluster
        meta = pod.get("metadata") or {}
        key = (meta.get("namespace", ""), meta.get("name", ""))
        if key not in cluster.registry.pods_to_start:
            return
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name or meta.get("deletionTimestamp"):
            return
        node = cluster.store.get("nodes", ("", node_name))
        if node is None or not node_is_up(node):
            return
        cluster.registry.pods_to_start.discard(key)
        self._start(pod, node)

    def ready_delay(self, pod: Mapping[str, Any]) -> float:
        """Seconds of wall time from start to Ready for this pod: its ``kubesim.io/ready-after``
        annotation, else ``ControllerSettings.ready_after``, × time scale."""
        seconds = annotation_seconds(pod, READY_AFTER_ANNOTATION)
        if seconds is None:
            seconds = self.cluster.settings.ready_after
        return seconds * self.cluster.time_scale

    def run_duration(self, pod: Mapping[str, Any]) -> float | None:
        """Seconds of wall time until the pod Succeeds (its ``kubesim.io/run-for``, default
        ``job_duration``), or None when it runs forever."""
        spec = pod.get("spec") or {}
        if spec.get("restartPolicy", "Always") == "Always":
            return None
        seconds = annotation_seconds(pod, RUN_FOR_ANNOTATION)
        if seconds is None:
            ref = controller_ref(pod)
            if ref is None or ref.get("kind") != "Job":
                return None
            seconds = self.cluster.settings.job_duration
        return seconds * self.cluster.time_scale

    def _start(self, pod: dict[str, Any], node: dict[str, Any]) -> None:
        cluster = self.cluster
        meta = pod.get("metadata") or {}
        key = (str(meta.get("namespace", "")), str(meta.get("name", "")))
        uid = str(meta.get("uid", ""))
        node_name = str(node["metadata"]["name"])
        rejection = self._admission(pod, node)
        if rejection is not None:
            self._reject(pod, node_name, *rejection)
            return
        now = format_time(cluster.registry.clock())
        new = clone(pod)
        spec = new.get("spec") or {}
        status = new.setdefault("status", {})
        addrs = {
            a.get("type"): a.get("address")
            for a in (node.get("status") or {}).get("addresses") or []
            if isinstance(a, Mapping)
        }
        host_ip = str(addrs.get("InternalIP") or "10.0.0.1")
        held = self._pod_ips.pop(key, None)
        if held is not None and held[0] in self._networks:
            self._networks[held[0]].release(held[1])
        if spec.get("hostNetwork"):
            pod_ip = host_ip
        else:
            pod_ip = self._node_network(node).allocate()
            self._pod_ips[key] = (str(node["metadata"]["name"]), pod_ip)
        delay = self.ready_delay(pod)
        ready = delay <= 0
        containers = [c for c in spec.get("containers") or [] if isinstance(c, Mapping)]
        status.update(
            {
                "phase": "Running",
                "hostIP": host_ip,
                "hostIPs": [{"ip": host_ip}],
                "podIP": pod_ip,
                "podIPs": [{"ip": pod_ip}],
                "startTime": now,
                "containerStatuses": [
                    {
                        "name": str(c.get("name", "")),
                        "state": {"running": {"startedAt": now}},
                        "lastState": {},
                        "ready": ready,
                        "restartCount": 0,
                        "image": str(c.get("image", "")),
                        "imageID": _image_id(str(c.get("image", ""))),
                        "containerID": f"containerd://{digest(uid, str(c.get('name', '')))}",
                        "started": True,
                    }
                    for c in containers
                ],
            }
        )
        inits = [c for c in spec.get("initContainers") or [] if isinstance(c, Mapping)]
        if inits:
            status["initContainerStatuses"] = _init_statuses(inits, uid=uid, now=now, ready=ready)
        if not status.get("qosClass"):  # generateAPIPodStatus: v1qos.GetPodQOS
            with contextlib.suppress(InvalidPodResources):  # the API server stores none such
                status["qosClass"] = compute_pod_qos(new)
        unready = [str(c.get("name", "")) for c in containers]
        _set_pod_conditions(status, now, ready=ready, unready=unready)
        try:
            self._write_status(key, new)
        except StatusError:
            return
        with contextlib.suppress(InvalidObject):
            self._admit_record(node_name, key, Pod.from_dict(new))
        self._container_events(pod, node_name=node_name)
        if not ready:
            self._later(self._ready_timers, key, uid, delay, self._become_ready)
        runtime = cluster.runtimes.get(node_name)
        if runtime is not None and any(c.get("command") for c in containers):
            self._process_pods[uid] = (node_name, key)
            self._starting[uid] = asyncio.create_task(
                self._start_processes(runtime, key, uid, new), name=f"kubelet-start-{uid}"
            )
            return  # its processes decide when it finishes, not kubesim.io/run-for
        run_for = self.run_duration(pod)
        if run_for is not None:
            self._later(self._finish_timers, key, uid, max(run_for, delay), self._succeed)

    def _container_events(self, pod: Mapping[str, Any], *, node_name: str) -> None:
        """``Pulled``, ``Created`` and ``Started`` for each container, as the kubelet records."""
        for c in (pod.get("spec") or {}).get("containers") or []:
            if not isinstance(c, Mapping):
                continue
            name = str(c.get("name", ""))
            path = f"spec.containers{{{name}}}"
            for reason, message in (
                ("Pulled", f'Container image "{c.get("image", "")}" already present on machine'),
                ("Created", f"Created container: {name}"),
                ("Started", f"Started container {name}"),
            ):
                self.recorder.event(
                    self.cluster,
                    pod,
                    type_="Normal",
                    reason=reason,
                    message=message,
                    host=node_name,
                    field_path=path,
                )

    def _later(
        self,
        timers: dict[Key, tuple[str, asyncio.TimerHandle]],
        key: Key,
        uid: str,
        delay: float,
        fn: Callable[[Key, str], None],
    ) -> None:
        current = timers.pop(key, None)
        if current is not None:
            current[1].cancel()

        def fire() -> None:
            timers.pop(key, None)
            try:
                fn(key, uid)
            except StatusError as err:
                log.info("kubesim: kubelet update of %s/%s failed: %s", *key, err.message)
            except Exception:
                log.exception("kubesim: kubelet update of %s/%s failed", *key)

        timers[key] = (uid, asyncio.get_running_loop().call_later(max(0.0, delay), fire))

    def _current(self, key: Key, uid: str) -> dict[str, Any] | None:
        pod = self.cluster.store.get("pods", key)
        if pod is None or str((pod.get("metadata") or {}).get("uid", "")) != uid:
            return None
        if (pod.get("status") or {}).get("phase") != "Running":
            return None
        return pod

    def _write_status(self, key: Key, pod: dict[str, Any]) -> None:
        rt = self.cluster.scheme.for_storage("pods")
        self.cluster.registry.update(rt, key[0], key[1], pod, subresource="status")

    def _become_ready(self, key: Key, uid: str) -> None:
        pod = self._current(key, uid)
        if pod is None or (pod.get("metadata") or {}).get("deletionTimestamp"):
            return
        new = clone(pod)
        status = new["status"]
        if any(
            isinstance(cs, dict) and "running" not in (cs.get("state") or {})
            for cs in status.get("containerStatuses") or []
        ):
            return  # a process node's container that exited or never started: not Ready
        for cs in [
            *(status.get("containerStatuses") or []),
            *(status.get("initContainerStatuses") or []),
        ]:
            if isinstance(cs, dict):
                cs["ready"] = True
        _set_pod_conditions(
            status, format_time(self.cluster.registry.clock()), ready=True, unready=[]
        )
        self._write_status(key, new)

    def _succeed(self, key: Key, uid: str) -> None:
        pod = self._current(key, uid)
        if pod is None:
            return
        now = format_time(self.cluster.registry.clock())
        new = clone(pod)
        status = new["status"]
        status["phase"] = "Succeeded"
        for cs in status.get("containerStatuses") or []:
            if not isinstance(cs, dict):
                continue
            started = ((cs.get("state") or {}).get("running") or {}).get("startedAt", now)
            cs["state"] = {
                "terminated": {
                    "exitCode": 0,
                    "reason": "Completed",
                    "startedAt": started,
                    "finishedAt": now,
                    "containerID": cs.get("containerID", ""),
                }
            }
            cs["ready"] = False
            cs["started"] = False
        for type_ in ("PodReadyToStartContainers", "Ready", "ContainersReady"):
            condition = {"type": type_, "status": "False", "reason": "PodCompleted"}
            update_pod_condition(status, condition, now=now)
        self._write_status(key, new)
        held = self._pod_ips.pop(key, None)
        if held is not None and held[0] in self._networks:
            self._networks[held[0]].release(held[1])

    # --- deleting ---------------------------------------------------------------------------

    def _consider_deletion(self, pod: dict[str, Any], *, force: bool = False) -> None:
        cluster = self.cluster
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
        if (current is None or current[0] != uid) and uid not in self._stopping:
            node_name = str((pod.get("spec") or {}).get("nodeName") or "")
            for c in (pod.get("spec") or {}).get("containers") or []:
                if isinstance(c, Mapping) and (pod.get("status") or {}).get("phase") == "Running":
                    self.recorder.event(
                        cluster,
                        pod,
                        type_="Normal",
                        reason="Killing",
                        message=f"Stopping container {c.get('name', '')}",
                        host=node_name,
                        field_path=f"spec.containers{{{c.get('name', '')}}}",
                    )
        self._cancel(key)
        if uid in self._process_pods and key not in self.overrides:
            if uid not in self._stopping:
                self._stop_process_pod(key, uid, grace * cluster.time_scale, finish=True)
            return
        if key in self.overrides:
            delay = self.overrides[key]
        else:
            delay = self.deletion_delay(pod, float(grace), cluster.time_scale)
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
        cluster = self._cluster
        self._timers.pop(key, None)
        if cluster is None:
            return
        rt = cluster.scheme.for_storage("pods")
        try:
            cluster.registry.delete(
                rt, key[0], key[1], DeleteOptions(grace_period_seconds=0, uid=uid)
            )
        except StatusError as err:
            if err.code not in (404, 409):
                log.warning("kubelet: deleting pod %s/%s failed: %s", key[0], key[1], err)

    # --- process nodes ------------------------------------------------------------------------

    async def _start_processes(
        self, runtime: ProcessRuntime, key: Key, uid: str, pod: dict[str, Any]
    ) -> None:
        try:
            statuses = await runtime.start(pod)
        except (PodSpecError, OSError) as exc:
            log.warning("kubelet: cannot run pod %s/%s: %s", key[0], key[1], exc)
            self._process_pods.pop(uid, None)
            self._starting.pop(uid, None)
            self._create_container_error(key, uid, pod, str(exc))
            return
        finally:
            self._starting.pop(uid, None)
        self._sync_process_status(key, uid, statuses)

    def _create_container_error(
        self, key: Key, uid: str, pod: Mapping[str, Any], message: str
    ) -> None:
        """The containers that were to run wait in ``CreateContainerError``; the pod is not
        Ready (the kubelet retries; kubesim does not)."""
        current = self._current(key, uid)
        if current is None:
            return
        run = {
            str(c.get("name", ""))
            for c in (pod.get("spec") or {}).get("containers") or []
            if isinstance(c, Mapping) and c.get("command")
        }
        new = clone(current)
        status = new["status"]
        for cs in status.get("containerStatuses") or []:
            if isinstance(cs, dict) and cs.get("name") in run:
                cs["state"] = {"waiting": {"reason": "CreateContainerError", "message": message}}
                cs["ready"] = cs["started"] = False
        now = format_time(self.cluster.registry.clock())
        message = f"containers with unready status: [{' '.join(sorted(run))}]"
        for type_ in ("Ready", "ContainersReady"):
            update_pod_condition(status, _not_ready(type_, message), now=now)
        with contextlib.suppress(StatusError):
            self._write_status(key, new)

    def _container_exited(self, uid: str, _status: ContainerStatus) -> None:
        if self._cluster is not None and self.static_pods.container_exited(uid):
            return
        entry = self._process_pods.get(uid)
        if entry is None or self._cluster is None or uid in self._starting:
            return
        runtime = self.cluster.runtimes.get(entry[0])
        statuses = runtime.status(uid) if runtime is not None else None
        if statuses is not None:
            self._sync_process_status(entry[1], uid, statuses)

    def _sync_process_status(self, key: Key, uid: str, statuses: list[ContainerStatus]) -> None:
        """Write the runtime's view of the containers, and the phase it implies.

        The statuses are the runtime's (container IDs, ``OOMKilled``/``Error``/``Completed``
        exits with exit codes), and the phase follows them as ``getPhase`` does: with
        ``restartPolicy`` Never a pod whose containers all exited is Succeeded (all 0) or
        Failed; OnFailure Succeeds when all exited 0; otherwise the container waits in
        ``CrashLoopBackOff`` with the exit as ``lastState`` (the runtime does not restart it)
        and the pod stays Running, not Ready."""
        pod = self._current(key, uid)
        if pod is None or (pod.get("metadata") or {}).get("deletionTimestamp"):
            return
        new = clone(pod)
        spec = new.get("spec") or {}
        status = new["status"]
        policy = spec.get("restartPolicy", "Always")
        by_name = {s.name: s for s in statuses}
        images = {
            str(c.get("name", "")): str(c.get("image", ""))
            for c in spec.get("containers") or []
            if isinstance(c, Mapping)
        }
        ready_now = any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in status.get("conditions") or []
            if isinstance(c, Mapping)
        )
        restarting = False
        out: list[dict[str, Any]] = []
        for cs in status.get("containerStatuses") or []:
            st = by_name.get(str(cs.get("name", "")))
            if st is None:
                out.append(cs)
                continue
            image = images.get(st.name, "")
            rendered = st.to_k8s(image=image, image_id=_image_id(image))
            if st.state == "running":
                rendered["ready"] = ready_now
            elif policy == "Always" or (policy == "OnFailure" and st.exit_code != 0):
                restarting = True
                rendered["lastState"] = rendered["state"]
                rendered["state"] = {
                    "waiting": {
                        "reason": "CrashLoopBackOff",
                        "message": f"back-off restarting failed container {st.name}",
                    }
                }
            out.append(rendered)
        status["containerStatuses"] = out
        exited = [s for s in statuses if s.state == "exited"]
        others_run = len(out) > len(statuses)  # simulated containers never stop
        now = format_time(self.cluster.registry.clock())
        terminal = None
        if exited and len(exited) == len(statuses) and not others_run and not restarting:
            terminal = "Succeeded" if all(s.exit_code == 0 for s in exited) else "Failed"
        if terminal is not None:
            status["phase"] = terminal
            reason = "PodCompleted" if terminal == "Succeeded" else "PodFailed"
            for type_ in ("PodReadyToStartContainers", "Ready", "ContainersReady"):
                condition = {"type": type_, "status": "False", "reason": reason}
                update_pod_condition(status, condition, now=now)
        elif exited:
            message = f"containers with unready status: [{' '.join(s.name for s in exited)}]"
            for type_ in ("Ready", "ContainersReady"):
                update_pod_condition(status, _not_ready(type_, message), now=now)
        try:
            self._write_status(key, new)
        except StatusError as err:
            log.info("kubesim: kubelet update of %s/%s failed: %s", *key, err.message)
            return
        if terminal is not None:
            # the kubelet tears down a finished pod's sandbox and cgroups
            self._forget_pod(key, uid)
            held = self._pod_ips.pop(key, None)
            if held is not None and held[0] in self._networks:
                self._networks[held[0]].release(held[1])
            self._stop_process_pod(key, uid, 0.0, finish=False)

    def _stop_process_pod(self, key: Key, uid: str, grace: float, *, finish: bool) -> None:
        """Stop a process pod as ``killContainer`` does (SIGTERM to the process group, SIGKILL
        after grace × time scale), remove its cgroups, and only then (``finish``) delete the
        object."""
        entry = self._process_pods.get(uid)
        if entry is None:
            return
        runtime = self.cluster.runtimes[entry[0]]

        async def stop() -> None:
            try:
                starting = self._starting.get(uid)
                if starting is not None:
                    await asyncio.wait({starting})
                await runtime.kill(uid, grace)
            finally:
                self._process_pods.pop(uid, None)
                self._stopping.pop(uid, None)
            if finish:
                self._finish(key, uid)

        self._stopping[uid] = asyncio.create_task(stop(), name=f"kubelet-stop-{uid}")


def _init_statuses(
    inits: list[Mapping[str, Any]], *, uid: str, now: str, ready: bool
) -> list[dict[str, Any]]:
    """Init containers ran to completion before the app containers; sidecars (restartPolicy
    Always) keep running."""
    out = []
    for c in inits:
        name = str(c.get("name", ""))
        container_id = f"containerd://{digest(uid, 'init', name)}"
        sidecar = c.get("restartPolicy") == "Always"
        state: dict[str, Any] = (
            {"running": {"startedAt": now}}
            if sidecar
            else {
                "terminated": {
                    "exitCode": 0,
                    "reason": "Completed",
                    "startedAt": now,
                    "finishedAt": now,
                    "containerID": container_id,
                }
            }
        )
        out.append(
            {
                "name": name,
                "state": state,
                "lastState": {},
                "ready": ready or not sidecar,
                "restartCount": 0,
                "image": str(c.get("image", "")),
                "imageID": _image_id(str(c.get("image", ""))),
                "containerID": container_id,
                "started": sidecar,
            }
        )
    return out


def _image_id(image: str) -> str:
    """A content-addressed image reference as containerd reports it."""
    repo = image.rsplit("@", 1)[0]
    last = repo.rsplit("/", 1)[-1]
    if ":" in last:
        repo = repo[: len(repo) - len(last)] + last.split(":", 1)[0]
    if "/" not in repo:
        repo = f"docker.io/library/{repo}"
    elif "." not in repo.split("/", 1)[0] and ":" not in repo.split("/", 1)[0]:
        repo = f"docker.io/{repo}"
    return f"{repo}@sha256:{digest('image', image)}"


_CONDITION_ORDER: Final = {
    t: i
    for i, t in enumerate(
        ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
    )
}


def _set_pod_conditions(
    status: dict[str, Any], now: str, *, ready: bool, unready: list[str]
) -> None:
    """The conditions ``generateAPIPodStatus`` reports for a started pod."""
    status["conditions"] = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
    for type_ in ("PodReadyToStartContainers", "Initialized", "PodScheduled"):
        update_pod_condition(status, {"type": type_, "status": "True"}, now=now)
    message = f"containers with unready status: [{' '.join(unready)}]"
    for type_ in ("Ready", "ContainersReady"):
        if ready:
            update_pod_condition(status, {"type": type_, "status": "True"}, now=now)
        else:
            update_pod_condition(status, _not_ready(type_, message), now=now)
    status["conditions"].sort(
        key=lambda c: _CONDITION_ORDER.get(str(c.get("type", "")), len(_CONDITION_ORDER))
    )


def _not_ready(type_: str, message: str) -> dict[str, str]:
    return {"type": type_, "status": "False", "reason": "ContainersNotReady", "message": message}


def _key(pod: Mapping[str, Any]) -> Key:
    meta = pod.get("metadata") or {}
    return (str(meta.get("namespace", "")), str(meta.get("name", "")))
