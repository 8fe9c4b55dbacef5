"""A process node's pod storage: emptyDir volumes, /etc/hosts and container writable layers.

What the kubelet and the runtime put on the node's disk for a pod, on the process node's
``NodeFilesystem``, so that what a pod writes is where a kubelet would measure it
(``set_up_pod_volumes``, ``link_volume_mounts``). Only emptyDir volumes are made; other volume
kinds are not materialised.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Final

from kube.quantity import QuantityError, quantity_value
from kubesim.node.filesystem import NodeFilesystem, mount_tmpfs

__all__ = [
    "MEDIUM_MEMORY",
    "EmptyDirSpec",
    "EmptyDirVolume",
    "PodStorageError",
    "empty_dir_memory_size",
    "empty_dirs",
    "etc_hosts_content",
    "link_volume_mounts",
    "set_up_pod_volumes",
]

log = logging.getLogger("kubesim.runtime")

MEDIUM_MEMORY: Final = "Memory"


class PodStorageError(ValueError):
    """A volume or mount the runtime cannot make; the message names the field."""


@dataclass(frozen=True)
class EmptyDirVolume:
    """A pod's emptyDir on the node: where it is, and whether it is memory-backed."""

    path: Path
    memory: bool


@dataclass(frozen=True)
class EmptyDirSpec:
    name: str
    medium: str
    size_limit: int | None


def empty_dirs(pod: Mapping[str, Any]) -> list[EmptyDirSpec]:
    """The pod's emptyDir volumes, in spec order."""
    out: list[EmptyDirSpec] = []
    volumes = (pod.get("spec") or {}).get("volumes") or []
    if not isinstance(volumes, list):
        raise PodStorageError("spec.volumes: must be a list")
    for i, volume in enumerate(volumes):
        if not isinstance(volume, Mapping) or not isinstance(volume.get("name"), str):
            raise PodStorageError(f"spec.volumes[{i}].name: required")
        source = volume.get("emptyDir")
        if source is None:
            continue
        if not isinstance(source, Mapping):
            raise PodStorageError(f"spec.volumes[{i}].emptyDir: must be an object")
        limit: int | None = None
        if source.get("sizeLimit") is not None:
            try:
                limit = quantity_value(source["sizeLimit"])
            except QuantityError as exc:
                raise PodStorageError(f"spec.volumes[{i}].emptyDir.sizeLimit: {exc}") from None
        medium = str(source.get("medium") or "")
        if medium not in ("", MEDIUM_MEMORY):
            raise PodStorageError(
                f"spec.volumes[{i}].emptyDir.medium: {medium!r} is not supported "
                f'(the node\'s disk, "", or "{MEDIUM_MEMORY}")'
            )
        out.append(EmptyDirSpec(volume["name"], medium, limit))
    return out


def empty_dir_memory_size(
    volume: EmptyDirSpec,
    *,
    node_allocatable_memory: int,
    pod_memory_limit: int | None,
    size_memory_backed_volumes: bool,
) -> int | None:
    """The tmpfs size of a memory-backed emptyDir (``calculateEmptyDirMemorySize``); None: the
    kernel's default.

    With ``SizeMemoryBackedVolumes`` (GA in 1.32) the node's allocatable memory, lowered to the
    pod's memory limit when every container declares one and to the volume's ``sizeLimit``
    when set; without the gate no size (the kernel's default, half the machine's memory), so a
    pod can write past its ``sizeLimit`` and be evicted for it."""
    if not size_memory_backed_volumes:
        return None
    size = node_allocatable_memory
    if pod_memory_limit is not None and 0 < pod_memory_limit <= size:
        size = pod_memory_limit
    if volume.size_limit is not None and 0 < volume.size_limit <= size:
        size = volume.size_limit
    return size


def etc_hosts_content(pod: Mapping[str, Any]) -> str:
    """The kubelet's managed hosts file: loopback entries, then the pod's IP and hostname
    (``/etc/hosts`` in its containers, counted in the pod's ephemeral storage)."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    lines = [
        "# Kubernetes-managed hosts file.",
        "127.0.0.1\tlocalhost",
        "::1\tlocalhost ip6-localhost ip6-loopback",
        "fe00::0\tip6-localnet",
        "fe00::0\tip6-mcastprefix",
        "fe00::1\tip6-allnodes",
        "fe00::2\tip6-allrouters",
    ]
    ip = (pod.get("status") or {}).get("podIP")
    if ip:
        lines.append(f"{ip}\t{spec.get('hostname') or meta.get('name', '')}")
    return "\n".join(lines) + "\n"


def set_up_pod_volumes(
    pod: Mapping[str, Any],
    fs: NodeFilesystem,
    *,
    node_allocatable_memory: int,
    pod_memory_limit: int | None,
    size_memory_backed_volumes: bool,
) -> dict[str, EmptyDirVolume]:
    """Make the pod's directory, its etc-hosts and its emptyDir volumes (by name).

    An emptyDir (``pkg/volume/emptydir``) is a directory under the pod's directory on the node's
    disk; with ``medium: Memory`` a tmpfs mounted there (``empty_dir_memory_size``), whose pages are
    charged to the memory cgroup of the container that writes them (the pod's).

    Raises PodStorageError for a volume the runtime cannot read and OSError when a
    memory-backed volume cannot be mounted (what the kubelet reports as a failed mount).
    """
    uid = str((pod.get("metadata") or {}).get("uid", ""))
    specs = empty_dirs(pod)
    fs.pod_dir(uid).mkdir(parents=True, exist_ok=True)
    fs.etc_hosts(uid).write_text(etc_hosts_content(pod))
    made: dict[str, EmptyDirVolume] = {}
    for volume in specs:
        path = fs.volume_dir(uid, volume.name)
        path.mkdir(parents=True, exist_ok=True)
        if volume.medium == MEDIUM_MEMORY:
            size = empty_dir_memory_size(
                volume,
                node_allocatable_memory=node_allocatable_memory,
                pod_memory_limit=pod_memory_limit,
                size_memory_backed_volumes=size_memory_backed_volumes,
            )
            mount_tmpfs(path, source=f"kubesim-emptydir-{volume.name}", size=size, inodes=None)
        made[volume.name] = EmptyDirVolume(path, volume.medium == MEDIUM_MEMORY)
    return made


def link_volume_mounts(
    container: Mapping[str, Any],
    layer: Path,
    volumes: Mapping[str, EmptyDirVolume],
    *,
    where: str,
) -> None:
    """Each of the container's ``volumeMounts`` as a link at its mountPath in ``layer``.

    The writable layer (containerd's snapshot directory of the container) is its working
    directory and its ``/``. The runtime does not change the container's root or mount
    namespace, so each mount appears in the layer at its ``mountPath`` as a symbolic link to
    the volume (``subPath`` below it): a command addresses its files relative to its working
    directory (``dd of=test-mnt/file``, not ``/test-mnt/file``), and what it writes through the
    link counts in the volume, not in the layer."""
    mounts = container.get("volumeMounts") or []
    if not isinstance(mounts, list):
        raise PodStorageError(f"{where}.volumeMounts: must be a list")
    for j, mount in enumerate(mounts):
        here = f"{where}.volumeMounts[{j}]"
        if not isinstance(mount, Mapping):
            raise PodStorageError(f"{here}: must be an object")
        name, mount_path = mount.get("name"), mount.get("mountPath")
        if not isinstance(mount_path, str) or not mount_path.strip("/"):
            raise PodStorageError(f"{here}.mountPath: required, not /")
        volume = volumes.get(str(name))
        if volume is None:
            log.info("%s: volume %r is not materialised on a process node; not mounted", here, name)
            continue
        target = volume.path
        relative = PurePosixPath(mount_path.strip("/"))
        if ".." in relative.parts:
            raise PodStorageError(f"{here}.mountPath: must not contain '..'")
        sub = str(mount.get("subPath") or "")
        if sub:
            if sub.startswith("/") or ".." in PurePosixPath(sub).parts:
                raise PodStorageError(f"{here}.subPath: must be relative, without '..'")
            target = target / sub
            target.mkdir(parents=True, exist_ok=True)
        link = layer / relative
        link.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            link.unlink()
        link.symlink_to(target, target_is_directory=True)
