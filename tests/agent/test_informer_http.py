"""Pod informer (410 relist, malformed pods skipped) and the HTTP surface / JSON logs."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

import kubesim
from agent.config import load_config
from agent.daemon import Agent
from agent.informer import PodInformer
from agent.logs import JsonFormatter
from evictor.api.watching import parse_event
from kubesim.sim import Simulator
from tests.support.fakenode import MI, NODES, FakeNode, pod
from tests.support.wait import until

STATE = "\n---\n".join([NODES, pod("a", request="10Mi"), pod("x", node="node-2")])


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    async with kubesim.serve(state=STATE, time_scale=0.01, bookmark_interval=0.2) as s:
        yield s


async def test_informer_lists_only_this_node_and_follows_changes(sim: Simulator) -> None:
    api = sim.api_client()
    informer = PodInformer(api, "node-1")
    task = asyncio.create_task(informer.run())
    try:
        await asyncio.wait_for(informer.synced.wait(), 5)
        assert {e.pod.name for e in informer.pods.values()} == {"a"}
        assert sim.requests.filter(verb="list", resource="pods")[0].query["fieldSelector"] == [
            "spec.nodeName=node-1"
        ]
        sim.apply(pod("b"))
        await until(lambda: len(informer.active_pods()) == 2)
        uid = next(e.pod.uid for e in informer.pods.values() if e.pod.name == "a")
        assert informer.lookup(uid) is not None
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await api.close()


STATIC_UID = "0123456789abcdef0123456789abcdef"


async def test_a_static_pods_cgroup_is_named_and_ranked_as_its_mirror_pod(
    sim: Simulator, tmp_path: Path
) -> None:
    """The kubelet runs a static pod under the hash of its manifest (the cgroup's name) and
    the API shows a mirror pod with its own UID and that hash in ``kubernetes.io/config.mirror``:
    the collected stats are the static pod's, named by the mirror pod, and the core finds them
    for the mirror pod."""
    from agent.eviction import kubelet_view, make_signal_observations
    from agent.sources import Roots, SourceConfig, SummaryCollector
    from tests.support.cgroupfs import FakeCgroup, FakePod, build_cgroup_tree, build_proc_tree

    mirror = {"kubernetes.io/config.mirror": STATIC_UID, "kubernetes.io/config.source": "file"}
    sim.apply(pod("etcd-node-1", namespace="kube-system", annotations=mirror))
    cg = build_cgroup_tree(
        tmp_path,
        version="v2",
        driver="systemd",
        root=FakeCgroup(usage=6 << 30),
        kubepods=FakeCgroup(usage=3 << 30),
        pods=[FakePod(STATIC_UID, "besteffort", FakeCgroup(usage=64 * MI, procs=[5, 6]))],
    )
    api = sim.api_client()
    informer = PodInformer(api, "node-1")
    task = asyncio.create_task(informer.run())
    try:
        await asyncio.wait_for(informer.synced.wait(), 5)
        [entry] = [e for e in informer.pods.values() if e.pod.name == "etcd-node-1"]
        assert entry.pod.uid != STATIC_UID
        identity = informer.lookup(STATIC_UID)
        assert identity is not None
        assert (identity.namespace, identity.name) == ("kube-system", "etcd-node-1")
        roots = Roots(proc_root=build_proc_tree(tmp_path), cgroup_root=cg, kubelet_root=tmp_path)
        summary = SummaryCollector(SourceConfig(roots=roots), lookup=informer.lookup).collect()
        [static] = summary.pods
        assert static.pod_ref.uid == STATIC_UID
        _, stats = make_signal_observations(summary)
        uids = [s.pod_ref.uid for s in summary.pods]
        [seen] = kubelet_view([entry.pod], node_pod_uids=uids).pods
        found = stats(seen)
        assert found is not None and found.memory is not None
        assert found.memory.working_set_bytes == 64 * MI

        # a second pod claiming the static pod: the cgroup is named by neither, and neither
        # finds the static pod's stats
        sim.apply(pod("claimer", annotations=mirror))
        await until(lambda: any(e.pod.name == "claimer" for e in informer.pods.values()))
        assert informer.lookup(STATIC_UID) is None
        for seen in kubelet_view(informer.active_pods(), node_pod_uids=uids).pods:
            assert stats(seen) is None
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await api.close()


async def test_410_on_watch_relists(sim: Simulator) -> None:
    sim.add_faults(
        {
            "faults": [
                {
                    "match": {"verb": "watch", "resource": "pods", "calls": "1"},
                    "respond": {"code": 410, "reason": "Expired", "message": "too old"},
                }
            ]
        }
    )
    api = sim.api_client()
    informer = PodInformer(api, "node-1")
    task = asyncio.create_task(informer.run())
    try:
        await until(lambda: informer.relists >= 1)
        await until(lambda: len(sim.requests.filter(verb="list", resource="pods")) >= 2)
        sim.apply(pod("late"))
        await until(lambda: any(e.pod.name == "late" for e in informer.pods.values()))
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await api.close()


async def test_a_silent_watch_is_restarted_within_the_bound_and_a_new_pod_is_seen(
    sim: Simulator,
) -> None:
    # the first watch answers 200 and then nothing: no event, no bookmark, no end
    sim.add_faults(
        {"faults": [{"match": {"verb": "watch", "resource": "pods", "calls": "1"}, "silent": True}]}
    )
    api = sim.api_client()
    # kubesim sends bookmarks every 0.2 s: 2 intervals of silence mean the stream is dead
    informer = PodInformer(api, "node-1", bookmark_interval=0.2, liveness_factor=2)
    task = asyncio.create_task(informer.run())
    try:
        await asyncio.wait_for(informer.synced.wait(), 5)
        await until(lambda: len(sim.requests.filter(verb="watch", resource="pods")) == 1)
        started = asyncio.get_running_loop().time()
        sim.apply(pod("hog"))
        await until(lambda: any(e.pod.name == "hog" for e in informer.pods.values()))
        assert asyncio.get_running_loop().time() - started < 0.4 + 0.4  # bound + a relist
        assert informer.state.stalls == 1 and informer.relists == 1
        assert informer.failures == 0 and informer.connected
        assert len(sim.requests.filter(verb="list", resource="pods")) == 2
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await api.close()


async def test_malformed_pods_are_logged_and_skipped(
    sim: Simulator, caplog: pytest.LogCaptureFixture
) -> None:
    api = sim.api_client()
    informer = PodInformer(api, "node-1")
    try:
        bad = {
            "type": "ADDED",
            "object": {
                "metadata": {
                    "name": "bad",
                    "namespace": "default",
                    "uid": "u1",
                    "resourceVersion": "99",
                },
                "spec": {
                    "nodeName": "node-1",
                    "containers": [{"name": "c", "resources": {"requests": {"memory": "x"}}}],
                },
            },
        }
        lines = [
            json.dumps(bad).encode(),
            b"{not json",
            json.dumps({"type": "ADDED", "object": 3}).encode(),
        ]
        with caplog.at_level(logging.WARNING):
            for line in lines:
                event = parse_event(line, informer.state)
                if event is not None:
                    await informer.apply(event)
        assert informer.pods == {}
        assert informer.resource_version == "99"
        assert "malformed pod skipped" in caplog.text
        assert "malformed watch line skipped" in caplog.text
    finally:
        await api.close()


async def test_metrics_healthz_readyz_and_json_logs(sim: Simulator) -> None:
    fake = FakeNode(sim, usage={"default/a": 900 * MI})
    cfg = load_config(
        {
            "evictionHard": {"memory.available": "100Mi"},
            "housekeepingInterval": "50ms",
            "nodeName": "node-1",
            "listen": "127.0.0.1:0",
        }
    )
    api = sim.api_client()
    agent = Agent(cfg, api_client=api, stats=fake.get_summary, use_psi=False, cleanup_timeout=2)
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logging.getLogger("agent").addHandler(handler)
    logging.getLogger("agent").setLevel(logging.INFO)
    try:
        await agent.start()
        base = f"http://127.0.0.1:{agent.http_port}"
        async with aiohttp.ClientSession() as session:
            await until(lambda: sim.get("Pod", "default", "a") is None)
            await until(lambda: agent.ready()[0])
            async with session.get(base + "/readyz") as r:
                assert r.status == 200
            async with session.get(base + "/healthz") as r:
                assert r.status == 200
            async with session.get(base + "/metrics") as r:
                text = await r.text()
    finally:
        logging.getLogger("agent").removeHandler(handler)
        await agent.stop()
        await api.close()
    assert 'eviction_agent_evictions_total{result="evicted",signal="memory.available"} 1.0' in text
    assert 'eviction_agent_threshold{kind="hard",signal="memory.available"} 1.048576e+08' in text
    assert "eviction_agent_signal_available{" in text
    assert "eviction_agent_reaction_latency_seconds_count" in text
    assert "eviction_agent_sync_duration_seconds_count" in text
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    evicting = next(line for line in lines if line["msg"] == "evicting pod")
    assert evicting["pod"] == {"name": "a", "namespace": "default"}
    assert {"ts", "v", "msg"} <= evicting.keys() and evicting["v"] == 0


async def test_sd_notify_ready_after_first_sync_and_watchdog(
    sim: Simulator, tmp_path: Path
) -> None:
    import os
    import socket

    from agent.systemd import Notifier

    path = f"{tmp_path}/notify.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    server.bind(path)
    server.setblocking(False)
    notifier = Notifier(
        {"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "200000", "WATCHDOG_PID": str(os.getpid())}
    )
    fake = FakeNode(sim, usage={"default/a": 10 * MI})
    cfg = load_config({"housekeepingInterval": "50ms", "nodeName": "node-1"})
    api = sim.api_client()
    agent = Agent(
        cfg,
        api_client=api,
        stats=fake.get_summary,
        use_psi=False,
        serve_http=False,
        notifier=notifier,
    )
    messages: list[str] = []
    try:
        await agent.start()
        for _ in range(100):
            await asyncio.sleep(0.02)
            try:
                while True:
                    messages.append(server.recv(4096).decode())
            except BlockingIOError:
                pass
            if any(m.startswith("READY=1") for m in messages) and messages.count("WATCHDOG=1") >= 2:
                break
    finally:
        await agent.stop()
        await api.close()
        server.close()
    ready = [m for m in messages if m.startswith("READY=1")]
    assert len(ready) == 1 and "STATUS=watching 1 pods" in ready[0]
    assert messages.count("WATCHDOG=1") >= 2
    assert agent.loop.stats.syncs >= 1


def test_health_reports_a_stalled_loop() -> None:
    import time

    from agent.http import health_from

    assert health_from(lambda: 0.0, 10)() == (True, "")  # not started yet
    assert health_from(time.time, 10)() == (True, "")
    ok, why = health_from(lambda: time.time() - 100, 10)()
    assert not ok and "last sync" in why


def test_json_formatter_errors_and_references() -> None:
    record = logging.LogRecord("agent.x", logging.ERROR, __file__, 1, "eviction failed", (), None)
    try:
        raise ValueError("boom")
    except ValueError:
        import sys

        record.exc_info = sys.exc_info()
    record.pod = {"name": "p", "namespace": "ns"}
    out = json.loads(JsonFormatter().format(record))
    assert out["msg"] == "eviction failed" and out["v"] == 0 and out["level"] == "error"
    assert out["err"] == "boom" and "ValueError" in out["stacktrace"]
    assert out["pod"] == {"name": "p", "namespace": "ns"}
    debug = logging.LogRecord("agent.x", logging.DEBUG, __file__, 1, "detail", (), None)
    assert json.loads(JsonFormatter().format(debug))["v"] == 4
