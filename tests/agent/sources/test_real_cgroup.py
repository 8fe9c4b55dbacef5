"""Real cgroups: a child process allocates a known amount inside a kubepods-style pod cgroup.

Runs on cgroup v1 (memory controller tree) or v2 (memory enabled through subtree_control); skips,
saying why, only when the machine has no writable memory cgroup.
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.sources.cgroups import CgroupDriver, CgroupVersion, detect_layout, detect_version
from agent.sources.pods import read_pods
from agent.sources.roots import Roots
from agent.sources.summary import SourceConfig, SummaryCollector

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
        [pod] = [p for p in summary["pods"] if p["podRef"]["uid"] == uid]
        ws = pod["memory"]["workingSetBytes"]
        print(f"pod working set {ws} bytes for a {ALLOC}-byte allocation")
        assert ALLOC <= ws <= ALLOC + SLACK, f"working set {ws} for a {ALLOC}-byte allocation"
        assert pod["process_stats"] == {"process_count": 1}
        [pods_sc] = summary["node"]["systemContainers"]
        assert pods_sc["name"] == "pods"
        assert pods_sc["memory"]["workingSetBytes"] >= ALLOC
        # The node's working set covers at least this pod.
        assert summary["node"]["memory"]["workingSetBytes"] >= ALLOC
        assert summary["node"]["memory"]["availableBytes"] > 0
    finally:
        child.kill()
        child.wait()

    # The process is gone: the pod cgroup now counts no processes.
    after = detect_layout(CGROUP_ROOT, kubepods_parent=parent, driver=CgroupDriver.CGROUPFS)
    [pod] = [p for p in read_pods(after, time="t") if p["podRef"]["uid"] == uid]
    assert pod["process_stats"] == {"process_count": 0}
