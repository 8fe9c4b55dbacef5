"""``preempt``: the PostFilter decision, its messages, its explanation, and its cache.

Scenarios follow upstream's TestPostFilter / TestPreempt. Every decision is also made on the
naive reference path and must be identical, so these cases double as fast-path checks.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from kube.objects import Pod, Taint
from scheduler.framework import Code, CycleState, Framework, NodeToStatus, Status
from scheduler.preemption import PreemptionResult, evaluator, preempt
from scheduler.snapshot import NodeInfo, Snapshot
from tests.support.objects import mknode, mkpod
from tests.support.preemption import (
    HIGH,
    LOW,
    MID,
    VERY_HIGH,
    ErrorPlugin,
    keys,
    mk_pdb,
    mk_snapshot,
    resources_framework,
)

U = Code.Unschedulable
UU = Code.UnschedulableAndUnresolvable


def unschedulable(*names: str) -> NodeToStatus:
    return NodeToStatus({n: Status(U) for n in names})


def same(a: PreemptionResult, b: PreemptionResult) -> None:
    assert a.nominated_node_name == b.nominated_node_name
    assert keys(a.victims) == keys(b.victims)
    assert keys(a.nominated_pods_to_clear) == keys(b.nominated_pods_to_clear)
    assert a.status == b.status
    assert a.explanation.lines() == b.explanation.lines()


def decide(pod: Pod, snap: Snapshot, statuses: NodeToStatus, **kw: Any) -> PreemptionResult:
    """The fast decision, checked against the naive reference (fed the same random state)."""
    naive_kw = dict(kw)
    if kw.get("rng") is not None:
        naive_kw["rng"] = random.Random()
        naive_kw["rng"].setstate(kw["rng"].getstate())
    fast = preempt(pod, snap, node_statuses=statuses, **kw)
    naive = preempt(pod, snap, node_statuses=statuses, naive=True, **naive_kw)
    same(fast, naive)
    return fast


MODES = pytest.mark.parametrize("mode", ["exhaustive", "sampled"])


# --- upstream TestPostFilter scenarios -------------------------------------------------------


@MODES
def test_higher_priority_pod_preempts(mode: str) -> None:
    snap = mk_snapshot([mknode("node1", cpu=0, pods=1)], [mkpod("p1", node_name="node1")])
    r = decide(mkpod("p", priority=HIGH), snap, unschedulable("node1"), mode=mode)
    assert r.nominated_node_name == "node1"
    assert r.status == Status(Code.Success)
    assert keys(r.victims) == ["default/p1"]


@MODES
def test_tied_priority_is_still_unschedulable(mode: str) -> None:
    snap = mk_snapshot([mknode("node1", cpu=0, pods=1)], [mkpod("p1", node_name="node1")])
    r = decide(mkpod("p"), snap, unschedulable("node1"), mode=mode)
    assert r.nominated_node_name == ""
    assert r.status == Status(
        U, "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )
    assert r.victims == []


@pytest.mark.parametrize(
    "statuses",
    [
        NodeToStatus({"node1": Status(UU)}),
        NodeToStatus(),  # absent means UnschedulableAndUnresolvable
    ],
)
def test_preemption_respects_filter_statuses(statuses: NodeToStatus) -> None:
    snap = mk_snapshot([mknode("node1", cpu=0, pods=1)], [mkpod("p1", node_name="node1")])
    r = decide(mkpod("p", priority=HIGH), snap, statuses)
    assert r.nominated_node_name == ""
    assert r.status == Status(
        U, "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )


@MODES
def test_preempts_on_the_node_with_lower_priority_pods(mode: str) -> None:
    pods = [
        mkpod("p1", priority=HIGH, node_name="node1"),
        mkpod("p2", priority=LOW, node_name="node2"),
    ]
    snap = mk_snapshot([mknode("node1", cpu=0, pods=1), mknode("node2", cpu=0, pods=1)], pods)
    r = decide(mkpod("p", priority=MID), snap, unschedulable("node1", "node2"), mode=mode)
    assert r.nominated_node_name == "node2"


@MODES
def test_min_highest_priority_node_with_pdbs(mode: str) -> None:
    key = "test.kubernetes.io/is-violating-pdb"
    pods = [
        mkpod("p1", priority=HIGH, node_name="node1", labels={key: "non-violating"}),
        mkpod("p2", priority=LOW, node_name="node1", labels={key: "violating"}),
        mkpod("p3", priority=MID, node_name="node2", labels={key: "violating"}),
    ]
    pdbs = [
        mk_pdb("violating-pdb", match={key: "violating"}, allowed=0),
        mk_pdb("non-violating-pdb", match={key: "non-violating"}, allowed=2**31 - 1),
    ]
    nodes = [mknode("node1", cpu=0, pods=1), mknode("node2", cpu=0, pods=1)]
    snap = mk_snapshot(nodes, pods, pdbs)
    r = decide(mkpod("p", priority=VERY_HIGH), snap, unschedulable("node1", "node2"), mode=mode)
    assert r.nominated_node_name == "node2"
    assert r.explanation.verdict("node1").reason.startswith(  # type: ignore[union-attr]
        "lowest priority of the most important victim: 1000 vs 100 on node2"
    )


def test_no_room_even_after_removing_low_priority_pods() -> None:
    pods = [mkpod("p1", node_name="node1"), mkpod("p2", node_name="node2")]
    snap = mk_snapshot([mknode("node1", cpu=200), mknode("node2", cpu=200)], pods)
    r = decide(mkpod("p", priority=HIGH, cpu=300), snap, unschedulable("node1", "node2"))
    assert r.nominated_node_name == ""
    assert r.status == Status(U, "preemption: 0/2 nodes are available: 2 Insufficient cpu.")


def test_mixed_reasons_histogram() -> None:
    pods = [
        mkpod("p1", priority=HIGH, node_name="node1"),
        mkpod("p2", node_name="node2"),
        mkpod("p3", priority=HIGH, node_name="node3"),
    ]
    nodes = [
        mknode("node1", cpu=0, pods=1),
        mknode("node2", cpu=200),
        mknode("node3", cpu=0, pods=1),
    ]
    snap = mk_snapshot(nodes, pods)
    r = decide(mkpod("p", priority=HIGH, cpu=300), snap, unschedulable("node1", "node2", "node3"))
    assert r.status == Status(
        U,
        "preemption: 0/3 nodes are available: 1 Insufficient cpu,"
        " 2 No preemption victims found for incoming pod.",
    )


def test_unresolvable_and_absent_nodes_are_not_helpful() -> None:
    pods = [mkpod("p1", node_name="node1"), mkpod("p2", node_name="node2")]
    snap = mk_snapshot([mknode(f"node{i}", cpu=200) for i in range(1, 5)], pods)
    statuses = NodeToStatus({"node1": Status(U), "node2": Status(U), "node4": Status(UU)})
    r = decide(mkpod("p", priority=HIGH, cpu=300), snap, statuses)
    assert r.status == Status(
        U,
        "preemption: 0/4 nodes are available: 2 Insufficient cpu,"
        " 2 Preemption is not helpful for scheduling.",
    )
    verdicts = {v.node: v.verdict for v in r.explanation.nodes()}
    assert verdicts == {
        "node1": "not_candidate",
        "node2": "not_candidate",
        "node3": "not_considered",
        "node4": "not_considered",
    }


def test_extension_error_on_the_only_node_is_an_error() -> None:
    node = mknode("node1", cpu=300, labels={"error": "true"})
    snap = mk_snapshot([node], [mkpod("p1", node_name="node1")])
    fw = resources_framework(ErrorPlugin())
    r = decide(mkpod("p", priority=HIGH, cpu=300), snap, unschedulable("node1"), framework=fw)
    assert r.nominated_node_name is None
    assert r.status == Status(
        Code.Error,
        'preemption: running RemovePod on PreFilter plugin "test-plugin": failed to remove pod: p',
    )


def test_extension_error_on_one_node_does_not_block_the_other() -> None:
    nodes = [mknode("node1", cpu=300, labels={"error": "true"}), mknode("node2", cpu=300)]
    pods = [mkpod("p1", node_name="node1"), mkpod("p2", node_name="node2", cpu=200)]
    snap = mk_snapshot(nodes, pods)
    fw = resources_framework(ErrorPlugin())
    r = decide(
        mkpod("p", priority=HIGH, cpu=300), snap, unschedulable("node1", "node2"), framework=fw
    )
    assert r.nominated_node_name == "node2"


def test_distinct_errors_are_aggregated() -> None:
    # Both nodes have room already: zero victims on each is an error.
    pods = [mkpod("a", node_name="n1"), mkpod("b", node_name="n2")]
    snap = mk_snapshot([mknode("n1", cpu=1000), mknode("n2", cpu=1000)], pods)
    r = decide(mkpod("p", priority=HIGH, cpu=100), snap, unschedulable("n1", "n2"))
    assert r.nominated_node_name is None
    assert r.status == Status(
        Code.Error,
        'preemption: [expected at least one victim pod on node "n1",'
        ' expected at least one victim pod on node "n2"]',
    )


def test_preemption_policy_never_leaves_nomination_unchanged() -> None:
    snap = mk_snapshot([mknode("node1", cpu=0, pods=1)], [mkpod("p1", node_name="node1")])
    r = decide(mkpod("p", priority=HIGH, preemption_policy="Never"), snap, unschedulable("node1"))
    assert r.nominated_node_name is None
    assert r.status == Status(U, "preemption: not eligible due to preemptionPolicy=Never.")
    assert r.victims == [] and r.nominated_pods_to_clear == []


def test_terminating_victim_on_nominated_node_blocks_new_preemption() -> None:
    from tests.support.preemption import preempted_condition

    victim = mkpod(
        "v",
        priority=LOW,
        node_name="node1",
        deletion_timestamp=5.0,
        conditions=(preempted_condition(),),
    )
    snap = mk_snapshot([mknode("node1", cpu=0, pods=1), mknode("node2", cpu=0, pods=1)], [victim])
    p = mkpod("p", priority=HIGH, nominated_node_name="node1")
    r = decide(p, snap, unschedulable("node1", "node2"))
    assert r.nominated_node_name is None
    assert (
        r.status.message
        == "preemption: not eligible due to a terminating pod on the nominated node."
    )


def test_no_nodes_is_an_error() -> None:
    r = decide(mkpod("p", priority=HIGH), Snapshot(), NodeToStatus())
    assert r.nominated_node_name is None
    assert r.status == Status(Code.Error, "preemption: no nodes available")


def test_lower_priority_nominations_on_the_chosen_node_are_cleared() -> None:
    nodes = [mknode("node1", cpu=1000)]
    pods = [
        mkpod("run", priority=LOW, cpu=900, node_name="node1"),
        mkpod("nom-low", priority=LOW, cpu=100, nominated_node_name="node1"),
        mkpod("nom-high", priority=VERY_HIGH, cpu=100, nominated_node_name="node1"),
    ]
    snap = mk_snapshot(nodes, pods)
    r = decide(mkpod("p", priority=HIGH, cpu=500), snap, unschedulable("node1"))
    assert r.nominated_node_name == "node1"
    assert keys(r.nominated_pods_to_clear) == ["default/nom-low"]


def test_preempt_does_not_change_the_snapshot() -> None:
    snap = mk_snapshot(
        [mknode("node1", cpu=1000)], [mkpod("lo", priority=LOW, cpu=900, node_name="node1")]
    )
    before = (snap.generation, [ni.generation for ni in snap.node_info_list])
    decide(mkpod("p", priority=HIGH, cpu=500), snap, unschedulable("node1"))
    assert (snap.generation, [ni.generation for ni in snap.node_info_list]) == before


def test_unknown_mode_is_rejected() -> None:
    with pytest.raises(ValueError, match="mode must be one of exhaustive, sampled, not 'fast'"):
        preempt(mkpod("p"), Snapshot(), node_statuses=NodeToStatus(), mode="fast")


# --- modes -----------------------------------------------------------------------------------


def _identical_nodes(n: int) -> Snapshot:
    nodes = [mknode(f"n{i}", cpu=1000) for i in range(n)]
    pods = [mkpod(f"v{i}", priority=LOW, cpu=800, node_name=f"n{i}") for i in range(n)]
    return mk_snapshot(nodes, pods)


def test_exhaustive_breaks_full_ties_by_node_order() -> None:
    snap = _identical_nodes(6)
    names = [f"n{i}" for i in range(6)]
    r = decide(mkpod("p", priority=HIGH, cpu=500), snap, unschedulable(*names))
    assert r.nominated_node_name == "n0"
    v = r.explanation.verdict("n3")
    assert v is not None and v.verdict == "outranked" and v.criterion == 5


def test_sampled_uses_the_seeded_offset_and_stops_early() -> None:
    snap = _identical_nodes(10)
    names = [f"n{i}" for i in range(10)]
    chosen = set()
    for seed in range(8):
        rng = random.Random(seed)
        expect_offset = random.Random(seed).randrange(10)
        r = decide(
            mkpod("p", priority=HIGH, cpu=500),
            snap,
            unschedulable(*names),
            mode="sampled",
            rng=rng,
            min_candidate_nodes_percentage=10,
            min_candidate_nodes_absolute=3,
        )
        # All candidates tie: the first visited (the offset) wins.
        assert r.nominated_node_name == f"n{expect_offset}"
        chosen.add(r.nominated_node_name)
        verdicts = [v.verdict for v in r.explanation.nodes()]
        assert verdicts.count("not_evaluated") == 7
        assert verdicts.count("chosen") == 1 and verdicts.count("outranked") == 2
    assert len(chosen) > 1


def test_sampled_drops_violating_candidates_beyond_the_list() -> None:
    nodes = [mknode(f"n{i}", cpu=1000) for i in range(4)]
    pods = [
        mkpod(
            f"v{i}", priority=LOW, cpu=800, node_name=f"n{i}", labels={"app": "x"} if i < 3 else {}
        )
        for i in range(4)
    ]
    snap = mk_snapshot(nodes, pods, [mk_pdb("pdb", match={"app": "x"}, allowed=0)])
    seed = next(s for s in range(100) if random.Random(s).randrange(4) == 0)
    rng = random.Random(seed)  # offset 0: n0 fills the violating list, n1 and n2 are dropped
    r = decide(
        mkpod("p", priority=HIGH, cpu=500),
        snap,
        unschedulable("n0", "n1", "n2", "n3"),
        mode="sampled",
        rng=rng,
        min_candidate_nodes_percentage=0,
        min_candidate_nodes_absolute=1,
    )
    assert r.nominated_node_name == "n3"
    verdicts = {v.node: v.verdict for v in r.explanation.nodes()}
    assert verdicts["n3"] == "chosen"
    assert sorted(verdicts.values()) == ["chosen", "dropped", "dropped", "outranked"]


# --- explanation -----------------------------------------------------------------------------


def test_explanation_lines_name_the_reason_for_every_node() -> None:
    nodes = [
        mknode("a", cpu=1000),
        mknode("b", cpu=1000),
        mknode("c", cpu=100),
        mknode("d", cpu=1000, taints=(Taint("k", "v", "NoSchedule"),)),
    ]
    pods = [
        mkpod("a1", priority=MID, cpu=800, node_name="a"),
        mkpod("b1", priority=LOW, cpu=800, node_name="b"),
        mkpod("c1", priority=LOW, cpu=100, node_name="c"),
    ]
    snap = mk_snapshot(nodes, pods)
    statuses = NodeToStatus(
        {
            "a": Status(U, "Insufficient cpu"),
            "b": Status(U, "Insufficient cpu"),
            "c": Status(U, "Insufficient cpu"),
            "d": Status(UU, "node(s) had untolerated taint {k: v}"),
        }
    )
    r = decide(mkpod("p", priority=HIGH, cpu=500), snap, statuses)
    assert r.nominated_node_name == "b"
    lines = r.explanation.lines()
    assert lines[0] == (
        "pod default/p (priority 1000): nominated to node b, preempting 1 pod(s)"
        " (0 PDB violation(s)); 2 candidate(s) among 3 potential node(s), exhaustive mode"
    )
    assert lines[1] == (
        "  a: outranked: lowest priority of the most important victim: 100 vs 0 on b"
        " [victims: default/a1; PDB violations: 0]"
    )
    assert lines[2] == "  b: chosen: nominated [victims: default/b1; PDB violations: 0]"
    assert lines[3] == "  c: not candidate: Insufficient cpu"
    assert lines[4] == (
        "  d: not considered: Preemption is not helpful for scheduling"
        " (Filter: node(s) had untolerated taint {k: v})"
    )
    assert str(r.explanation) == "\n".join(lines)


def test_explanation_for_ineligible_pod_is_a_summary() -> None:
    r = preempt(
        mkpod("p", priority=HIGH, preemption_policy="Never"),
        Snapshot(),
        node_statuses=NodeToStatus(),
    )
    assert r.explanation.lines() == [
        "pod default/p (priority 1000): not eligible due to preemptionPolicy=Never."
    ]


# --- the cache follows every change --------------------------------------------------------


def test_cache_follows_pod_changes_on_nodes() -> None:
    snap = _identical_nodes(4)
    names = unschedulable("n0", "n1", "n2", "n3")
    p = mkpod("p", priority=HIGH, cpu=500)
    assert decide(p, snap, names).nominated_node_name == "n0"
    snap.remove_pod("default/v0")
    snap.add_pod(mkpod("big", priority=HIGH, cpu=900, node_name="n0"))
    assert decide(p, snap, names).nominated_node_name == "n1"
    snap.add_pod(mkpod("v2b", priority=-5, cpu=800, node_name="n2"))
    snap.remove_pod("default/v2")
    # n2 now has a lower-priority victim: criterion 2 prefers it.
    assert decide(p, snap, names).nominated_node_name == "n2"


def test_cache_follows_node_add_remove_and_update() -> None:
    snap = _identical_nodes(3)
    p = mkpod("p", priority=HIGH, cpu=500)
    statuses = unschedulable("n0", "n1", "n2", "n9")
    assert decide(p, snap, statuses).nominated_node_name == "n0"
    snap.remove_node("n0")
    assert decide(p, snap, statuses).nominated_node_name == "n1"
    snap.add_node(mknode("n9", cpu=1000))
    snap.add_pod(mkpod("v9", priority=-50, cpu=800, node_name="n9"))
    assert decide(p, snap, statuses).nominated_node_name == "n9"
    snap.update_node(mknode("n9", cpu=400))  # now too small even when empty
    r = decide(p, snap, statuses)
    assert r.nominated_node_name == "n1"
    assert r.explanation.verdict("n9").reason == "Insufficient cpu"  # type: ignore[union-attr]


def test_cache_follows_nominated_pods() -> None:
    snap = _identical_nodes(2)
    statuses = unschedulable("n0", "n1")
    p = mkpod("p", priority=MID, cpu=500)
    assert decide(p, snap, statuses).nominated_node_name == "n0"
    snap.add_pod(mkpod("reserved", priority=HIGH, cpu=600, nominated_node_name="n0"))
    assert decide(p, snap, statuses).nominated_node_name == "n1"
    # A lower-priority nomination does not reserve room.
    snap.add_pod(mkpod("weak", priority=LOW, cpu=600, nominated_node_name="n1"))
    r = decide(p, snap, statuses)
    assert r.nominated_node_name == "n1"
    assert keys(r.nominated_pods_to_clear) == ["default/weak"]
    # The preemptor's own nomination never counts against it.
    own = mkpod("p", priority=MID, cpu=500, nominated_node_name="n1")
    snap.add_pod(own)
    assert decide(own, snap, statuses).nominated_node_name == "n1"
    snap.remove_pod("default/reserved")
    assert decide(p, snap, statuses).nominated_node_name == "n0"


def test_cache_follows_now_for_unset_start_times() -> None:
    nodes = [mknode("a", cpu=1000), mknode("b", cpu=1000)]
    pods = [
        mkpod("unset", priority=LOW, cpu=800, node_name="a"),
        mkpod("set", priority=LOW, cpu=800, node_name="b", start_time=1000.0),
    ]
    snap = mk_snapshot(nodes, pods)
    p = mkpod("p", priority=HIGH, cpu=500)
    statuses = unschedulable("a", "b")
    assert decide(p, snap, statuses).nominated_node_name == "a"  # unset = latest
    assert decide(p, snap, statuses, now=500.0).nominated_node_name == "b"
    assert decide(p, snap, statuses, now=2000.0).nominated_node_name == "a"


def test_cache_follows_pdbs_and_preemptor_spec() -> None:
    nodes = [mknode("a", cpu=1000), mknode("b", cpu=1000)]
    pods = [
        mkpod("va", priority=LOW, cpu=800, node_name="a", labels={"app": "x"}),
        mkpod("vb", priority=LOW, cpu=800, node_name="b"),
    ]
    snap = mk_snapshot(nodes, pods)
    statuses = unschedulable("a", "b")
    p = mkpod("p", priority=HIGH, cpu=500)
    assert decide(p, snap, statuses).nominated_node_name == "a"
    snap.add_pdb(mk_pdb("pdb", match={"app": "x"}, allowed=0))
    assert decide(p, snap, statuses).nominated_node_name == "b"
    # A bigger preemptor no longer fits anywhere.
    r = decide(mkpod("p", priority=HIGH, cpu=1500), snap, statuses)
    assert r.status.message == "preemption: 0/2 nodes are available: 2 Insufficient cpu."


class CountingFit:
    """NodeResourcesFit that counts Filter calls and may be declared node-local or not."""

    name = "CountingFit"

    def __init__(self, *, node_local: bool, limit: dict[str, int]) -> None:
        self.node_local = node_local
        self.calls = 0
        self.limit = limit  # external state: max pods per node (not in the snapshot)

    def pre_filter(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> Status | None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        self.calls += 1
        if len(node_info.pods) + 1 > self.limit["pods"]:
            return Status(U, "Too many pods")
        return None

    def add_pod(self, *args: object) -> Status | None:
        return None

    def remove_pod(self, *args: object) -> Status | None:
        return None


def test_node_local_plugins_are_not_reevaluated() -> None:
    plugin = CountingFit(node_local=True, limit={"pods": 1})
    fw = Framework([plugin])
    snap = _identical_nodes(50)
    statuses = unschedulable(*(f"n{i}" for i in range(50)))
    p = mkpod("p", priority=HIGH)
    preempt(p, snap, node_statuses=statuses, framework=fw)
    first = plugin.calls
    assert first >= 50
    r = preempt(mkpod("q", priority=HIGH), snap, node_statuses=statuses, framework=fw)
    assert plugin.calls == first  # same signature, nothing changed: all outcomes reused
    assert r.nominated_node_name == "n0"


def test_preemptors_differing_only_in_labels_share_outcomes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """kube's node-local plugins read no labels: a second preemptor with other labels (as
    scheduler_perf's unique ``signature`` label) reuses every node outcome."""
    calls: list[str] = []
    real = evaluator.evaluate_node

    def counting(pod: Pod, node_info: NodeInfo, **kw: Any) -> Any:
        calls.append(node_info.name)
        return real(pod, node_info, **kw)

    monkeypatch.setattr(evaluator, "evaluate_node", counting)
    nodes = [mknode(f"n{i}", cpu=4000) for i in range(20)]
    pods = [mkpod(f"low-{i}", priority=0, cpu=3500, node_name=f"n{i}") for i in range(20)]
    snap = mk_snapshot(nodes, pods)
    statuses = unschedulable(*(f"n{i}" for i in range(20)))
    first = preempt(
        mkpod("a", priority=HIGH, cpu=3000, labels={"signature": "1"}), snap, node_statuses=statuses
    )
    assert len(calls) == 20
    second = preempt(
        mkpod("b", priority=HIGH, cpu=3000, labels={"signature": "2"}), snap, node_statuses=statuses
    )
    assert len(calls) == 20  # nothing re-evaluated
    assert second.nominated_node_name == first.nominated_node_name == "n0"
    # A plugin that declares itself node-local may read labels: then they count.
    fw = Framework([CountingFit(node_local=True, limit={"pods": 1})])
    preempt(
        mkpod("c", priority=HIGH, labels={"signature": "3"}),
        snap,
        node_statuses=statuses,
        framework=fw,
    )
    before = len(calls)
    preempt(
        mkpod("d", priority=HIGH, labels={"signature": "4"}),
        snap,
        node_statuses=statuses,
        framework=fw,
    )
    assert len(calls) == before + 20


def test_other_plugins_are_reevaluated_every_decision() -> None:
    limit = {"pods": 1}
    plugin = CountingFit(node_local=False, limit=limit)
    fw = Framework([plugin])
    snap = _identical_nodes(3)
    statuses = unschedulable("n0", "n1", "n2")
    p = mkpod("p", priority=HIGH)
    assert preempt(p, snap, node_statuses=statuses, framework=fw).nominated_node_name == "n0"
    limit["pods"] = 0  # nothing fits anywhere now, without any snapshot change
    r = preempt(p, snap, node_statuses=statuses, framework=fw)
    assert r.status.message == "preemption: 0/3 nodes are available: 3 Too many pods."


def test_many_decisions_match_the_reference() -> None:
    """A PreemptionAsync-like run where every decision changes the snapshot."""
    nodes = [mknode(f"n{i}", cpu=4000) for i in range(8)]
    pods = [
        mkpod(
            f"low-{i}-{k}", priority=k % 3 - 1, cpu=900, node_name=f"n{i}", start_time=float(k * i)
        )
        for i in range(8)
        for k in range(4)
    ]
    fast_snap, naive_snap = mk_snapshot(nodes, pods), mk_snapshot(nodes, pods)
    statuses = unschedulable(*(f"n{i}" for i in range(8)))
    for mode in ("exhaustive", "sampled"):
        for i in range(10):
            p = mkpod(f"high-{mode}-{i}", priority=HIGH + i % 2, cpu=3000)
            a = preempt(p, fast_snap, node_statuses=statuses, mode=mode, rng=random.Random(i))
            b = preempt(
                p, naive_snap, node_statuses=statuses, mode=mode, rng=random.Random(i), naive=True
            )
            same(a, b)
            if a.nominated_node_name:
                for s, r in ((fast_snap, a), (naive_snap, b)):
                    for v in r.victims:
                        s.remove_pod(v)
                    s.bind_pod(p, r.nominated_node_name)


def test_failure_summaries() -> None:
    pods = [mkpod("p1", node_name="node1"), mkpod("p2", node_name="node2")]
    snap = mk_snapshot([mknode("node1", cpu=200), mknode("node2", cpu=200)], pods)
    r = decide(mkpod("p", priority=HIGH, cpu=300), snap, unschedulable("node1", "node2"))
    assert r.explanation.summary == (
        "pod default/p (priority 1000): no preemption candidate:"
        " 0/2 nodes are available: 2 Insufficient cpu."
    )
    snap = mk_snapshot([mknode("n1", cpu=1000)], [mkpod("a", node_name="n1")])
    r = decide(mkpod("p", priority=HIGH, cpu=100), snap, unschedulable("n1"))
    assert r.explanation.summary == (
        "pod default/p (priority 1000): preemption failed:"
        ' expected at least one victim pod on node "n1"'
    )
    assert r.explanation.nodes()[0].reason == 'expected at least one victim pod on node "n1"'


def test_cache_follows_nodes_shifting_position() -> None:
    snap = _identical_nodes(4)
    p = mkpod("p", priority=HIGH, cpu=500)
    statuses = unschedulable("n0", "n1", "n2", "n3", "n7")
    assert decide(p, snap, statuses).nominated_node_name == "n0"
    snap.remove_node("n1")  # n2, n3 move up; n7 takes the last position
    snap.add_node(mknode("n7", cpu=1000))
    snap.add_pod(mkpod("v7", priority=-1, cpu=800, node_name="n7"))
    r = decide(p, snap, statuses)
    assert r.nominated_node_name == "n7"
    assert [v.node for v in r.explanation.nodes()] == ["n0", "n2", "n3", "n7"]


def test_cached_snapshots_are_still_collected() -> None:
    import gc
    import weakref

    snap = _identical_nodes(3)
    preempt(mkpod("p", priority=HIGH, cpu=500), snap, node_statuses=unschedulable("n0", "n1", "n2"))
    ref = weakref.ref(snap)
    del snap
    gc.collect()
    assert ref() is None


class PreFilterVerdict:
    """A plugin whose PreFilter answers a fixed status."""

    name = "Verdict"

    def __init__(self, status: Status) -> None:
        self.status = status

    def pre_filter(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> Status | None:
        return self.status

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return None

    def add_pod(self, *args: object) -> Status | None:
        return None

    def remove_pod(self, *args: object) -> Status | None:
        return None


@MODES
def test_prefilter_rejection_is_every_potential_node_status(mode: str) -> None:
    snap = _identical_nodes(3)
    fw = resources_framework(PreFilterVerdict(Status(U, "not today")))
    r = decide(
        mkpod("p", priority=HIGH, cpu=500),
        snap,
        NodeToStatus({"n0": Status(U), "n1": Status(U), "n2": Status(UU)}),
        framework=fw,
        mode=mode,
    )
    assert r.nominated_node_name == ""
    assert r.status == Status(
        U,
        "preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling,"
        " 2 not today.",
    )


def test_prefilter_error_is_returned() -> None:
    snap = _identical_nodes(1)
    fw = resources_framework(PreFilterVerdict(Status(Code.Error, "broken")))
    r = decide(mkpod("p", priority=HIGH, cpu=500), snap, unschedulable("n0"), framework=fw)
    assert r.nominated_node_name is None
    assert r.status == Status(Code.Error, 'preemption: running PreFilter plugin "Verdict": broken')
