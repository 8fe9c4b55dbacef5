"""Real cgroups: a child process allocates a known amount inside a kubepods-style pod cgroup.

Runs on cgroup v1 (memory controller tree) or v2 (memory enabled through subtree_control); skips,
saying why, only when the machine has no writable memory cgroup.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.eviction.summary import ProcessStats
from agent.sources.cgroups import CgroupVersion, detect_layout, detect_version
from agent.sources.collector import SourceConfig, SummaryCollector
from agent.sources.pods import read_pods
from agent.sources.roots import Roots
from kube.cgroups import CgroupDriver

CGROUP_ROOT = Path("/sys/fs/cgroup")
ALLOC = 64 << 20
# Interpreter pages first touched after joining the cgroup, per-CPU charge batching (v1).
SLACK = 40 << 20

CHILD = """
import sys
sys.stdin.readline()              # wait until moved into the pod cgroup
block = b"\\x01" * int(sys.argv[1])  # allocated and written: every page is charged
print("allocated", flush=True)
sys.stdin.readline()
"""


def _memory_hierarchy() -> tuple[Path, bool]:
    """(hierarchy root, is_v2) or skip."""
    try:
        version = detect_version(CGROUP_ROOT)
    except Exception as exc:
        pytest.skip(f"no cgroup filesystem at {CGROUP_ROOT}: {exc}")
    if version is CgroupVersion.V2:
        controllers = (CGROUP_ROOT / "cgroup.controllers").read_text().split()
        if "memory" not in controllers:
            pytest.skip("cgroup v2 without the memory controller")
        return CGROUP_ROOT, True
    return CGROUP_ROOT / "memory", False


def _enable_memory(d: Path) -> None:
    (d / "cgroup.subtree_control").write_text("+memory")


@pytest.fixture
def pod_cgroup() -> Iterator[tuple[str, str, Path]]:
    hierarchy, v2 = _memory_hierarchy()
    parent = f"evagent-test-{uuid.uuid4().hex[:12]}"
    uid = str(uuid.uuid4())
    top = hierarchy / parent
    try:
        top.mkdir()
    except OSError as exc:
        pytest.skip(f"no writable memory cgroup: mkdir {top} failed: {exc.strerror}")
    dirs = [top, top / "kubepods", top / "kubepods" / "burstable"]
    leaf = dirs[-1] / f"pod{uid}"
    try:
        for i, d in enumerate(dirs):
            if i:
                d.mkdir()
            if v2:
                _enable_memory(d)
        leaf.mkdir()
        dirs.append(leaf)
        yield parent, uid, leaf
    finally:
        for d in reversed(dirs):
            for _ in range(50):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.1)


def test_working_set_of_a_real_allocating_process(pod_cgroup: tuple[str, str, Path]) -> None:
    parent, uid, leaf = pod_cgroup
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(ALLOC)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        (leaf / "cgroup.procs").write_text(str(child.pid))
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "allocated"

        col = SummaryCollector(
            SourceConfig(
                roots=Roots(cgroup_root=CGROUP_ROOT),
                cgroup_driver=CgroupDriver.CGROUPFS,
                kubepods_parent=parent,
                node_name="real",
            )
        )
        layout = col.layout
        assert layout is not None
        assert layout.kubepods == f"{parent}/kubepods"
        summary = col.collect()
        [pod] = [p for p in summary.pods if p.pod_ref.uid == uid]
        assert pod.memory is not None
        ws = pod.memory.working_set_bytes
        assert ws is not None
        print(f"pod working set {ws} bytes for a {ALLOC}-byte allocation")
        assert ALLOC <= ws <= ALLOC + SLACK, f"working set {ws} for a {ALLOC}-byte allocation"
        assert pod.process_stats == ProcessStats(1)
        [pods_sc] = summary.node.system_containers
        assert pods_sc.name == "pods" and pods_sc.memory is not None
        assert (pods_sc.memory.working_set_bytes or 0) >= ALLOC
        # The node's working set covers at least this pod.
        assert summary.node.memory is not None
        assert (summary.node.memory.working_set_bytes or 0) >= ALLOC
        assert (summary.node.memory.available_bytes or 0) > 0

        # A node container (kind, kwok, the demo): the node is a cgroup, its limit the capacity.
        top = leaf.parents[2]
        limit = 512 << 20
        limit_file = "memory.max" if (top / "memory.max").exists() else "memory.limit_in_bytes"
        (top / limit_file).write_text(str(limit))
        node = (
            SummaryCollector(
                SourceConfig(
                    roots=Roots(cgroup_root=CGROUP_ROOT),
                    cgroup_driver=CgroupDriver.CGROUPFS,
                    kubepods_parent=parent,
                    node_cgroup=parent,
                )
            )
            .collect(only={"memory"})
            .node.memory
        )
        assert node is not None and node.working_set_bytes is not None
        assert ALLOC <= node.working_set_bytes <= ALLOC + SLACK
        assert node.available_bytes == limit - node.working_set_bytes
    finally:
        child.kill()
        child.wait()

    # The process is gone: the pod cgroup now counts no processes.
    after = detect_layout(CGROUP_ROOT, kubepods_parent=parent, driver=CgroupDriver.CGROUPFS)
    [pod] = [p for p in read_pods(after, time=0.0) if p.pod_ref.uid == uid]
    assert pod.process_stats == ProcessStats(0)


PIDNS_PROBE = """
import json, sys
from pathlib import Path
from agent.sources import Roots, SourceConfig, SummaryCollector
from kube.cgroups import CgroupDriver

col = SummaryCollector(
    SourceConfig(
        roots=Roots(cgroup_root=Path(sys.argv[1])),
        cgroup_driver=CgroupDriver.CGROUPFS,
        kubepods_parent=sys.argv[2],
    )
)
pods = col.collect(only={"pods"}).pods
print(json.dumps({p.pod_ref.uid: p.process_stats.process_count for p in pods}))
"""
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def pid_pod() -> Iterator[tuple[str, str, list[Path]]]:
    """A pod cgroup with one container cgroup, in the memory and the pids hierarchy (v1) or
    in the one tree with both controllers enabled (v2): (parent, pod UID, container dirs)."""
    hierarchy, v2 = _memory_hierarchy()
    if v2:
        controllers = (CGROUP_ROOT / "cgroup.controllers").read_text().split()
        if "pids" not in controllers:
            pytest.skip("cgroup v2 without the pids controller")
        roots = [CGROUP_ROOT]
    else:
        if not (CGROUP_ROOT / "pids").is_dir():
            pytest.skip("cgroup v1 without a pids hierarchy at /sys/fs/cgroup/pids")
        roots = [hierarchy, CGROUP_ROOT / "pids"]
    parent = f"evagent-pidns-{uuid.uuid4().hex[:12]}"
    uid = str(uuid.uuid4())
    rel = [parent, f"{parent}/kubepods", f"{parent}/kubepods/besteffort"]
    rel += [f"{rel[-1]}/pod{uid}", f"{rel[-1]}/pod{uid}/{'ab' * 32}"]
    made: list[Path] = []
    try:
        for root in roots:
            for i, r in enumerate(rel):
                d = root / r
                try:
                    d.mkdir()
                except OSError as exc:
                    pytest.skip(f"no writable cgroup: mkdir {d} failed: {exc.strerror}")
                made.append(d)
                if v2 and i < len(rel) - 1:
                    (d / "cgroup.subtree_control").write_text("+memory +pids")
        yield parent, uid, [root / rel[-1] for root in roots]
    finally:
        for d in reversed(made):
            for _ in range(50):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.1)


def test_process_count_from_another_pid_namespace(pid_pod: tuple[str, str, list[Path]]) -> None:
    """Finding: the DaemonSet runs in a PID namespace of its own, where a cgroup's process
    list hides (v1) or zeroes (v2) the pod's processes. Three processes in a pod's container
    are counted three from the host's namespace and from a new one (`unshare -p -f
    --mount-proc`, what the DaemonSet's namespace looks like)."""
    parent, uid, containers = pid_pod
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")

    def join() -> None:
        for d in containers:
            (d / "cgroup.procs").write_text(str(os.getpid()))

    sleepers = [
        subprocess.Popen(["sleep", "infinity"], preexec_fn=join)  # noqa: PLW1509 - joins first
        for _ in range(3)
    ]
    try:
        argv = [sys.executable, "-c", PIDNS_PROBE, str(CGROUP_ROOT), parent]
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        host = subprocess.run(argv, capture_output=True, text=True, env=env, check=True)
        assert json.loads(host.stdout) == {uid: 3}
        isolated = subprocess.run(
            ["unshare", "-p", "-f", "--mount-proc", *argv],
            check=False,
            capture_output=True,
            text=True,
            env=env,
        )
        if isolated.returncode != 0 and "Operation not permitted" in isolated.stderr:
            pytest.skip(f"unshare -p is not permitted here: {isolated.stderr.strip()}")
        assert isolated.returncode == 0, isolated.stderr
        # the namespace really hides them: v1 lists none, v2 lists each as 0
        seen = subprocess.run(
            ["unshare", "-p", "-f", "--mount-proc", "cat", str(containers[0] / "cgroup.procs")],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        assert seen in ([], ["0", "0", "0"])
        assert json.loads(isolated.stdout) == {uid: 3}
    finally:
        for p in sleepers:
            p.kill()
            p.wait()
