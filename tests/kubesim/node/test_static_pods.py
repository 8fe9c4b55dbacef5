"""Static pods of a process node: run from ``staticPodPath`` under the kubelet's hash, mirrored.

What the eviction agent's trust rests on, as a kubelet does it: the pod runs under the 32-hex
UID of its manifest (the runtime, the node's summary), the API shows a mirror pod with its own
UID and that hash in ``kubernetes.io/config.mirror``, owned by its Node; deleting the mirror
only brings it back, the static pod keeps running; a pod that merely claims a hash is run as an
ordinary pod.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import psutil
import pytest

import kubesim
from kubesim.node.static import read_static_pods
from kubesim.registry.generic import DeleteOptions
from kubesim.sim import Simulator
from tests.support.wait import until

PAUSE = ["python", "-I", "-S", "-c", "import signal; signal.pause()"]
MANIFEST = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "etcd", "namespace": "kube-system", "annotations": {"team": "infra"}},
    "spec": {
        "hostNetwork": True,
        "containers": [
            {
                "name": "etcd",
                "image": "registry.k8s.io/etcd:3.5",
                "command": PAUSE,
                "resources": {"requests": {"memory": "16Mi"}},
            }
        ],
    },
}
STATE = """
apiVersion: v1
kind: Node
metadata: {{name: node-1}}
---
apiVersion: kubesim.io/v1alpha1
kind: ProcessNode
metadata: {{name: node-1}}
memoryCapacity: 512Mi
kubelet: {{staticPodPath: {path}}}
"""
MIRROR = "kubernetes.io/config.mirror"


def manifests(tmp_path: Path) -> Path:
    directory = tmp_path / "manifests"
    directory.mkdir()
    (directory / "etcd.yaml").write_text(json.dumps(MANIFEST))
    (directory / ".etcd.yaml.swp").write_text("not a pod")  # hidden: never read
    (directory / "notes.txt").write_text("kind: ConfigMap\napiVersion: v1\n")
    return directory


@pytest.fixture
async def sim(tmp_path: Path) -> AsyncIterator[Simulator]:
    state = STATE.format(path=manifests(tmp_path))
    async with kubesim.serve(state=state, time_scale=0.1, use_cgroups=False) as s:
        yield s


async def static_uid(sim: Simulator) -> str:
    """The UID the node's runtime runs the static pod under, once it runs."""
    [uid] = await until(sim.runtimes["node-1"].pods, what="the static pod")
    return uid


def mirror(sim: Simulator) -> dict[str, Any] | None:
    return sim.get("Pod", "kube-system", "etcd-node-1")


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


async def test_a_static_pod_runs_under_its_hash_with_a_mirror_pod_owned_by_its_node(
    sim: Simulator,
) -> None:
    rt = sim.runtimes["node-1"]
    uid = await static_uid(sim)
    assert re.fullmatch(r"[0-9a-f]{32}", uid)
    layout = rt.layout(uid)
    assert layout is not None and (layout.namespace, layout.name) == ("kube-system", "etcd-node-1")
    m = await until(
        lambda: (p := mirror(sim)) and p["status"].get("phase") == "Running" and p,
        what="the mirror pod Running",
    )
    meta = m["metadata"]
    assert meta["uid"] != uid and not re.fullmatch(r"[0-9a-f]{32}", meta["uid"])
    annotations = meta["annotations"]
    assert annotations[MIRROR] == annotations["kubernetes.io/config.hash"] == uid
    assert annotations["kubernetes.io/config.source"] == "file"
    assert annotations["kubernetes.io/config.seen"] and annotations["team"] == "infra"
    node = sim.get("Node", None, "node-1")
    assert node is not None
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "name": "node-1",
            "uid": node["metadata"]["uid"],
            "controller": True,
        }
    ]
    spec = m["spec"]
    assert spec["nodeName"] == "node-1"
    assert {"operator": "Exists", "effect": "NoExecute"} in spec["tolerations"]
    status = m["status"]
    [cs] = status["containerStatuses"]
    [running] = rt.status(uid) or []
    assert cs["containerID"] == running.container_id and cs["state"]["running"] and cs["ready"]
    assert status["podIP"] == status["hostIP"]  # hostNetwork
    assert {c["type"]: c["status"] for c in status["conditions"]}["Ready"] == "True"
    # the node's summary names the pod by the hash, as a kubelet's does
    port = node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"]
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{port}/stats/summary") as r,
    ):
        summary = await r.json()
    assert [p["podRef"] for p in summary["pods"]] == [
        {"name": "etcd-node-1", "namespace": "kube-system", "uid": uid}
    ]
    assert rt.pods() == [uid]  # the mirror pod is not run as a pod of its own


@pytest.mark.parametrize("grace", [None, 0], ids=["graceful", "force"])
async def test_deleting_the_mirror_brings_it_back_and_the_static_pod_keeps_running(
    sim: Simulator, grace: int | None
) -> None:
    rt = sim.runtimes["node-1"]
    uid = await static_uid(sim)
    # the runtime holds the pod before its container has started
    [running] = await until(
        lambda: [c for c in rt.status(uid) or [] if c.pid is not None], what="the static pod's pid"
    )
    first = await until(lambda: mirror(sim), what="the mirror pod")
    pods = sim.scheme.for_kind("v1", "Pod")
    assert pods is not None
    sim.registry.delete(
        pods, "kube-system", "etcd-node-1", DeleteOptions(grace_period_seconds=grace)
    )
    again = await until(
        lambda: (
            (p := mirror(sim))
            and p["metadata"]["uid"] != first["metadata"]["uid"]
            and p["status"].get("phase") == "Running"
            and p
        ),
        what="a new mirror pod",
    )
    assert again["metadata"]["annotations"][MIRROR] == uid
    assert rt.pods() == [uid] and alive(running.pid)


async def test_a_pod_claiming_a_hash_is_not_a_mirror_and_runs_as_itself(sim: Simulator) -> None:
    uid = await static_uid(sim)
    pods = sim.scheme.for_kind("v1", "Pod")
    assert pods is not None
    forged = json.loads(json.dumps(MANIFEST))
    forged["metadata"] = {"name": "forged", "annotations": {MIRROR: uid}}
    forged["spec"]["nodeName"] = "node-1"
    created = sim.registry.create(pods, "default", forged)
    await until(lambda: len(sim.runtimes["node-1"].pods()) == 2, what="the claiming pod running")
    assert created["metadata"]["uid"] in sim.runtimes["node-1"].pods()
    await until(lambda: mirror(sim), what="the mirror pod")


async def test_a_static_pods_exit_shows_on_its_mirror(tmp_path: Path) -> None:
    directory = tmp_path / "manifests"
    directory.mkdir()
    crash = json.loads(json.dumps(MANIFEST))
    crash["metadata"]["name"] = "crash"
    crash["spec"]["containers"][0]["command"] = [
        "python",
        "-I",
        "-S",
        "-c",
        "import sys; sys.exit(3)",
    ]
    (directory / "crash.json").write_text(json.dumps(crash))
    state = STATE.format(path=directory)
    async with kubesim.serve(state=state, time_scale=0.1, use_cgroups=False) as sim:
        m = await until(
            lambda: (
                (p := sim.get("Pod", "kube-system", "crash-node-1"))
                and p["status"].get("containerStatuses")
                and "terminated" in p["status"]["containerStatuses"][0]["state"]
                and p
            ),
            what="the exit on the mirror pod",
        )
    [cs] = m["status"]["containerStatuses"]
    assert cs["state"]["terminated"]["exitCode"] == 3 and not cs["ready"]
    assert m["status"]["phase"] == "Running"  # restartPolicy Always: not terminal
    assert {c["type"]: c["status"] for c in m["status"]["conditions"]}["Ready"] == "False"


def test_the_kubelets_copy_of_a_manifest(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="kubesim")
    directory = manifests(tmp_path)
    (directory / "two.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n---\n{}\n")
    (directory / "bad.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: b}\nspec: 3\n")
    [pod] = read_static_pods(directory, node="Node-1", now=0)
    [again] = read_static_pods(directory, node="Node-1", now=60)
    [elsewhere] = read_static_pods(directory, node="node-2", now=0)
    assert pod.uid == again.uid != elsewhere.uid  # the node, the file and the manifest
    assert pod.key == ("kube-system", "etcd-node-1")
    meta = pod.pod["metadata"]
    assert meta["annotations"]["kubernetes.io/config.seen"] == "1970-01-01T00:00:00.000000Z"
    assert pod.pod["spec"]["nodeName"] == "Node-1"
    explicit = json.loads(json.dumps(MANIFEST))
    explicit["metadata"]["uid"] = "given"
    (directory / "etcd.yaml").write_text(json.dumps(explicit))
    [kept] = read_static_pods(directory, node="Node-1", now=0)
    assert kept.uid == "given"  # a UID the manifest gives is the kubelet's too
    skipped = [r.getMessage() for r in caplog.records]
    assert any("notes.txt" in m and "must be a v1 Pod" in m for m in skipped)
    assert any("two.yaml" in m and "exactly one object" in m for m in skipped)
    assert any("bad.yaml" in m for m in skipped)
    assert not any(".swp" in m for m in skipped)
