"""kubesim's scheduler loop spreads pods as ``python -m scheduler simulate`` does.

The loop carries Services, ReplicationControllers, ReplicaSets and StatefulSets to the
snapshot, so PodTopologySpread's explicit constraints and its system default spreading (for
pods a Service or controller selects) decide in kubesim as in kube-scheduler.
"""

from __future__ import annotations

from pathlib import Path

import kubesim
from kubesim.scheduling import SchedulerLoop
from kubesim.sim import Simulator
from scheduler import build_snapshot, load_objects, schedule_one
from tests.support.wait import until

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

SERVICE = """- apiVersion: v1
  kind: Service
  metadata: {name: api, namespace: default}
  spec: {selector: {app: api}, ports: [{port: 80}]}
"""

# node-c holds a big batch pod: on resources alone node-a or node-b win; spreading the pods a
# Service selects over zones (ScheduleAnyway, weight 2) makes node-c win.
DEFAULT_SPREAD = """apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: node-a, labels: {topology.kubernetes.io/zone: zone-1}}
  status: {allocatable: {cpu: "4", memory: 16Gi, pods: "110"}}
- apiVersion: v1
  kind: Node
  metadata: {name: node-b, labels: {topology.kubernetes.io/zone: zone-2}}
  status: {allocatable: {cpu: "4", memory: 16Gi, pods: "110"}}
- apiVersion: v1
  kind: Node
  metadata: {name: node-c, labels: {topology.kubernetes.io/zone: zone-3}}
  status: {allocatable: {cpu: "4", memory: 16Gi, pods: "110"}}
- apiVersion: v1
  kind: Pod
  metadata: {name: api-1, namespace: default, labels: {app: api}}
  spec:
    nodeName: node-a
    containers: [{name: c, image: api, resources: {requests: {cpu: 100m, memory: 128Mi}}}]
- apiVersion: v1
  kind: Pod
  metadata: {name: api-2, namespace: default, labels: {app: api}}
  spec:
    nodeName: node-b
    containers: [{name: c, image: api, resources: {requests: {cpu: 100m, memory: 128Mi}}}]
- apiVersion: v1
  kind: Pod
  metadata: {name: batch, namespace: default, labels: {app: batch}}
  spec:
    nodeName: node-c
    containers: [{name: c, image: batch, resources: {requests: {cpu: "1", memory: 4Gi}}}]
- apiVersion: v1
  kind: Pod
  metadata: {name: api-3, namespace: default, labels: {app: api}}
  spec:
    containers: [{name: c, image: api, resources: {requests: {cpu: 100m, memory: 128Mi}}}]
"""


def simulated_host(text: str) -> str:
    snapshot, pending = build_snapshot(load_objects(text))
    [pod] = pending
    return schedule_one(pod, snapshot).suggested_host


def node_of(sim: Simulator, name: str) -> str:
    return str(((sim.get("Pod", "default", name) or {}).get("spec") or {}).get("nodeName") or "")


async def test_do_not_schedule_spread_places_the_pod_as_simulate_does() -> None:
    path = EXAMPLES / "topology-spread.yaml"
    expected = simulated_host(path.read_text())
    assert expected == "node-c"  # the example's point: the constraint overrides the scores
    async with kubesim.serve(state=path, time_scale=0.01) as sim:
        host = await until(lambda: node_of(sim, "web-4"), what="web-4 bound")
        assert host == expected
        loop = sim.find_controller(SchedulerLoop)
        assert loop is not None
        assert [d.node for d in loop.decisions if d.pod == "default/web-4"] == [expected]


async def test_system_default_spreading_follows_a_service() -> None:
    with_service = DEFAULT_SPREAD + SERVICE
    expected = simulated_host(with_service)
    assert expected == "node-c"
    assert simulated_host(DEFAULT_SPREAD) != expected  # without the Service, resources decide
    async with kubesim.serve(state=with_service, time_scale=0.01) as sim:
        host = await until(lambda: node_of(sim, "api-3"), what="api-3 bound")
        assert host == expected
        assert sim.get("Service", "default", "api") is not None
