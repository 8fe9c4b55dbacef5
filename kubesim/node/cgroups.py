"""The names of a node's pod cgroups, as the kubelet's cgroup managers and containerd give them.

The kubelet builds a pod's cgroup from the abstract path ``{kubepods, <qos level>, pod<uid>}``
(``pkg/kubelet/cm/cgroup_manager_linux.go``, ``qos_container_manager_linux.go``):

- the cgroupfs driver joins it as directories: ``kubepods/burstable/pod<uid>``, and containerd
  names a container's cgroup by its ID;
- the systemd driver expands each element into a nested slice and escapes the UID's ``-`` as
  ``_`` (``kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice``), and
  containerd with ``SystemdCgroup = true`` puts a container in ``cri-containerd-<id>.scope``.

Guaranteed pods have no QoS level: they sit directly under kubepods. kubesim's process node
(``kubesim.node.runtime``) names its cgroups here, so the agent reads on it what it reads on a
kubelet's node. Kept free of heavy imports: ``kubesim serve --help`` lists the drivers.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final

__all__ = ["QOS_LEVELS", "CgroupDriver", "CgroupNames"]

# The kubelet's QoS cgroups under kubepods (Guaranteed has none).
QOS_LEVELS: Final = ("burstable", "besteffort")


class CgroupDriver(enum.StrEnum):
    """The kubelet's ``--cgroup-driver``."""

    CGROUPFS = "cgroupfs"
    SYSTEMD = "systemd"


@dataclass(frozen=True)
class CgroupNames:
    """Names of the node's kubepods, QoS, pod and container cgroups for one driver; a QoS
    ``level`` is one of ``QOS_LEVELS``, None for a Guaranteed pod."""

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
