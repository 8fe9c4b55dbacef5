"""A node's pod cgroups as the kubelet's cgroup managers and containerd name them, for whoever
builds them (kubesim's process node) and whoever reads them (the agent), so both agree
(``pkg/kubelet/cm/cgroup_manager_linux.go``, ``qos_container_manager_linux.go``).

Also here, cAdvisor's reading of a memory cgroup: the working set, and the limit that means
"none". Kept free of heavy imports: ``kubesim serve --help`` lists the drivers.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final

from kube.qos import QOS_BEST_EFFORT, QOS_BURSTABLE

__all__ = [
    "MEMORY_UNLIMITED",
    "QOS_LEVELS",
    "CgroupDriver",
    "CgroupNames",
    "qos_level",
    "working_set",
]

# The kubelet's QoS cgroups under kubepods (Guaranteed has none), by QoS class.
_LEVELS: Final = {QOS_BURSTABLE: "burstable", QOS_BEST_EFFORT: "besteffort"}
QOS_LEVELS: Final = tuple(_LEVELS.values())

# A memory limit at or above this is no limit (cAdvisor's isMemoryUnlimited): cgroup v1 reports
# "none" as PAGE_COUNTER_MAX pages, near 2**63 bytes; v2 writes the literal "max".
MEMORY_UNLIMITED: Final = 1 << 62


class CgroupDriver(enum.StrEnum):
    """The kubelet's ``--cgroup-driver``."""

    CGROUPFS = "cgroupfs"
    SYSTEMD = "systemd"


def qos_level(qos_class: str) -> str | None:
    """The QoS cgroup of a pod of ``qos_class`` (``kube.qos``): None for Guaranteed."""
    return _LEVELS.get(qos_class)


@dataclass(frozen=True)
class CgroupNames:
    """Names of the node's kubepods, QoS, pod and container cgroups for one driver; a QoS
    ``level`` is one of ``QOS_LEVELS``, None for a Guaranteed pod.

    The kubelet builds a pod's cgroup from the abstract path ``{kubepods, <qos level>, pod<uid>}``
    (Guaranteed pods have no QoS level: they sit directly under kubepods):

    - the cgroupfs driver joins it as directories: ``kubepods/burstable/pod<uid>``, and containerd
      names a container's cgroup by its ID;
    - the systemd driver expands each element into a nested slice and escapes the UID's ``-`` as
      ``_`` (``kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice``), and
      containerd with ``SystemdCgroup = true`` puts a container in ``cri-containerd-<id>.scope``.
    """

    driver: CgroupDriver

    @property
    def kubepods(self) -> str:
        return "kubepods.slice" if self.driver is CgroupDriver.SYSTEMD else "kubepods"

    def qos(self, level: str) -> str:
        return f"kubepods-{level}.slice" if self.driver is CgroupDriver.SYSTEMD else level

    def pod(self, level: str | None, uid: str) -> str:
        if self.driver is CgroupDriver.CGROUPFS:
            return f"pod{uid}"
        parent = "kubepods" if level is None else f"kubepods-{level}"
        return f"{parent}-pod{uid.replace('-', '_')}.slice"

    def container(self, container_id: str) -> str:
        if self.driver is CgroupDriver.SYSTEMD:
            return f"cri-containerd-{container_id}.scope"
        return container_id


def working_set(usage: int, inactive_file: int) -> int:
    """cAdvisor's working set: usage minus inactive file pages, floored at 0."""
    return usage - inactive_file if usage > inactive_file else 0
