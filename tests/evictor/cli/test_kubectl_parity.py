"""The same drain with ``evict`` and with real ``kubectl drain`` on identical living clusters.

Each run gets a fresh kubesim with every controller running, started from the same state and
left to settle (workloads Ready, budgets computed) before the command runs; afterwards it settles
again (replacements placed and Ready) and the end states are compared: pods per namespace, app
and node (replacements have generated names), which nodes are cordoned, the exit code and the
stdout lines. Skipped only when no kubectl binary is installed. The PDB cases cost kubectl its
fixed 5 s per blocked retry, which is what ``evict`` avoids; both must still end in the same
state.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.support.evict import BASE, EVICT, lines
from tests.support.living import living, placement, settle
from tests.support.manifests import node, pdb, pod, statefulset

KUBECTL = shutil.which("kubectl")

pytestmark = [
    pytest.mark.kubectl,
    pytest.mark.skipif(KUBECTL is None, reason="no kubectl binary installed"),
]


async def _run(
    binary: str, objs: list[dict[str, Any]], args: tuple[str, ...], **sim: Any
) -> dict[str, Any]:
    async with living(objs, ready_after=20, **sim) as cluster:
        await settle(cluster)
        with tempfile.TemporaryDirectory() as home:
            env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
            env["KUBECONFIG"] = str(cluster.kubeconfig_path)
            env["HOME"] = home
            extra = [f"--cache-dir={Path(home) / 'cache'}"] if binary == KUBECTL else []
            proc = await asyncio.create_subprocess_exec(
                binary,
                *extra,
                *args,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
            )
            out, err = await asyncio.wait_for(proc.communicate(), 90)
        await settle(cluster)
        nodes = {
            n["metadata"]["name"]: bool(n["spec"].get("unschedulable"))
            for n in cluster.list_objects("Node")
        }
        return {
            "code": proc.returncode,
            "out": set(lines(out.decode())),
            "err": err.decode(),
            "pods": placement(cluster),
            "nodes": nodes,
            "evictions": cluster.requests.filter(subresource="eviction"),
            "deletes": cluster.requests.filter(verb="delete", resource="pods"),
        }


DB_OWNER = ("apps/v1", "StatefulSet", "db")
STS = [node("node-1"), node("node-2"), statefulset("db"), pdb("db", max_unavailable=1)]
STS += [pod(f"db-{i}", owner=DB_OWNER) for i in range(3)]
DRAIN = ("drain", "node-1", "--ignore-daemonsets", "--timeout=60s")

CASES: dict[str, tuple[list[dict[str, Any]], tuple[str, ...], dict[str, Any]]] = {
    "no-pdb": ([*BASE], DRAIN, {}),
    "pdb": ([*BASE, pdb("web", min_available=2)], DRAIN, {}),
    # the StatefulSet brings each pod back under the same name (new UID) on node-2
    "statefulset": (STS, DRAIN, {}),
    "no-eviction-subresource": ([*BASE], DRAIN, {"eviction_subresource": False}),
    "blocked": (
        [*BASE, pod("bare", owner=None)],
        ("drain", "node-1", "--delete-emptydir-data"),
        {},
    ),
}


@pytest.mark.parametrize("case", list(CASES))
async def test_same_drain_same_end_state(case: str) -> None:
    objs, args, sim = CASES[case]
    ours = await _run(EVICT, objs, args, **sim)
    theirs = await _run(str(KUBECTL), objs, args, **sim)
    assert ours["pods"] == theirs["pods"]
    assert ours["nodes"] == theirs["nodes"]
    assert ours["code"] == theirs["code"], (ours["err"], theirs["err"])
    assert ours["out"] == theirs["out"]
    if case == "no-eviction-subresource":
        assert ours["evictions"] == theirs["evictions"] == []
        assert {r.name for r in ours["deletes"]} == {r.name for r in theirs["deletes"]}
    if case == "statefulset":
        # every eviction named a pod that was on node-1 when the drain began: never a replacement
        listed = {o["metadata"]["uid"] for o in STS if o["kind"] == "Pod"}
        sent = {r.body["deleteOptions"]["preconditions"]["uid"] for r in ours["evictions"]}
        assert sent <= listed
        assert sum(r.code == 201 for r in ours["evictions"]) == 3
