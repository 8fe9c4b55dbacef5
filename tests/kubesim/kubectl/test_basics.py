"""Real kubectl against kubesim, for each kubectl version of ``tests.support.kubectl.BINARIES``.

Skipped only when no kubectl binary exists. Each test starts its own kubesim, points
``KUBECONFIG`` at the kubeconfig it wrote, and keeps kubectl's discovery cache in a temporary
directory (``--cache-dir``).
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import kubesim
from tests.support.kubectl import BINARIES, STATE, Kubectl

pytestmark = [
    pytest.mark.kubectl,
    pytest.mark.skipif(not shutil.which("kubectl"), reason="no kubectl binary installed"),
]


@pytest.fixture(params=BINARIES or ["kubectl"], ids=lambda b: Path(b).name)
async def kubectl(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Kubectl]:
    async with kubesim.serve(state=STATE, time_scale=0.01) as sim:
        yield Kubectl(request.param, sim, tmp_path)
        unserved = [
            (r.method, r.path, r.code) for r in sim.requests if r.code == 404 and r.name == ""
        ]
        # Only OpenAPI v2 (protobuf only, not served) may be missing.
        assert all(p.startswith("/openapi/v2") for _, p, _ in unserved), unserved


def _lines(text: str) -> list[list[str]]:
    return [line.split() for line in text.strip().splitlines() if line.strip()]


async def test_get_nodes_and_pods_all_namespaces(kubectl: Kubectl) -> None:
    _, out, _ = await kubectl("get", "nodes,pods", "-A")
    rows = _lines(out)
    assert rows[0][:2] == ["NAME", "STATUS"]
    assert rows[1][:2] == ["node/node-1", "Ready"]
    assert rows[2][:2] == ["node/node-2", "Ready"]
    pods_header = next(i for i, r in enumerate(rows) if r[0] == "NAMESPACE")
    assert rows[pods_header][:5] == ["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS"]
    pods = {(r[0], r[1]): r[3] for r in rows[pods_header + 1 :]}
    assert pods[("default", "pod/web-0")] == "Running"
    assert ("prod", "pod/db-0") in pods


async def test_get_pod_jsonpath(kubectl: Kubectl) -> None:
    _, out, _ = await kubectl(
        "get", "pod", "web-0", "-o", "jsonpath={.status.podIP} {.spec.nodeName}"
    )
    assert out == "10.244.0.5 node-1"


async def test_apply_priority_class_and_pod(kubectl: Kubectl, tmp_path: Path) -> None:
    manifest = tmp_path / "app.yaml"
    manifest.write_text(
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\n"
        "value: 100000\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: important, labels: {app: x}}\n"
        "spec:\n  nodeName: node-2\n  priorityClassName: high\n"
        "  containers: [{name: c, image: 'nginx:1.25'}]\n"
    )
    _, out, err = await kubectl("apply", "-f", str(manifest))
    assert "priorityclass.scheduling.k8s.io/high created" in out
    assert "pod/important created" in out
    pod = kubectl.sim.get("Pod", "default", "important")
    assert pod is not None
    assert pod["spec"]["priority"] == 100000
    assert "kubectl.kubernetes.io/last-applied-configuration" in pod["metadata"]["annotations"]
    # A second apply with a change sends a three-way strategic merge patch.
    manifest.write_text(manifest.read_text().replace("nginx:1.25", "nginx:1.26"))
    _, out, err = await kubectl("apply", "-f", str(manifest))
    assert "priorityclass.scheduling.k8s.io/high unchanged" in out
    assert "pod/important configured" in out
    pod = kubectl.sim.get("Pod", "default", "important")
    assert pod is not None
    assert pod["spec"]["containers"][0]["image"] == "nginx:1.26"
    patches = kubectl.sim.requests.filter(method="PATCH", name="important")
    assert patches and patches[-1].code == 200
    assert "warning" not in err.lower()


async def test_cordon_uncordon(kubectl: Kubectl) -> None:
    _, out, _ = await kubectl("cordon", "node-1")
    assert out.strip() == "node/node-1 cordoned"
    node = kubectl.sim.get("Node", None, "node-1")
    assert node is not None and node["spec"]["unschedulable"] is True
    _, out, _ = await kubectl("get", "node", "node-1", "--no-headers")
    assert out.split()[1] == "Ready,SchedulingDisabled"
    _, out, _ = await kubectl("cordon", "node-1")
    assert out.strip() == "node/node-1 already cordoned"
    _, out, _ = await kubectl("uncordon", "node-1")
    assert out.strip() == "node/node-1 uncordoned"
    node = kubectl.sim.get("Node", None, "node-1")
    assert node is not None and not node["spec"].get("unschedulable")


async def test_get_events(kubectl: Kubectl) -> None:
    kubectl.sim.apply(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "web-0.evicted", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web-0"},
            "reason": "Evicted",
            "message": "The node was low on resource: memory.",
            "type": "Warning",
            "source": {"component": "kubelet"},
        }
    )
    _, out, _ = await kubectl("get", "events")
    rows = _lines(out)
    assert rows[0] == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert rows[1][1:5] == ["Warning", "Evicted", "pod/web-0", "The"]


async def test_delete_pod_waits_for_kubelet(kubectl: Kubectl) -> None:
    _, out, _ = await kubectl("delete", "pod", "web-0", "--timeout=30s")
    assert out.strip() == 'pod "web-0" deleted'
    assert kubectl.sim.get("Pod", "default", "web-0") is None
    graceful = [r for r in kubectl.sim.requests if r.method == "DELETE" and r.name == "web-0"]
    assert [r.code for r in graceful] == [200]


async def test_create_namespace_priorityclass_and_pdb(kubectl: Kubectl) -> None:
    # kubectl 1.32+ sends these bodies as protobuf.
    _, out, _ = await kubectl("create", "namespace", "team")
    assert out.strip() == "namespace/team created"
    ns = kubectl.sim.get("Namespace", None, "team")
    assert ns is not None
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team"}
    assert "generateName" not in ns["metadata"]
    await kubectl("create", "priorityclass", "batch", "--value=50", "--description=for jobs")
    pc = kubectl.sim.get("PriorityClass", None, "batch")
    assert pc is not None
    assert (pc["value"], pc["description"], pc["preemptionPolicy"]) == (
        50,
        "for jobs",
        "PreemptLowerPriority",
    )
    await kubectl("create", "pdb", "web", "-n", "team", "--selector=app=web", "--min-available=50%")
    pdb = kubectl.sim.get("PodDisruptionBudget", "team", "web")
    assert pdb is not None
    assert pdb["spec"] == {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}}
    await kubectl("create", "pdb", "one", "--selector=app=web", "--max-unavailable=1")
    pdb = kubectl.sim.get("PodDisruptionBudget", "default", "one")
    assert pdb is not None and pdb["spec"]["maxUnavailable"] == 1
    _, out, _ = await kubectl("delete", "namespace", "team")
    assert out.strip() == 'namespace "team" deleted'


async def test_unknown_resource_message(kubectl: Kubectl) -> None:
    code, _, err = await kubectl("get", "widgets", check=False)
    assert code == 1
    assert 'the server doesn\'t have a resource type "widgets"' in err


async def test_get_missing_pod_message(kubectl: Kubectl) -> None:
    code, _, err = await kubectl("get", "pod", "nope", check=False)
    assert code == 1
    assert err.strip() == 'Error from server (NotFound): pods "nope" not found'


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))


async def test_apply_of_a_pod_with_an_unparsable_quantity_shows_kubes_decode_error(
    kubectl: Kubectl, tmp_path: Path
) -> None:
    manifest = tmp_path / "bad.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec:\n"
        "  containers: [{name: c, image: nginx, resources: {requests: {cpu: abc}}}]\n"
    )
    code, _, err = await kubectl("apply", "-f", str(manifest), check=False)
    assert code == 1
    assert err.strip() == (
        f'Error from server (BadRequest): error when creating "{manifest}": Pod in version "v1"'
        " cannot be handled as a Pod: quantities must match the regular expression"
        " '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )
    assert kubectl.sim.get("Pod", "default", "bad") is None
