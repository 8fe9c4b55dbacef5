"""The kernel announces memory trouble (v1 thresholds, v2 memory.events): the agent syncs at once.

Against the real kernel: a memory cgroup made for the test under ``/sys/fs/cgroup/memory``, a
child process that joins it and allocates. Skipped, saying why, only where no writable cgroup v1
memory controller exists (cgroup v2 hosts, not root). The end-to-end test runs the daemon with a
1 h housekeeping interval and no fast check, so only the kernel's eventfd can make it evict.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

import pytest

import kubesim
from agent.config import load_config
from agent.daemon import Agent
from agent.sources.memcg import (
    MemoryEventsWatch,
    MemoryThreshold,
    read_inactive_file,
    read_memory_events,
    usage_threshold,
)
from tests.support.cgroupfs import FakeCgroup, build_cgroup_tree, build_proc_tree
from tests.support.fakenode import pod
from tests.support.memcg import allocate_in, needs_v1
from tests.support.wait import until

MIB = 1 << 20


def test_usage_threshold_is_the_kubelets() -> None:
    # available < 200Mi of 640Mi, with 30Mi inactive file pages: usage > 470Mi
    assert usage_threshold(capacity=640 * MIB, available=200 * MIB, inactive_file=30 * MIB) == (
        470 * MIB
    )
    assert usage_threshold(capacity=100, available=200, inactive_file=0) == 0


async def test_refused_where_the_kernel_has_no_memory_events(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "memory.usage_in_bytes").write_text("0\n")
    fired: list[int] = []
    notifier = MemoryThreshold(tmp_path, lambda: fired.append(1))
    with caplog.at_level(logging.INFO):
        assert notifier.update(100 * MIB) is False
    assert notifier.refused is not None and "event_control" in notifier.refused
    assert not notifier.armed
    assert "polling instead" in caplog.text
    assert notifier.update(200 * MIB) is False  # asked once, not on every sync
    assert read_inactive_file(tmp_path) is None


@needs_v1
async def test_the_kernel_signals_the_crossing(node_cgroup: Path) -> None:
    fired: list[float] = []
    notifier = MemoryThreshold(node_cgroup, lambda: fired.append(time.monotonic()))
    base = int((node_cgroup / "memory.usage_in_bytes").read_text())
    try:
        assert notifier.update(base + 48 * MIB)
        assert notifier.armed
        assert notifier.update(base + 48 * MIB + 4096)  # moved < 1 MiB: kept as it is
        child = allocate_in(node_cgroup, 10)  # 80 MiB in 8 MiB steps
        try:
            await until(lambda: bool(fired))
            usage = int((node_cgroup / "memory.usage_in_bytes").read_text())
            assert usage >= base + 48 * MIB
            assert usage < base + 200 * MIB  # heard while growing, not after the fact
        finally:
            child.kill()
            child.wait()
        assert notifier.crossings >= 1
    finally:
        notifier.close()
    assert not notifier.armed


@needs_v1
async def test_agent_evicts_on_the_kernels_signal_alone(node_cgroup: Path) -> None:
    state = (
        "apiVersion: v1\nkind: Node\nmetadata: {name: node-1}\n"
        'status: {capacity: {cpu: "4", memory: 256Mi, pods: "110"}}\n---\n' + pod("hog")
    )
    async with kubesim.serve(state=state, time_scale=0.01) as sim:
        uid = (sim.get("Pod", "default", "hog") or {})["metadata"]["uid"]
        pod_cgroup = node_cgroup / "kubepods" / "besteffort" / f"pod{uid}"
        pod_cgroup.mkdir(parents=True)
        cfg = load_config(
            {
                "nodeName": "node-1",
                "cgroupRoot": "/sys/fs/cgroup",
                "nodeCgroup": node_cgroup.name,
                "memoryCapacity": "256Mi",
                "evictionHard": {"memory.available": "200Mi"},
                "housekeepingInterval": "1h",  # no interval sync during the test
                "enforceNodeAllocatable": ["none"],
                "listen": "127.0.0.1:0",
            }
        )
        api = sim.api_client()
        agent = Agent(
            cfg, api_client=api, use_psi=False, serve_http=False, fast_check_interval=3600
        )
        child = None
        try:
            await agent.start()
            watches = agent.memory_watches
            await until(lambda: agent.loop.stats.syncs >= 1 and bool(watches.thresholds))
            [notifier] = watches.thresholds.values()
            await until(lambda: notifier.armed)
            child = allocate_in(pod_cgroup, 12)  # 96 MiB: well past 56 MiB of working set
            # the allocation, the kernel's event and the eviction take ~0.1 s on an idle machine;
            # a generous bound for a loaded one (the suite runs in parallel workers)
            await until(
                lambda: any(
                    r.name == "hog" for r in sim.requests.filter(verb="delete", resource="pods")
                ),
                timeout=30,
            )
            assert notifier.crossings >= 1
            assert agent.loop.stats.syncs >= 2  # the first sync, then the one the kernel woke
            triggers = agent.metrics.registry.get_sample_value(
                "eviction_agent_syncs_total", {"trigger": "memcg"}
            )
            assert triggers is not None and triggers >= 1
        finally:
            if child is not None:
                child.kill()
                child.wait()
            await agent.stop()
            await api.close()
        assert not agent.memory_watches.thresholds  # closed with the agent


EVENTS = "low 0\nhigh 0\nmax {max}\noom 0\noom_kill 0\noom_group_kill 0\n"


async def test_memory_events_watch_fires_when_the_limit_is_reached(tmp_path: Path) -> None:
    """cgroup v2: the kernel's file-modified event on memory.events, through inotify (a regular
    file raises the same IN_MODIFY when written, so the watch is tested on one here)."""
    events = tmp_path / "memory.events"
    events.write_text(EVENTS.format(max=0))
    fired: list[int] = []
    watch = MemoryEventsWatch(events, lambda: fired.append(1))
    try:
        assert watch.start()
        events.write_text(EVENTS.format(max=0).replace("low 0", "low 7"))
        await asyncio.sleep(0.05)
        assert fired == []  # memory.low protection is not trouble
        events.write_text(EVENTS.format(max=3))
        await until(lambda: fired == [1])
        assert watch.counts["max"] == 3
    finally:
        watch.close()
    assert not watch.watching


async def test_memory_events_watch_refused_without_the_file(tmp_path: Path) -> None:
    watch = MemoryEventsWatch(tmp_path / "absent" / "memory.events", lambda: None)
    assert watch.start() is False
    assert watch.refused is not None
    assert read_memory_events(tmp_path / "absent") == {}


async def test_agent_on_cgroup_v2_syncs_when_kubepods_reaches_its_limit(tmp_path: Path) -> None:
    cg = build_cgroup_tree(
        tmp_path,
        version="v2",
        driver="cgroupfs",
        root=FakeCgroup(usage=100 * MIB),
        kubepods=FakeCgroup(usage=50 * MIB, limit=900 * MIB),
        pods=[],
    )
    # the cgroup's own events: memory.events counts every descendant's since Linux 5.2
    kubepods_events = cg / "kubepods" / "memory.events.local"
    kubepods_events.write_text(EVENTS.format(max=0))
    state = (
        "apiVersion: v1\nkind: Node\nmetadata: {name: node-1}\n"
        'status: {capacity: {cpu: "4", memory: 1Gi, pods: "110"}}\n'
    )
    async with kubesim.serve(state=state, time_scale=0.01) as sim:
        cfg = load_config(
            {
                "nodeName": "node-1",
                "cgroupRoot": str(cg),
                "procRoot": str(build_proc_tree(tmp_path)),
                "kubeletRoot": str(tmp_path),
                "runtimeRoot": str(tmp_path),
                "memoryCapacity": "1Gi",
                "evictionHard": {"memory.available": "100Mi"},
                "housekeepingInterval": "1h",
            }
        )
        api = sim.api_client()
        agent = Agent(
            cfg,
            api_client=api,
            use_psi=False,
            serve_http=False,
            fast_check_interval=3600,
            usage_watch=False,
        )
        try:
            await agent.start()
            await until(lambda: str(kubepods_events) in agent.memory_watches.events)
            syncs = agent.loop.stats.syncs
            kubepods_events.write_text(EVENTS.format(max=1))
            await until(lambda: agent.loop.stats.syncs > syncs)
            woken = agent.metrics.registry.get_sample_value(
                "eviction_agent_syncs_total", {"trigger": "memcg"}
            )
            assert woken == 1
        finally:
            await agent.stop()
            await api.close()


def test_a_threshold_already_passed_is_armed_just_above_the_usage() -> None:
    """v1 thresholds fire on crossings: past the line with no pressure found yet, the next
    growth must still wake the agent."""
    from agent.sources.memcg import arm_at

    mib = 1 << 20
    assert arm_at(threshold=56 * mib, usage=40 * mib) == 56 * mib
    assert arm_at(threshold=56 * mib, usage=None) == 56 * mib
    assert arm_at(threshold=56 * mib, usage=60 * mib) == 61 * mib
    assert arm_at(threshold=56 * mib, usage=56 * mib) == 57 * mib
