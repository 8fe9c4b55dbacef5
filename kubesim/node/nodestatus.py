"""What a kubelet reports of its node: the node's status and labels, and the node lease.

``complete_node`` fills what a node manifest lacks, as the kubelet's registration and first
status update do (``kubelet_node_status.go``); ``renew_leases`` keeps each node's Lease
(``pkg/kubelet/nodelease``).
"""

from __future__ import annotations

import asyncio
import logging
import platform
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from kube.labels import LABEL_ARCH, LABEL_HOSTNAME, LABEL_OS
from kube.quantity import QuantityError, parse_quantity
from kube.times import format_micro_time, format_time
from kubesim.core.errors import StatusError
from kubesim.core.names import digest
from kubesim.core.store import clone

if TYPE_CHECKING:
    from kubesim.cluster import Cluster

__all__ = [
    "LEASE_DURATION_SECONDS",
    "LEASE_NAMESPACE",
    "complete_node",
    "machine_arch",
    "node_is_up",
    "node_label_defaults",
    "node_status_defaults",
    "renew_lease",
    "renew_leases",
    "set_ephemeral_storage",
    "set_memory_capacity",
]

log = logging.getLogger("kubesim")

LEASE_NAMESPACE: Final = "kube-node-lease"
LEASE_DURATION_SECONDS: Final = 40
LEASE_RENEW_INTERVAL: Final = 10.0  # renewIntervalFraction 0.25 × 40 s
MIN_RENEW_WALL: Final = 0.5
CONTAINER_RUNTIME: Final = "containerd://1.7.24"
DEFAULT_CAPACITY: Final = {
    "cpu": "4",
    "ephemeral-storage": "100Gi",
    "hugepages-1Gi": "0",
    "hugepages-2Mi": "0",
    "memory": "16Gi",
    "pods": "110",
}
NODE_CONDITIONS: Final = (
    (
        "MemoryPressure",
        "False",
        "KubeletHasSufficientMemory",
        "kubelet has sufficient memory available",
    ),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
)
_GO_ARCH: Final = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "ppc64le": "ppc64le"}


def machine_arch() -> str:
    """This machine's architecture in Go's words (``runtime.GOARCH``)."""
    machine = platform.machine().lower()
    return _GO_ARCH.get(machine, machine or "amd64")


def node_is_up(node: Mapping[str, Any]) -> bool:
    """Whether this node's kubelet is alive: its Ready condition is not False or Unknown.

    A node seeded (or later set) NotReady models a dead kubelet: it starts no pod and renews
    no lease until it is Ready again. A node without a Ready condition is up (its kubelet
    posts one at once).
    """
    for cond in (node.get("status") or {}).get("conditions") or []:
        if isinstance(cond, Mapping) and cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return True


# --- node status and labels ----------------------------------------------------------------


def node_status_defaults(
    cluster: Cluster, node: Mapping[str, Any], *, kubelet_port: int | None = None
) -> dict[str, Any] | None:
    """The node's status with missing fields filled, or None when nothing is missing.

    As ``setNodeStatus``: ``nodeInfo`` (architecture, operatingSystem, kubeletVersion — the
    server's minor version —, containerRuntimeVersion, kernelVersion, osImage, machineID,
    systemUUID, bootID, kubeProxyVersion), ``capacity`` (4 CPUs, 16Gi, 110 pods, 100Gi
    ephemeral storage; only when the node has none) and ``allocatable`` (= capacity),
    ``addresses`` (InternalIP and Hostname), ``daemonEndpoints`` and the
    MemoryPressure/DiskPressure/PIDPressure/Ready conditions that are missing. So typed
    clients (kubernetes-asyncio ``list_node``) accept every node. What the manifest says is
    kept: a node seeded NotReady stays NotReady — a dead kubelet, which starts no pod and
    renews no lease until the node is Ready again. A process node's memory and ephemeral
    storage are its runtime's (``set_memory_capacity``, ``set_ephemeral_storage``)."""
    meta = node.get("metadata") or {}
    name = str(meta.get("name", ""))
    uid = str(meta.get("uid", ""))
    old = node.get("status") or {}
    status: dict[str, Any] = clone(dict(old))
    version = f"v1.{cluster.version_minor}.0"
    info = status.setdefault("nodeInfo", {})
    machine = digest("machine", name)[:32]
    defaults = {
        "architecture": "amd64",
        "bootID": str(uuid.UUID(digest("boot", uid)[:32])),
        "containerRuntimeVersion": CONTAINER_RUNTIME,
        "kernelVersion": "6.8.0-kubesim",
        "kubeProxyVersion": str(info.get("kubeletVersion") or version),
        "kubeletVersion": version,
        "machineID": machine,
        "operatingSystem": "linux",
        "osImage": "kubesim (Ubuntu 24.04 LTS)",
        "systemUUID": str(uuid.UUID(machine)),
    }
    for key, value in defaults.items():
        if not info.get(key):
            info[key] = value
    if not status.get("capacity"):
        status["capacity"] = dict(DEFAULT_CAPACITY)
    if not status.get("allocatable"):
        status["allocatable"] = clone(status["capacity"])
    runtime = cluster.runtimes.get(name)
    if runtime is not None:
        set_memory_capacity(status, runtime.memory_capacity, runtime.allocatable_memory)
        disk = runtime.disk_capacity
        if disk is not None:
            set_ephemeral_storage(status, disk)
    addresses = [a for a in status.get("addresses") or [] if isinstance(a, Mapping)]
    types = {a.get("type") for a in addresses}
    if "InternalIP" not in types:
        index = sorted(cluster.store.objects("nodes")).index(("", name)) + 10
        addresses.insert(0, {"type": "InternalIP", "address": f"10.0.{index >> 8}.{index & 255}"})
    if "Hostname" not in types:
        addresses.append({"type": "Hostname", "address": name})
    status["addresses"] = addresses
    status.setdefault("daemonEndpoints", {"kubeletEndpoint": {"Port": 10250}})
    if kubelet_port is not None:
        status["daemonEndpoints"] = {"kubeletEndpoint": {"Port": kubelet_port}}
    now = format_time(cluster.registry.clock())
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, Mapping)]
    have = {c.get("type") for c in conditions}
    for type_, value, reason, message in NODE_CONDITIONS:
        if type_ not in have:
            conditions.append(
                {
                    "type": type_,
                    "status": value,
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                    "reason": reason,
                    "message": message,
                }
            )
    status["conditions"] = conditions
    if status == old:
        return None
    return status


def set_memory_capacity(
    status: dict[str, Any], capacity: int, allocatable_bound: int | None = None
) -> None:
    """The node's memory as the kubelet reports it (Ki); allocatable never above capacity nor
    above ``allocatable_bound`` (the node's own arithmetic: capacity − reserved − hard
    eviction)."""
    bound = capacity if allocatable_bound is None else min(capacity, allocatable_bound)
    quantity = f"{capacity // 1024}Ki"
    status["capacity"] = {**(status.get("capacity") or {}), "memory": quantity}
    allocatable = dict(status.get("allocatable") or {})
    try:
        fits = "memory" in allocatable and parse_quantity(allocatable["memory"]) <= (
            bound // 1024 * 1024
        )
    except QuantityError:
        fits = False
    if not fits:
        allocatable["memory"] = f"{bound // 1024}Ki"
    status["allocatable"] = allocatable


def set_ephemeral_storage(status: dict[str, Any], capacity: int) -> None:
    """The node's disk as the kubelet reports it: its root filesystem's size (Ki), allocatable
    the same (no ephemeral-storage reservation)."""
    quantity = f"{capacity // 1024}Ki"
    status["capacity"] = {**(status.get("capacity") or {}), "ephemeral-storage": quantity}
    status["allocatable"] = {**(status.get("allocatable") or {}), "ephemeral-storage": quantity}


def node_label_defaults(cluster: Cluster, node: Mapping[str, Any]) -> dict[str, str] | None:
    """The node's labels with the kubelet's registration labels added where missing
    (``kubernetes.io/hostname``, ``kubernetes.io/os``, ``kubernetes.io/arch`` from
    ``nodeInfo``: amd64, or the machine's for process nodes — ``initialNode``), or None when
    none is missing. Values a manifest gave are kept."""
    meta = node.get("metadata") or {}
    labels = meta.get("labels") or {}
    name = str(meta.get("name", ""))
    info = (node.get("status") or {}).get("nodeInfo") or {}
    arch = info.get("architecture") or (machine_arch() if name in cluster.runtimes else "amd64")
    wanted = {
        LABEL_HOSTNAME: name,
        LABEL_OS: str(info.get("operatingSystem") or "linux"),
        LABEL_ARCH: str(arch),
    }
    missing = {k: v for k, v in wanted.items() if k not in labels}
    if not missing:
        return None
    return {**labels, **missing}


def complete_node(
    cluster: Cluster, node: Mapping[str, Any], *, kubelet_port: int | None = None
) -> None:
    """Write the node's missing registration labels, then its missing status fields, as a
    kubelet's registration and first status update do; a conflict waits for the next event."""
    rt = cluster.scheme.for_kind("v1", "Node")
    assert rt is not None
    name = str((node.get("metadata") or {}).get("name", ""))
    labels = node_label_defaults(cluster, node)
    if labels is not None:
        new = clone(dict(node))
        new.setdefault("metadata", {})["labels"] = labels
        try:
            node, _ = cluster.registry.update(rt, "", name, new)
        except StatusError as err:
            if err.code != 409:
                log.warning("kubesim: kubelet could not label node %s: %s", name, err)
            return  # the next event of this node completes it
    status = node_status_defaults(cluster, node, kubelet_port=kubelet_port)
    if status is None:
        return
    new = clone(dict(node))
    new["status"] = status
    try:
        cluster.registry.update(rt, "", name, new, subresource="status")
    except StatusError as err:
        if err.code != 409:  # a concurrent write: the next event completes it
            log.warning("kubesim: kubelet could not complete node %s: %s", name, err)


# --- the node lease ------------------------------------------------------------------------


async def renew_leases(cluster: Cluster) -> None:
    """The node lease controller of every node whose kubelet is up, until cancelled: every
    10 s × time scale, but not more often than every 0.5 s of wall time."""
    while True:
        for node in list(cluster.store.items("nodes")):
            if not node_is_up(node):
                continue  # a dead kubelet renews nothing: its lease goes stale
            try:
                renew_lease(cluster, node)
            except StatusError as err:
                log.info("kubesim: lease renewal failed: %s", err.message)
        await asyncio.sleep(max(LEASE_RENEW_INTERVAL * cluster.time_scale, MIN_RENEW_WALL))


def renew_lease(cluster: Cluster, node: Mapping[str, Any]) -> dict[str, Any]:
    """Create or renew the node's Lease (``ensureLease`` / ``retryUpdateLease``): a
    ``coordination.k8s.io/v1`` Lease named after the node in ``kube-node-lease``, owned by the
    Node, ``holderIdentity`` the node name, ``leaseDurationSeconds: 40``, ``renewTime``
    written with an optimistic-concurrency update."""
    rt = cluster.scheme.for_kind("coordination.k8s.io/v1", "Lease")
    assert rt is not None
    meta = node.get("metadata") or {}
    name = str(meta.get("name", ""))
    now = format_micro_time(cluster.registry.clock())
    lease = cluster.registry.find(rt, LEASE_NAMESPACE, name)
    if lease is None:
        return cluster.registry.create(
            rt,
            LEASE_NAMESPACE,
            {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {
                    "name": name,
                    "namespace": LEASE_NAMESPACE,
                    "ownerReferences": [
                        {
                            "apiVersion": "v1",
                            "kind": "Node",
                            "name": name,
                            "uid": str(meta.get("uid", "")),
                        }
                    ],
                },
                "spec": {
                    "holderIdentity": name,
                    "leaseDurationSeconds": LEASE_DURATION_SECONDS,
                    "renewTime": now,
                },
            },
        )
    new = clone(lease)
    spec = new.setdefault("spec", {})
    spec["holderIdentity"] = name
    spec["leaseDurationSeconds"] = LEASE_DURATION_SECONDS
    spec["renewTime"] = now
    obj, _ = cluster.registry.update(rt, LEASE_NAMESPACE, name, new)
    return obj
