"""A process runtime for kubesim's process nodes: containers as real processes in kubepods cgroups.

The eviction agent measures what a kubelet's node really holds — memory working sets read from
the kubepods cgroup hierarchy — so the node it watches must hold real processes in the layout a
kubelet builds (``pkg/kubelet/cm``: the cgroup, pod-container and QoS-container managers), on a
disk of its own (``kubesim.node.filesystem``). ``ProcessRuntime`` says how.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import enum
import logging
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Final, Literal

import psutil  # type: ignore[import-untyped, unused-ignore]

from kube.cgroups import QOS_LEVELS, CgroupDriver, CgroupNames, qos_level
from kube.qos import InvalidPodResources, get_pod_qos
from kube.quantity import QuantityError, quantity_value
from kube.times import format_time
from kubesim.node.cgroups import REMOVE_TIMEOUT, MemoryCgroups, detect_memory_cgroups
from kubesim.node.config import NodeConfig
from kubesim.node.downward import DownwardAPIError, resource_field_value
from kubesim.node.filesystem import NodeFilesystem
from kubesim.node.volumes import (
    EmptyDirVolume,
    PodStorageError,
    link_volume_mounts,
    set_up_pod_volumes,
)

__all__ = [
    "MINIMUM_GRACE_PERIOD_SECONDS",
    "ContainerStatus",
    "MemoryUsage",
    "PodLayout",
    "PodSpecError",
    "ProcessRuntime",
    "RuntimeMode",
    "container_memory_limit",
    "expand_references",
    "pod_memory_limit",
    "pod_qos_class",
]

log = logging.getLogger("kubesim.runtime")

# kuberuntime's minimumGracePeriodInSeconds: a stop never gives less than this before SIGKILL.
MINIMUM_GRACE_PERIOD_SECONDS: Final = 2.0
RUNTIME_NAME: Final = "kubesim"

_PYTHON_NAMES: Final = frozenset({"python", "python3"})
_PR_SET_PDEATHSIG: Final = 1
_INSTANCE_RE: Final = re.compile(r"[a-z0-9]{1,32}")
# UIDs, namespaces and names become path components: nothing that could climb out.
_SAFE_NAME_RE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}")


class RuntimeMode(enum.StrEnum):
    CGROUP_V1 = "cgroup-v1"
    CGROUP_V2 = "cgroup-v2"
    PROCESS = "process"


class PodSpecError(ValueError):
    """A pod the runtime cannot run; the message names the pod and the field."""


# --- pure helpers over the pod dict -----------------------------------------------------------


def _containers(pod: Mapping[str, Any], key: str = "containers") -> list[Mapping[str, Any]]:
    spec = pod.get("spec") or {}
    if not isinstance(spec, Mapping):
        raise PodSpecError("spec: must be an object")
    items = spec.get(key) or []
    if not isinstance(items, list) or not all(isinstance(c, Mapping) for c in items):
        raise PodSpecError(f"spec.{key}: must be a list of objects")
    return items


def pod_qos_class(pod: Mapping[str, Any]) -> str:
    """``qos.GetPodQOS`` (``kube.qos``: ``status.qosClass`` when set, else from the spec), with a
    pod whose resources do not parse as a ``PodSpecError``."""
    try:
        return get_pod_qos(pod)
    except InvalidPodResources as exc:
        raise PodSpecError(str(exc)) from None


def container_memory_limit(container: Mapping[str, Any], *, where: str = "container") -> int | None:
    """The container's memory limit in bytes, or None when it declares none (or zero)."""
    res = container.get("resources") or {}
    if not isinstance(res, Mapping):
        raise PodSpecError(f"{where}.resources: must be an object")
    limits = res.get("limits") or {}
    if not isinstance(limits, Mapping):
        raise PodSpecError(f"{where}.resources.limits: must be an object")
    if "memory" not in limits:
        return None
    try:
        memory = quantity_value(limits["memory"])
    except QuantityError as exc:
        raise PodSpecError(f"{where}.resources.limits.memory: {exc}") from None
    return memory if memory > 0 else None


def pod_memory_limit(pod: Mapping[str, Any]) -> int | None:
    """``ResourceConfigForPod``'s memory limit: the containers' sum when all declare one.

    An init container runs alone, so the pod needs at least the largest init limit.
    """
    total = 0
    for i, c in enumerate(_containers(pod)):
        limit = container_memory_limit(c, where=f"spec.containers[{i}]")
        if limit is None:
            return None
        total += limit
    for i, c in enumerate(_containers(pod, "initContainers")):
        limit = container_memory_limit(c, where=f"spec.initContainers[{i}]")
        if limit is None:
            return None
        total = max(total, limit)
    return total or None


def expand_references(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes' ``$(VAR)`` expansion in command, args and env values.

    ``$$`` is an escaped ``$``; a reference to an undefined variable, or an unclosed one, stays
    as written.
    """
    out: list[str] = []
    i, n = 0, len(text)
    while True:
        dollar = text.find("$", i)  # text between references is copied in one piece
        if dollar < 0 or dollar + 1 == n:
            out.append(text[i:])
            break
        out.append(text[i:dollar])
        nxt = text[dollar + 1]
        if nxt == "$":
            out.append("$")
            i = dollar + 2
        elif nxt == "(":
            end = text.find(")", dollar + 2)
            if end < 0:
                out.append(text[dollar:])
                break
            name = text[dollar + 2 : end]
            out.append(env[name] if name in env else text[dollar : end + 1])
            i = end + 1
        else:
            out.append("$")
            i = dollar + 1
    return "".join(out)


_FIELD_REF_RE: Final = re.compile(r"metadata\.(labels|annotations)\['([^']*)'\]")


def _field_ref(pod: Mapping[str, Any], path: str) -> str | None:
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    simple: dict[str, Any] = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName"),
        "status.podIP": status.get("podIP"),
        "status.hostIP": status.get("hostIP"),
    }
    if path in simple:
        value = simple[path]
        return "" if value is None else str(value)
    if m := _FIELD_REF_RE.fullmatch(path):
        values = meta.get(m.group(1)) or {}
        return str(values.get(m.group(2), ""))
    return None


# --- results -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ContainerStatus:
    """One container as the runtime sees it; ``to_k8s`` renders a ``containerStatuses`` entry."""

    name: str
    container_id: str
    state: Literal["running", "exited"]
    pid: int | None
    started_at: float
    finished_at: float | None = None
    exit_code: int | None = None
    signal: int | None = None
    reason: str | None = None
    message: str | None = None
    restart_count: int = 0
    log_path: Path | None = None
    cgroup: Path | None = None

    def to_k8s(self, *, image: str = "", image_id: str = "") -> dict[str, Any]:
        started = format_time(self.started_at)
        state: dict[str, Any]
        if self.state == "running":
            state = {"running": {"startedAt": started}}
        else:
            terminated: dict[str, Any] = {
                "exitCode": self.exit_code,
                "reason": self.reason,
                "startedAt": started,
                "finishedAt": format_time(self.finished_at or self.started_at),
                "containerID": self.container_id,
            }
            if self.message:
                terminated["message"] = self.message
            state = {"terminated": terminated}
        return {
            "name": self.name,
            "state": state,
            "lastState": {},
            "ready": self.state == "running",
            "restartCount": self.restart_count,
            "image": image,
            "imageID": image_id,
            "containerID": self.container_id,
            "started": self.state == "running",
        }


@dataclass(frozen=True)
class MemoryUsage:
    """Memory of a pod (or of the node's kubepods cgroup) as the Summary API reports it."""

    working_set_bytes: int
    usage_bytes: int
    process_count: int
    # container name -> working set bytes (empty for the node)
    containers: dict[str, int] = field(default_factory=dict)


def _resolve_prctl() -> Callable[..., int] | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn: Callable[..., int] = libc.prctl
    except (OSError, AttributeError):
        return None
    return fn


# --- the runtime -------------------------------------------------------------------------------


@dataclass
class _Container:
    name: str
    container_id: str
    log_path: Path
    layer: Path
    cgroup: Path | None
    started_at: float
    process: asyncio.subprocess.Process | None = None
    create_time: float | None = None
    waiter: asyncio.Task[None] | None = None
    finished_at: float | None = None
    exit_code: int | None = None
    signal: int | None = None
    reason: str | None = None
    message: str | None = None

    def snapshot(self) -> ContainerStatus:
        running = self.finished_at is None and self.process is not None
        return ContainerStatus(
            name=self.name,
            container_id=f"{RUNTIME_NAME}://{self.container_id}",
            state="running" if running else "exited",
            pid=self.process.pid if self.process is not None else None,
            started_at=self.started_at,
            finished_at=self.finished_at,
            exit_code=self.exit_code,
            signal=self.signal,
            reason=self.reason,
            message=self.message,
            log_path=self.log_path,
            cgroup=self.cgroup,
        )


@dataclass
class _Pod:
    uid: str
    namespace: str
    name: str
    qos: str
    cgroup: Path | None
    started_at: float = 0.0
    volumes: dict[str, EmptyDirVolume] = field(default_factory=dict)
    containers: list[_Container] = field(default_factory=list)


@dataclass(frozen=True)
class ContainerLayout:
    """Where one container's files are on the node's disk."""

    name: str
    container_id: str
    started_at: float
    writable_layer: Path
    log_dir: Path


@dataclass(frozen=True)
class PodLayout:
    """Where a pod's files are on the node's disk, for the summary: its containers' writable
    layers and log directories, its emptyDir volumes, its log directory and etc-hosts."""

    uid: str
    namespace: str
    name: str
    started_at: float
    containers: tuple[ContainerLayout, ...]
    volumes: Mapping[str, EmptyDirVolume]
    log_dir: Path
    etc_hosts: Path


ExitCallback = Callable[[str, ContainerStatus], None]


class ProcessRuntime:
    """Runs pods' commands as process groups in per-container memory cgroups.

    ``async with ProcessRuntime(...) as rt`` (or ``open()`` … ``await close()``). Only one event
    loop may drive a runtime.

    The cgroups are those a kubelet with the cgroupfs driver builds::

        <sub-root>/kubepods/                        node cgroup, limit = the node's memory capacity
        <sub-root>/kubepods/pod<uid>/<container-id>  Guaranteed pods sit directly under kubepods
        <sub-root>/kubepods/burstable/pod<uid>/...
        <sub-root>/kubepods/besteffort/pod<uid>/...

    or, with ``cgroup_driver="systemd"``, the systemd driver's
    (``kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice/
    cri-containerd-<id>.scope``; ``kube.cgroups`` names both). The sub-root
    (``<prefix>-<owner pid>-<instance>``) keeps a demo or a test away from a real kubelet's
    ``kubepods`` and from other runtimes on the same machine, and the owner pid in its name lets
    the next runtime remove what a crashed one left behind. On a machine of its own (the guest VM
    of tests/node) ``kubepods_at_root`` puts kubepods directly under the cgroup root, as a
    kubelet with ``--cgroup-root=/`` does; a node's ``cgroupRoot`` (the kubelet's
    ``--cgroup-root``) puts them there instead of under the sub-root. cgroup v1 and v2 are
    detected (``kubesim.node.cgroups``); where no writable memory cgroup exists (not root,
    read-only mount, no controller) the runtime still runs the processes and measures each
    process tree with psutil (RSS sum): ``mode`` says which is active and ``mode_reason`` why.

    The QoS class is ``qos.GetPodQOS`` (``kube.qos``, the one the API server and the agent use
    too); the pod cgroup gets the sum of the containers' memory limits when every container
    declares one (``ResourceConfigForPod``), each container cgroup its own limit, as runc does;
    on v2 containers get ``memory.oom.group``, as the kubelet sets it since 1.28
    (kubernetes/kubernetes#117793; ``singleProcessOOMKill`` defaults to false, #126096). The
    node's kubepods cgroup is limited to capacity less what is reserved when allocatable is
    enforced on pods (``_pods_cgroup_limit``).

    Children die with the runtime (``PR_SET_PDEATHSIG``), and the next runtime removes the
    sub-roots a crashed one left.
    """

    def __init__(
        self,
        *,
        cgroup_root: Path | str = "/sys/fs/cgroup",
        prefix: str = "kubesim",
        instance: str | None = None,
        state_dir: Path | str | None = None,
        memory_capacity: int | None = None,
        node: NodeConfig | None = None,
        use_cgroups: bool = True,
        cgroup_driver: CgroupDriver | str = CgroupDriver.CGROUPFS,
        kubepods_at_root: bool = False,
        minimum_grace_seconds: float = MINIMUM_GRACE_PERIOD_SECONDS,
        python: str = sys.executable,
        inherit_env: bool = True,
        die_with_runtime: bool = True,
        on_exit: ExitCallback | None = None,
    ) -> None:
        if not re.fullmatch(r"[A-Za-z0-9_.]+", prefix):
            raise ValueError(f"prefix {prefix!r}: must be letters, digits, '_' or '.'")
        if instance is not None and not _INSTANCE_RE.fullmatch(instance):
            raise ValueError(f"instance {instance!r}: must be 1-32 lowercase letters or digits")
        if memory_capacity is not None and memory_capacity <= 0:
            raise ValueError(f"memory_capacity {memory_capacity}: must be a positive byte count")
        self.cgroup_root = Path(cgroup_root)
        self.prefix = prefix
        self.instance = instance or secrets.token_hex(3)
        self._state_dir_arg = Path(state_dir) if state_dir is not None else None
        self.node = node or NodeConfig()
        self._memory_capacity = memory_capacity or self.node.memory_capacity
        self._use_cgroups = use_cgroups
        try:
            self.names = CgroupNames(CgroupDriver(cgroup_driver))
        except ValueError:
            choices = ", ".join(d.value for d in CgroupDriver)
            raise ValueError(f"cgroup_driver {cgroup_driver!r}: must be one of {choices}") from None
        self.kubepods_at_root = kubepods_at_root
        self.minimum_grace_seconds = minimum_grace_seconds
        self.python = python
        self.inherit_env = inherit_env
        self.on_exit = on_exit
        self._prctl = _resolve_prctl() if die_with_runtime else None
        self._pods: dict[str, _Pod] = {}
        self._cg: MemoryCgroups | None = None
        self._mode: RuntimeMode | None = None
        self.mode_reason = ""
        self.sub_root: Path | None = None
        self.kubepods: Path | None = None
        self.state_dir: Path = Path()
        self._own_state_dir = False
        self._closed = False
        self.filesystem: NodeFilesystem | None = None

    # --- lifecycle ---------------------------------------------------------------------------

    @property
    def mode(self) -> RuntimeMode:
        """Which isolation is active (opens the runtime on first use)."""
        if self._mode is None:
            self.open()
        assert self._mode is not None
        return self._mode

    def open(self) -> ProcessRuntime:
        """Detect cgroups, remove stale sub-roots of crashed runtimes, build the node cgroups."""
        if self._closed:
            raise RuntimeError("the runtime is closed")
        if self._mode is not None:
            return self
        if self._state_dir_arg is None:
            self.state_dir = Path(tempfile.mkdtemp(prefix=f"{self.prefix}-runtime-"))
            self._own_state_dir = True
        else:
            self.state_dir = self._state_dir_arg
            self.state_dir.mkdir(parents=True, exist_ok=True)
        self.filesystem = NodeFilesystem(
            self.node.filesystem,
            default_path=self.state_dir / "fs",
            source=f"{self.prefix}-{os.getpid()}-{self.instance}",
        ).open()
        cg, reason = (
            detect_memory_cgroups(self.cgroup_root)
            if self._use_cgroups
            else (None, "cgroups disabled")
        )
        if cg is not None:
            cg, reason = self._build_node(cg, reason)
        self._cg = cg
        if cg is None:
            self._mode = RuntimeMode.PROCESS
            self.mode_reason = f"{reason}; measuring processes with psutil"
        else:
            self._mode = RuntimeMode.CGROUP_V1 if cg.version == 1 else RuntimeMode.CGROUP_V2
            self.mode_reason = reason
        log.info("process runtime: %s (%s)", self._mode, self.mode_reason)
        return self

    def _build_node(self, cg: MemoryCgroups, reason: str) -> tuple[MemoryCgroups | None, str]:
        """kubepods and its QoS levels, in a sub-root of this runtime or at the cgroup root."""
        if self.kubepods_at_root:
            sub_root = None
            kubepods = cg.base / self.names.kubepods
            if kubepods.exists():
                # a node has one kubelet: another's (or a crashed run's with processes) stays
                self._remove_leftover(cg, kubepods)
                if kubepods.exists():
                    return None, f"{kubepods} exists and holds processes (another kubelet?)"
        else:
            self._remove_stale(cg)
            if self.node.cgroup_root:  # the kubelet's --cgroup-root: a crashed run's goes
                sub_root = cg.base / self.node.cgroup_root
                if sub_root.exists() and not cg.try_remove(sub_root):
                    left = cg.tree_procs(sub_root)
                    raise RuntimeError(f"cgroup root {sub_root} exists and holds processes {left}")
            else:
                sub_root = cg.base / f"{self.prefix}-{os.getpid()}-{self.instance}"
            kubepods = sub_root / self.names.kubepods
        made = sub_root or kubepods
        try:
            cg.enable_controllers_in(cg.base)
            if sub_root is not None:
                for parent in reversed(sub_root.relative_to(cg.base).parents[:-1]):
                    cg.create(cg.base / parent, limit=None, parent_of_leaves=True)
                cg.create(sub_root, limit=None, parent_of_leaves=True)
            cg.create(kubepods, limit=self._pods_cgroup_limit(), parent_of_leaves=True)
            for level in QOS_LEVELS:
                cg.create(kubepods / self.names.qos(level), limit=None, parent_of_leaves=True)
        except OSError as exc:
            with contextlib.suppress(OSError):
                cg.try_remove(made)
            return None, f"no writable memory cgroup: {exc}"
        self.sub_root, self.kubepods = sub_root, kubepods
        return cg, f"{reason}, {self.names.driver} driver, kubepods at {kubepods}"

    def _remove_leftover(self, cg: MemoryCgroups, path: Path) -> None:
        left = cg.tree_procs(path)
        if left:
            log.warning("cgroup %s still holds pids %s", path, left)
            return
        with contextlib.suppress(OSError):
            if cg.try_remove(path):
                log.info("removed leftover cgroup %s", path)

    def _remove_stale(self, cg: MemoryCgroups) -> None:
        pattern = re.compile(rf"{re.escape(self.prefix)}-(\d+)-[a-z0-9]+")
        try:
            entries = list(cg.base.iterdir())
        except OSError:
            return
        for path in entries:
            m = pattern.fullmatch(path.name)
            if m is None or not path.is_dir() or _owner_alive(int(m.group(1)), path):
                continue
            self._remove_leftover(cg, path)

    def _pods_cgroup_limit(self) -> int | None:
        """kubepods' limit: the node's capacity, less what is reserved when the node enforces
        allocatable on its pods; None (no limit) when neither capacity nor reservation is set."""
        if self._memory_capacity is None and not self.node.reserved_memory():
            return None
        capacity = self._memory_capacity or int(psutil.virtual_memory().total)
        return self.node.pods_cgroup_limit(capacity)

    async def close(self, *, grace_seconds: float = 0.0) -> None:
        """Stop every pod, remove the node cgroups and disk and, if the runtime made it, the
        state dir."""
        if self._closed:
            return
        for uid in list(self._pods):
            await self.kill(uid, grace_seconds)
        if self._cg is not None and (made := self.sub_root or self.kubepods) is not None:
            await self._cg.remove(made)
        if self.filesystem is not None:
            self.filesystem.close()
        if self._own_state_dir:
            shutil.rmtree(self.state_dir, ignore_errors=True)
        self._closed = True

    async def __aenter__(self) -> ProcessRuntime:
        return self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- node --------------------------------------------------------------------------------

    @property
    def memory_capacity(self) -> int:
        """The node's memory capacity: the given one, else the machine's memory, never more
        than a limit on the cgroups above the node's."""
        physical = int(psutil.virtual_memory().total)
        self.open()
        capacity = min(self._memory_capacity or physical, physical)
        if self._cg is not None and self.sub_root is not None:
            limit = self._cg.effective_limit(self.sub_root)
            if limit is not None:
                capacity = min(capacity, limit)
        return capacity

    @property
    def pods_memory_limit(self) -> int:
        """The pods cgroup's memory limit (what ``allocatableMemory.available`` is read
        against): its cgroup's, else capacity less what is reserved."""
        self.open()
        if self._cg is not None and self.kubepods is not None:
            limit = self._cg.effective_limit(self.kubepods)
            if limit is not None:
                return limit
        return self.node.pods_cgroup_limit(self.memory_capacity)

    @property
    def disk_capacity(self) -> int | None:
        """The size of the node's disk (its root filesystem); None when it cannot be read."""
        self.open()
        try:
            st = os.statvfs(self._fs().kubelet_root)
        except OSError:
            return None
        return st.f_blocks * st.f_frsize

    @property
    def allocatable_memory(self) -> int:
        """The node's allocatable memory (``NodeConfig.allocatable_memory``)."""
        return self.node.allocatable_memory(self.memory_capacity)

    def node_usage(self) -> MemoryUsage:
        """The node's kubepods cgroup (or, without cgroups, the sum over the pods)."""
        self.open()
        if self._cg is not None and self.kubepods is not None:
            usage, ws = self._cg.memory(self.kubepods)
            return MemoryUsage(ws, usage, len(self._cg.tree_procs(self.kubepods)))
        total = [self.usage(uid) for uid in list(self._pods)]
        ws = sum(u.working_set_bytes for u in total if u is not None)
        n = sum(u.process_count for u in total if u is not None)
        return MemoryUsage(ws, ws, n)

    # --- pods --------------------------------------------------------------------------------

    def pods(self) -> list[str]:
        """UIDs of the pods the runtime holds (started and not yet killed)."""
        return list(self._pods)

    def pod_cgroup(self, pod_uid: str) -> Path | None:
        pod = self._pods.get(pod_uid)
        return pod.cgroup if pod is not None else None

    async def start(self, pod: Mapping[str, Any]) -> list[ContainerStatus]:
        """Run every container of ``pod`` that has a ``command``; idempotent per UID.

        A container's working directory is its writable layer on the node's disk, its output
        goes to its log file there, and its pod's emptyDir volumes and etc-hosts are made there
        before it starts (``kubesim.node.volumes``), so that what a pod writes is where a
        kubelet measures it (``kubesim.node.stats``); the downward API's ``resourceFieldRef``
        gives it its requests and limits (``kubesim.node.downward``). A process joins its
        cgroup before ``exec`` (it writes itself into ``cgroup.procs``), so every page it
        touches is charged there.

        Containers without a command (an image's entrypoint we do not have) are not run and
        not reported. A container that cannot be started is reported exited with reason
        ``StartError`` and exit code 128, as containerd does. Raises PodSpecError for a pod
        the runtime cannot read, OSError when the pod's cgroup cannot be made.
        """
        self.open()
        meta = pod.get("metadata")
        meta = meta if isinstance(meta, Mapping) else {}
        uid, ns, name = meta.get("uid"), meta.get("namespace") or "default", meta.get("name")
        where = f"pod {ns}/{name}"
        for field_name, value in (("uid", uid), ("namespace", ns), ("name", name)):
            if not isinstance(value, str) or not _SAFE_NAME_RE.fullmatch(value):
                raise PodSpecError(
                    f"{where}: metadata.{field_name}: required, letters, digits, '.', '_' or '-'"
                )
        assert isinstance(uid, str)
        if uid in self._pods:
            return self.status(uid) or []
        try:
            qos = pod_qos_class(pod)
            pod_limit = pod_memory_limit(pod)
            containers = _containers(pod)
            specs = [
                (c, self._argv(pod, c, where=f"spec.containers[{i}]"))
                for i, c in enumerate(containers)
                if c.get("command")
            ]
            limits = [container_memory_limit(c) for c, _ in specs]
        except PodSpecError as exc:
            raise PodSpecError(f"{where}: {exc}") from exc
        state = _Pod(
            uid=uid, namespace=str(ns), name=str(name), qos=qos, cgroup=None, started_at=time.time()
        )
        fs = self._fs()
        try:
            state.volumes = set_up_pod_volumes(
                pod,
                fs,
                node_allocatable_memory=self.allocatable_memory,
                pod_memory_limit=pod_limit,
                size_memory_backed_volumes=self.node.size_memory_backed_volumes,
            )
        except PodStorageError as exc:
            fs.remove_pod_dir(uid)
            raise PodSpecError(f"{where}: {exc}") from exc
        except OSError:
            fs.remove_pod_dir(uid)
            raise
        if self._cg is not None and self.kubepods is not None:
            level = qos_level(qos)
            parent = self.kubepods if level is None else self.kubepods / self.names.qos(level)
            state.cgroup = parent / self.names.pod(level, uid)
            self._cg.create(state.cgroup, limit=pod_limit, parent_of_leaves=True)
        self._pods[uid] = state
        for (spec, (argv, env, cwd)), limit in zip(specs, limits, strict=True):
            ctr = await self._run(state, spec, argv=argv, env=env, cwd=cwd, limit=limit)
            state.containers.append(ctr)
            if self._pods.get(uid) is not state:  # killed while this one was starting
                _signal_group(ctr, signal.SIGKILL)
                if ctr.waiter is not None:
                    await asyncio.wait({ctr.waiter}, timeout=REMOVE_TIMEOUT)
                if self._cg is not None and state.cgroup is not None:
                    await self._cg.remove(state.cgroup)
                self._remove_files(state)
                break
        return self.status(uid) or []

    def _fs(self) -> NodeFilesystem:
        assert self.filesystem is not None, "the runtime is not open"
        return self.filesystem

    def _remove_files(self, pod: _Pod) -> None:
        """What the pod left on the node's disk: writable layers, logs, volumes, etc-hosts."""
        fs = self._fs()
        for c in pod.containers:
            shutil.rmtree(c.layer.parent, ignore_errors=True)
        shutil.rmtree(fs.pod_log_dir(pod.namespace, pod.name, pod.uid), ignore_errors=True)
        fs.remove_pod_dir(pod.uid)

    def layout(self, pod_uid: str) -> PodLayout | None:
        """Where a pod's files are on the node's disk; None for a pod the runtime does not hold."""
        pod = self._pods.get(pod_uid)
        if pod is None:
            return None
        fs = self._fs()
        return PodLayout(
            uid=pod.uid,
            namespace=pod.namespace,
            name=pod.name,
            started_at=pod.started_at,
            containers=tuple(
                ContainerLayout(c.name, c.container_id, c.started_at, c.layer, c.log_path.parent)
                for c in pod.containers
            ),
            volumes=dict(pod.volumes),
            log_dir=fs.pod_log_dir(pod.namespace, pod.name, pod.uid),
            etc_hosts=fs.etc_hosts(pod.uid),
        )

    def _argv(
        self, pod: Mapping[str, Any], c: Mapping[str, Any], *, where: str
    ) -> tuple[list[str], dict[str, str], str | None]:
        command, args = c.get("command") or [], c.get("args") or []
        if not isinstance(command, list) or not all(isinstance(x, str) for x in command):
            raise PodSpecError(f"{where}.command: must be a list of strings")
        if not isinstance(args, list) or not all(isinstance(x, str) for x in args):
            raise PodSpecError(f"{where}.args: must be a list of strings")
        if not isinstance(c.get("name"), str) or not _SAFE_NAME_RE.fullmatch(c["name"]):
            raise PodSpecError(f"{where}.name: required, letters, digits, '.', '_' or '-'")
        declared = self._container_env(pod, c, where=where)
        argv = [expand_references(x, declared) for x in [*command, *args]]
        if argv[0] in _PYTHON_NAMES:
            argv[0] = self.python
        env = dict(os.environ) if self.inherit_env else {}
        env.update(declared)
        cwd = c.get("workingDir")
        if isinstance(cwd, str) and ".." in PurePosixPath(cwd).parts:
            raise PodSpecError(f"{where}.workingDir: must not contain '..'")
        return argv, env, cwd if isinstance(cwd, str) and cwd else None

    def _container_env(
        self, pod: Mapping[str, Any], c: Mapping[str, Any], *, where: str
    ) -> dict[str, str]:
        meta = pod.get("metadata") or {}
        env = {
            "HOSTNAME": str(meta.get("name", "")),
            "POD_NAME": str(meta.get("name", "")),
            "POD_NAMESPACE": str(meta.get("namespace") or "default"),
            "POD_UID": str(meta.get("uid", "")),
        }
        entries = c.get("env") or []
        if not isinstance(entries, list):
            raise PodSpecError(f"{where}.env: must be a list")
        for j, e in enumerate(entries):
            if not isinstance(e, Mapping) or not isinstance(e.get("name"), str):
                raise PodSpecError(f"{where}.env[{j}].name: required")
            value: str | None
            source = e.get("valueFrom") or {}
            if "resourceFieldRef" in source:
                try:
                    value = resource_field_value(
                        source["resourceFieldRef"] or {},
                        {str(x.get("name")): x for x in _containers(pod)},
                        current=str(c.get("name", "")),
                        node_allocatable={"memory": self.allocatable_memory},
                        where=f"{where}.env[{j}].valueFrom.resourceFieldRef",
                    )
                except DownwardAPIError as exc:
                    raise PodSpecError(str(exc)) from None
            elif "valueFrom" in e:
                ref = source.get("fieldRef") or {}
                value = _field_ref(pod, str(ref.get("fieldPath", "")))
                if value is None:
                    log.warning(
                        "%s.env[%d]: only fieldRef and resourceFieldRef are supported; left unset",
                        where,
                        j,
                    )
                    continue
            else:
                value = expand_references(str(e.get("value", "")), env)
            env[e["name"]] = value
        return env

    async def _run(
        self,
        pod: _Pod,
        spec: Mapping[str, Any],
        *,
        argv: list[str],
        env: dict[str, str],
        cwd: str | None,
        limit: int | None,
    ) -> _Container:
        name = str(spec["name"])
        fs = self._fs()
        log_dir = fs.container_log_dir(pod.namespace, pod.name, pod.uid, name)
        log_dir.mkdir(parents=True, exist_ok=True)
        cid = secrets.token_hex(32)
        ctr = _Container(
            name=name,
            container_id=cid,
            log_path=log_dir / "0.log",
            layer=fs.writable_layer(cid),
            cgroup=pod.cgroup / self.names.container(cid) if pod.cgroup is not None else None,
            started_at=time.time(),
        )
        procs_fd: int | None = None
        try:
            ctr.layer.mkdir(parents=True)
            link_volume_mounts(spec, ctr.layer, pod.volumes, where=f"container {name}")
            cwd = str(ctr.layer / cwd.lstrip("/")) if cwd else str(ctr.layer)
            Path(cwd).mkdir(parents=True, exist_ok=True)
            if self._cg is not None and ctr.cgroup is not None:
                self._cg.create(ctr.cgroup, limit=limit, parent_of_leaves=False)
                self._cg.set_oom_group(ctr.cgroup)
                procs_fd = os.open(ctr.cgroup / "cgroup.procs", os.O_WRONLY)
            with open(ctr.log_path, "ab") as out:
                ctr.process = await asyncio.create_subprocess_exec(
                    *argv,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=env,
                    cwd=cwd,
                    start_new_session=True,
                    preexec_fn=_child_setup(procs_fd, self._prctl),
                )
        except (OSError, subprocess.SubprocessError, PodStorageError) as exc:
            ctr.finished_at = time.time()
            ctr.exit_code, ctr.reason = 128, "StartError"
            ctr.message = f"failed to start {argv[0]!r}: {exc}"
            log.warning("pod %s/%s container %s: %s", pod.namespace, pod.name, name, ctr.message)
            return ctr
        finally:
            if procs_fd is not None:
                os.close(procs_fd)
        with contextlib.suppress(psutil.Error):
            ctr.create_time = psutil.Process(ctr.process.pid).create_time()
        ctr.waiter = asyncio.create_task(self._wait(pod, ctr), name=f"runtime-wait-{cid[:12]}")
        return ctr

    async def _wait(self, pod: _Pod, ctr: _Container) -> None:
        """A container's exit as containerd reports it to the kubelet: ``Completed`` for 0,
        ``Error`` otherwise, ``OOMKilled`` when the container cgroup's OOM-kill counter moved
        (v1 ``memory.oom_control``, v2 ``memory.events``), 128 + signal as the exit code of a
        signalled process."""
        assert ctr.process is not None
        rc = await ctr.process.wait()
        ctr.finished_at = time.time()
        if rc < 0:
            ctr.signal, ctr.exit_code = -rc, 128 - rc
        else:
            ctr.exit_code = rc
        if self._cg is not None and ctr.cgroup is not None and self._cg.oom_kills(ctr.cgroup):
            ctr.reason = "OOMKilled"
        else:
            ctr.reason = "Completed" if rc == 0 else "Error"
        if self.on_exit is not None:
            try:
                self.on_exit(pod.uid, ctr.snapshot())
            except Exception:
                log.exception("on_exit callback failed for pod %s/%s", pod.namespace, pod.name)

    def status(self, pod_uid: str) -> list[ContainerStatus] | None:
        """Per-container state of a pod, None for a pod the runtime does not hold."""
        pod = self._pods.get(pod_uid)
        return None if pod is None else [c.snapshot() for c in pod.containers]

    def usage(self, pod_uid: str) -> MemoryUsage | None:
        """Working set and process count of a pod, None for a pod the runtime does not hold."""
        pod = self._pods.get(pod_uid)
        if pod is None:
            return None
        if self._cg is not None and pod.cgroup is not None:
            try:
                usage, ws = self._cg.memory(pod.cgroup)
                per = {
                    c.name: self._cg.memory(c.cgroup)[1]
                    for c in pod.containers
                    if c.cgroup is not None and c.cgroup.exists()
                }
                count = len(self._cg.tree_procs(pod.cgroup))
            except OSError:  # removed under us by a concurrent kill
                return None
            return MemoryUsage(ws, usage, count, per)
        per, count = {}, 0
        for c in pod.containers:
            procs = _process_tree(c)
            per[c.name] = sum(_rss(p) for p in procs)
            count += len(procs)
        total = sum(per.values())
        return MemoryUsage(total, total, count, per)

    async def kill(
        self, pod_uid: str, grace_seconds: float, *, override: bool = False
    ) -> list[ContainerStatus] | None:
        """Stop a pod as the kubelet's ``killContainer`` does and forget it.

        SIGTERM to each container's process group, SIGKILL after the grace period, then
        anything left in the pod's cgroups is killed and the cgroups are removed leaf first,
        retrying while the kernel still counts tasks; the pod's files (layers, logs, volumes)
        are removed from the node's disk. The grace period is floored at
        ``minimum_grace_seconds`` (the kubelet's ``minimumGracePeriodInSeconds``, 2 s) unless
        ``override`` (the kubelet's ``gracePeriodOverride``, used by its own evictions,
        replaces the floored value). Returns the final container states; None for a pod the
        runtime does not hold.
        """
        pod = self._pods.get(pod_uid)
        if pod is None:
            return None
        grace = grace_seconds if override else max(grace_seconds, self.minimum_grace_seconds)
        grace = max(grace, 0.0)
        started = [c for c in pod.containers if c.process is not None]
        running = [c for c in started if c.waiter is not None and not c.waiter.done()]
        for c in started:
            _signal_group(c, signal.SIGTERM)
        waiters = {c.waiter for c in running if c.waiter is not None}
        if waiters:
            await asyncio.wait(waiters, timeout=grace)
        for c in started:
            for p in _process_tree(c):  # before the leader dies and orphans them
                with contextlib.suppress(psutil.Error):
                    p.kill()
            _signal_group(c, signal.SIGKILL)
        if pending := {w for w in waiters if not w.done()}:
            await asyncio.wait(pending, timeout=REMOVE_TIMEOUT)
        if self._cg is not None and pod.cgroup is not None:
            await self._cg.remove(pod.cgroup)
        self._remove_files(pod)
        del self._pods[pod_uid]
        return [c.snapshot() for c in pod.containers]


def _owner_alive(pid: int, path: Path) -> bool:
    """Whether the runtime that made ``path`` may still run (pid alive and older than it)."""
    try:
        created = float(psutil.Process(pid).create_time())
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:
        return True
    try:
        made = path.stat().st_ctime
    except OSError:
        return True
    return created <= made + 1.0


def _child_setup(procs_fd: int | None, prctl: Callable[..., int] | None) -> Callable[[], None]:
    """Runs in the child between fork and exec: join the cgroup, die with the runtime."""

    def setup() -> None:
        if procs_fd is not None:
            os.write(procs_fd, b"0")
        if prctl is not None:
            prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)

    return setup


def _signal_group(c: _Container, sig: signal.Signals) -> None:
    """Signal the container's process group; once its leader is reaped, only if the group
    still has members (the pgid could otherwise name someone else's group after pid reuse)."""
    if c.process is None:
        return
    pgid = c.process.pid
    if c.finished_at is not None and not _group_has_members(pgid):
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _group_has_members(pgid: int) -> bool:
    for pid in psutil.pids():
        with contextlib.suppress(OSError):
            if os.getpgid(pid) == pgid:
                return True
    return False


def _process_tree(c: _Container) -> list[psutil.Process]:
    """The container's process and its descendants, if it is still the process we started."""
    if c.process is None or c.finished_at is not None:
        return []
    try:
        leader = psutil.Process(c.process.pid)
        if c.create_time is not None and leader.create_time() != c.create_time:
            return []
        return [leader, *leader.children(recursive=True)]
    except psutil.Error:
        return []


def _rss(p: psutil.Process) -> int:
    try:
        return int(p.memory_info().rss)
    except psutil.Error:
        return 0
