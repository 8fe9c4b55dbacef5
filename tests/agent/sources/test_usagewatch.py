"""The usage watch: a crossing the kernel does not announce is seen within a poll of the line.

The pacing is pure and checked as properties; the thread is tested on a regular file (``pread``
reads it as it reads a cgroup counter) and on a real cgroup v1 memory counter where the host has
one; the agent end to end on a cgroup v2 tree of files (this host's kernel mounts v1 only; the
guest-kernel suite, tests/node, runs it on real v2). Every agent test uses a 1 h housekeeping
interval and no fast check, so only the watch can start the sync that evicts.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import kubesim
from agent.config import AgentConfig, load_config
from agent.daemon import Agent
from agent.sources.usagewatch import (
    MAX_DELAY,
    MIN_DELAY,
    PEAK_RATE,
    UsageWatch,
    poll_delay,
    translate_line,
)
from tests.support.cgroupfs import FakeCgroup, FakePod, build_cgroup_tree, build_proc_tree
from tests.support.fakenode import pod
from tests.support.memcg import allocate_in, needs_v1
from tests.support.wait import until

MIB = 1 << 20
gaps = st.integers(min_value=-(1 << 40), max_value=1 << 44)


# --- pacing --------------------------------------------------------------------------------


@given(gaps)
def test_the_delay_stays_within_its_bounds(gap: int) -> None:
    assert MIN_DELAY <= poll_delay(gap) <= MAX_DELAY


@given(gaps, gaps)
def test_a_nearer_line_is_read_at_least_as_often(a: int, b: int) -> None:
    near, far = sorted((a, b))
    assert poll_delay(near) <= poll_delay(far)


@given(st.integers(min_value=0, max_value=1 << 44), st.floats(min_value=0, max_value=PEAK_RATE))
def test_no_ramp_up_to_the_peak_passes_the_line_by_more_than_the_shortest_delay(
    gap: int, rate: float
) -> None:
    """Usage growing at any rate up to the peak cannot be further past the line at the next
    read than that rate covers in the shortest delay: the crossing is seen within ~2 ms."""
    grown = rate * poll_delay(gap)
    assert grown - gap <= rate * MIN_DELAY + 1e-6


@given(
    st.integers(min_value=0, max_value=1 << 40),
    st.integers(min_value=0, max_value=1 << 40),
    st.integers(min_value=0, max_value=1 << 40),
    st.integers(min_value=0, max_value=1 << 40),
)
def test_a_translated_line_is_crossed_with_the_cgroups(
    line: int, rest: int, watched: int, later: int
) -> None:
    """While the usage outside the watched cgroup stays the same, the watched counter reaches
    the translated line exactly when the other cgroup reaches its own."""
    translated = translate_line(line, cgroup_usage=watched + rest, watched_usage=watched)
    assert (later >= translated) == (later + rest >= line)


# --- the thread ----------------------------------------------------------------------------


def _write(fd: int, value: int) -> None:
    os.pwrite(fd, f"{value:020d}\n".encode(), 0)  # fixed width: a reader sees old or new


async def test_the_watch_fires_once_per_crossing_and_waits_to_be_armed_again(
    tmp_path: Path,
) -> None:
    counter = tmp_path / "memory.current"
    counter.write_text(f"{100 * MIB:020d}\n")
    fd = os.open(counter, os.O_WRONLY)
    fired: list[int] = []
    watch = UsageWatch(counter, lambda: fired.append(1))
    try:
        assert watch.start()
        watch.arm(200 * MIB)
        await until(lambda: watch.polls >= 3, step=0.005)
        assert fired == []
        _write(fd, 250 * MIB)
        await until(lambda: fired == [1], step=0.005)
        assert watch.line is None  # disarmed: one wake per crossing
        polls = watch.polls
        await asyncio.sleep(0.05)
        assert fired == [1]
        assert watch.polls == polls  # nothing read while disarmed
        watch.arm(300 * MIB)
        await until(lambda: watch.polls > polls, step=0.005)
        assert fired == [1]
        _write(fd, 301 * MIB)
        await until(lambda: fired == [1, 1], step=0.005)
        assert watch.crossings == 2
    finally:
        watch.close()
        os.close(fd)
    assert not watch.running


async def test_far_from_the_line_the_watch_reads_at_its_slowest(tmp_path: Path) -> None:
    counter = tmp_path / "memory.current"
    counter.write_text(f"{MIB}\n")
    watch = UsageWatch(counter, lambda: None, max_delay=0.05)
    try:
        assert watch.start()
        watch.arm(1 << 40)  # a TiB away: the slowest pace
        started = time.monotonic()
        await until(lambda: watch.polls >= 4, step=0.005)
        assert time.monotonic() - started >= 3 * 0.05 * 0.9
    finally:
        watch.close()


async def test_a_counter_that_cannot_be_read_is_refused_once(tmp_path: Path) -> None:
    watch = UsageWatch(tmp_path / "absent" / "memory.current", lambda: None)
    assert watch.start() is False
    assert watch.refused is not None and "FileNotFoundError" in watch.refused
    assert not watch.running


@needs_v1
async def test_a_real_memory_counter_is_heard_while_growing(node_cgroup: Path) -> None:
    """cgroup v1's memory.usage_in_bytes is a kernfs seq file: pread at 0 reads it afresh."""
    counter = node_cgroup / "memory.usage_in_bytes"
    base = int(counter.read_text())
    fired: list[float] = []
    watch = UsageWatch(counter, lambda: fired.append(time.monotonic()))
    try:
        assert watch.start()
        watch.arm(base + 48 * MIB)
        child = allocate_in(node_cgroup, 10)  # 80 MiB in 8 MiB steps
        try:
            await until(lambda: bool(fired), step=0.005)
            usage = int(counter.read_text())
            assert base + 48 * MIB <= usage < base + 200 * MIB
        finally:
            child.kill()
            child.wait()
    finally:
        watch.close()


UNPRIVILEGED = """
import asyncio, os, sys
from pathlib import Path
from agent.sources.memcg import MemoryThreshold
from agent.sources.usagewatch import UsageWatch

cgroup, line = Path(sys.argv[1]), int(sys.argv[2])
os.setgroups([]); os.setgid(65534); os.setuid(65534)  # every capability goes with uid 0
status = Path("/proc/self/status").read_text()
assert "CapEff:\t0000000000000000" in status, status


async def main():
    kernel = MemoryThreshold(cgroup, lambda: None)
    assert not kernel.update(line), "a threshold registered without privilege"
    fired = asyncio.Event()
    watch = UsageWatch(cgroup / "memory.usage_in_bytes", fired.set)
    assert watch.start(), watch.refused
    watch.arm(line)
    print("armed;", kernel.refused, flush=True)
    await asyncio.wait_for(fired.wait(), 60)
    watch.close()
    print("crossed", flush=True)


asyncio.run(main())
"""


@needs_v1
async def test_without_privilege_the_watch_hears_what_the_kernel_will_not_announce(
    node_cgroup: Path,
) -> None:
    """What the systemd unit (DynamicUser, no CAP_DAC_OVERRIDE) and the DaemonSet (uid 65534)
    have: cgroup.event_control is refused, the usage counter is readable and the watch hears
    a real allocation cross the line."""
    import subprocess
    import sys

    base = int((node_cgroup / "memory.usage_in_bytes").read_text())
    probe = subprocess.Popen(
        [sys.executable, "-c", UNPRIVILEGED, str(node_cgroup), str(base + 48 * MIB)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[3],
    )
    child = None
    try:
        assert probe.stdout is not None
        armed = probe.stdout.readline()
        assert armed.startswith("armed;") and "PermissionError" in armed, probe.stderr.read()
        child = allocate_in(node_cgroup, 10)  # 80 MiB in 8 MiB steps
        assert probe.stdout.readline().strip() == "crossed", probe.stderr.read()
        assert probe.wait(30) == 0
    finally:
        for proc in (probe, child):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()


# --- the agent -----------------------------------------------------------------------------

NODE = (
    "apiVersion: v1\nkind: Node\nmetadata: {name: node-1}\n"
    'status: {capacity: {cpu: "4", memory: 1Gi, pods: "110"}}\n'
)


def _agent_config(cg: Path, tmp_path: Path) -> AgentConfig:
    return load_config(
        {
            "nodeName": "node-1",
            "cgroupRoot": str(cg),
            "procRoot": str(build_proc_tree(tmp_path)),
            "kubeletRoot": str(tmp_path),
            "runtimeRoot": str(tmp_path),
            "memoryCapacity": "1Gi",
            "evictionHard": {"memory.available": "100Mi"},
            "housekeepingInterval": "1h",  # only the watch can start the sync that evicts
            "listen": "127.0.0.1:0",
        }
    )


def _grow(cg: Path, pod_rel: str, *, root_anon: int, kubepods: int) -> None:
    """A pod's growth as the v2 files show it: the root's memory.stat, kubepods' and the pod's
    memory.current."""
    stat = cg / "memory.stat"
    stat.write_text(stat.read_text().replace("anon ", f"anon {root_anon}\nold_anon ", 1))
    (cg / "kubepods" / "memory.current").write_text(f"{kubepods}\n")
    (cg / pod_rel / "memory.current").write_text(f"{kubepods}\n")


async def _evicted(sim: kubesim.Simulator, name: str) -> bool:
    return any(r.name == name for r in sim.requests.filter(verb="delete", resource="pods"))


@pytest.mark.parametrize(
    "kubepods_later", [False, True], ids=["kubepods-at-start", "kubepods-later"]
)
async def test_the_agent_on_cgroup_v2_evicts_on_the_watch_alone(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, kubepods_later: bool
) -> None:
    """cgroup v2 announces no usage crossing: the watch on kubepods' memory.current wakes the
    loop, and the sync evicts. With kubepods created after the agent started (the kubelet
    came up later), the watch starts on it at the next sync."""
    async with kubesim.serve(state=NODE + "---\n" + pod("hog"), time_scale=0.01) as sim:
        uid = (sim.get("Pod", "default", "hog") or {})["metadata"]["uid"]

        def tree() -> Path:
            return build_cgroup_tree(
                tmp_path,
                version="v2",
                driver="cgroupfs",
                root=FakeCgroup(usage=100 * MIB, anon=100 * MIB),
                kubepods=FakeCgroup(usage=50 * MIB),
                pods=[FakePod(uid, "besteffort", FakeCgroup(usage=40 * MIB))],
            )

        if kubepods_later:
            cg = tmp_path / "cgroup"
            cg.mkdir()
            (cg / "cgroup.controllers").write_text("memory pids\n")
            (cg / "memory.stat").write_text(f"anon {100 * MIB}\nfile 0\ninactive_file 0\n")
        else:
            cg = tree()
        api = sim.api_client()
        agent = Agent(
            _agent_config(cg, tmp_path),
            api_client=api,
            use_psi=False,
            serve_http=False,
            fast_check_interval=3600,
        )
        try:
            with caplog.at_level(logging.INFO):
                await agent.start()
                await until(lambda: agent.loop.stats.syncs >= 1, step=0.005)
                if kubepods_later:
                    assert agent.memory_watches.usage is None  # the v2 root has no counter
                    tree()
                    agent.loop.wake("interval")  # the next sync (1 s in production)
                watches = agent.memory_watches
                await until(
                    lambda: watches.usage is not None and watches.usage.line is not None, step=0.005
                )
                assert watches.usage is not None
                assert watches.usage.path == cg / "kubepods" / "memory.current"
                # 1Gi − 100Mi = 924 MiB of node working set; 50 MiB of it outside kubepods
                assert watches.usage.line == (924 - 50) * MIB
                syncs = agent.loop.stats.syncs
                _grow(cg, f"kubepods/besteffort/pod{uid}", root_anon=990 * MIB, kubepods=940 * MIB)
                await until(
                    lambda: any(
                        r.name == "hog" for r in sim.requests.filter(verb="delete", resource="pods")
                    ),
                    step=0.005,
                )
            assert agent.loop.stats.syncs > syncs
            woken = agent.metrics.registry.get_sample_value(
                "eviction_agent_syncs_total", {"trigger": "usage"}
            )
            assert woken is not None and woken >= 1
            target = str(cg / "kubepods" / "memory.current")
            polled = agent.metrics.registry.get_sample_value(
                "eviction_agent_wake_source",
                {"source": "usage-watch", "target": target, "mode": "polled"},
            )
            assert polled == 1
            lines = [r for r in caplog.records if r.getMessage() == "wake sources"]
            assert lines and any(target in s for s in lines[-1].sources)  # type: ignore[attr-defined]
        finally:
            await agent.stop()
            await api.close()
        assert agent.memory_watches.usage is None  # the thread is gone with the agent


async def test_wake_sources_are_logged_once_until_they_change(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cg = build_cgroup_tree(
        tmp_path,
        version="v2",
        driver="cgroupfs",
        root=FakeCgroup(usage=100 * MIB, anon=100 * MIB),
        kubepods=FakeCgroup(usage=50 * MIB),
        pods=[],
    )
    cfg = load_config(
        {
            "nodeName": "node-1",
            "cgroupRoot": str(cg),
            "procRoot": str(build_proc_tree(tmp_path)),
            "kubeletRoot": str(tmp_path),
            "runtimeRoot": str(tmp_path),
            "memoryCapacity": "1Gi",
            "evictionHard": {"memory.available": "100Mi"},
            "housekeepingInterval": "20ms",
        }
    )
    async with kubesim.serve(state=NODE, time_scale=0.01) as sim:
        api = sim.api_client()
        agent = Agent(cfg, api_client=api, use_psi=False, serve_http=False)
        try:
            with caplog.at_level(logging.INFO, logger="agent.daemon"):
                await agent.start()
                await until(lambda: agent.loop.stats.syncs >= 10, step=0.005)
                events = cg / "kubepods" / "memory.events.local"
                events.write_text("low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n")
                syncs = agent.loop.stats.syncs
                await until(lambda: agent.loop.stats.syncs >= syncs + 10, step=0.005)
            first, second = [r for r in caplog.records if r.getMessage() == "wake sources"]
            before = {s.split(":")[0] for s in first.sources}  # type: ignore[attr-defined]
            assert before == {
                "fast-check node memory",
                "interval full sync",
                f"usage-watch {cg / 'kubepods' / 'memory.current'}",
            }
            after = {s.split(":")[0] for s in second.sources}  # type: ignore[attr-defined]
            assert after == before | {f"memory-events {events}"}
        finally:
            await agent.stop()
            await api.close()
