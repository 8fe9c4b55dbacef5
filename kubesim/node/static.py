"""Static pods of a process node: pods its kubelet runs from manifest files, not from the API.

A kubelet with ``staticPodPath`` runs every pod manifest of that directory itself
(``pkg/kubelet/config/file.go``), whatever the API server says, and shows each in the API as a
*mirror pod* it creates and keeps (``pkg/kubelet/pod/mirror_client.go``). The eviction agent
must tell a real mirror pod from a pod that only carries the annotations, so a process node
runs them as the kubelet does (``StaticPods``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from kube.conditions import update_pod_condition
from kube.critical import (
    CONFIG_FIRST_SEEN_ANNOTATION_KEY,
    CONFIG_HASH_ANNOTATION_KEY,
    CONFIG_MIRROR_ANNOTATION_KEY,
    CONFIG_SOURCE_ANNOTATION_KEY,
    FILE_SOURCE,
)
from kube.objects import InvalidObject, Pod
from kube.qos import InvalidPodResources, compute_pod_qos
from kube.strict import ManifestError, parse_yaml, read_text
from kube.times import format_micro_time, format_time
from kubesim.core.errors import StatusError
from kubesim.core.store import Key, clone
from kubesim.node.runtime import ContainerStatus, PodSpecError, ProcessRuntime
from kubesim.registry.generic import DeleteOptions

if TYPE_CHECKING:
    from kubesim.cluster import Cluster

__all__ = ["StaticPod", "StaticPods", "read_static_pods"]

log = logging.getLogger("kubesim")

_NO_EXECUTE_TOLERATION: Final = {"operator": "Exists", "effect": "NoExecute"}


@dataclass(frozen=True)
class StaticPod:
    """A pod a node's kubelet runs from a manifest: ``pod`` is the kubelet's copy."""

    node: str
    path: Path
    pod: dict[str, Any]

    @property
    def uid(self) -> str:
        return str(self.pod["metadata"]["uid"])

    @property
    def key(self) -> Key:
        meta = self.pod["metadata"]
        return (str(meta["namespace"]), str(meta["name"]))


def _kubelet_copy(manifest: dict[str, Any], *, node: str, path: Path, seen: str) -> dict[str, Any]:
    """``applyDefaults`` and the first-seen annotation, on a decoded manifest.

    As ``applyDefaults`` in ``pkg/kubelet/config/common.go`` and the merge in ``config.go``:
    the UID is the hex MD5 of the node's name, the file's path and the manifest (32 hex
    digits; a UID the manifest gives is kept), the name gets ``-<node name>``, the namespace
    defaults to ``default``, ``spec.nodeName`` is the node, the pod tolerates every
    ``NoExecute`` taint, and it carries ``kubernetes.io/config.hash`` (the UID),
    ``kubernetes.io/config.source: file`` and ``kubernetes.io/config.seen``."""
    pod: dict[str, Any] = clone(manifest)
    meta = pod.setdefault("metadata", {})
    if not meta.get("uid"):
        digest = hashlib.md5(usedforsecurity=False)
        digest.update(f"host:{node}".encode())
        digest.update(f"file:{path}".encode())
        digest.update(json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode())
        meta["uid"] = digest.hexdigest()
    meta["name"] = f"{meta['name']}-{node.lower()}"
    meta["namespace"] = meta.get("namespace") or "default"
    spec = pod.setdefault("spec", {})
    spec["nodeName"] = node
    tolerations = list(spec.get("tolerations") or [])
    if _NO_EXECUTE_TOLERATION not in tolerations:  # AddOrUpdateTolerationInPod
        tolerations.append(dict(_NO_EXECUTE_TOLERATION))
    spec["tolerations"] = tolerations
    annotations = meta.get("annotations") or {}
    meta["annotations"] = {
        **annotations,
        CONFIG_HASH_ANNOTATION_KEY: meta["uid"],
        CONFIG_SOURCE_ANNOTATION_KEY: FILE_SOURCE,
        CONFIG_FIRST_SEEN_ANNOTATION_KEY: seen,
    }
    pod.pop("status", None)
    return pod


def _manifest(path: Path) -> dict[str, Any]:
    """The one Pod of a manifest file; a ``ManifestError`` naming the file and why not."""
    docs, _ = parse_yaml(read_text(path), source=str(path))
    docs = [d for d in docs if d is not None]
    if len(docs) != 1 or not isinstance(docs[0], dict):
        raise ManifestError("must hold exactly one object", source=str(path))
    doc: dict[str, Any] = docs[0]
    if (doc.get("apiVersion"), doc.get("kind")) != ("v1", "Pod"):
        raise ManifestError("must be a v1 Pod", source=str(path))
    if not (doc.get("metadata") or {}).get("name"):
        raise ManifestError("metadata.name: required", source=str(path))
    try:
        Pod.from_dict(doc)  # the fields the kubelet reads decode
    except (InvalidObject, ValueError, TypeError) as exc:
        raise ManifestError(str(exc), source=str(path)) from None
    return doc


def read_static_pods(directory: Path, *, node: str, now: float) -> list[StaticPod]:
    """The static pods of ``node`` from the manifests in ``directory``, read once.

    Each regular file not starting with ``.``, in name order, holding one ``v1`` Pod (YAML or
    JSON); a file that is not one is logged and skipped. (A kubelet also rereads the directory
    every ``fileCheckFrequency``; kubesim does not.)"""
    try:
        files = sorted(p for p in directory.iterdir() if not p.name.startswith("."))
    except OSError as exc:
        log.warning("kubesim: node %s: cannot read staticPodPath %s: %s", node, directory, exc)
        return []
    seen = format_micro_time(now)
    out = []
    for path in files:
        if not path.is_file():
            continue
        try:
            manifest = _manifest(path)
        except ManifestError as exc:
            log.warning("kubesim: node %s: static pod manifest skipped: %s", node, exc)
            continue
        out.append(StaticPod(node, path, _kubelet_copy(manifest, node=node, path=path, seen=seen)))
    return out


class StaticPods:
    """The static pods of every process node, and their mirror pods in the API.

    A static pod runs under its UID in the node's runtime: the pod cgroup is ``pod<hash>``, and
    the node's ``/stats/summary`` names the pod by it — as a real node's cgroups and summary
    do. Static pods skip the kubelet's admission.

    Its mirror pod is a copy created through the API with ``kubernetes.io/config.mirror:
    <hash>`` and an ``ownerReference`` to its Node (``controller: true``, as NodeRestriction
    requires), once the Node exists (``_ensure_mirror``). Its status is the static pod's (the
    runtime's container states, the host IP — and as pod IP only with ``hostNetwork``: kubesim
    gives a static pod no pod network). Deleting the mirror does not stop the static pod: the
    kubelet deletes a mirror being deleted at once (grace 0, UID precondition) and creates it
    again, with a new API UID (``sync_mirror``).
    """

    def __init__(self) -> None:
        self._pods: dict[Key, StaticPod] = {}
        self._by_uid: dict[str, StaticPod] = {}
        self._cluster: Cluster | None = None

    @property
    def cluster(self) -> Cluster:
        assert self._cluster is not None, "the static pods are not running"
        return self._cluster

    # --- the kubelet's hooks -------------------------------------------------------------------

    async def start(self, cluster: Cluster) -> None:
        """Read each process node's ``staticPodPath``, run its pods and create their mirrors."""
        self._cluster = cluster
        for node, runtime in sorted(cluster.runtimes.items()):
            directory = runtime.node.static_pod_path
            if directory is None:
                continue
            for static in read_static_pods(directory, node=node, now=cluster.registry.clock()):
                if static.key in self._pods:
                    log.warning("kubesim: node %s: static pod %s/%s twice", node, *static.key)
                    continue
                try:
                    await runtime.start(static.pod)
                except (PodSpecError, OSError) as exc:
                    log.warning("kubesim: node %s: cannot run static pod: %s", node, exc)
                    continue
                self._pods[static.key] = static
                self._by_uid[static.uid] = static
            self.ensure_mirrors(node)

    def stop(self) -> None:
        """Forget the static pods (the runtimes stop their processes when they close)."""
        self._pods.clear()
        self._by_uid.clear()
        self._cluster = None

    def is_mirror(self, pod: Mapping[str, Any]) -> bool:
        """Whether ``pod`` is the mirror pod of a static pod of ours (``IsMirrorPodOf``): the
        pod at the static pod's name and namespace whose ``config.mirror`` is its hash.

        Any other pod carrying ``config.mirror`` is run by kubesim's kubelet like any pod; a
        real kubelet would not run it and would delete it as an orphaned mirror pod — kubesim
        keeps it, so that a test can show that such a claim earns the pod nothing from the
        eviction agent."""
        meta = pod.get("metadata") or {}
        static = self._pods.get((str(meta.get("namespace", "")), str(meta.get("name", ""))))
        annotations = meta.get("annotations") or {}
        return static is not None and annotations.get(CONFIG_MIRROR_ANNOTATION_KEY) == static.uid

    def sync_mirror(self, mirror: Mapping[str, Any]) -> None:
        """A mirror pod seen: delete it if it is being deleted, else write the static pod's
        status to it when it differs."""
        meta = mirror.get("metadata") or {}
        static = self._pods[(str(meta.get("namespace", "")), str(meta.get("name", "")))]
        rt = self.cluster.scheme.for_storage("pods")
        if meta.get("deletionTimestamp"):
            options = DeleteOptions(grace_period_seconds=0, uid=str(meta.get("uid", "")))
            try:
                self.cluster.registry.delete(rt, *static.key, options)
            except StatusError as err:
                if err.code not in (404, 409):
                    log.warning("kubesim: deleting mirror pod %s/%s: %s", *static.key, err)
            return
        status = self._status(static, mirror)
        if status == mirror.get("status"):
            return
        new = clone(dict(mirror))
        new["status"] = status
        try:
            self.cluster.registry.update(rt, *static.key, new, subresource="status")
        except StatusError as err:
            if err.code != 409:  # a concurrent write: its event syncs again
                log.warning("kubesim: mirror pod %s/%s status: %s", *static.key, err)

    def pod_deleted(self, key: Key) -> None:
        """A pod left the API: if it was the mirror of a static pod, create it again."""
        static = self._pods.get(key)
        if static is not None:
            self._ensure_mirror(static)

    def ensure_mirrors(self, node: str) -> None:
        """Create the mirror pods of ``node``'s static pods that have none (once it exists)."""
        for static in list(self._pods.values()):
            if static.node == node:
                self._ensure_mirror(static)

    def container_exited(self, uid: str) -> bool:
        """A container of a static pod exited: show it on its mirror. False: not ours."""
        static = self._by_uid.get(uid)
        if static is None:
            return False
        mirror = self.cluster.store.get("pods", static.key)
        if mirror is not None and self.is_mirror(mirror):
            self.sync_mirror(mirror)
        return True

    # --- mirror pods ---------------------------------------------------------------------------

    def _ensure_mirror(self, static: StaticPod) -> None:
        cluster = self.cluster
        if cluster.store.get("pods", static.key) is not None:
            return
        node = cluster.store.get("nodes", ("", static.node))
        if node is None or (node.get("metadata") or {}).get("deletionTimestamp"):
            return  # the kubelet creates no mirror pod without its Node
        mirror = clone(static.pod)
        meta = mirror["metadata"]
        meta.pop("uid", None)
        meta.pop("resourceVersion", None)
        meta["annotations"][CONFIG_MIRROR_ANNOTATION_KEY] = static.uid
        node_meta = node.get("metadata") or {}
        meta["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "Node",
                "name": static.node,
                "uid": str(node_meta.get("uid", "")),
                "controller": True,
            }
        ]
        rt = cluster.scheme.for_storage("pods")
        try:
            cluster.registry.create(rt, static.key[0], mirror)
        except StatusError as err:
            log.warning("kubesim: creating mirror pod %s/%s: %s", *static.key, err.message)

    def _status(self, static: StaticPod, mirror: Mapping[str, Any]) -> dict[str, Any]:
        """The mirror's status: the static pod's, as the kubelet's status manager writes it."""
        cluster = self.cluster
        runtime: ProcessRuntime = cluster.runtimes[static.node]
        now = format_time(cluster.registry.clock())
        status: dict[str, Any] = clone(dict(mirror.get("status") or {}))
        spec = static.pod.get("spec") or {}
        layout = runtime.layout(static.uid)
        started = format_time(layout.started_at) if layout is not None else now
        by_name = {s.name: s for s in runtime.status(static.uid) or []}
        containers = [c for c in spec.get("containers") or [] if isinstance(c, Mapping)]
        statuses = [
            _container_status(c, by_name.get(str(c.get("name"))), started) for c in containers
        ]
        node = cluster.store.get("nodes", ("", static.node)) or {}
        addresses = (node.get("status") or {}).get("addresses") or []
        host_ip = next((str(a["address"]) for a in addresses if a.get("type") == "InternalIP"), "")
        status.update(phase=_phase(spec, list(by_name.values())), startTime=started)
        if host_ip:
            status.update(hostIP=host_ip, hostIPs=[{"ip": host_ip}])
            if spec.get("hostNetwork"):
                status.update(podIP=host_ip, podIPs=[{"ip": host_ip}])
        status["containerStatuses"] = statuses
        with contextlib.suppress(InvalidPodResources):
            status["qosClass"] = compute_pod_qos(static.pod)
        for type_ in ("PodReadyToStartContainers", "Initialized", "PodScheduled"):
            update_pod_condition(status, {"type": type_, "status": "True"}, now=now)
        unready = [s["name"] for s in statuses if not s["ready"]]
        for type_ in ("Ready", "ContainersReady"):
            ready = {"type": type_, "status": "True"}
            if unready:
                message = f"containers with unready status: [{' '.join(unready)}]"
                ready = {
                    "type": type_,
                    "status": "False",
                    "reason": "ContainersNotReady",
                    "message": message,
                }
            update_pod_condition(status, ready, now=now)
        return status


def _container_status(
    container: Mapping[str, Any], status: ContainerStatus | None, started: str
) -> dict[str, Any]:
    """A ``containerStatuses`` entry: the runtime's, or running (a container kubesim does not
    run, having no ``command``, runs as the simulated kubelet's do)."""
    image = str(container.get("image", ""))
    if status is not None:
        return status.to_k8s(image=image)
    return {
        "name": str(container.get("name", "")),
        "state": {"running": {"startedAt": started}},
        "lastState": {},
        "ready": True,
        "restartCount": 0,
        "image": image,
        "imageID": "",
        "started": True,
    }


def _phase(spec: Mapping[str, Any], statuses: list[ContainerStatus]) -> str:
    """``getPhase``: Running until every container the runtime ran has exited under a restart
    policy that does not restart it."""
    policy = spec.get("restartPolicy", "Always")
    if not statuses or policy == "Always" or any(s.state == "running" for s in statuses):
        return "Running"
    if all(s.exit_code == 0 for s in statuses):
        return "Succeeded"
    return "Failed" if policy == "Never" else "Running"
