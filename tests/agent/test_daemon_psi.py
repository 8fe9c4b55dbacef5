"""The daemon wakes on memory pressure of the kubepods cgroup, not only on the node's.

``/proc/pressure/memory`` is host-wide (and the host's, in a kind/kwok node container); the
kubepods cgroup's ``memory.pressure`` counts the pods' stalls. Fixture cgroup trees stand in for
the kernel's files; triggers cannot be armed on them, so the monitors poll (the kernel's rule at
a coarser step) — the wiring under test is the same.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import kubesim
from agent.config import load_config
from agent.daemon import Agent
from agent.metrics import AgentMetrics
from kubesim.sim import Simulator
from tests.support.fakenode import NODES, FakeNode, pod
from tests.support.wait import until


def psi(total_us: int) -> str:
    return (
        f"some avg10=0.00 avg60=0.00 avg300=0.00 total={total_us}\n"
        f"full avg10=0.00 avg60=0.00 avg300=0.00 total={total_us // 2}\n"
    )


def v2_tree(root: Path, *, kubepods: str = "kubepods.slice", pressure: bool = True) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "cgroup.controllers").write_text("cpu memory pids\n")
    (root / kubepods).mkdir()
    if pressure:
        (root / kubepods / "memory.pressure").write_text(psi(0))
    return root / kubepods


def agent_for(tmp: Path, cgroup_root: Path, *, proc_root: Path | None = None) -> Agent:
    proc = proc_root or tmp / "proc"
    proc.mkdir(exist_ok=True)
    cfg = load_config(
        {
            "nodeName": "node-1",
            "cgroupRoot": str(cgroup_root),
            "procRoot": str(proc),
            "evictionHard": {"memory.available": "100Mi"},
        }
    )
    return Agent(cfg, api_client=None, serve_http=False)  # type: ignore[arg-type]


def test_kubepods_pressure_file_on_cgroup_v2(tmp_path: Path) -> None:
    kubepods = v2_tree(tmp_path / "cg")
    proc = tmp_path / "proc"
    (proc / "pressure").mkdir(parents=True)
    (proc / "pressure" / "memory").write_text(psi(0))
    agent = agent_for(tmp_path, tmp_path / "cg", proc_root=proc)
    assert agent.psi_paths() == [proc / "pressure" / "memory", kubepods / "memory.pressure"]


def test_hybrid_host_uses_the_unified_tree(tmp_path: Path) -> None:
    root = tmp_path / "cg"
    (root / "memory" / "kubepods").mkdir(parents=True)
    (root / "unified").mkdir(parents=True)
    (root / "unified" / "cgroup.controllers").write_text("")
    (root / "unified" / "kubepods").mkdir()
    (root / "unified" / "kubepods" / "memory.pressure").write_text(psi(0))
    agent = agent_for(tmp_path, root)
    assert agent.psi_paths() == [root / "unified" / "kubepods" / "memory.pressure"]


def test_no_per_cgroup_file_on_v1_or_without_kubepods_psi(tmp_path: Path) -> None:
    v1 = tmp_path / "v1"
    (v1 / "memory" / "kubepods").mkdir(parents=True)
    assert agent_for(tmp_path, v1).psi_paths() == []
    v2_tree(tmp_path / "v2", pressure=False)  # PSI disabled (psi=0 on the kernel command line)
    assert agent_for(tmp_path, tmp_path / "v2").psi_paths() == []
    assert agent_for(tmp_path, tmp_path / "missing").psi_paths() == []


STATE = "\n---\n".join([NODES, pod("a", priority=0, request="100Mi")])


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    async with kubesim.serve(state=STATE, time_scale=0.01, bookmark_interval=0.2) as s:
        yield s


async def test_kubepods_memory_pressure_wakes_a_sync(sim: Simulator, tmp_path: Path) -> None:
    kubepods = v2_tree(tmp_path / "cg")
    fake = FakeNode(sim, usage={"default/a": 10 << 20})
    metrics = AgentMetrics()
    cfg = load_config(
        {
            "nodeName": "node-1",
            "cgroupRoot": str(tmp_path / "cg"),
            "procRoot": str(tmp_path),  # no pressure/ here: only the kubepods file
            "housekeepingInterval": "1h",  # so only a PSI wake-up can sync again
            "evictionHard": {"memory.available": "100Mi"},
        }
    )
    api = sim.api_client()
    agent = Agent(
        cfg,
        api_client=api,
        stats=fake.get_summary,
        metrics=metrics,
        serve_http=False,
        psi_triggers=False,
        psi_poll_interval=0.05,
    )

    def syncs(trigger: str) -> float:
        return metrics.syncs.labels(trigger)._value.get()

    await agent.start()
    try:
        assert [m.path for m in agent._psi] == [kubepods / "memory.pressure"]
        await until(lambda: agent.loop.stats.syncs >= 1)
        await asyncio.sleep(0.3)
        assert syncs("psi") == 0  # no stall yet: no wake-up
        # pods stalled 150 ms on memory: over the 100 ms / 1 s budget
        (kubepods / "memory.pressure").write_text(psi(150_000))
        await until(lambda: syncs("psi") >= 1, timeout=5)
    finally:
        await agent.stop()
        await api.close()
    assert agent._psi == []


async def test_kubepods_created_after_start_is_armed_and_a_removed_one_dropped(
    sim: Simulator, tmp_path: Path
) -> None:
    root = tmp_path / "cg"
    root.mkdir()
    (root / "cgroup.controllers").write_text("memory\n")  # v2, no kubepods yet
    fake = FakeNode(sim, usage={"default/a": 10 << 20})
    cfg = load_config(
        {
            "nodeName": "node-1",
            "cgroupRoot": str(root),
            "procRoot": str(tmp_path),
            "evictionHard": {"memory.available": "100Mi"},
        }
    )
    api = sim.api_client()
    agent = Agent(
        cfg,
        api_client=api,
        stats=fake.get_summary,
        serve_http=False,
        psi_triggers=False,
        psi_poll_interval=0.05,
        psi_rescan_interval=0.05,
    )
    await agent.start()
    try:
        assert agent._psi == []
        (root / "kubepods").mkdir()
        (root / "kubepods" / "memory.pressure").write_text(psi(0))
        await until(lambda: [m.path for m in agent._psi] == [root / "kubepods" / "memory.pressure"])
        (root / "kubepods" / "memory.pressure").unlink()  # the cgroup went away
        (root / "kubepods").rmdir()
        await until(lambda: agent._psi == [])
    finally:
        await agent.stop()
        await api.close()
