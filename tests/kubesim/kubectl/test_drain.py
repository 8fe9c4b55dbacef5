"""Real ``kubectl drain`` against kubesim: eviction, PDB retries, DaemonSets, server dry run.

Skipped only when no kubectl binary exists. Runs the versions of ``tests.support.kubectl.BINARIES``,
except the PDB-blocked drain, which waits kubectl's fixed 5 s retry interval and so runs on the
default kubectl plus the oldest and newest versioned binaries (``ENDS``) even in the full matrix.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import kubesim
from kubesim.controllers import FROZEN
from tests.support.kubectl import BINARIES, ENDS, Kubectl
from tests.support.manifests import pdb

pytestmark = [
    pytest.mark.kubectl,
    pytest.mark.skipif(not shutil.which("kubectl"), reason="no kubectl binary installed"),
]

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
STATE = EXAMPLES / "kubesim-drain.yaml"  # with a PDB keeping 2 of the 3 web pods
FAULTS = EXAMPLES / "kubesim-drain-faults.yaml"  # evicted web pods come back on node-2

WEB_PODS = ("web-5d4f-a", "web-5d4f-b")
EVICTED = ("cache-77-x", *WEB_PODS)


async def _kubectl(binary: str, tmp_path: Path, faults: Any = None) -> AsyncIterator[Kubectl]:
    # The fault file stands in for the ReplicaSet here (same-name replacements on node-2), so
    # the workload controllers and the scheduler stay off.
    async with kubesim.serve(
        state=STATE, faults=faults, time_scale=0.01, disabled_controllers=FROZEN
    ) as sim:
        yield Kubectl(binary, sim, tmp_path)
        unserved = [
            (r.method, r.path, r.code) for r in sim.requests if r.code == 404 and r.name == ""
        ]
        assert all(p.startswith("/openapi/v2") for _, p, _ in unserved), unserved


@pytest.fixture(params=BINARIES or ["kubectl"], ids=lambda b: Path(b).name)
async def kubectl(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Kubectl]:
    async for k in _kubectl(request.param, tmp_path):
        yield k


@pytest.fixture(params=ENDS or ["kubectl"], ids=lambda b: Path(b).name)
async def kubectl_recreating(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[Kubectl]:
    async for k in _kubectl(request.param, tmp_path, FAULTS):
        yield k


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


DRAIN = ("drain", "node-1", "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=60s")


async def test_drain_succeeds(kubectl: Kubectl) -> None:
    sim = kubectl.sim
    sim.apply(pdb("web", min_available=1))  # relaxed to 3 healthy, 1 desired: both web pods may go
    _, out, err = await kubectl(*DRAIN)
    lines = _lines(out)
    assert lines[0] == "node/node-1 cordoned"
    assert lines[-1] == "node/node-1 drained"
    assert sorted(lines[1:-1]) == sorted(
        [f"evicting pod default/{p}" for p in EVICTED] + [f"pod/{p} evicted" for p in EVICTED]
    )
    assert "Warning: ignoring DaemonSet-managed Pods: kube-system/agent-x" in err
    for name in EVICTED:
        assert sim.get("Pod", "default", name) is None
    assert sim.get("Pod", "kube-system", "agent-x") is not None
    assert sim.get("Pod", "default", "web-5d4f-c") is not None
    node = sim.get("Node", None, "node-1")
    assert node is not None and node["spec"]["unschedulable"] is True
    evictions = sim.requests.filter(subresource="eviction")
    assert sorted((r.name, r.code) for r in evictions) == sorted((p, 201) for p in EVICTED)
    assert all(r.body["apiVersion"] == "policy/v1" for r in evictions)
    # Evicted pods left through graceful deletion: each was seen Terminating first.
    assert all(
        any(r.name == p and r.code == 200 for r in sim.requests.filter(verb="get")) for p in EVICTED
    )


async def test_drain_blocked_by_pdb_until_the_budget_allows(kubectl_recreating: Kubectl) -> None:
    sim = kubectl_recreating.sim
    # The example's PDB: 3 healthy, 2 desired, one web pod at a time.
    _, out, err = await kubectl_recreating(*DRAIN)
    assert _lines(out)[-1] == "node/node-1 drained"
    retries = re.findall(
        r'error when evicting pods/"(web-5d4f-[ab])" -n "default" \(will retry after 5s\):'
        r" Cannot evict pod as it would violate the pod's disruption budget\.",
        err,
    )
    assert len(retries) == 1, err
    (blocked,) = retries
    codes = [r.code for r in sim.requests.filter(subresource="eviction", name=blocked)]
    assert codes == [429, 201]
    first = next(p for p in WEB_PODS if p != blocked)
    assert [r.code for r in sim.requests.filter(subresource="eviction", name=first)] == [201]
    assert f"pod/{blocked} evicted" in _lines(out)
    # Both replacements run on node-2 now, and the budget is whole again.
    for name in WEB_PODS:
        pod = sim.get("Pod", "default", name)
        assert pod is not None and pod["spec"]["nodeName"] == "node-2"


async def test_drain_without_ignore_daemonsets_fails(kubectl: Kubectl) -> None:
    code, out, err = await kubectl(
        "drain", "node-1", "--delete-emptydir-data", "--timeout=30s", check=False
    )
    assert code == 1
    assert _lines(out) == ["node/node-1 cordoned"]
    # kubectl before 1.28 printed no space after "due to error:".
    assert re.search(
        r'error: unable to drain node "node-1" due to error: ?cannot delete DaemonSet-managed Pods'
        r" \(use --ignore-daemonsets to ignore\): kube-system/agent-x, continuing command\.\.\.",
        err,
    ), err
    assert "There are pending nodes to be drained:\n node-1\n" in err
    assert not kubectl.sim.requests.filter(subresource="eviction")
    assert kubectl.sim.get("Pod", "default", "web-5d4f-a") is not None


async def test_drain_server_dry_run(kubectl: Kubectl) -> None:
    sim = kubectl.sim
    _, out, _ = await kubectl(*DRAIN, "--dry-run=server")
    lines = _lines(out)
    assert lines[0] == "node/node-1 cordoned (server dry run)"
    assert lines[-1] == "node/node-1 drained (server dry run)"
    assert sorted(lines[1:-1]) == sorted(
        f"evicting pod default/{p} (server dry run)" for p in EVICTED
    )
    evictions = sim.requests.filter(subresource="eviction")
    assert sorted(r.name for r in evictions) == sorted(EVICTED)
    assert all(r.body["deleteOptions"]["dryRun"] == ["All"] for r in evictions)
    assert all(r.code == 201 for r in evictions)
    for name in EVICTED:
        pod = sim.get("Pod", "default", name)
        assert pod is not None and "deletionTimestamp" not in pod["metadata"]
    node = sim.get("Node", None, "node-1")
    assert node is not None and not node.get("spec", {}).get("unschedulable")
