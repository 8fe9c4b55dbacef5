"""The kubelet Summary API (``k8s.io/kubelet/pkg/apis/stats/v1alpha1``) as typed values: the
decision core's one input.

The agent's collector builds them from its own readings (``agent.sources.collector``); a
``/stats/summary`` document — a kubelet's, a test's — is read into them by ``Summary.from_dict``,
which refuses what no kubelet would report.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from kube.ints import INT64_MAX
from kube.times import parse_rfc3339

__all__ = [
    "SYSTEM_CONTAINER_PODS",
    "CPUStats",
    "ContainerStats",
    "FsStats",
    "MemoryStats",
    "NodeStats",
    "PodReference",
    "PodStats",
    "ProcessStats",
    "RlimitStats",
    "RuntimeStats",
    "Summary",
    "SummaryError",
    "VolumeStats",
]

SYSTEM_CONTAINER_PODS: Final = "pods"  # statsapi.SystemContainerPods: the kubepods cgroup
# observations are int64 in the kubelet (resource.Quantity); nothing real comes close
MAX_STAT_VALUE: Final = INT64_MAX


class SummaryError(ValueError):
    """A stats summary that does not follow the Summary API schema; names the field."""

    def __init__(self, path: str, detail: str) -> None:
        self.path = path
        self.detail = detail
        super().__init__(f"stats summary: {path}: {detail}")


class _Reader:
    def mapping(self, data: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any] | None:
        value = data.get(key)
        if value is None:
            return None
        if not isinstance(value, Mapping):
            raise SummaryError(f"{path}", f"must be an object, not {type(value).__name__}")
        return value

    def seq(self, data: Mapping[str, Any], key: str, path: str) -> Sequence[Any]:
        value = data.get(key)
        if value is None:
            return ()
        if not isinstance(value, list | tuple):
            raise SummaryError(path, f"must be a list, not {type(value).__name__}")
        return value

    def uint(self, data: Mapping[str, Any], key: str, path: str) -> int | None:
        value = data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            else:
                raise SummaryError(path, f"must be a non-negative integer, not {value!r}")
        if value < 0:
            raise SummaryError(path, f"must be a non-negative integer, not {value!r}")
        if value > MAX_STAT_VALUE:
            raise SummaryError(
                path, f"must be at most {MAX_STAT_VALUE} (int64), not {_short(value)}"
            )
        return value

    def string(self, data: Mapping[str, Any], key: str, path: str) -> str:
        value = data.get(key, "")
        if value is None:
            return ""
        if not isinstance(value, str):
            raise SummaryError(path, f"must be a string, not {value!r}")
        return value

    def time(self, data: Mapping[str, Any], key: str, path: str) -> float | None:
        value = data.get(key)
        if value is None or value == "":
            return None
        if isinstance(value, int | float) and not isinstance(value, bool):
            try:
                seconds = float(value)
            except OverflowError:
                seconds = math.inf
            if not math.isfinite(seconds):
                raise SummaryError(path, f"must be a finite time, not {_short(value)}")
            return seconds
        if not isinstance(value, str):
            raise SummaryError(path, f"must be an RFC 3339 time, not {value!r}")
        try:
            return parse_rfc3339(value)
        except ValueError as exc:
            raise SummaryError(path, f"invalid RFC 3339 time {value!r}: {exc}") from None


_R: Final = _Reader()


def _short(value: object) -> str:
    """A value for an error message: one line, not 400 digits."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}…({len(text)} characters)"


def _uints(data: Mapping[str, Any], keys: tuple[str, ...], path: str) -> list[int | None]:
    """Several optional non-negative integers; the common well-formed case stays cheap."""
    out: list[int | None] = []
    for key in keys:
        value = data.get(key)
        if value is None or (type(value) is int and 0 <= value <= MAX_STAT_VALUE):
            out.append(value)
        else:
            out.append(_R.uint(data, key, f"{path}.{key}"))
    return out


_MEMORY_KEYS: Final = (
    "availableBytes",
    "usageBytes",
    "workingSetBytes",
    "rssBytes",
    "pageFaults",
    "majorPageFaults",
)
_FS_KEYS: Final = (
    "availableBytes",
    "capacityBytes",
    "usedBytes",
    "inodesFree",
    "inodes",
    "inodesUsed",
)


def _at(data: object, path: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise SummaryError(path, f"must be an object, not {type(data).__name__}")
    return data


@dataclass(frozen=True, slots=True)
class CPUStats:
    time: float | None = None
    usage_nano_cores: int | None = None
    usage_core_nano_seconds: int | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], path: str) -> CPUStats:
        return cls(
            time=_R.time(data, "time", f"{path}.time"),
            usage_nano_cores=_R.uint(data, "usageNanoCores", f"{path}.usageNanoCores"),
            usage_core_nano_seconds=_R.uint(
                data, "usageCoreNanoSeconds", f"{path}.usageCoreNanoSeconds"
            ),
        )


@dataclass(frozen=True, slots=True)
class MemoryStats:
    time: float | None = None
    available_bytes: int | None = None
    usage_bytes: int | None = None
    working_set_bytes: int | None = None
    rss_bytes: int | None = None
    page_faults: int | None = None
    major_page_faults: int | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], path: str) -> MemoryStats:
        return cls(_R.time(data, "time", f"{path}.time"), *_uints(data, _MEMORY_KEYS, path))


@dataclass(frozen=True, slots=True)
class FsStats:
    time: float | None = None
    available_bytes: int | None = None
    capacity_bytes: int | None = None
    used_bytes: int | None = None
    inodes_free: int | None = None
    inodes: int | None = None
    inodes_used: int | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], path: str) -> FsStats:
        fs = cls(_R.time(data, "time", f"{path}.time"), *_uints(data, _FS_KEYS, path))
        if _above(fs.available_bytes, fs.capacity_bytes):
            raise SummaryError(
                f"{path}.availableBytes",
                f"{fs.available_bytes} is more than capacityBytes {fs.capacity_bytes}",
            )
        if _above(fs.inodes_free, fs.inodes):
            raise SummaryError(
                f"{path}.inodesFree", f"{fs.inodes_free} is more than inodes {fs.inodes}"
            )
        return fs


def _above(part: int | None, whole: int | None) -> bool:
    return part is not None and whole is not None and part > whole


def _fs(data: Mapping[str, Any], key: str, path: str) -> FsStats | None:
    raw = _R.mapping(data, key, path)
    return None if raw is None else FsStats.from_dict(raw, path)


def _memory(data: Mapping[str, Any], key: str, path: str) -> MemoryStats | None:
    raw = _R.mapping(data, key, path)
    return None if raw is None else MemoryStats.from_dict(raw, path)


def _cpu(data: Mapping[str, Any], key: str, path: str) -> CPUStats | None:
    raw = _R.mapping(data, key, path)
    return None if raw is None else CPUStats.from_dict(raw, path)


@dataclass(frozen=True, slots=True)
class RuntimeStats:
    image_fs: FsStats | None = None
    container_fs: FsStats | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], path: str) -> RuntimeStats:
        return cls(
            image_fs=_fs(data, "imageFs", f"{path}.imageFs"),
            container_fs=_fs(data, "containerFs", f"{path}.containerFs"),
        )


@dataclass(frozen=True, slots=True)
class RlimitStats:
    time: float | None = None
    max_pid: int | None = None
    num_of_running_processes: int | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], path: str) -> RlimitStats:
        rlimit = cls(
            time=_R.time(data, "time", f"{path}.time"),
            max_pid=_R.uint(data, "maxpid", f"{path}.maxpid"),
            num_of_running_processes=_R.uint(data, "curproc", f"{path}.curproc"),
        )
        if _above(rlimit.num_of_running_processes, rlimit.max_pid):
            raise SummaryError(
                f"{path}.curproc",
                f"{rlimit.num_of_running_processes} is more than maxpid {rlimit.max_pid}",
            )
        return rlimit


@dataclass(frozen=True, slots=True)
class ContainerStats:
    name: str
    start_time: float | None = None
    cpu: CPUStats | None = None
    memory: MemoryStats | None = None
    rootfs: FsStats | None = None
    logs: FsStats | None = None

    @classmethod
    def from_dict(cls, data: object, path: str) -> ContainerStats:
        d = _at(data, path)
        return cls(
            name=_R.string(d, "name", f"{path}.name"),
            start_time=_R.time(d, "startTime", f"{path}.startTime"),
            cpu=_cpu(d, "cpu", f"{path}.cpu"),
            memory=_memory(d, "memory", f"{path}.memory"),
            rootfs=_fs(d, "rootfs", f"{path}.rootfs"),
            logs=_fs(d, "logs", f"{path}.logs"),
        )


@dataclass(frozen=True, slots=True)
class PodReference:
    name: str
    namespace: str
    uid: str


@dataclass(frozen=True, slots=True)
class VolumeStats:
    """``statsapi.VolumeStats``: ``FsStats`` inlined, plus the volume's name."""

    name: str
    fs: FsStats = field(default_factory=FsStats)
    pvc_ref: tuple[str, str] | None = None  # (namespace, name)

    @property
    def used_bytes(self) -> int | None:
        return self.fs.used_bytes

    @classmethod
    def from_dict(cls, data: object, path: str) -> VolumeStats:
        vd = _at(data, path)
        return cls(
            name=_R.string(vd, "name", f"{path}.name"),
            fs=FsStats.from_dict(vd, path),
            pvc_ref=_pvc_ref(vd, path),
        )

    @classmethod
    def usage_from_dict(cls, data: object, path: str) -> VolumeStats:
        """The figures the decisions read of a volume — its name, used bytes and inodes —
        checked as ``from_dict`` checks them; the others (capacity, time) are not read."""
        vd = _at(data, path)
        return cls(
            name=_R.string(vd, "name", f"{path}.name"),
            fs=FsStats(
                used_bytes=_R.uint(vd, "usedBytes", f"{path}.usedBytes"),
                inodes_used=_R.uint(vd, "inodesUsed", f"{path}.inodesUsed"),
            ),
            pvc_ref=_pvc_ref(vd, path),
        )


def _pvc_ref(vd: Mapping[str, Any], path: str) -> tuple[str, str] | None:
    pvc = _R.mapping(vd, "pvcRef", f"{path}.pvcRef")
    if pvc is None:
        return None
    return (
        _R.string(pvc, "namespace", f"{path}.pvcRef.namespace"),
        _R.string(pvc, "name", f"{path}.pvcRef.name"),
    )


@dataclass(frozen=True, slots=True)
class ProcessStats:
    process_count: int | None = None


@dataclass(frozen=True, slots=True)
class PodStats:
    pod_ref: PodReference
    start_time: float | None = None
    containers: tuple[ContainerStats, ...] = ()
    cpu: CPUStats | None = None
    memory: MemoryStats | None = None
    volume_stats: tuple[VolumeStats, ...] = ()
    ephemeral_storage: FsStats | None = None
    process_stats: ProcessStats | None = None

    @classmethod
    def from_dict(cls, data: object, path: str) -> PodStats:
        d = _at(data, path)
        ref = _R.mapping(d, "podRef", f"{path}.podRef")
        if ref is None:
            raise SummaryError(f"{path}.podRef", "is required")
        uid = _R.string(ref, "uid", f"{path}.podRef.uid")
        if not uid:
            raise SummaryError(f"{path}.podRef.uid", "is required")
        raw_volumes = _R.seq(d, "volume", f"{path}.volume")
        if isinstance(raw_volumes, tuple) and all(isinstance(v, VolumeStats) for v in raw_volumes):
            # read once by the kubelet source, not again on every sync (a pod may have
            # tens of thousands of emptyDirs)
            volumes: tuple[VolumeStats, ...] = raw_volumes
        else:
            volumes = tuple(
                VolumeStats.from_dict(v, f"{path}.volume[{i}]") for i, v in enumerate(raw_volumes)
            )
        process = _R.mapping(d, "process_stats", f"{path}.process_stats")
        return cls(
            pod_ref=PodReference(
                name=_R.string(ref, "name", f"{path}.podRef.name"),
                namespace=_R.string(ref, "namespace", f"{path}.podRef.namespace"),
                uid=uid,
            ),
            start_time=_R.time(d, "startTime", f"{path}.startTime"),
            containers=tuple(
                ContainerStats.from_dict(c, f"{path}.containers[{i}]")
                for i, c in enumerate(_R.seq(d, "containers", f"{path}.containers"))
            ),
            cpu=_cpu(d, "cpu", f"{path}.cpu"),
            memory=_memory(d, "memory", f"{path}.memory"),
            volume_stats=volumes,
            ephemeral_storage=_fs(d, "ephemeral-storage", f"{path}.ephemeral-storage"),
            process_stats=None
            if process is None
            else ProcessStats(
                _R.uint(process, "process_count", f"{path}.process_stats.process_count")
            ),
        )


@dataclass(frozen=True, slots=True)
class NodeStats:
    node_name: str = ""
    system_containers: tuple[ContainerStats, ...] = ()
    start_time: float | None = None
    cpu: CPUStats | None = None
    memory: MemoryStats | None = None
    fs: FsStats | None = None
    runtime: RuntimeStats | None = None
    rlimit: RlimitStats | None = None

    def system_container(self, name: str) -> ContainerStats | None:
        """``getSysContainer``: the named system container (``pods``, ``kubelet``, …)."""
        for c in self.system_containers:
            if c.name == name:
                return c
        return None


@dataclass(frozen=True, slots=True)
class Summary:
    node: NodeStats = field(default_factory=NodeStats)
    pods: tuple[PodStats, ...] = ()

    @classmethod
    def from_dict(cls, data: object) -> Summary:
        """Read a ``/stats/summary`` JSON document (already decoded).

        Field names are the schema's (``workingSetBytes``, ``runtime.imageFs``,
        ``rlimit.maxpid``, ``ephemeral-storage``, ``process_stats``); every value is optional,
        as it is upstream — a missing figure means "no observation", never zero. Times are RFC
        3339 strings (kept to the microsecond) or epoch seconds; unknown fields (network, swap,
        accelerators) are ignored. A pod's ``volume`` may be a tuple of ``VolumeStats`` already
        read (the kubelet source reads them once per fetch).

        ``SummaryError`` names the JSON path of anything malformed, and absurd figures are
        malformed too, because every one of them can end in an eviction: a negative or
        non-finite number, one beyond the int64 the kubelet computes observations in (a JSON
        ``10**400`` parses as a Python int), a non-finite time, a filesystem with more available
        bytes (or free inodes) than capacity, more running processes than ``maxpid``. The whole
        Summary is refused: the caller skips the sync, as the kubelet skips a sync whose stats
        it cannot read.
        """
        d = _at(data, "summary")
        node_raw = _R.mapping(d, "node", "node")
        node = NodeStats() if node_raw is None else _node(node_raw)
        pods = tuple(
            PodStats.from_dict(p, f"pods[{i}]") for i, p in enumerate(_R.seq(d, "pods", "pods"))
        )
        return cls(node=node, pods=pods)


def _node(d: Mapping[str, Any]) -> NodeStats:
    runtime_raw = _R.mapping(d, "runtime", "node.runtime")
    runtime = None if runtime_raw is None else RuntimeStats.from_dict(runtime_raw, "node.runtime")
    rlimit_raw = _R.mapping(d, "rlimit", "node.rlimit")
    rlimit = None if rlimit_raw is None else RlimitStats.from_dict(rlimit_raw, "node.rlimit")
    return NodeStats(
        node_name=_R.string(d, "nodeName", "node.nodeName"),
        system_containers=tuple(
            ContainerStats.from_dict(c, f"node.systemContainers[{i}]")
            for i, c in enumerate(_R.seq(d, "systemContainers", "node.systemContainers"))
        ),
        start_time=_R.time(d, "startTime", "node.startTime"),
        cpu=_cpu(d, "cpu", "node.cpu"),
        memory=_memory(d, "memory", "node.memory"),
        fs=_fs(d, "fs", "node.fs"),
        runtime=runtime,
        rlimit=rlimit,
    )
