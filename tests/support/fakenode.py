"""A fake node for the agent's end-to-end tests: Summary dicts computed from kubesim's pods.

Each pod uses a fixed working set while its object exists in kubesim (Terminating included); the
memory comes back when the kubelet removes the object — what a real eviction frees. Timestamps
advance with the wall clock so the core's stale-observation filter sees fresh stats each sync.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from kubesim.sim import Simulator

MI = 1024 * 1024


def ts(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class FakeNode:
    def __init__(
        self,
        sim: Simulator,
        *,
        node: str = "node-1",
        capacity: int = 1024 * MI,
        system: int = 100 * MI,
        usage: dict[str, int] | None = None,
    ) -> None:
        self.sim = sim
        self.node = node
        self.capacity = capacity
        self.system = system
        self.usage = dict(usage or {})  # "ns/name" → working set bytes
        self.reads = 0
        self.broken = False

    def _pods(self) -> list[dict[str, Any]]:
        return [
            p
            for p in self.sim.list_objects("Pod")
            if (p.get("spec") or {}).get("nodeName") == self.node
        ]

    def summary(self) -> dict[str, Any]:
        if self.broken:
            raise OSError("cgroup tree unreadable")
        self.reads += 1
        now = time.time()
        pods = []
        used = self.system
        for p in self._pods():
            meta = p["metadata"]
            key = f"{meta.get('namespace', 'default')}/{meta['name']}"
            ws = self.usage.get(key, 0)
            used += ws
            pods.append(
                {
                    "podRef": {
                        "name": meta["name"],
                        "namespace": meta.get("namespace", "default"),
                        "uid": meta.get("uid", ""),
                    },
                    "startTime": ts(now - 100),
                    "containers": [],
                    "memory": {"time": ts(now), "workingSetBytes": ws, "usageBytes": ws},
                }
            )
        available = max(self.capacity - used, 0)
        return {
            "node": {
                "nodeName": self.node,
                "startTime": ts(now - 1000),
                "memory": {
                    "time": ts(now),
                    "availableBytes": available,
                    "workingSetBytes": used,
                    "usageBytes": used,
                },
            },
            "pods": pods,
        }

    async def get_summary(self) -> dict[str, Any]:
        return self.summary()


def pod(
    name: str,
    *,
    namespace: str = "default",
    node: str = "node-1",
    priority: int = 0,
    request: str | None = None,
    grace: int | None = None,
    annotations: dict[str, str] | None = None,
) -> str:
    """A pod manifest (YAML) bound to ``node``."""
    resources = f"resources: {{requests: {{memory: {request}}}}}" if request else ""
    lines = [
        "apiVersion: v1",
        "kind: Pod",
        f"metadata: {{name: {name}, namespace: {namespace}"
        + (f", annotations: {annotations}" if annotations else "")
        + "}",
        "spec:",
        f"  nodeName: {node}",
        f"  priority: {priority}",
    ]
    if grace is not None:
        lines.append(f"  terminationGracePeriodSeconds: {grace}")
    lines.append(f"  containers: [{{name: c, image: app, {resources}}}]")
    return "\n".join(lines)


NODES = """
apiVersion: v1
kind: Node
metadata: {name: node-1, labels: {kubernetes.io/hostname: node-1}}
status:
  capacity: {cpu: "4", memory: 1Gi, pods: "110"}
  conditions: [{type: Ready, status: "True"}]
---
apiVersion: v1
kind: Node
metadata: {name: node-2, labels: {kubernetes.io/hostname: node-2}}
status:
  capacity: {cpu: "4", memory: 8Gi, pods: "110"}
  conditions: [{type: Ready, status: "True"}]
"""
