"""Benchmark: the API requests one node's agent sends per hour, idle and through a pressure episode.

At fleet scale what an agent costs the API server is its requests, and every Node write fans
out to every Node watcher. Anchor: the kubelet's own, 372 an hour (``figure``). Prints one
JSON line per hour (``bench``): requests, the anchor, their ratio, and the requests by kind.

Run: ``.venv/bin/python bench/agent_api_requests.py [--speed 100]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import kubesim
from kubesim.endpoints.requestlog import RequestRecord

ROOT = Path(__file__).resolve().parents[1]
KUBELET_PER_HOUR = 3600 // 10 + 60 // 5  # Lease renewals + Node status reports: 372
ANCHOR = {"name": "kubelet: Lease every 10 s + Node status every 5 min", "value": KUBELET_PER_HOUR}
HOUR = 3600.0
MI = 1 << 20


def _fakes() -> Any:
    # the fake node's Summary, shared with the agent's tests (bench/ is not a package)
    path = ROOT / "tests" / "support" / "fakenode.py"
    spec = importlib.util.spec_from_file_location("fakenode", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_F = _fakes()

STATE = "\n---\n".join(
    [
        """
apiVersion: v1
kind: Node
metadata: {name: node-1, labels: {kubernetes.io/hostname: node-1}}
status:
  capacity: {cpu: "4", memory: 1Gi, pods: "110"}
  conditions: [{type: Ready, status: "True"}]
""",
        _F.pod("web", request="100Mi"),
        _F.pod("batch", request="100Mi"),
        _F.pod("dns", namespace="kube-system", priority=2000000000),
    ]
)


class CompressedClock:
    """Epoch seconds that run ``speed`` times faster than the wall clock."""

    def __init__(self, speed: float) -> None:
        self.speed = speed
        self.start = time.time()
        self.started = time.monotonic()

    def __call__(self) -> float:
        return self.start + (time.monotonic() - self.started) * self.speed


def kind(r: RequestRecord) -> str:
    resource = r.resource + (f"/{r.subresource}" if r.subresource else "")
    return f"{r.verb} {resource or r.path}"


def figure(name: str, records: list[RequestRecord], speed: float) -> dict[str, Any]:
    """One hour's line, against the kubelet's own cost as the anchor.

    The kubelet renews its Lease every 10 s (360 writes an hour) and writes its Node status only
    when it changes or every ``nodeStatusReportFrequency`` (5 min: 12 an hour): 372 an hour
    (pkg/kubelet/nodelease, pkg/kubelet/kubelet_node_status.go; its 10 s Node reads come from the
    API server's cache and are not counted).
    """
    by = Counter(kind(r) for r in records)
    return {
        "bench": name,
        "value": len(records),
        "unit": "requests/node/hour",
        "anchor": ANCHOR,
        "ratio": round(len(records) / KUBELET_PER_HOUR, 3),
        "by": dict(sorted(by.items())),
        "speed": speed,
    }


async def bench(speed: float) -> list[dict[str, Any]]:
    """Two simulated hours of the agent with ``--node-conditions --node-taints``, its most
    talkative install, against an in-process kubesim whose request log counts every request
    it sends: the pod list, the pod watch (one request per 5-minute watch), Node reads and
    writes, and for an eviction its Event, ``DisruptionTarget`` condition and DELETE.

    Time is compressed ``speed`` times (100: 36 s an hour), every period alike — the 1 s
    sync, the 300 s watch, the 5-minute pressure-transition period, the actions' clock that
    times the Node status report, kubesim's own time scale — so each count is what an hour of
    real time sends. Hour 1 is idle (start-up included); in hour 2 one pod's working set
    climbs past ``memory.available<500Mi`` at minute 10, is evicted, and the pressure ends
    after its transition period. The stats come from ``tests/support/fakenode.FakeNode``."""
    from agent.config import load_config
    from agent.daemon import Agent

    async with kubesim.serve(state=STATE, time_scale=1 / speed) as sim:
        fake = _F.FakeNode(
            sim,
            usage={"default/web": 100 * MI, "default/batch": 50 * MI, "kube-system/dns": 30 * MI},
        )
        cfg = load_config(
            {
                "nodeName": "node-1",
                "nodeConditions": True,
                "nodeTaints": True,
                "housekeepingInterval": f"{1000 / speed:g}ms",
                "evictionHard": {"memory.available": "500Mi"},
                "evictionPressureTransitionPeriod": f"{300 / speed:g}s",
            }
        )
        api = sim.api_client()
        agent = Agent(
            cfg,
            api_client=api,
            stats=fake.get_summary,
            serve_http=False,
            use_psi=False,
            watch_timeout=max(1, round(300 / speed)),
        )
        clock = CompressedClock(speed)  # the writes' pacing: condition reports, retries
        agent.evictions.clock = agent.evictions.disruption.clock = agent.events.clock = clock
        agent.node_conditions.clock = agent.node_taints.clock = clock
        hour = HOUR / speed
        try:
            began = time.time()
            await agent.start()
            await asyncio.sleep(hour)
            episode = began + hour
            await asyncio.sleep(hour / 6)  # minute 10 of hour 2: the batch pod climbs
            fake.usage["default/batch"] = 600 * MI
            await asyncio.sleep(hour * 5 / 6)
            ended = began + 2 * hour
            if sim.get("Pod", "default", "batch") is not None:
                raise RuntimeError("the pressure episode evicted nothing")
        finally:
            await agent.stop()
            await api.close()
        records = list(sim.requests)
    idle = [r for r in records if r.time < episode]
    pressed = [r for r in records if episode <= r.time < ended]
    return [
        figure("agent_api_requests_idle", idle, speed),
        figure("agent_api_requests_pressure_episode", pressed, speed),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--speed", type=float, default=100.0, help="how many times faster than real time"
    )
    args = parser.parse_args()
    if not 1 <= args.speed <= 100:
        parser.error("--speed must be between 1 and 100 (the sync interval cannot go below 10 ms)")
    with contextlib.suppress(KeyboardInterrupt):
        for line in asyncio.run(bench(args.speed)):
            print(json.dumps(line), flush=True)
        return 0
    return 1


if __name__ == "__main__":
    sys.exit(main())
