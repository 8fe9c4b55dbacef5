"""Where the host's kernel interfaces live, as seen by the agent.

In a DaemonSet the host's `/proc` and `/sys/fs/cgroup` are hostPath mounts at other paths (a
container on cgroup v2 gets a private cgroup namespace, kubernetes/kubernetes#119669, so its own
`/sys/fs/cgroup` shows only the pod), and tests point the same readers at fixture trees built in a
temporary directory. Every reader therefore takes its roots explicitly instead of hard-coding the
host paths; the defaults are the kubelet's host paths.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DEFAULT_PROC_ROOT = "/proc"
DEFAULT_CGROUP_ROOT = "/sys/fs/cgroup"
DEFAULT_KUBELET_ROOT = "/var/lib/kubelet"
# containerd's default state root; CRI-O uses /var/lib/containers/storage.
DEFAULT_RUNTIME_ROOT = "/var/lib/containerd"


@dataclass(frozen=True)
class Roots:
    """Filesystem roots every source reads under."""

    proc_root: Path = Path(DEFAULT_PROC_ROOT)
    cgroup_root: Path = Path(DEFAULT_CGROUP_ROOT)
    kubelet_root: Path = Path(DEFAULT_KUBELET_ROOT)
    # imagefs: where the runtime keeps images; containerfs: writable layers (same unless split).
    runtime_root: Path = Path(DEFAULT_RUNTIME_ROOT)
    container_fs_root: Path | None = None

    @classmethod
    def from_strings(
        cls,
        *,
        proc_root: str = DEFAULT_PROC_ROOT,
        cgroup_root: str = DEFAULT_CGROUP_ROOT,
        kubelet_root: str = DEFAULT_KUBELET_ROOT,
        runtime_root: str = DEFAULT_RUNTIME_ROOT,
        container_fs_root: str | None = None,
    ) -> Roots:
        return cls(
            proc_root=Path(proc_root),
            cgroup_root=Path(cgroup_root),
            kubelet_root=Path(kubelet_root),
            runtime_root=Path(runtime_root),
            container_fs_root=Path(container_fs_root) if container_fs_root else None,
        )
