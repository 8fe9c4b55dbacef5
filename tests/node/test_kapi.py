"""guest_kapi.py's wait on one object, on the host against kubesim (no VM needed).

A pressure condition can be True for only a few seconds in the guest (the scaled transition
period), and a GET every quarter second is seconds apart when TCG and the pressure itself slow
the guest: the wait once missed a True condition altogether. The wait on one object watches it
from the version the first GET read, so a state that did not last is still seen.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from aiohttp import web

import kubesim
from kubesim.endpoints.request import RequestContext
from tests.node.guest_kapi import one_object
from tests.support.manifests import node

KAPI = str(Path(__file__).with_name("guest_kapi.py"))


def test_one_object_paths() -> None:
    assert one_object("/api/v1/nodes/n1") == ("/api/v1/nodes", "n1")
    assert one_object("/api/v1/namespaces/ns/pods/p") == ("/api/v1/namespaces/ns/pods", "p")
    assert one_object("/apis/apps/v1/namespaces/ns/deployments/d") == (
        "/apis/apps/v1/namespaces/ns/deployments",
        "d",
    )
    assert one_object("/api/v1/namespaces/ns") == ("/api/v1/namespaces", "ns")
    for collection in ("/api/v1/nodes", "/api/v1/namespaces/ns/pods", "/apis/x/v1/things"):
        assert one_object(collection) is None


async def test_a_wait_on_one_object_sees_a_state_that_did_not_last() -> None:
    async with kubesim.serve() as sim:
        sim.apply([node("n1", labels={"flag": "off"})])
        watching = asyncio.Event()

        async def hook(ctx: RequestContext) -> web.StreamResponse | None:
            if ctx.info.verb == "watch" and ctx.info.resource == "nodes":
                watching.set()
            return None

        sim.server.request_hooks.append(hook)
        until = "o['metadata']['labels']['flag'] == 'on'"
        proc = await asyncio.create_subprocess_exec(
            *(sys.executable, "-I", "-S", KAPI, sim.url, "GET", "/api/v1/nodes/n1"),
            *("--until", until, "--timeout", "5"),
            stdout=asyncio.subprocess.PIPE,
        )
        # the first GET has read "off"; the label is "on" only between two writes
        await asyncio.wait_for(watching.wait(), 30)
        sim.apply([node("n1", labels={"flag": "on"})])
        sim.apply([node("n1", labels={"flag": "off"})])
        out, _ = await proc.communicate()
        assert proc.returncode == 0, out
        assert json.loads(out)["metadata"]["labels"]["flag"] == "on"
        assert sim.get("Node", "", "n1")["metadata"]["labels"]["flag"] == "off"


async def test_a_wait_that_never_holds_times_out_with_the_last_answer() -> None:
    async with kubesim.serve() as sim:
        sim.apply([node("n1", labels={"flag": "off"})])
        proc = await asyncio.create_subprocess_exec(
            *(sys.executable, "-I", "-S", KAPI, sim.url, "GET", "/api/v1/nodes/n1"),
            *("--until", "o['metadata']['labels']['flag'] == 'on'", "--timeout", "2"),
            stdout=asyncio.subprocess.PIPE,
        )
        out, _ = await proc.communicate()
        assert proc.returncode == 3
        assert json.loads(out)["metadata"]["labels"]["flag"] == "off"
