"""``make demo`` end to end, shortened: real processes on node-1, the agent as a daemon, kubesim.

Asserts what the demo is for: evictions happen in the kubelet's order (pods above their memory
request before pods within it, lower priority first), the ReplicaSets replace the evicted pods
and the scheduler places them elsewhere or leaves them Pending with a reason, and nothing is left
running — no allocator process, no cgroup. With real cgroups where a memory cgroup is writable
(skipped, saying why, elsewhere), and always with the psutil fallback the demo uses without them.
Reaction times are measured by ``bench/agent_reaction.py``, not asserted here.
"""

from __future__ import annotations

import contextlib
import json
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest

from agent.timeline import read_timeline, timeline_files
from kubesim.node.runtime import ProcessRuntime, RuntimeMode

ROOT = Path(__file__).resolve().parents[2]
# lowest first: the order in which the demo cluster's pods must go
PRIORITY = {"scratch": 0, "ingest": 1000, "cache": 10000, "frontend": 100000}


def run_demo(tmp_path: Path, *extra: str) -> dict[str, Any]:
    """The demo until it ends by itself — no pod on node-1 above its request, every evicted
    pod's replacement placed or Pending (~35 s) — with --duration only a generous deadline: a
    run cut short on a loaded machine would leave its last eviction without a replacement."""
    summary = tmp_path / "summary.json"
    argv = [sys.executable, str(ROOT / "examples" / "demo.py"), "--ui", "plain"]
    argv += ["--summary-json", str(summary), "--duration", "240", *extra]
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Summary (" in done.stdout
    report: dict[str, Any] = json.loads(summary.read_text())
    assert report["ended_by"].startswith("no pod on node-1 above its memory request"), report
    return report


def check(report: dict[str, Any], *, at_least: int) -> None:
    evictions = report["evictions"]
    assert len(evictions) >= at_least, report
    apps = [e["pod"].split("/")[1].rsplit("-", 2)[0] for e in evictions]
    assert "frontend" not in apps  # within its request, highest priority
    assert apps == sorted(apps, key=PRIORITY.__getitem__), apps
    assert apps[0] == "scratch"
    for e in evictions:
        assert "The node was low on resource: memory." in e["message"]
        assert e["replacement"] and e["replacement"] != e["pod"]
        assert e["replacement_node"] not in (None, report["node"]) or e["replacement_pending"]
    ingest = [e for e in evictions if "/ingest-" in e["pod"]]
    if ingest and ingest[0]["replacement_node"] is None:
        assert "Insufficient cpu" in ingest[0]["replacement_pending"]
    assert report["leftover_processes"] == []
    assert report["pids"]
    for pid in report["pids"]:
        with contextlib.suppress(psutil.NoSuchProcess, psutil.ZombieProcess):
            assert "kubesim.node.memory_grower" not in " ".join(psutil.Process(pid).cmdline())


@pytest.mark.long
async def test_demo_with_cgroups(tmp_path: Path) -> None:
    probe = ProcessRuntime(prefix="kubesimprobe")
    try:
        if probe.mode is RuntimeMode.PROCESS:
            pytest.skip(f"no writable memory cgroup on this machine: {probe.mode_reason}")
    finally:
        await probe.close()
    report = run_demo(tmp_path)
    assert report["mode"].startswith("cgroup-")
    check(report, at_least=2)
    assert report["cgroup_removed"] is True and not Path(report["cgroup"]).exists()


@pytest.mark.long
def test_demo_without_cgroups_plots_the_agents_timeline(tmp_path: Path) -> None:
    timelines = tmp_path / "timelines"
    argv = ["--no-cgroups", "--plot", "incident.png"]
    report = run_demo(tmp_path, *argv, "--timeline-dir", str(timelines))
    assert report["mode"] == "process"
    check(report, at_least=1)
    # the picture is the agent's own incident file, drawn with one marker per eviction
    [path] = timeline_files(timelines)
    timeline = read_timeline(path)
    evicted = [e.pod for e in timeline.evictions if e.result == "evicted"]
    assert evicted == [e["pod"] for e in report["evictions"]]
    assert (tmp_path / "incident.png").read_bytes()[:4] == b"\x89PNG"


def test_demo_rejects_bad_flags(tmp_path: Path) -> None:
    argv = [sys.executable, str(ROOT / "examples" / "demo.py"), "--eviction-hard", "nodefs<1"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert "--eviction-hard nodefs<1: must be memory.available<QUANTITY" in done.stderr
    assert "Traceback" not in done.stderr


def test_ctrl_c_stops_everything(tmp_path: Path) -> None:
    argv = [sys.executable, str(ROOT / "examples" / "demo.py"), "--ui", "plain"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    lines: list[str] = []
    pids: list[int] = []
    try:
        # Interrupt once the agent runs and all four pods' processes have started.
        for line in proc.stdout:
            lines.append(line)
            pids += [int(p) for p in re.findall(r"pid (\d+)", line)]
            if len(pids) >= 4 and any("eviction-agent started" in seen for seen in lines):
                break
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, "".join(lines) + rest
    assert "Interrupted." in rest and "Traceback" not in rest
    assert len(pids) == 4, lines
    for pid in pids:
        with contextlib.suppress(psutil.NoSuchProcess, psutil.ZombieProcess):
            assert "kubesim.node.memory_grower" not in " ".join(psutil.Process(pid).cmdline())
    sub_root = re.search(r"node cgroup (\S+)", "".join(lines))
    if sub_root is not None:  # cgroup mode: the node's cgroups are gone
        assert not Path(sub_root.group(1)).exists()
