"""The same drain with ``evict`` and with real ``kubectl drain`` on identical kubesim clusters.

Skipped only when no kubectl binary is installed. The PDB case costs kubectl its fixed 5 s per
blocked retry, which is what ``evict`` avoids; both must still end in the same state.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

import kubesim
from kubesim.controllers import FROZEN

from .conftest import EVICT, lines, pdb, pod
from .test_cli import BASE, RECREATE

KUBECTL = shutil.which("kubectl")

pytestmark = [
    pytest.mark.kubectl,
    pytest.mark.skipif(KUBECTL is None, reason="no kubectl binary installed"),
]


async def _run(binary: str, objs: list[dict[str, Any]], faults: Any, *args: str) -> dict[str, Any]:
    # Fault injection stands in for the controllers here: a frozen cluster.
    async with kubesim.serve(
        state=objs, faults=faults, time_scale=0.01, disabled_controllers=FROZEN
    ) as sim:
        await asyncio.sleep(0.2)  # budgets computed, as on a settled cluster
        with tempfile.TemporaryDirectory() as home:
            env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
            env["KUBECONFIG"] = str(sim.kubeconfig_path)
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
            out, err = await asyncio.wait_for(proc.communicate(), 60)
        pods = sorted(
            (p["metadata"]["namespace"], p["metadata"]["name"], p["spec"].get("nodeName"))
            for p in sim.list_objects("Pod")
        )
        nodes = {
            n["metadata"]["name"]: bool(n["spec"].get("unschedulable"))
            for n in sim.list_objects("Node")
        }
        return {
            "code": proc.returncode,
            "out": set(lines(out.decode())),
            "err": err.decode(),
            "pods": pods,
            "nodes": nodes,
        }


CASES = {
    "no-pdb": ([*BASE], None, ("drain", "node-1", "--ignore-daemonsets", "--timeout=60s")),
    "pdb": (
        [*BASE, pdb("web", min_available=2)],
        RECREATE,
        ("drain", "node-1", "--ignore-daemonsets", "--timeout=60s"),
    ),
    "blocked": (
        [*BASE, pod("bare", owner=None)],
        None,
        ("drain", "node-1", "--delete-emptydir-data"),
    ),
}


@pytest.mark.parametrize("case", list(CASES))
async def test_same_drain_same_end_state(case: str) -> None:
    objs, faults, args = CASES[case]
    ours = await _run(EVICT, objs, faults, *args)
    theirs = await _run(str(KUBECTL), objs, faults, *args)
    assert ours["pods"] == theirs["pods"]
    assert ours["nodes"] == theirs["nodes"]
    assert ours["code"] == theirs["code"], (ours["err"], theirs["err"])
    assert ours["out"] == theirs["out"]
