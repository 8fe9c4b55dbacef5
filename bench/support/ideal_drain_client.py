"""The ideal drain client of ``bench/drain_vs_kubectl.py`` (c), run as its own process: the least
any client can spend once its process is up and the pods are known (``main``).

Usage: ``python bench/support/ideal_drain_client.py SERVER_URL NODE PODS_JSON`` → prints
``{"seconds": …, "evictions_s": …}`` on stdout (``evictions_s``: first eviction sent to last
answer received).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

import aiohttp


async def _watch_deletions(
    session: aiohttp.ClientSession, url: str, node: str, uids: set[str], started: asyncio.Event
) -> None:
    params = {"watch": "1", "fieldSelector": f"spec.nodeName={node}"}
    async with session.get(f"{url}/api/v1/pods", params=params) as resp:
        resp.raise_for_status()
        started.set()
        while uids:
            line = await resp.content.readline()
            if not line:
                raise RuntimeError("the watch ended before every pod was gone")
            event = json.loads(line)
            if event.get("type") == "DELETED":
                uids.discard(event["object"]["metadata"].get("uid", ""))


async def _evict(session: aiohttp.ClientSession, url: str, pod: dict[str, str]) -> int:
    body = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": pod["name"], "namespace": pod["namespace"]},
        "deleteOptions": {"preconditions": {"uid": pod["uid"]}},
    }
    path = f"/api/v1/namespaces/{pod['namespace']}/pods/{pod['name']}/eviction"
    async with session.post(url + path, json=body) as resp:
        await resp.read()
        return resp.status


async def main(url: str, node: str, pods: list[dict[str, str]]) -> dict[str, Any]:
    """The client knows the node's pods before it starts (a JSON file of ``{"namespace",
    "name", "uid"}``), opens a watch of the node's pods, then sends every eviction at once (one
    connection each, no concurrency bound, no retries, no models, no tenacity) and stops its clock
    when the last pod's ``DELETED`` arrives.

    That is "one eviction round trip plus the deletion time", taken with all the evictions in
    flight together, on the same server the real tools face. Start-up, discovery, cordon and
    listing are left out on purpose (``evict`` pays them; the ideal does not).
    """
    connector = aiohttp.TCPConnector(limit=0)  # unbounded: every eviction on its own connection
    async with aiohttp.ClientSession(connector=connector) as session:
        uids = {p["uid"] for p in pods}
        started = asyncio.Event()
        watch = asyncio.create_task(_watch_deletions(session, url, node, uids, started))
        await started.wait()  # the watch is open: no deletion can be missed
        t0 = time.perf_counter()
        codes = await asyncio.gather(*(_evict(session, url, p) for p in pods))
        answered = time.perf_counter()
        await watch
        done = time.perf_counter()
    bad = [c for c in codes if c not in (200, 201)]
    if bad:
        raise SystemExit(f"{len(bad)} evictions were refused (first status {bad[0]})")
    return {"seconds": done - t0, "evictions_s": answered - t0}


if __name__ == "__main__":
    server, node_name, pods_file = sys.argv[1:4]
    with open(pods_file, encoding="utf-8") as fh:
        victims = json.load(fh)
    print(json.dumps(asyncio.run(main(server.rstrip("/"), node_name, victims))))
