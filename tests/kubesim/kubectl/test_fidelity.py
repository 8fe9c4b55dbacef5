"""Real kubectl against the fidelity gaps: protobuf creates and deletes, RCs, no eviction API.

Skipped only when no kubectl binary exists; runs every installed kubectl
(``tests.support.kubectl``'s list). kubectl 1.32 sends ``create deployment``/``create job``
bodies and ``drain --disable-eviction``'s DeleteOptions as protobuf, which kubesim decodes.
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
from tests.support.kubectl import BINARIES, Kubectl

pytestmark = [
    pytest.mark.kubectl,
    pytest.mark.skipif(not shutil.which("kubectl"), reason="no kubectl binary installed"),
]

STATE = """
apiVersion: v1
kind: Node
metadata: {name: node-1}
status: {conditions: [{type: Ready, status: "True"}]}
---
apiVersion: v1
kind: Node
metadata: {name: node-2}
status: {conditions: [{type: Ready, status: "True"}]}
---
apiVersion: v1
kind: ReplicationController
metadata: {name: legacy, uid: legacy-uid}
spec:
  replicas: 2
  template:
    metadata: {labels: {app: legacy}}
    spec: {containers: [{name: c, image: nginx}]}
status: {replicas: 2, readyReplicas: 2}
---
apiVersion: v1
kind: Pod
metadata:
  name: legacy-a
  labels: {app: legacy}
  ownerReferences:
  - {apiVersion: v1, kind: ReplicationController, name: legacy, uid: legacy-uid, controller: true}
spec:
  nodeName: node-1
  terminationGracePeriodSeconds: 10
  containers: [{name: c, image: nginx}]
status: {phase: Running, conditions: [{type: Ready, status: "True"}]}
---
apiVersion: v1
kind: Pod
metadata:
  name: legacy-b
  labels: {app: legacy}
  ownerReferences:
  - {apiVersion: v1, kind: ReplicationController, name: legacy, uid: legacy-uid, controller: true}
spec:
  nodeName: node-2
  containers: [{name: c, image: nginx}]
status: {phase: Running, conditions: [{type: Ready, status: "True"}]}
"""


async def _serve(binary: str, tmp_path: Path, **options: Any) -> AsyncIterator[Kubectl]:
    # A frozen cluster: these check what the API server stores, not what controllers make of it.
    async with kubesim.serve(
        state=STATE, time_scale=0.01, disabled_controllers=FROZEN, **options
    ) as sim:
        yield Kubectl(binary, sim, tmp_path)
        unserved = [
            (r.method, r.path, r.code) for r in sim.requests if r.code == 404 and r.name == ""
        ]
        assert all(p.startswith("/openapi/v2") for _, p, _ in unserved), unserved
        refused = [(r.method, r.path, r.code) for r in sim.requests if r.code in (400, 415)]
        assert refused == []


@pytest.fixture(params=BINARIES or ["kubectl"], ids=lambda b: Path(b).name)
async def kubectl(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Kubectl]:
    async for k in _serve(request.param, tmp_path):
        yield k


@pytest.fixture(params=BINARIES or ["kubectl"], ids=lambda b: Path(b).name)
async def kubectl_no_eviction(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[Kubectl]:
    async for k in _serve(request.param, tmp_path, eviction_subresource=False):
        yield k


def _rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.strip().splitlines() if line.strip()]


async def test_create_deployment(kubectl: Kubectl) -> None:
    _, out, _ = await kubectl(
        "create", "deployment", "web", "--image=nginx:1.25", "--replicas=3", "--port=8080"
    )
    assert out.strip() == "deployment.apps/web created"
    dep = kubectl.sim.get("Deployment", "default", "web")
    assert dep is not None
    spec = dep["spec"]
    assert spec["replicas"] == 3
    assert spec["selector"] == {"matchLabels": {"app": "web"}}
    container = spec["template"]["spec"]["containers"][0]
    assert (container["name"], container["image"]) == ("nginx", "nginx:1.25")
    assert container["ports"] == [{"containerPort": 8080, "protocol": "TCP"}]
    assert spec["strategy"]["type"] == "RollingUpdate"
    # replicas 0 is a set pointer in protobuf: kept, not defaulted to 1.
    await kubectl("create", "deployment", "idle", "--image=nginx", "--replicas=0")
    idle = kubectl.sim.get("Deployment", "default", "idle")
    assert idle is not None and idle["spec"]["replicas"] == 0
    _, out, _ = await kubectl("get", "deployment", "web")
    rows = _rows(out)
    assert rows[0] == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert rows[1][:4] == ["web", "0/3", "0", "0"]


async def test_apply_the_same_deployment(kubectl: Kubectl, tmp_path: Path) -> None:
    manifest = tmp_path / "web.yaml"
    _, yaml_text, _ = await kubectl(
        "create", "deployment", "web", "--image=nginx:1.25", "--dry-run=client", "-o", "yaml"
    )
    manifest.write_text(yaml_text)
    _, out, _ = await kubectl("apply", "-f", str(manifest))
    assert out.strip() == "deployment.apps/web created"
    # Re-applying only sends the manifest's "creationTimestamp: null" lines: nothing changes.
    _, out, _ = await kubectl("apply", "-f", str(manifest))
    assert out.strip() in ("deployment.apps/web unchanged", "deployment.apps/web configured")
    dep = kubectl.sim.get("Deployment", "default", "web")
    assert dep is not None and dep["spec"]["replicas"] == 1
    assert dep["metadata"]["generation"] == 1
    assert dep["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.25"


async def test_create_job(kubectl: Kubectl) -> None:
    _, out, _ = await kubectl("create", "job", "once", "--image=busybox", "--", "echo", "hi")
    assert out.strip() == "job.batch/once created"
    job = kubectl.sim.get("Job", "default", "once")
    assert job is not None
    uid = job["metadata"]["uid"]
    assert job["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    template = job["spec"]["template"]
    assert template["spec"]["restartPolicy"] == "Never"
    assert template["spec"]["containers"][0]["command"] == ["echo", "hi"]
    assert template["metadata"]["labels"]["job-name"] == "once"
    _, out, _ = await kubectl("get", "job", "once")
    rows = _rows(out)
    assert rows[0] == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    assert rows[1][:3] == ["once", "Running", "0/1"]


async def test_replication_controller_get_and_scale(kubectl: Kubectl) -> None:
    _, out, _ = await kubectl("get", "rc", "-o", "wide")
    rows = _rows(out)
    assert rows[0] == [
        "NAME",
        "DESIRED",
        "CURRENT",
        "READY",
        "AGE",
        "CONTAINERS",
        "IMAGES",
        "SELECTOR",
    ]
    assert rows[1][:4] == ["legacy", "2", "2", "2"]
    assert rows[1][-3:] == ["c", "nginx", "app=legacy"]
    _, out, _ = await kubectl("scale", "rc", "legacy", "--replicas=4")
    assert out.strip() == "replicationcontroller/legacy scaled"
    rc = kubectl.sim.get("ReplicationController", "default", "legacy")
    assert rc is not None and rc["spec"]["replicas"] == 4
    _, out, _ = await kubectl("get", "all")
    assert "replicationcontroller/legacy" in out


async def test_drain_disable_eviction_sends_protobuf_delete_options(kubectl: Kubectl) -> None:
    _, out, _ = await kubectl("drain", "node-1", "--disable-eviction", "--timeout=60s")
    assert "pod/legacy-a deleted" in out
    assert "node/node-1 drained" in out
    deletes = kubectl.sim.requests.filter(method="DELETE", name="legacy-a")
    assert [r.code for r in deletes] == [200]
    minor = re.search(r"/v1\.(\d+)\.", deletes[0].user_agent)
    assert minor is not None
    if int(minor.group(1)) >= 32:
        assert str(deletes[0].body).startswith("k8s\x00")  # a protobuf DeleteOptions
    else:
        assert deletes[0].body == {"kind": "DeleteOptions", "apiVersion": "v1"}
    assert kubectl.sim.get("Pod", "default", "legacy-a") is None
    assert kubectl.sim.requests.filter(subresource="eviction") == []


async def test_drain_falls_back_to_delete_without_eviction_api(
    kubectl_no_eviction: Kubectl,
) -> None:
    kubectl = kubectl_no_eviction
    _, out, _ = await kubectl("drain", "node-1", "--timeout=60s")
    assert "pod/legacy-a deleted" in out  # "evicted" when the Eviction API is there
    assert kubectl.sim.requests.filter(subresource="eviction") == []
    assert kubectl.sim.get("Pod", "default", "legacy-a") is None
