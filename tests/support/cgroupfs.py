"""Builds fake cgroupfs and procfs trees the way the kernel and the kubelet lay them out.

v1: one tree per controller (`memory/`, `pids/`), hierarchical `total_*` keys in memory.stat,
`memory.limit_in_bytes` with the page-counter maximum for "unlimited". v2: one tree,
`cgroup.controllers` at the root, `memory.current`/`memory.max` in every non-root cgroup, and a
root without `memory.current`. hybrid: v1 plus an empty v2 tree at `unified/`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

V1_UNLIMITED = 9223372036854771712


@dataclass
class FakeCgroup:
    usage: int
    inactive_file: int = 0
    anon: int = 0
    limit: int | None = None
    procs: list[int] = field(default_factory=list)
    # pids.current (tasks, whatever the reader sees of them); None: no pids.current file
    tasks: int | None = None


@dataclass
class FakePod:
    uid: str
    qos: str  # "guaranteed" | "burstable" | "besteffort"
    cg: FakeCgroup
    # container dir name → cgroup
    containers: dict[str, FakeCgroup] = field(default_factory=dict)


def pod_dir(driver: str, kubepods: str, qos: str, uid: str) -> str:
    if driver == "systemd":
        esc = uid.replace("-", "_")
        if qos == "guaranteed":
            return f"{kubepods}/kubepods-pod{esc}.slice"
        return f"{kubepods}/kubepods-{qos}.slice/kubepods-{qos}-pod{esc}.slice"
    if qos == "guaranteed":
        return f"{kubepods}/pod{uid}"
    return f"{kubepods}/{qos}/pod{uid}"


def _write_v1(d: Path, cg: FakeCgroup, *, pids_dir: Path | None) -> None:
    d.mkdir(parents=True, exist_ok=True)
    (d / "memory.usage_in_bytes").write_text(f"{cg.usage}\n")
    (d / "memory.limit_in_bytes").write_text(f"{cg.limit if cg.limit else V1_UNLIMITED}\n")
    (d / "memory.stat").write_text(
        f"cache 0\nrss {cg.anon}\ninactive_file 1\n"
        f"total_rss {cg.anon}\npgfault 42\npgmajfault 3\n"
        f"total_inactive_file {cg.inactive_file}\ntotal_active_file 0\n"
    )
    (d / "cgroup.procs").write_text("".join(f"{p}\n" for p in cg.procs))
    if pids_dir is not None:
        pids_dir.mkdir(parents=True, exist_ok=True)
        (pids_dir / "cgroup.procs").write_text("".join(f"{p}\n" for p in cg.procs))
        if cg.tasks is not None:
            (pids_dir / "pids.current").write_text(f"{cg.tasks}\n")


def _write_v2(d: Path, cg: FakeCgroup, *, root: bool = False) -> None:
    d.mkdir(parents=True, exist_ok=True)
    file_pages = cg.usage - cg.anon
    (d / "memory.stat").write_text(
        f"anon {cg.anon}\nfile {file_pages}\ninactive_anon 0\nactive_anon {cg.anon}\n"
        f"inactive_file {cg.inactive_file}\nactive_file {file_pages - cg.inactive_file}\n"
        "pgfault 42\npgmajfault 3\n"
    )
    (d / "cgroup.procs").write_text("".join(f"{p}\n" for p in cg.procs))
    if cg.tasks is not None:
        (d / "pids.current").write_text(f"{cg.tasks}\n")
    (d / "memory.pressure").write_text(
        "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
        "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
    )
    if root:
        (d / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
        return
    (d / "memory.current").write_text(f"{cg.usage}\n")
    (d / "memory.max").write_text(f"{cg.limit}\n" if cg.limit else "max\n")


def build_cgroup_tree(
    base: Path,
    *,
    version: str,
    driver: str,
    root: FakeCgroup,
    kubepods: FakeCgroup,
    pods: list[FakePod],
    parent: str = "",
) -> Path:
    """Write the tree under `base/cgroup` and return that cgroup root."""
    cg_root = base / "cgroup"
    kp = "kubepods.slice" if driver == "systemd" else "kubepods"
    kp = f"{parent}/{kp}" if parent else kp
    if version == "v2":

        def write(rel: str, cg: FakeCgroup) -> None:
            _write_v2(cg_root / rel, cg)

        _write_v2(cg_root, root, root=True)
    else:
        mem = cg_root / "memory"
        pids = cg_root / "pids"

        def write(rel: str, cg: FakeCgroup) -> None:
            _write_v1(mem / rel, cg, pids_dir=pids / rel)

        _write_v1(mem, root, pids_dir=pids)
        if version == "hybrid":
            _write_v2(cg_root / "unified", FakeCgroup(usage=0), root=True)
    write(kp, kubepods)
    for qos in ("burstable", "besteffort"):
        sub = f"{kp}/kubepods-{qos}.slice" if driver == "systemd" else f"{kp}/{qos}"
        write(sub, FakeCgroup(usage=0))
    for pod in pods:
        rel = pod_dir(driver, kp, pod.qos, pod.uid)
        write(rel, pod.cg)
        for name, ccg in pod.containers.items():
            write(f"{rel}/{name}", ccg)
    return cg_root


def build_proc_tree(
    base: Path,
    *,
    mem_total: int = 8 * 1024**3,
    pid_max: int | None = 4194304,
    threads_max: int | None = 63704,
    loadavg: str | None = "0.52 0.58 0.59 3/1234 5678",
    pressure: str | None = None,
) -> Path:
    proc = base / "proc"
    (proc / "sys" / "kernel").mkdir(parents=True, exist_ok=True)
    (proc / "meminfo").write_text(
        f"MemTotal:       {mem_total // 1024} kB\nMemFree:         1000 kB\n"
        "MemAvailable:    2000 kB\nHugePages_Total:       0\n"
    )
    if pid_max is not None:
        (proc / "sys" / "kernel" / "pid_max").write_text(f"{pid_max}\n")
    if threads_max is not None:
        (proc / "sys" / "kernel" / "threads-max").write_text(f"{threads_max}\n")
    if loadavg is not None:
        (proc / "loadavg").write_text(loadavg + "\n")
    if pressure is not None:
        (proc / "pressure").mkdir(exist_ok=True)
        (proc / "pressure" / "memory").write_text(pressure)
    return proc
