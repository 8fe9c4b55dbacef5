"""cgroup layout detection and the kubepods hierarchy, read straight from cgroupfs; the kubelet's
names for the kubepods, QoS and pod cgroups under either driver are ``kube.cgroups``'.
"""

from __future__ import annotations

import enum
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kube.cgroups import MEMORY_UNLIMITED, CgroupDriver, CgroupNames, qos_level, working_set
from kube.qos import QOS_CLASSES

_POD_DIR = re.compile(
    r"pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12}|[0-9a-f]{32})"
    r"(?:\.slice)?$"
)
_CONTAINER_SCOPE = re.compile(r"^(?:cri-containerd|crio|docker|cri-o)-([0-9a-f]{12,})\.scope$")
_CONTAINER_PLAIN = re.compile(r"^([0-9a-f]{64})$")


class CgroupVersion(enum.Enum):
    V1 = "v1"
    V2 = "v2"
    HYBRID = "hybrid"


class CgroupError(Exception):
    """The cgroup tree is absent or not what the kubelet would have built."""


@dataclass(frozen=True)
class CgroupLayout:
    """How this host's cgroups are arranged, resolved once at start-up."""

    version: CgroupVersion
    # Directory whose files hold the memory controller's interface (v1: `<root>/memory`).
    memory_root: Path
    # Directory for process listings (v1: `pids/` if mounted, else the memory tree).
    procs_root: Path
    # Directory with per-cgroup PSI files (v2 tree; hybrid: `unified/`; v1: None).
    pressure_root: Path | None
    driver: CgroupDriver | None
    # Path of the kubepods cgroup relative to each hierarchy root, or None when absent.
    kubepods: str | None

    @property
    def is_v1_memory(self) -> bool:
        return self.version is not CgroupVersion.V2


def detect_version(cgroup_root: Path) -> CgroupVersion:
    """v2, v1 or hybrid, from files (not statfs magic numbers, so the same code runs on fixture
    trees): v2 is ``cgroup.controllers`` at the root; hybrid is the v1 controllers plus
    ``unified/cgroup.controllers`` (systemd's hybrid mode: an empty v2 tree), where memory is read
    the v1 way. On v1 each controller has its own tree (``memory/``, ``pids/``, ...).
    """
    if (cgroup_root / "cgroup.controllers").is_file():
        return CgroupVersion.V2
    if (cgroup_root / "memory").is_dir():
        if (cgroup_root / "unified" / "cgroup.controllers").is_file():
            return CgroupVersion.HYBRID
        return CgroupVersion.V1
    raise CgroupError(
        f"no cgroup filesystem under {cgroup_root}: neither cgroup.controllers (v2) "
        "nor a memory/ controller directory (v1)"
    )


def kubepods_name(driver: CgroupDriver, parent: str = "") -> str:
    """The kubepods cgroup under the kubelet's ``--cgroup-root`` ``parent``."""
    return f"{parent.strip('/')}/{CgroupNames(driver).kubepods}".lstrip("/")


def detect_layout(
    cgroup_root: Path,
    *,
    driver: CgroupDriver | None = None,
    kubepods_parent: str = "",
) -> CgroupLayout:
    """Resolve version, controller directories, driver and the kubepods cgroup.

    `kubepods_parent` is the kubelet's `--cgroup-root` (where kubepods lives, "/" by default).
    An explicit `driver` wins; otherwise whichever of `kubepods.slice` / `kubepods` exists.
    """
    version = detect_version(cgroup_root)
    if version is CgroupVersion.V2:
        memory_root = procs_root = cgroup_root
        pressure_root: Path | None = cgroup_root
    else:
        memory_root = cgroup_root / "memory"
        procs_root = cgroup_root / "pids" if (cgroup_root / "pids").is_dir() else memory_root
        pressure_root = cgroup_root / "unified" if version is CgroupVersion.HYBRID else None
    drivers = [driver] if driver is not None else [CgroupDriver.SYSTEMD, CgroupDriver.CGROUPFS]
    kubepods = None
    found_driver = driver
    for candidate in drivers:
        rel = kubepods_name(candidate, kubepods_parent)
        if (memory_root / rel).is_dir():
            kubepods, found_driver = rel, candidate
            break
    return CgroupLayout(
        version=version,
        memory_root=memory_root,
        procs_root=procs_root,
        pressure_root=pressure_root,
        driver=found_driver,
        kubepods=kubepods,
    )


@dataclass(frozen=True)
class PodCgroup:
    uid: str
    qos: str  # the QoS class, as kube.qos names it
    # Relative to each hierarchy root, e.g. "kubepods/burstable/pod<uid>".
    path: str


def parse_pod_uid(name: str) -> str | None:
    """UID from a pod cgroup directory name, None if not a pod: the API's dashed form for an API pod
    (the systemd driver's ``_`` turned back into ``-``), the 32 hex digits of a static pod.

    The kubelet names a pod read from a manifest file or URL by the MD5 of its source, 32 hex digits
    without dashes (``pkg/kubelet/config/common.go``), and the mirror pod the API shows carries that
    UID in its ``kubernetes.io/config.mirror`` annotation (``agent.eviction.pods.stats_uid`` matches
    them).
    """
    m = _POD_DIR.search(name)
    if m is None:
        return None
    return m.group(1).replace("_", "-")


def parse_container_id(name: str) -> str | None:
    """Runtime container ID from a container cgroup name (`cri-containerd-<id>.scope` or `<id>`)."""
    if name.startswith("crio-conmon-"):
        return None
    m = _CONTAINER_SCOPE.match(name) or _CONTAINER_PLAIN.match(name)
    return m.group(1) if m else None


def iter_pod_cgroups(layout: CgroupLayout) -> Iterator[PodCgroup]:
    """Every pod cgroup under kubepods, Guaranteed (directly under kubepods) then the QoS slices."""
    if layout.kubepods is None or layout.driver is None:
        return
    names = CgroupNames(layout.driver)
    for qos in QOS_CLASSES:
        level = qos_level(qos)
        rel = layout.kubepods if level is None else f"{layout.kubepods}/{names.qos(level)}"
        try:
            entries = sorted(os.scandir(layout.memory_root / rel), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if not entry.is_dir(follow_symlinks=False):
                continue
            uid = parse_pod_uid(entry.name)
            if uid is not None:
                yield PodCgroup(uid=uid, qos=qos, path=f"{rel}/{entry.name}")


def list_subdirs(directory: Path | str) -> list[str]:
    """Names of the child cgroups of a directory, sorted; [] when it is absent."""
    try:
        with os.scandir(directory) as it:
            return sorted(e.name for e in it if e.is_dir(follow_symlinks=False))
    except OSError:
        return []


def iter_container_cgroups(
    directory: Path | str, *, subdirs: list[str] | None = None
) -> Iterator[tuple[str, str]]:
    """(container ID, directory name) of the container cgroups directly below a pod cgroup."""
    for name in list_subdirs(directory) if subdirs is None else subdirs:
        cid = parse_container_id(name)
        if cid is not None:
            yield cid, name


# --- raw readers -------------------------------------------------------------------------
# The agent reads every pod cgroup once a second (110 pods → some 500 files), so these go
# through os.open/os.read on str paths: pathlib and text-mode files cost several times more.


_CHUNK = 65536


def _read(path: str) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        # seq_file and regular files fill the buffer unless at EOF: a short read is the end.
        data = os.read(fd, _CHUNK)
        if len(data) < _CHUNK:
            return data
        chunks = [data]
        while chunk := os.read(fd, _CHUNK):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_int(path: Path | str) -> int | None:
    """An integer interface file; "max" (v2 unlimited) → None; missing/unreadable → None."""
    data = _read(str(path))
    if data is None:
        return None
    try:
        return int(data)
    except ValueError:
        return None


def read_flat_keyed(path: Path | str) -> dict[str, int]:
    """A flat-keyed file such as `memory.stat` (`key value` per line); bad lines are skipped."""
    out: dict[str, int] = {}
    data = _read(str(path))
    if data is None:
        return out
    for line in data.decode(errors="replace").splitlines():
        key, sep, value = line.partition(" ")
        if sep:
            try:
                out[key] = int(value)
            except ValueError:
                continue
    return out


@dataclass(frozen=True)
class CgroupMemory:
    """One cgroup's memory in cAdvisor's terms."""

    usage: int
    working_set: int
    rss: int | None
    page_faults: int | None
    major_page_faults: int | None
    # None when unlimited.
    limit: int | None


def read_cgroup_memory(layout: CgroupLayout, rel: str) -> CgroupMemory | None:
    """Memory of the cgroup at `rel` ("" = root), None when the cgroup does not exist.

    v1: `memory.usage_in_bytes` − `total_inactive_file` (hierarchical figures of `memory.stat`).
    v2: `memory.current` − `inactive_file`; the v2 root has no `memory.current`, and like runc's
    rootStatsFromMeminfo we then take usage as `anon + file` of the root `memory.stat`.
    """
    d = f"{layout.memory_root}/{rel}" if rel else str(layout.memory_root)
    stat = read_flat_keyed(d + "/memory.stat")
    if layout.is_v1_memory:
        usage = read_int(d + "/memory.usage_in_bytes")
        if usage is None:
            return None
        inactive = stat.get("total_inactive_file", 0)
        limit = read_int(d + "/memory.limit_in_bytes")
        rss = stat.get("total_rss")
        # cAdvisor reports the cgroup's own fault counters, not the hierarchical totals.
        faults, major = stat.get("pgfault"), stat.get("pgmajfault")
    else:
        usage = read_int(d + "/memory.current")
        if usage is None:
            if rel or "anon" not in stat:
                return None
            usage = stat.get("anon", 0) + stat.get("file", 0)
        inactive = stat.get("inactive_file", 0)
        limit = read_int(d + "/memory.max")
        rss = stat.get("anon")
        faults, major = stat.get("pgfault"), stat.get("pgmajfault")
    if limit is not None and limit >= MEMORY_UNLIMITED:
        limit = None
    return CgroupMemory(
        usage=usage,
        working_set=working_set(usage, inactive),
        rss=rss,
        page_faults=faults,
        major_page_faults=major,
        limit=limit,
    )


def _procs_lines(directory: str) -> int | None:
    data = _read(directory + "/cgroup.procs")
    return None if data is None else len(data.split())


def _count_subtree(directory: str) -> int:
    n = _procs_lines(directory) or 0
    try:
        with os.scandir(directory) as it:
            subdirs = [e.path for e in it if e.is_dir(follow_symlinks=False)]
    except OSError:
        return n
    return n + sum(_count_subtree(sub) for sub in subdirs)


def count_processes(root: Path, rel: str, *, children: list[str] | None = None) -> int | None:
    """Processes (thread-group leaders) in a cgroup and its descendants: lines of `cgroup.procs`.

    cAdvisor's ProcessCount is the number of lines of a container cgroup's `cgroup.procs`
    (`processStatsFromProcs`), and the kubelet sums it over the pod's containers. Lines, not
    distinct PIDs: read from another PID namespace (the DaemonSet's, without hostPID), cgroup v2
    prints `0` for every process the reader cannot see, so the line count stays right where a
    set of PIDs collapses to one; a process belongs to one cgroup at a time, so the sum over
    cgroups counts it once. cgroup v1 leaves such processes out of the list instead.
    With `children` (the pod's child cgroup names, already listed) only the pod cgroup and those
    children are read — the kubelet's two-level layout, and the cheap path for the per-second
    loop; without, the whole subtree is walked. None if the cgroup is absent.
    """
    top = f"{root}/{rel}" if rel else str(root)
    if children is None:
        return _count_subtree(top) if os.path.isdir(top) else None
    n = _procs_lines(top)
    if n is None:
        return None
    return n + sum(_procs_lines(f"{top}/{child}") or 0 for child in children)


def count_tasks(root: Path, rel: str) -> int | None:
    """`pids.current` of a cgroup: every task (thread) in it and its descendants, whatever the
    reader's PID namespace; None where the pids controller is not there."""
    return read_int(f"{root}/{rel}/pids.current" if rel else f"{root}/pids.current")


def pressure_path(layout: CgroupLayout, rel: str, resource: str = "memory") -> Path | None:
    """`<resource>.pressure` of the cgroup at `rel` ("" = root) when the file exists.

    Per-cgroup PSI lives in the v2 tree only; on a hybrid host that is `unified/`, which holds a
    cgroup only if the manager mirrors it there (systemd does, the cgroupfs driver does not).
    """
    if layout.pressure_root is None:
        return None
    path = (layout.pressure_root / rel if rel else layout.pressure_root) / f"{resource}.pressure"
    return path if path.is_file() else None
