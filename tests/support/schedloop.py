"""Helpers for tests of kubesim's scheduler loop: nodes as YAML state, creates through the
REST layer, and reads of what the loop did (conditions, events, decisions)."""

from __future__ import annotations

from typing import Any

from kubesim.scheduling import SchedulerLoop
from kubesim.sim import Simulator
from scheduler import object_from_dict

NODE = """
apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}, disk: {disk}}}}}
spec: {{unschedulable: {cordoned}}}
status:
  capacity: {{cpu: "{cpu}", memory: 8Gi, pods: "110"}}
  conditions: [{{type: Ready, status: "True"}}]
"""

PRIORITY_CLASSES = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 100
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: mid}
value: 500
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
"""


def node_yaml(name: str, *, cpu: str = "4", disk: str = "ssd", cordoned: bool = False) -> str:
    """A node as YAML text for ``kubesim.serve(state=...)`` (tests edit and join the text);
    ``manifests.node`` is the dict form."""
    return NODE.format(name=name, cpu=cpu, disk=disk, cordoned=str(cordoned).lower())


def create_pod(sim: Simulator, manifest: dict[str, Any]) -> dict[str, Any]:
    """A client's create: through the REST layer, admission included."""
    out: dict[str, Any] = sim.registry.create(sim._type_for("Pod"), "default", manifest)
    return out


def loop_of(sim: Simulator) -> SchedulerLoop:
    loop = sim.find_controller(SchedulerLoop)
    assert loop is not None
    return loop


def stored_pod(sim: Simulator, name: str) -> dict[str, Any]:
    """The pod ``default/<name>`` as stored now (it must exist)."""
    obj = sim.get("Pod", "default", name)
    assert obj is not None
    return obj


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == type_:
            return dict(c)
    return None


def events_for(sim: Simulator, name: str, reason: str) -> list[dict[str, Any]]:
    return [
        e
        for e in sim.list_objects("events.events.k8s.io", "default")
        if e["regarding"]["name"] == name and e["reason"] == reason
    ]


def cluster_objects(sim: Simulator) -> list[Any]:
    """The stored nodes, pods, PDBs and PriorityClasses as typed objects (snapshot input)."""
    out = []
    for kind in ("Node", "PriorityClass", "PodDisruptionBudget", "Pod"):
        for obj in sim.list_objects(kind):
            if kind == "Pod" and (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            out.append(object_from_dict(obj))
    return out


def decision_for(sim: Simulator, name: str) -> Any:
    decisions = [d for d in loop_of(sim).decisions if d.pod == f"default/{name}"]
    return decisions[-1] if decisions else None
