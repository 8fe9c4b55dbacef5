"""The configuration in the scheduling cycle: each pod goes through its profile (by
``schedulerName``), a pod of no profile is another scheduler's, the profile's args and
``percentageOfNodesToScore`` decide — and kube's default configuration, written out in full,
decides exactly as the library's default plugins did (a property over random clusters)."""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kube.objects import KubeObject, Node, Pod, PriorityClass
from scheduler.config import decode_config, default_configuration
from scheduler.config.defaults import set_defaults
from scheduler.plugins.registry import default_framework, default_score_plugins
from scheduler.schedule import schedule_one
from scheduler.simulator import build_snapshot, simulate
from scheduler.snapshot import Snapshot
from tests.support import manifests as mf

HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
WRITTEN_OUT = decode_config(yaml.safe_dump(set_defaults({})), source="defaults.yaml")


def node(name: str, cpu: str = "4", memory: str = "8Gi", **labels: str) -> dict[str, Any]:
    """A 20-pod node labelled with its hostname and ``labels``."""
    labels = {"kubernetes.io/hostname": name, **labels}
    return mf.node(name, labels=labels, cpu=cpu, memory=memory, pods="20")


def pod(name: str, cpu: str = "500m", *, node_name: str = "", **spec: Any) -> dict[str, Any]:
    """A pod labelled app=<its first letter>."""
    return mf.pending_pod(name, cpu=cpu, node_name=node_name, labels={"app": name[:1]}, **spec)


HIGH = PriorityClass.from_dict(
    {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "high"},
        "value": 100,
    }
)


def objects(*manifests: dict[str, Any]) -> list[KubeObject]:
    out: list[KubeObject] = [HIGH]
    out.extend(Node.from_dict(m) if m["kind"] == "Node" else Pod.from_dict(m) for m in manifests)
    return out


# --- the default configuration written out in full is today's scheduler ------------------------

ZONES = ["a", "b", None]


@st.composite
def clusters(draw: st.DrawFn) -> list[KubeObject]:
    n = draw(st.integers(1, 6))
    manifests: list[dict[str, Any]] = []
    for i in range(n):
        zone = draw(st.sampled_from(ZONES))
        labels = {"topology.kubernetes.io/zone": zone} if zone else {}
        m = node(f"n{i}", cpu=draw(st.sampled_from(["1", "2", "4"])), **labels)
        if draw(st.integers(0, 4)) == 0:
            m["spec"] = {"taints": [{"key": "k", "effect": "PreferNoSchedule"}]}
        manifests.append(m)
    manifests.extend(
        pod(
            f"{'ab'[j % 2]}bound{j}",
            cpu=draw(st.sampled_from(["100m", "300m", "700m"])),
            node_name=f"n{draw(st.integers(0, n - 1))}",
        )
        for j in range(draw(st.integers(0, 8)))
    )
    for k in range(draw(st.integers(1, 6))):
        spec: dict[str, Any] = dict(draw(st.sampled_from([{}, {"priorityClassName": "high"}])))
        shape = draw(st.integers(0, 3))
        if shape == 1:
            spec["affinity"] = {
                "podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 10,
                            "podAffinityTerm": {
                                "labelSelector": {"matchLabels": {"app": "a"}},
                                "topologyKey": "kubernetes.io/hostname",
                            },
                        }
                    ]
                }
            }
        elif shape == 2:
            spec["topologySpreadConstraints"] = [
                {
                    "maxSkew": 1,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": {"matchLabels": {"app": "a"}},
                }
            ]
        elif shape == 3:
            spec["affinity"] = {
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 5,
                            "preference": {
                                "matchExpressions": [
                                    {
                                        "key": "topology.kubernetes.io/zone",
                                        "operator": "In",
                                        "values": ["a"],
                                    }
                                ]
                            },
                        }
                    ]
                }
            }
        manifests.append(
            pod(
                f"{'ab'[k % 2]}new{k}", cpu=draw(st.sampled_from(["200m", "900m", "1500m"])), **spec
            )
        )
    return objects(*manifests)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_default_configuration_written_out_decides_as_today(cluster: list[KubeObject]) -> None:
    legacy_framework = default_framework()
    legacy_scorers = default_score_plugins()
    snap_a, queue = build_snapshot(cluster)
    snap_b, _ = build_snapshot(cluster)
    for p in sorted(queue, key=lambda q: -q.priority):
        before = schedule_one(
            p,
            snap_a,
            framework=legacy_framework,
            score_plugins=legacy_scorers,
            percentage_of_nodes_to_score=0,
        )
        after = schedule_one(p, snap_b, config=WRITTEN_OUT)
        assert after.suggested_host == before.suggested_host
        assert after.node_scores == before.node_scores
        assert after.message == before.message
        if before.succeeded:
            snap_a.bind_pod(p, before.suggested_host)
            snap_b.bind_pod(p, after.suggested_host)
    assert simulate(cluster, config=WRITTEN_OUT).to_dict() == simulate(cluster).to_dict()


# --- profiles in the cycle ---------------------------------------------------------------------

TWO_PROFILES = decode_config(
    HEAD
    + """profiles:
- schedulerName: default-scheduler
- schedulerName: bin-packing
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
- schedulerName: no-preemption
  plugins:
    postFilter:
      disabled:
      - name: DefaultPreemption
"""
)


def test_each_pod_goes_through_its_profile() -> None:
    """The same pod, spread by the default profile, packed by MostAllocated."""
    cluster = objects(node("busy"), node("idle"), pod("x", cpu="2", node_name="busy"))
    spread = simulate(cluster, pending=[Pod.from_dict(pod("p"))], config=TWO_PROFILES)
    packed = simulate(
        cluster,
        pending=[Pod.from_dict(pod("p", schedulerName="bin-packing"))],
        config=TWO_PROFILES,
    )
    assert spread.decisions[0].node == "idle"
    assert packed.decisions[0].node == "busy"


def test_a_pod_of_no_profile_is_left_alone() -> None:
    cluster = objects(node("n"), pod("p", schedulerName="my-scheduler"))
    (decision,) = simulate(cluster, config=TWO_PROFILES).decisions
    assert decision.outcome == "other-scheduler"
    assert not decision.node and not decision.victims
    assert 'schedulerName "my-scheduler" is no profile of this scheduler' in decision.message
    # without a configuration, kube's defaults: one default-scheduler profile
    (default,) = simulate(cluster).decisions
    assert default.outcome == "other-scheduler"
    result = schedule_one(Pod.from_dict(pod("p", schedulerName="x")), build_snapshot(cluster)[0])
    assert not result.succeeded and result.status.code.name == "Skip"


def test_a_profile_without_default_preemption_does_not_preempt() -> None:
    low = pod("low", cpu="3", node_name="n")
    cluster = objects(node("n"), low)
    high = {"priorityClassName": "high"}
    preempting = simulate(
        cluster, pending=[Pod.from_dict(pod("h", cpu="3", **high))], config=TWO_PROFILES
    )
    assert preempting.decisions[0].outcome == "preempting"
    refused = simulate(
        cluster,
        pending=[Pod.from_dict(pod("h", cpu="3", schedulerName="no-preemption", **high))],
        config=TWO_PROFILES,
    )
    assert refused.decisions[0].outcome == "unschedulable"
    assert not refused.decisions[0].victims


def test_percentage_of_nodes_to_score_global_and_per_profile() -> None:
    config = decode_config(
        HEAD
        + """percentageOfNodesToScore: 20
profiles:
- schedulerName: default-scheduler
- schedulerName: all
  percentageOfNodesToScore: 100
"""
    )
    nodes = [Node.from_dict(node(f"n{i:03}")) for i in range(200)]
    snap = Snapshot.from_objects(nodes)
    some = schedule_one(Pod.from_dict(pod("p")), snap, config=config)
    every = schedule_one(Pod.from_dict(pod("p", schedulerName="all")), snap, config=config)
    assert some.evaluated_nodes == 100  # max(200 * 20%, 100)
    assert every.evaluated_nodes == 200
    adaptive = schedule_one(Pod.from_dict(pod("p")), snap)
    assert adaptive.evaluated_nodes == 100  # 200 nodes: max(200 * 49%, 100) = 100


def test_args_reach_the_plugins() -> None:
    config = decode_config(
        HEAD
        + """profiles:
- schedulerName: tuned
  pluginConfig:
  - name: InterPodAffinity
    args: {hardPodAffinityWeight: 7, ignorePreferredTermsOfExistingPods: true}
  - name: DefaultPreemption
    args: {minCandidateNodesPercentage: 30, minCandidateNodesAbsolute: 5}
  - name: NodeResourcesBalancedAllocation
    args:
      resources: [{name: cpu}, {name: memory}, {name: example.com/gpu}]
"""
    )
    profile = config.profiles["tuned"]
    scorers = {p.name: p for p in profile.score_plugins}
    ipa = scorers["InterPodAffinity"]
    assert ipa.hard_pod_affinity_weight == 7  # type: ignore[attr-defined]
    assert ipa.ignore_preferred_terms_of_existing_pods is True  # type: ignore[attr-defined]
    assert scorers["NodeResourcesBalancedAllocation"].resources == {  # type: ignore[attr-defined]
        "cpu": 1,
        "memory": 1,
        "example.com/gpu": 1,
    }
    assert (profile.min_candidate_nodes_percentage, profile.min_candidate_nodes_absolute) == (30, 5)
    assert default_configuration().profiles["default-scheduler"].min_candidate_nodes_absolute == 100
