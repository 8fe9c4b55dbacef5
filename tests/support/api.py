"""A kubesim's API as the API tests reach it: their cluster (two nodes, a namespace, three pods),
one HTTP request without a client library, and the Status body of a failed call."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
from kubernetes_asyncio.client.exceptions import ApiException

from kubesim.sim import Simulator

STATE = """
apiVersion: v1
kind: Node
metadata: {name: node-1, labels: {kubernetes.io/hostname: node-1, zone: a}}
status:
  capacity: {cpu: "4", memory: 8Gi, pods: "110"}
  conditions: [{type: Ready, status: "True"}]
  addresses: [{type: InternalIP, address: 10.0.0.11}]
---
apiVersion: v1
kind: Node
metadata: {name: node-2, labels: {kubernetes.io/hostname: node-2, zone: b}}
status:
  capacity: {cpu: "4", memory: 8Gi, pods: "110"}
  conditions: [{type: Ready, status: "True"}]
---
apiVersion: v1
kind: Namespace
metadata: {name: prod}
---
apiVersion: v1
kind: Pod
metadata: {name: web-0, namespace: default, labels: {app: web}}
spec:
  nodeName: node-1
  containers: [{name: c, image: nginx}]
status:
  phase: Running
  conditions: [{type: Ready, status: "True"}]
---
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: default, labels: {app: web}}
spec:
  nodeName: node-2
  terminationGracePeriodSeconds: 5
  containers: [{name: c, image: nginx}]
status:
  phase: Running
---
apiVersion: v1
kind: Pod
metadata: {name: db-0, namespace: prod, labels: {app: db}}
spec:
  nodeName: node-1
  containers: [{name: c, image: postgres}]
status:
  phase: Pending
"""


def status_of(exc: ApiException) -> dict[str, Any]:
    """The Status body of a failed call."""
    body = exc.body
    if isinstance(body, bytes):
        body = body.decode()
    data: dict[str, Any] = json.loads(body)
    return data


async def raw(
    sim: Simulator,
    method: str,
    path: str,
    *,
    body: bytes | str | None = None,
    content_type: str = "application/json",
    accept: str = "application/json",
) -> tuple[int, dict[str, str], Any]:
    """One HTTP request without a client library: (status, headers, parsed JSON or text)."""
    data = body.encode() if isinstance(body, str) else body
    async with (
        aiohttp.ClientSession() as session,
        session.request(
            method,
            sim.url + path,
            data=data,
            headers={"Content-Type": content_type, "Accept": accept},
        ) as resp,
    ):
        text = await resp.text()
        try:
            parsed: Any = json.loads(text)
        except ValueError:
            parsed = text
        return resp.status, dict(resp.headers), parsed
