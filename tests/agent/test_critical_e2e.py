"""The daemon on a kubesim process node: annotations make no pod critical, a static pod stays.

Node-1 runs its pods as real processes and a static pod from its ``staticPodPath`` (the
kubelet's hash as its UID, a mirror pod in the API); the agent's stats are the node's
``/stats/summary``, the kubelet's JSON. Under memory pressure the larger
pods go first although one writes ``kubernetes.io/config.source: file`` and one a
``kubernetes.io/config.mirror`` of a static pod that does not run there; the small pod stays,
and so does the static pod — the largest of all, its mirror at priority 0, spared only because
it is the mirror of a static pod running on the node.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

import kubesim
from agent.daemon import Agent
from kubesim.sim import Simulator
from tests.support.agent import config, more_syncs, pod_deletes
from tests.support.wait import until

MI = 1 << 20
HOLD = "import signal, sys\nb = bytearray(int(sys.argv[1]) << 20)\nb[::4096] = b'1' * (len(b) // 4096)\nsignal.pause()\n"  # noqa: E501
NOT_HERE = "00112233445566778899aabbccddeeff"  # a static pod's UID shape; none runs under it
SIZES = {"etcd-node-1": 100, "source-big": 80, "mirror-big": 60, "small": 10}  # MiB held


def pod(name: str, mib: int, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if annotations:
        meta["annotations"] = annotations
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "nodeName": "node-1",
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "c",
                    "image": "python:3.12",
                    "command": ["python", "-I", "-S", "-c", HOLD, str(mib)],
                }
            ],
        },
    }


@pytest.fixture
async def sim(tmp_path: Path) -> AsyncIterator[Simulator]:
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    static = pod("etcd", SIZES["etcd-node-1"])
    static["metadata"] = {"name": "etcd", "namespace": "kube-system"}
    del static["spec"]["nodeName"]
    (manifests / "etcd.yaml").write_text(json.dumps(static))
    state = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}},
        {
            "apiVersion": "kubesim.io/v1alpha1",
            "kind": "ProcessNode",
            "metadata": {"name": "node-1"},
            "memoryCapacity": "400Mi",
            "kubelet": {"staticPodPath": str(manifests)},
        },
        pod("source-big", SIZES["source-big"], {"kubernetes.io/config.source": "file"}),
        pod("mirror-big", SIZES["mirror-big"], {"kubernetes.io/config.mirror": NOT_HERE}),
        pod("small", SIZES["small"]),
    ]
    async with kubesim.serve(state=state, time_scale=0.1, use_cgroups=False) as s:
        yield s


async def test_annotations_make_no_pod_critical_and_the_static_pod_is_never_evicted(
    sim: Simulator, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="agent.eviction.manager")
    # the kubelet serves the node's summary, then runs the static pod and mirrors it
    await until(lambda: sim.get("Pod", "kube-system", "etcd-node-1") is not None)
    node = sim.get("Node", None, "node-1")
    assert node is not None
    port = node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"]
    url = f"http://127.0.0.1:{port}/stats/summary"
    holding: dict[str, int] = {}

    async def summary() -> dict[str, Any]:
        # the kubelet's whole Summary (agent.sources.kubelet keeps only its disk figures)
        async with aiohttp.ClientSession() as session, session.get(url) as resp:
            raw: dict[str, Any] = await resp.json()
        for p in raw["pods"]:
            holding[p["podRef"]["name"]] = p.get("memory", {}).get("workingSetBytes", 0)
        return raw

    # every pod holds its memory before the agent looks: the ranking is by what they hold
    deadline = time.monotonic() + 30
    while not all(holding.get(name, 0) >= mib * MI for name, mib in SIZES.items()):
        assert time.monotonic() < deadline, f"the pods never held their memory: {holding}"
        await asyncio.sleep(0.02)
        await summary()
    mirror = sim.get("Pod", "kube-system", "etcd-node-1")
    assert mirror is not None
    static_uid = mirror["metadata"]["annotations"]["kubernetes.io/config.mirror"]
    assert static_uid in sim.runtimes["node-1"].pods()

    # 400Mi of which ~250Mi held: below 240Mi available until both large pods are gone
    api = sim.api_client()
    agent = Agent(
        config(evictionHard={"memory.available": "240Mi"}),
        api_client=api,
        stats=summary,
        serve_http=False,
        use_psi=False,
        cleanup_timeout=5.0,
    )
    await agent.start()
    try:
        await until(lambda: sim.get("Pod", "default", "mirror-big") is None, timeout=30)
        await more_syncs(agent, 10)  # nothing else may go
    finally:
        await agent.stop()
        await api.close()
    assert pod_deletes(sim) == ["source-big", "mirror-big"]
    assert sim.get("Pod", "default", "small") is not None
    assert sim.get("Pod", "kube-system", "etcd-node-1") is not None
    assert static_uid in sim.runtimes["node-1"].pods()
    # ranked first every time, the largest, and skipped: the mirror of a static pod running here
    assert "cannot evict kube-system/etcd-node-1: critical pod" in caplog.text
    assert "etcd-node-1" not in {d.pod.name for d in agent.loop.stats.decisions}
