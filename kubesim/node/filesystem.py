"""A process node's disk: one filesystem with the kubelet's, the pod logs' and the runtime's trees.

Disk-pressure eviction reads the node's filesystems (``nodefs``: the kubelet's root directory;
``imagefs``/``containerfs``: the container runtime's) and the pods' share of them — container
writable layers, container logs, emptyDir volumes — so a process node needs a disk of its own
that a test can fill without touching the machine's (``NodeFilesystem``), measured as the
kubelet measures it (``disk_usage``).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import logging
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = [
    "DiskUsage",
    "FilesystemConfig",
    "NodeFilesystem",
    "disk_usage",
    "mount_tmpfs",
    "unmount",
]

log = logging.getLogger("kubesim.runtime")

_MNT_DETACH: Final = 2
EMPTY_DIR_PLUGIN: Final = "kubernetes.io~empty-dir"


@dataclass(frozen=True)
class FilesystemConfig:
    """Where a process node's disk is, and how big (``None``: not bounded)."""

    path: Path | None = None
    size: int | None = None
    inodes: int | None = None

    def __post_init__(self) -> None:
        for name in ("size", "inodes"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or value <= 0):
                raise ValueError(f"filesystem.{name}: must be a positive number, not {value!r}")

    @property
    def bounded(self) -> bool:
        return self.size is not None or self.inodes is not None


@dataclass(frozen=True)
class DiskUsage:
    """What ``du`` and an inode count say of a tree."""

    bytes: int
    inodes: int


def disk_usage(path: Path) -> DiskUsage:
    """Blocks (× 512) and inodes of ``path`` and everything under it on the same filesystem.

    Each inode counts once; symbolic links are not followed; a file removed while the walk
    runs is skipped; a directory on another device (a mount point) is left out whole. As the
    kubelet's ``MetricsDu`` measures a volume and containerd's snapshotter a writable layer
    (``du`` and ``find | wc -l``, ``pkg/volume/util/fs``); a memory-backed emptyDir is its own
    tmpfs, so it is not counted on the node's disk.
    """
    try:
        top = os.lstat(path)
    except FileNotFoundError:
        return DiskUsage(0, 0)
    seen: set[int] = set()
    total = inodes = 0
    stack = [os.fspath(path)]
    while stack:
        current = stack.pop()
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            continue
        if st.st_dev != top.st_dev:
            continue
        if st.st_nlink > 1:
            if st.st_ino in seen:
                continue
            seen.add(st.st_ino)
        total += st.st_blocks * 512
        inodes += 1
        if stat.S_ISDIR(st.st_mode):
            try:
                with os.scandir(current) as entries:
                    stack.extend(entry.path for entry in entries)
            except (FileNotFoundError, NotADirectoryError):
                continue
    return DiskUsage(total, inodes)


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def mount_tmpfs(target: Path, *, source: str, size: int | None, inodes: int | None) -> None:
    """``mount -t tmpfs -o size=SIZE,nr_inodes=INODES SOURCE TARGET``; OSError when refused."""
    options = ["mode=0755"]
    if size is not None:
        options.append(f"size={size}")
    if inodes is not None:
        options.append(f"nr_inodes={inodes}")
    rc = _libc().mount(
        source.encode(), os.fsencode(target), b"tmpfs", 0, ",".join(options).encode()
    )
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount tmpfs on {target}: {os.strerror(err)}")


def unmount(target: Path) -> None:
    """Detach the filesystem mounted at ``target`` (lazily: a process still in it cannot stop
    the unmount); nothing when nothing is mounted there."""
    if _libc().umount2(os.fsencode(target), _MNT_DETACH) != 0:
        err = ctypes.get_errno()
        if err not in (errno.EINVAL, errno.ENOENT):
            raise OSError(err, f"umount {target}: {os.strerror(err)}")


def is_mount_point(path: Path) -> bool:
    try:
        return path.is_mount()
    except OSError:
        return False


class NodeFilesystem:
    """The disk of one process node: ``open`` mounts and lays it out, ``close`` unmounts it and
    removes what it made.

    Laid out as a kubelet with containerd lays out a node's single filesystem (the kubelet's
    "single filesystem" layout: images, writable layers, logs and volumes on one device)::

        <root>/kubelet/pods/<pod uid>/volumes/kubernetes.io~empty-dir/<volume>   emptyDirs
        <root>/kubelet/pods/<pod uid>/etc-hosts                         the pod's /etc/hosts
        <root>/log/pods/<namespace>_<name>_<uid>/<container>/0.log       container logs
        <root>/containerd/snapshots/<container id>/fs                   writable layers

    With a ``size`` or an ``inodes`` bound the root is a tmpfs of that size (``mount -t tmpfs
    -o size=…,nr_inodes=…``), so ``nodefs.available`` and ``nodefs.inodesFree`` reach a
    threshold when the pods write; without one (or when mounting is not permitted: not root,
    no ``CAP_SYS_ADMIN``) it is a plain directory on the machine's disk and ``mounted`` says
    why not. A tmpfs's pages are charged to the memory cgroup of the process that writes them,
    so the node's memory capacity must leave room for what its pods write to disk.
    """

    def __init__(self, config: FilesystemConfig, *, default_path: Path, source: str) -> None:
        self.config = config
        self.root = config.path if config.path is not None else default_path
        self.source = source
        self.mounted = False
        self.reason = ""
        self._made_root = False

    @property
    def kubelet_root(self) -> Path:
        """The kubelet's ``--root-dir`` (nodefs)."""
        return self.root / "kubelet"

    @property
    def pod_logs_root(self) -> Path:
        """The kubelet's ``podLogsDir``."""
        return self.root / "log" / "pods"

    @property
    def runtime_root(self) -> Path:
        """The container runtime's root (imagefs and containerfs: the same device)."""
        return self.root / "containerd"

    def open(self) -> NodeFilesystem:
        if not self.root.exists():
            self.root.mkdir(parents=True)
            self._made_root = True
        if self.config.bounded:
            if is_mount_point(self.root):  # a crashed runtime's: start from an empty disk
                unmount(self.root)
            try:
                mount_tmpfs(
                    self.root,
                    source=self.source,
                    size=self.config.size,
                    inodes=self.config.inodes,
                )
            except OSError as exc:
                self.reason = f"{exc}; the node's disk is a directory on the machine's"
                log.warning("process node filesystem: %s", self.reason)
            else:
                self.mounted = True
                self.reason = (
                    f"tmpfs at {self.root} (size {self.config.size or 'default'},"
                    f" inodes {self.config.inodes or 'default'})"
                )
        else:
            self.reason = f"a directory at {self.root} (no size or inode bound)"
        for path in (self.kubelet_root / "pods", self.pod_logs_root, self.snapshots_root):
            path.mkdir(parents=True, exist_ok=True)
        return self

    def close(self) -> None:
        pods = self.kubelet_root / "pods"
        if pods.is_dir():
            for pod in pods.iterdir():
                self.remove_pod_dir(pod.name)
        if self.mounted:
            with contextlib.suppress(OSError):
                unmount(self.root)
            self.mounted = False
        if self._made_root:
            shutil.rmtree(self.root, ignore_errors=True)
        else:
            for path in (self.kubelet_root, self.root / "log", self.runtime_root):
                shutil.rmtree(path, ignore_errors=True)

    # --- paths the kubelet and containerd use ----------------------------------------------

    @property
    def snapshots_root(self) -> Path:
        return self.runtime_root / "snapshots"

    def pod_dir(self, uid: str) -> Path:
        return self.kubelet_root / "pods" / uid

    def volume_dir(self, uid: str, volume: str) -> Path:
        return self.pod_dir(uid) / "volumes" / EMPTY_DIR_PLUGIN / volume

    def etc_hosts(self, uid: str) -> Path:
        return self.pod_dir(uid) / "etc-hosts"

    def pod_log_dir(self, namespace: str, name: str, uid: str) -> Path:
        return self.pod_logs_root / f"{namespace}_{name}_{uid}"

    def container_log_dir(self, namespace: str, name: str, uid: str, container: str) -> Path:
        return self.pod_log_dir(namespace, name, uid) / container

    def writable_layer(self, container_id: str) -> Path:
        return self.snapshots_root / container_id / "fs"

    def remove_pod_dir(self, uid: str) -> None:
        """Unmount the pod's memory-backed volumes and remove its directory."""
        volumes = self.pod_dir(uid) / "volumes" / EMPTY_DIR_PLUGIN
        if volumes.is_dir():
            for volume in volumes.iterdir():
                if is_mount_point(volume):
                    with contextlib.suppress(OSError):
                        unmount(volume)
        shutil.rmtree(self.pod_dir(uid), ignore_errors=True)
