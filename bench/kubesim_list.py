"""Benchmark: listing every pod of a large kubesim over HTTP.

The target: 10 000 pods in state list well under a second. This measures a full
``GET /api/v1/pods`` (server work, transfer and JSON decoding by the client) and a paged list
(``limit=500``, as kubectl and client-go informers page), and prints one JSON line each:
``{"bench", "value" (pods/s), "unit", "anchor" (10 000 pods/s = one second), "ratio"}``.

Run: ``.venv/bin/python bench/kubesim_list.py [--pods N] [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from typing import Any

import aiohttp

import kubesim

ANCHOR = 10000.0  # pods per second: 10 000 pods listed in one second


def make_state(pods: int, nodes: int = 100) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"node-{n}"},
            "status": {
                "capacity": {"cpu": "64", "memory": "256Gi", "pods": "500"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
        for n in range(nodes)
    ]
    objs.extend(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"pod-{i:05d}",
                "namespace": "default",
                "labels": {"app": f"app-{i % 50}", "tier": "web"},
            },
            "spec": {
                "nodeName": f"node-{i % nodes}",
                "containers": [
                    {
                        "name": "c",
                        "image": "nginx:1.25",
                        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                    }
                ],
            },
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
        }
        for i in range(pods)
    )
    return objs


async def list_all(url: str, *, limit: int = 0) -> int:
    count = 0
    token = ""
    async with aiohttp.ClientSession() as session:
        while True:
            q = f"?limit={limit}" if limit else ""
            if token:
                q += f"&continue={token}"
            async with session.get(f"{url}/api/v1/pods{q}") as resp:
                body = await resp.json()
            count += len(body["items"])
            token = body["metadata"].get("continue", "")
            if not token:
                return count


async def run(pods: int, repeats: int) -> list[dict[str, Any]]:
    async with kubesim.serve(state=make_state(pods)) as sim:
        results = []
        for name, limit in (("full", 0), ("paged500", 500)):
            assert await list_all(sim.url, limit=limit) == pods  # warm-up + check
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                n = await list_all(sim.url, limit=limit)
                times.append(time.perf_counter() - start)
                assert n == pods
            value = pods / statistics.median(times)
            results.append(
                {
                    "bench": f"kubesim_list_{name}_{pods}_pods",
                    "value": round(value, 1),
                    "unit": "pods/s",
                    "anchor": ANCHOR,
                    "ratio": round(value / ANCHOR, 3),
                }
            )
        return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="a small smoke size")
    args = parser.parse_args()
    pods, repeats = (300, 2) if args.quick else (args.pods, args.repeats)
    for line in asyncio.run(run(pods, repeats)):
        print(json.dumps(line))


if __name__ == "__main__":
    main()
