"""A process node's configuration: its memory, its disk and the kubelet settings it honours.

Node e2e tests reconfigure the kubelet per test (``tempSetCurrentKubeletConfig``: reserved
memory, eviction thresholds, feature gates), and a node's disk and memory are what pressure is
made of; a ``ProcessNode`` document in a state file (``parse_process_node``) gives a process
node that configuration.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from kube.quantity import QuantityError, quantity_value
from kubesim.core.scheme import ResourceType
from kubesim.node.filesystem import FilesystemConfig

__all__ = [
    "PROCESS_NODE_KIND",
    "PROCESS_NODE_TYPE",
    "NodeConfig",
    "parse_process_node",
]

PROCESS_NODE_KIND: Final = "ProcessNode"
# Known to the state loader only, never served by the API.
PROCESS_NODE_TYPE: Final = ResourceType(
    "kubesim.io", "v1alpha1", PROCESS_NODE_KIND, "processnodes", "processnode", False
)
ENFORCE_PODS: Final = "pods"
_ENFORCE_KEYS: Final = frozenset({"pods", "system-reserved", "kube-reserved", "none"})
_GATES: Final = {"SizeMemoryBackedVolumes": "size_memory_backed_volumes"}
MEMORY_AVAILABLE: Final = "memory.available"
_CGROUP_NAME: Final = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,254}")


@dataclass(frozen=True)
class NodeConfig:
    """What a process node is given (``parse_process_node``); the defaults are a kubelet's.

    The kubelet's arithmetic (``pkg/kubelet/cm/node_container_manager_linux.go``): the pods
    cgroup (kubepods) is limited to capacity − kubeReserved − systemReserved when
    ``enforceNodeAllocatable`` lists ``pods`` (else to capacity), and the node's allocatable
    memory, which the scheduler, the downward API and memory-backed volumes see, is that minus
    the hard ``memory.available`` threshold. kubesim's kubelet evicts nothing itself (the agent
    under test does): ``evictionHard`` only shapes allocatable, as it does on a real node.
    """

    memory_capacity: int | None = None
    filesystem: FilesystemConfig = field(default_factory=FilesystemConfig)
    kubelet_port: int = 0
    cgroup_root: str | None = None
    kube_reserved_memory: int = 0
    system_reserved_memory: int = 0
    enforce_node_allocatable: frozenset[str] = frozenset({ENFORCE_PODS})
    # evictionHard memory.available: a byte count, or a fraction of capacity
    eviction_hard_memory: int = 0
    eviction_hard_memory_fraction: float | None = None
    size_memory_backed_volumes: bool = True
    # staticPodPath: the directory of static pod manifests (None: no static pods)
    static_pod_path: Path | None = None

    def reserved_memory(self) -> int:
        return self.kube_reserved_memory + self.system_reserved_memory

    def pods_cgroup_limit(self, capacity: int) -> int:
        """The kubepods cgroup's memory limit for a node of ``capacity`` bytes."""
        if ENFORCE_PODS in self.enforce_node_allocatable:
            return max(capacity - self.reserved_memory(), 0)
        return capacity

    def allocatable_memory(self, capacity: int) -> int:
        """The node's allocatable memory: capacity − reserved − the hard eviction threshold."""
        if self.eviction_hard_memory_fraction is not None:
            hard = int(capacity * self.eviction_hard_memory_fraction)
        else:
            hard = self.eviction_hard_memory
        return max(capacity - self.reserved_memory() - hard, 0)


def _quantity(value: Any, where: str) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{where}: must be a quantity, not {value!r}")
    try:
        amount = quantity_value(value)
    except QuantityError as exc:
        raise ValueError(f"{where}: {exc}") from None
    if amount < 0:
        raise ValueError(f"{where}: must not be negative, not {value!r}")
    return amount


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}: must be an object, not {value!r}")
    return value


def _check_fields(doc: Mapping[str, Any], known: tuple[str, ...], where: str) -> None:
    for key in doc:
        if key not in known:
            raise ValueError(f'{where}: unknown field "{key}"; known: {", ".join(known)}')


def _reserved(value: Any, where: str) -> int:
    resources = _object(value, where)
    for key in resources:
        if key not in ("memory", "cpu", "ephemeral-storage", "pid"):
            raise ValueError(f'{where}: unknown resource "{key}"')
    return _quantity(resources["memory"], f"{where}.memory") if "memory" in resources else 0


def _filesystem(value: Any) -> FilesystemConfig:
    doc = _object(value, "filesystem")
    _check_fields(doc, ("path", "size", "inodes"), "filesystem")
    path = doc.get("path")
    if path is not None and (not isinstance(path, str) or not path.startswith("/")):
        raise ValueError(f"filesystem.path: must be an absolute path, not {path!r}")
    inodes = doc.get("inodes")
    if inodes is not None and (isinstance(inodes, bool) or not isinstance(inodes, int)):
        raise ValueError(f"filesystem.inodes: must be a whole number, not {inodes!r}")
    return FilesystemConfig(
        path=Path(path) if path is not None else None,
        size=_quantity(doc["size"], "filesystem.size") if "size" in doc else None,
        inodes=inodes,
    )


def _kubelet(value: Any, changes: dict[str, Any]) -> None:
    doc = _object(value, "kubelet")
    known = (
        "port",
        "cgroupRoot",
        "kubeReserved",
        "systemReserved",
        "enforceNodeAllocatable",
        "evictionHard",
        "featureGates",
        "staticPodPath",
    )
    _check_fields(doc, known, "kubelet")
    if "port" in doc:
        port = doc["port"]
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise ValueError(f"kubelet.port: must be 0-65535, not {port!r}")
        changes["kubelet_port"] = port
    if "cgroupRoot" in doc:
        root = doc["cgroupRoot"]
        parts = root.strip("/").split("/") if isinstance(root, str) else []
        if not root.startswith("/") or not all(_CGROUP_NAME.fullmatch(p) for p in parts):
            raise ValueError(
                f"kubelet.cgroupRoot: must be an absolute cgroup path of letters, digits, '.',"
                f" '_' and '-', not {root!r}"
            )
        changes["cgroup_root"] = "/".join(parts)
    if "kubeReserved" in doc:
        changes["kube_reserved_memory"] = _reserved(doc["kubeReserved"], "kubelet.kubeReserved")
    if "systemReserved" in doc:
        changes["system_reserved_memory"] = _reserved(
            doc["systemReserved"], "kubelet.systemReserved"
        )
    if "enforceNodeAllocatable" in doc:
        keys = doc["enforceNodeAllocatable"]
        if not isinstance(keys, list) or not all(k in _ENFORCE_KEYS for k in keys):
            raise ValueError(
                f"kubelet.enforceNodeAllocatable: must be a list of {sorted(_ENFORCE_KEYS)},"
                f" not {keys!r}"
            )
        changes["enforce_node_allocatable"] = frozenset(keys) - {"none"}
    if "evictionHard" in doc:
        hard = _object(doc["evictionHard"], "kubelet.evictionHard")
        raw = hard.get(MEMORY_AVAILABLE)
        if isinstance(raw, str) and raw.endswith("%"):
            try:
                fraction = float(raw[:-1]) / 100
            except ValueError:
                raise ValueError(
                    f"kubelet.evictionHard.{MEMORY_AVAILABLE}: {raw!r} is not a percentage"
                ) from None
            if not 0 <= fraction <= 1:
                raise ValueError(f"kubelet.evictionHard.{MEMORY_AVAILABLE}: must be 0%-100%")
            changes["eviction_hard_memory_fraction"] = fraction
        elif raw is not None:
            where = f"kubelet.evictionHard.{MEMORY_AVAILABLE}"
            changes["eviction_hard_memory"] = _quantity(raw, where)
    if "staticPodPath" in doc:
        path = doc["staticPodPath"]
        if not isinstance(path, str) or not path.startswith("/"):
            raise ValueError(f"kubelet.staticPodPath: must be an absolute path, not {path!r}")
        changes["static_pod_path"] = Path(path)
    if "featureGates" in doc:
        gates = _object(doc["featureGates"], "kubelet.featureGates")
        for gate, enabled in gates.items():
            if gate not in _GATES:
                raise ValueError(
                    f'kubelet.featureGates: unknown gate "{gate}"; known: {", ".join(_GATES)}'
                )
            if not isinstance(enabled, bool):
                raise ValueError(f"kubelet.featureGates.{gate}: must be true or false")
            changes[_GATES[gate]] = enabled


def parse_process_node(doc: Mapping[str, Any]) -> tuple[str, NodeConfig]:
    """The node name and configuration a ``ProcessNode`` document gives (the flags
    ``--process-node`` and ``--memory-capacity`` make a node with the defaults)::

        apiVersion: kubesim.io/v1alpha1
        kind: ProcessNode
        metadata: {name: node-1}        # the Node whose pods run for real
        memoryCapacity: 1Gi             # its memory (default: --memory-capacity, else the host's)
        filesystem:                     # its disk (NodeFilesystem): a tmpfs when size or inodes
          path: /var/tmp/node-1         #   is given; default a directory in the runtime's state
          size: 512Mi
          inodes: 20000
        kubelet:                        # the KubeletConfiguration fields the node honours
          port: 0                       #   its server (/stats/summary); 0: a free port
          cgroupRoot: /node-1           #   where kubepods goes (default: a name of the runtime's)
          kubeReserved: {memory: 100Mi}
          systemReserved: {memory: 0}
          enforceNodeAllocatable: [pods]
          evictionHard: {memory.available: 100Mi}
          featureGates: {SizeMemoryBackedVolumes: false}
          staticPodPath: /etc/kubernetes/manifests  # pods run from files (kubesim.node.static)

    Validation is strict, as for the other state documents: an unknown field, an unparsable
    quantity or a negative one is a ``ValueError`` naming the field.
    """
    _check_fields(
        doc,
        ("apiVersion", "kind", "metadata", "memoryCapacity", "filesystem", "kubelet"),
        PROCESS_NODE_KIND,
    )
    name = (_object(doc.get("metadata") or {}, "metadata")).get("name")
    if not isinstance(name, str) or not name:
        raise ValueError("metadata.name: required, the name of the node")
    changes: dict[str, Any] = {}
    if "memoryCapacity" in doc:
        capacity = _quantity(doc["memoryCapacity"], "memoryCapacity")
        if capacity <= 0:
            raise ValueError("memoryCapacity: must be positive")
        changes["memory_capacity"] = capacity
    if "filesystem" in doc:
        changes["filesystem"] = _filesystem(doc["filesystem"])
    if "kubelet" in doc:
        _kubelet(doc["kubelet"], changes)
    return name, NodeConfig(**changes)
