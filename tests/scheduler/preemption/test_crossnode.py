"""Cross-node preemption (beyond kube, opt-in): ``preempt(..., cross_node=True)``.

Seed 000's example — a pod with zone anti-affinity towards a lower-priority pod on another node
of the zone — is unschedulable in kube; with ``cross_node=True`` the blocker is a victim and
the pod is nominated to the node it then fits on. Properties on random zoned clusters: with
``cross_node=False`` the decision is the default one; with it, victims are strictly lower
priority and the pod fits once they are gone; kube's own decisions are never changed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kube.objects import Node, Pod, PodDisruptionBudget
from scheduler import build_snapshot, load_objects, schedule_one
from scheduler.framework import CycleState
from scheduler.preemption import PreemptionResult, preempt
from scheduler.preemption.core import default_preemption_framework
from scheduler.simulator import simulate
from scheduler.snapshot import Snapshot
from tests.support import objects as obj
from tests.support.preemption import mk_pdb

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "cross-node-preemption.yaml"
ZONE = "topology.kubernetes.io/zone"


def node(name: str, zone: str, *, cpu: str = "4") -> Node:
    """A node of ``zone``, named by the hostname label too."""
    return obj.node(name, {ZONE: zone, "kubernetes.io/hostname": name}, cpu=cpu, memory="16Gi")


def anti(app: str, key: str = ZONE) -> dict[str, Any]:
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
            ]
        }
    }


def pod(
    name: str,
    prio: int,
    *,
    cpu: str = "100m",
    on: str = "",
    app: str = "",
    affinity: dict[str, Any] | None = None,
    selector: dict[str, str] | None = None,
    tier: str = "",
) -> Pod:
    """A pod of priority ``prio`` labelled ``app``/``tier`` (when given), bound ``on`` a node."""
    labels = {k: v for k, v in (("app", app), ("tier", tier)) if v}
    return obj.pod(
        name,
        priority=prio,
        cpu=cpu,
        node_name=on,
        labels=labels,
        affinity=affinity or None,
        node_selector=selector or None,
    )


def decide(snapshot: Snapshot, p: Pod, **kw: Any) -> PreemptionResult:
    result = schedule_one(p, snapshot)
    assert not result.succeeded
    return preempt(p, snapshot, node_statuses=result.node_statuses, **kw)


def test_seed_000_example_is_unschedulable_in_kube_and_preempts_across_nodes() -> None:
    snapshot, [checkout] = build_snapshot(load_objects(EXAMPLE))
    kube = decide(snapshot, checkout)
    assert kube.nominated_node_name == ""
    assert kube.victims == []
    wide = decide(snapshot, checkout, cross_node=True)
    assert wide.nominated_node_name == "node-a2"
    assert [v.key for v in wide.victims] == ["default/batch-1"]
    assert wide.victims[0].node_name == "node-a1"
    verdicts = {v.node: v for v in wide.explanation.nodes()}
    assert verdicts["node-a2"].verdict == "chosen"
    assert verdicts["node-a1"].verdict == "not_candidate"
    assert verdicts["node-a1"].reason.startswith("Insufficient cpu")
    assert verdicts["node-b1"].verdict == "not_considered"
    assert "default/batch-1 on node-a1" in wide.explanation.summary


def test_simulate_with_and_without_the_flag() -> None:
    objects = load_objects(EXAMPLE)
    [kube] = simulate(objects).decisions
    assert (kube.outcome, kube.nominated_node) == ("unschedulable", "")
    [wide] = simulate(objects, cross_node=True).decisions
    assert (wide.outcome, wide.nominated_node, wide.node) == ("preempting", "node-a2", "node-a2")
    assert [(v.pod, v.node) for v in wide.victims] == [("default/batch-1", "node-a1")]


def test_an_existing_pods_anti_affinity_towards_the_preemptor_counts_too() -> None:
    nodes = [node("a1", "a", cpu="1"), node("a2", "a")]
    # guard on a2 repels web pods from all of zone a; web may only run on a1.
    guard = pod("guard", 0, on="a2", affinity=anti("web"))
    small = pod("small", 1000, on="a1")
    web = pod("web", 100, cpu="500m", app="web", selector={"kubernetes.io/hostname": "a1"})
    snapshot = Snapshot.from_objects([*nodes, small, guard])
    kube = decide(snapshot, web)
    assert kube.nominated_node_name == ""  # nothing on a1 to preempt; a2 is not allowed
    wide = decide(snapshot, web, cross_node=True)
    assert wide.nominated_node_name == "a1"
    assert [v.key for v in wide.victims] == ["default/guard"]


def test_blockers_of_equal_or_higher_priority_are_never_victims() -> None:
    nodes = [node("a1", "a", cpu="1"), node("a2", "a")]
    pods = [pod("db", 1000, cpu="900m", on="a1"), pod("batch", 100, on="a1", app="batch")]
    p = pod("p", 100, selector={ZONE: "a"}, affinity=anti("batch"))
    snapshot = Snapshot.from_objects([*nodes, *pods])
    assert decide(snapshot, p, cross_node=True).nominated_node_name == ""


def test_pdbs_decide_between_domains() -> None:
    nodes = [
        node("a1", "a", cpu="1"),
        node("a2", "a"),
        node("c1", "c", cpu="1"),
        node("c2", "c"),
    ]
    pods = [
        pod("db-a", 1000, cpu="900m", on="a1"),
        pod("batch-a", 10, on="a1", app="batch", tier="a"),
        pod("db-c", 1000, cpu="900m", on="c1"),
        pod("batch-c", 50, on="c1", app="batch", tier="c"),
    ]
    p = pod("p", 100, cpu="500m", affinity=anti("batch"))
    snapshot = Snapshot.from_objects([*nodes, *pods])
    assert decide(snapshot, p).nominated_node_name == ""
    wide = decide(snapshot, p, cross_node=True)
    # Without PDBs the lowest-priority victim wins: batch-a, for a2.
    assert (wide.nominated_node_name, [v.key for v in wide.victims]) == ("a2", ["default/batch-a"])
    # A budget that allows no disruption of batch-a: the fewest PDB violations win, in zone c.
    snapshot = Snapshot.from_objects(
        [*nodes, *pods, mk_pdb("protect-a", match={"tier": "a"}, allowed=0)]
    )
    wide = decide(snapshot, p, cross_node=True)
    assert (wide.nominated_node_name, [v.key for v in wide.victims]) == ("c2", ["default/batch-c"])
    verdict = wide.explanation.verdict("a2")
    assert verdict is not None and verdict.verdict == "outranked"
    assert verdict.num_pdb_violations == 1
    assert verdict.reason == "fewest PDB violations: 1 vs 0 on c2"


# --- properties ------------------------------------------------------------------------------

PRIOS = [0, 10, 100, 1000]


@st.composite
def zoned(draw: st.DrawFn) -> tuple[list[Node], list[Pod], list[PodDisruptionBudget], Pod]:
    zones = draw(st.integers(1, 3))
    nodes: list[Node] = []
    for z in range(zones):
        for i in range(draw(st.integers(1, 3))):
            cpu = draw(st.sampled_from(["1", "2"]))
            nodes.append(node(f"n{z}{i}", f"z{z}", cpu=cpu))
    pods: list[Pod] = []
    for j in range(draw(st.integers(0, 8))):
        where = draw(st.sampled_from(nodes)).name
        prio = draw(st.sampled_from(PRIOS))
        cpu = draw(st.sampled_from(["100m", "400m", "900m"]))
        app = draw(st.sampled_from(["", "batch", "web"]))
        tier = draw(st.sampled_from(["", "x"]))
        aff = anti("web") if draw(st.booleans()) and app != "web" else None
        pods.append(pod(f"p{j}", prio, cpu=cpu, on=where, app=app, affinity=aff, tier=tier))
    pdbs = (
        [mk_pdb("b", match={"tier": "x"}, allowed=draw(st.integers(0, 1)))]
        if draw(st.booleans())
        else []
    )
    key = draw(st.sampled_from([ZONE, "kubernetes.io/hostname"]))
    preemptor = pod(
        "incoming",
        draw(st.sampled_from([10, 100, 500])),
        cpu=draw(st.sampled_from(["100m", "600m", "1"])),
        app="web",
        affinity=anti("batch", key) if draw(st.booleans()) else None,
    )
    return nodes, pods, pdbs, preemptor


def fits_after(nodes: list[Node], pods: list[Pod], pdbs: list[Any], p: Pod, r: Any) -> bool:
    gone = {v.key for v in r.victims}
    snap = Snapshot.from_objects([*nodes, *(q for q in pods if q.key not in gone), *pdbs])
    fw = default_preemption_framework()
    state = CycleState()
    fw.run_pre_filter_plugins(state, p, snap)
    ni = snap.node_info(r.nominated_node_name)
    return fw.run_filter_plugins_with_nominated_pods(state, p, ni, []).is_success()


@settings(max_examples=150, deadline=None)
@given(zoned())
def test_cross_node_off_is_kube_and_on_is_sound(
    case: tuple[list[Node], list[Pod], list[PodDisruptionBudget], Pod],
) -> None:
    nodes, pods, pdbs, p = case
    snapshot = Snapshot.from_objects([*nodes, *pods, *pdbs])
    result = schedule_one(p, snapshot)
    if result.succeeded:
        return
    statuses = result.node_statuses
    default = preempt(p, snapshot, node_statuses=statuses)
    off = preempt(p, snapshot, node_statuses=statuses, cross_node=False)
    on = preempt(p, snapshot, node_statuses=statuses, cross_node=True)
    for r in (off, on):
        if default.nominated_node_name or r is off:
            assert r.nominated_node_name == default.nominated_node_name
            assert [v.key for v in r.victims] == [v.key for v in default.victims]
            assert r.status.message == default.status.message
            assert r.explanation.summary == default.explanation.summary
    if on.nominated_node_name:
        assert all(v.priority < p.priority for v in on.victims)
        assert fits_after(nodes, pods, pdbs, p, on)
    else:
        assert on.victims == []
        assert on.status.message == default.status.message
