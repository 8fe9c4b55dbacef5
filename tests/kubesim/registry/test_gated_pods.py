"""Gated pods as kube shows and validates them.

* ``printPod``: a pod whose ``PodScheduled`` condition has reason ``SchedulingGated`` shows
  ``SchedulingGated`` in the STATUS column (the API server sets that condition on create).
* ``ValidatePodUpdate`` for a pod that is gated before the update (KEP-3838): gates may only be
  removed, ``spec.nodeSelector`` may only gain keys, required node affinity may only be
  tightened; the rules come from ``scheduler.queue.validation``, with kube's messages. Pod
  (anti-)affinity stays immutable.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import kubesim
from kubesim.core.errors import StatusError
from kubesim.sim import Simulator

NODE = """
apiVersion: v1
kind: Node
metadata: {name: node-1}
status:
  capacity: {cpu: "4", memory: 8Gi, pods: "110"}
"""


def gated(name: str = "gated", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "schedulingGates": [{"name": "example.com/quota"}],
            "containers": [{"name": "c", "image": "nginx"}],
            **spec,
        },
    }


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    async with kubesim.serve(state=NODE, time_scale=0.01) as s:
        yield s


def update(sim: Simulator, name: str, change: Any) -> dict[str, Any]:
    rt = sim.scheme.for_storage("pods")
    stored = sim.get("Pod", "default", name)
    assert stored is not None
    change(stored["spec"])
    obj, _ = sim.registry.update(rt, "default", name, stored)
    return obj


def create(sim: Simulator, pod: dict[str, Any]) -> None:
    rt = sim.scheme.for_storage("pods")
    sim.registry.create(rt, "default", pod)


async def test_a_gated_pod_may_gain_a_node_selector_key(sim: Simulator) -> None:
    create(sim, gated(nodeSelector={"disk": "ssd"}))
    obj = update(sim, "gated", lambda s: s["nodeSelector"].update(zone="a"))
    assert obj["spec"]["nodeSelector"] == {"disk": "ssd", "zone": "a"}


async def test_a_gated_pod_may_not_change_a_node_selector_value(sim: Simulator) -> None:
    create(sim, gated(nodeSelector={"disk": "ssd"}))
    with pytest.raises(StatusError) as exc:
        update(sim, "gated", lambda s: s["nodeSelector"].update(disk="hdd"))
    assert exc.value.code == 422
    assert exc.value.message == (
        'Pod "gated" is invalid: spec.nodeSelector: Invalid value: {"disk":"hdd"}: '
        "only additions to spec.nodeSelector are allowed (no mutations or deletions)"
    )


async def test_a_gated_pod_may_tighten_required_node_affinity(sim: Simulator) -> None:
    term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }
    create(sim, gated(affinity=affinity))

    def tighten(spec: dict[str, Any]) -> None:
        terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        terms["nodeSelectorTerms"][0]["matchExpressions"].append(
            {"key": "disk", "operator": "In", "values": ["ssd"]}
        )

    obj = update(sim, "gated", tighten)
    required = obj["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert len(required["nodeSelectorTerms"][0]["matchExpressions"]) == 2

    def add_term(spec: dict[str, Any]) -> None:
        terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        terms["nodeSelectorTerms"].append({"matchExpressions": []})

    with pytest.raises(StatusError) as exc:
        update(sim, "gated", add_term)
    assert exc.value.code == 422
    assert "no additions/deletions to non-empty NodeSelectorTerms list are allowed" in (
        exc.value.message
    )


async def test_a_gated_pod_may_get_node_affinity_when_it_had_none(sim: Simulator) -> None:
    create(sim, gated())
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                ]
            }
        }
    }
    obj = update(sim, "gated", lambda s: s.update(affinity=affinity))
    assert obj["spec"]["affinity"] == affinity


async def test_gates_may_only_be_removed(sim: Simulator) -> None:
    create(sim, gated())
    with pytest.raises(StatusError) as exc:
        update(sim, "gated", lambda s: s["schedulingGates"].append({"name": "other"}))
    assert exc.value.message == (
        'Pod "gated" is invalid: spec.schedulingGates[1].name: Forbidden: only deletion is '
        "allowed, but found new scheduling gate 'other'"
    )


async def test_an_ungated_pod_keeps_its_node_selector(sim: Simulator) -> None:
    create(sim, {**gated("free", nodeSelector={"disk": "ssd"})})
    update(sim, "free", lambda s: s.pop("schedulingGates"))
    with pytest.raises(StatusError) as exc:
        update(sim, "free", lambda s: s["nodeSelector"].update(zone="a"))
    assert exc.value.message.startswith(
        'Pod "free" is invalid: spec: Forbidden: pod updates may not change fields other than'
    )


async def test_pod_affinity_stays_immutable_while_gated(sim: Simulator) -> None:
    create(sim, gated())
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "zone"}
            ]
        }
    }
    with pytest.raises(StatusError) as exc:
        update(sim, "gated", lambda s: s.update(affinity=anti))
    assert "spec: Forbidden: pod updates may not change fields other than" in exc.value.message


@pytest.mark.kubectl
@pytest.mark.skipif(not shutil.which("kubectl"), reason="no kubectl binary installed")
async def test_kubectl_shows_scheduling_gated_and_patches_a_node_selector(
    sim: Simulator, tmp_path: Path
) -> None:
    create(sim, gated(nodeSelector={"disk": "ssd"}))

    async def kubectl(*args: str) -> str:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
        env["KUBECONFIG"] = str(sim.kubeconfig_path)
        env["HOME"] = str(tmp_path)
        proc = await asyncio.create_subprocess_exec(
            "kubectl",
            f"--cache-dir={tmp_path / 'cache'}",
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode == 0, err.decode()
        return out.decode()

    out = await kubectl("get", "pods", "--no-headers")
    assert out.split()[:3] == ["gated", "0/1", "SchedulingGated"]
    out = await kubectl(
        "patch", "pod", "gated", "--type=merge", "-p", '{"spec":{"nodeSelector":{"zone":"a"}}}'
    )
    assert out.strip() == "pod/gated patched"
    stored = sim.get("Pod", "default", "gated")
    assert stored is not None
    assert stored["spec"]["nodeSelector"] == {"disk": "ssd", "zone": "a"}


async def test_a_gated_pod_may_gain_tolerations_but_not_lose_them(sim: Simulator) -> None:
    create(sim, gated(tolerations=[{"key": "a", "operator": "Exists"}]))
    obj = update(
        sim, "gated", lambda s: s["tolerations"].append({"key": "b", "operator": "Exists"})
    )
    keys = [t["key"] for t in obj["spec"]["tolerations"]]
    assert keys[0] == "a" and keys[-1] == "b"  # the default not-ready/unreachable in between
    with pytest.raises(StatusError) as exc:
        update(sim, "gated", lambda s: s.update(tolerations=[]))
    assert "spec: Forbidden: pod updates may not change fields other than" in exc.value.message
