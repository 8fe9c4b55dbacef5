"""The DefaultPreemption building blocks, case by case, with upstream's messages.

Cases follow kube-scheduler's default_preemption_test.go / preemption_test.go scenarios
(PodEligibleToPreemptOthers, SelectVictimsOnNode, DryRunPreemption, pickOneNodeForPreemption,
calculateNumCandidates, filterPodsWithPDBViolation), written from their behaviour.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import UTC, datetime

import pytest

from kube.objects import (
    Pod,
    PodDisruptionBudget,
)
from scheduler.framework import Code, CycleState, Framework, NodeToStatus, Status
from scheduler.preemption import (
    UNSET_START_TIME,
    Candidate,
    Victims,
    calculate_num_candidates,
    dry_run_preemption,
    filter_pods_with_pdb_violation,
    get_earliest_pod_start_time,
    get_offset_and_num_candidates,
    more_important_pod,
    nodes_where_preemption_might_help,
    pick_one_node_for_preemption,
    pod_eligible_to_preempt_others,
    select_victims_on_node,
)
from scheduler.preemption.core import validate_default_preemption_args
from scheduler.snapshot import NodeInfo, Snapshot
from tests.support.objects import mknode, mkpod
from tests.support.preemption import (
    HIGH,
    LOW,
    MID,
    NEG,
    VERY_HIGH,
    ErrorPlugin,
    keys,
    mk_pdb,
    mk_snapshot,
    preempted_condition,
    resources_framework,
)

# --- builders (shared with the other preemption test modules) --------------------------------


# --- more_important_pod / get_earliest_pod_start_time ----------------------------------------


def test_more_important_pod_priority_then_start_time() -> None:
    hi = mkpod("hi", priority=HIGH, start_time=50.0)
    lo = mkpod("lo", priority=LOW, start_time=1.0)
    assert more_important_pod(hi, lo) and not more_important_pod(lo, hi)
    old = mkpod("old", priority=MID, start_time=1.0)
    young = mkpod("young", priority=MID, start_time=2.0)
    assert more_important_pod(old, young) and not more_important_pod(young, old)
    twin = mkpod("twin", priority=MID, start_time=1.0)
    assert not more_important_pod(old, twin) and not more_important_pod(twin, old)


def test_more_important_pod_missing_priority_is_zero() -> None:
    assert more_important_pod(mkpod("a", priority=1), mkpod("b"))
    assert not more_important_pod(mkpod("b"), mkpod("a", priority=0, start_time=5.0))


def test_unset_start_time_is_now() -> None:
    unset = mkpod("unset", priority=MID)
    started = mkpod("started", priority=MID, start_time=100.0)
    # Without now, an unset start time is later than any set one.
    assert more_important_pod(started, unset)
    assert not more_important_pod(unset, started)
    # With now before the other pod's start, the unset pod counts as older.
    assert more_important_pod(unset, started, now=50.0)
    assert not more_important_pod(unset, mkpod("u2", priority=MID))


def test_get_earliest_pod_start_time_among_highest_priority() -> None:
    victims = Victims(
        [
            mkpod("p1", priority=MID, start_time=3.0),
            mkpod("p2", priority=HIGH, start_time=5.0),
            mkpod("p3", priority=HIGH, start_time=4.0),
            mkpod("p4", priority=LOW, start_time=1.0),
        ]
    )
    assert get_earliest_pod_start_time(victims) == datetime.fromtimestamp(4.0, tz=UTC)
    assert get_earliest_pod_start_time(victims.pods[:1]) == datetime.fromtimestamp(3.0, tz=UTC)
    assert get_earliest_pod_start_time(Victims([])) is None
    assert get_earliest_pod_start_time([]) is None


def test_get_earliest_pod_start_time_unset() -> None:
    pods = [mkpod("a", priority=MID), mkpod("b", priority=MID)]
    assert get_earliest_pod_start_time(pods) == UNSET_START_TIME
    assert get_earliest_pod_start_time(pods, now=7.0) == datetime.fromtimestamp(7.0, tz=UTC)
    mixed = [mkpod("a", priority=MID), mkpod("b", priority=MID, start_time=9.0)]
    assert get_earliest_pod_start_time(mixed) == datetime.fromtimestamp(9.0, tz=UTC)
    assert get_earliest_pod_start_time(mixed, now=8.0) == datetime.fromtimestamp(8.0, tz=UTC)


# --- filter_pods_with_pdb_violation ----------------------------------------------------------


def test_pdb_budget_consumed_in_order() -> None:
    pods = [mkpod(f"p{i}", labels={"app": "a"}) for i in range(3)]
    violating, ok = filter_pods_with_pdb_violation(
        pods, [mk_pdb("b", match={"app": "a"}, allowed=1)]
    )
    assert keys(violating) == ["default/p1", "default/p2"]
    assert keys(ok) == ["default/p0"]


def test_pdb_fresh_budget_per_call() -> None:
    pdbs = [mk_pdb("b", match={"app": "a"}, allowed=1)]
    pod = [mkpod("p", labels={"app": "a"})]
    assert filter_pods_with_pdb_violation(pod, pdbs) == ([], pod)
    assert filter_pods_with_pdb_violation(pod, pdbs) == ([], pod)


@pytest.mark.parametrize(
    ("pdb", "why"),
    [
        (mk_pdb("b", match={"app": "a"}, allowed=0, ns="other"), "other namespace"),
        (mk_pdb("b", match=None, allowed=0), "nil selector matches nothing"),
        (mk_pdb("b", match={}, allowed=0), "empty selector matches nothing"),
        (mk_pdb("b", match={"app": "z"}, allowed=0), "labels do not match"),
        (mk_pdb("b", match={"app": "a"}, allowed=0, disrupted=["p"]), "already in disruptedPods"),
    ],
)
def test_pdb_not_counted(pdb: PodDisruptionBudget, why: str) -> None:
    pod = mkpod("p", labels={"app": "a"})
    assert filter_pods_with_pdb_violation([pod], [pdb]) == ([], [pod]), why


def test_pdb_unlabelled_pod_matches_nothing() -> None:
    pod = mkpod("p")
    pdb = PodDisruptionBudget.from_dict(
        {
            "metadata": {"name": "b"},
            "spec": {"selector": {"matchExpressions": [{"key": "x", "operator": "DoesNotExist"}]}},
            "status": {"disruptionsAllowed": 0},
        }
    )
    assert filter_pods_with_pdb_violation([pod], [pdb]) == ([], [pod])
    labelled = mkpod("q", labels={"y": "1"})
    assert filter_pods_with_pdb_violation([labelled], [pdb]) == ([labelled], [])


def test_pdb_any_matching_budget_below_zero_violates() -> None:
    pod = mkpod("p", labels={"app": "a", "tier": "t"})
    pdbs = [
        mk_pdb("loose", match={"app": "a"}, allowed=5),
        mk_pdb("tight", match={"tier": "t"}, allowed=0),
    ]
    assert filter_pods_with_pdb_violation([pod], pdbs) == ([pod], [])


# --- pod_eligible_to_preempt_others ----------------------------------------------------------


def _eligibility_snapshot(victim: Pod) -> Snapshot:
    return mk_snapshot([mknode("node1")], [victim])


def test_eligible_without_nomination() -> None:
    p = mkpod("p", priority=HIGH)
    assert pod_eligible_to_preempt_others(
        p, _eligibility_snapshot(mkpod("v", node_name="node1")), None
    ) == (True, "")


def test_not_eligible_with_preemption_policy_never() -> None:
    p = mkpod("p", priority=HIGH, preemption_policy="Never")
    snap = _eligibility_snapshot(mkpod("v", node_name="node1"))
    assert pod_eligible_to_preempt_others(p, snap, None) == (
        False,
        "not eligible due to preemptionPolicy=Never.",
    )


def test_not_eligible_while_victim_terminates_by_preemption() -> None:
    victim = mkpod(
        "v",
        priority=LOW,
        node_name="node1",
        deletion_timestamp=10.0,
        conditions=(preempted_condition(),),
    )
    p = mkpod("p", priority=HIGH, nominated_node_name="node1")
    assert pod_eligible_to_preempt_others(p, _eligibility_snapshot(victim), None) == (
        False,
        "not eligible due to a terminating pod on the nominated node.",
    )
    # A Success status for the nominated node changes nothing; UU makes it eligible again.
    assert pod_eligible_to_preempt_others(p, _eligibility_snapshot(victim), Status())[0] is False
    uu = Status(
        Code.UnschedulableAndUnresolvable, "node(s) didn't match Pod's node affinity/selector"
    )
    assert pod_eligible_to_preempt_others(p, _eligibility_snapshot(victim), uu) == (True, "")


@pytest.mark.parametrize(
    "victim",
    [
        mkpod(
            "v", priority=LOW, node_name="node1", deletion_timestamp=10.0
        ),  # no DisruptionTarget condition
        mkpod(
            "v",
            priority=LOW,
            node_name="node1",
            deletion_timestamp=10.0,
            conditions=(preempted_condition("EvictionByEvictionAPI"),),
        ),
        mkpod(
            "v",
            priority=LOW,
            node_name="node1",
            deletion_timestamp=10.0,
            conditions=(preempted_condition(status="False"),),
        ),
        mkpod(
            "v",
            priority=HIGH,
            node_name="node1",
            deletion_timestamp=10.0,
            conditions=(preempted_condition(),),
        ),
        mkpod(
            "v", priority=LOW, node_name="node1", conditions=(preempted_condition(),)
        ),  # not deleting
    ],
)
def test_eligible_when_no_lower_priority_pod_terminates_by_preemption(victim: Pod) -> None:
    p = mkpod("p", priority=HIGH, nominated_node_name="node1")
    assert pod_eligible_to_preempt_others(p, _eligibility_snapshot(victim), None) == (True, "")


def test_eligibility_respects_is_eligible_pod_and_missing_node() -> None:
    victim = mkpod(
        "v",
        priority=LOW,
        node_name="node1",
        deletion_timestamp=10.0,
        conditions=(preempted_condition(),),
    )
    p = mkpod("p", priority=HIGH, nominated_node_name="node1")
    snap = _eligibility_snapshot(victim)
    assert pod_eligible_to_preempt_others(
        p, snap, None, is_eligible_pod=lambda ni, v, q: False
    ) == (True, "")
    elsewhere = mkpod("p", priority=HIGH, nominated_node_name="gone")
    assert pod_eligible_to_preempt_others(elsewhere, snap, None) == (True, "")


# --- nodes_where_preemption_might_help -------------------------------------------------------


def test_only_unschedulable_nodes_might_help() -> None:
    snap = mk_snapshot([mknode(f"n{i}") for i in range(5)])
    statuses = NodeToStatus(
        {
            "n0": Status(Code.Unschedulable, "Insufficient cpu"),
            "n1": Status(Code.UnschedulableAndUnresolvable, "node(s) were unschedulable"),
            "n2": Status(Code.Error, "boom"),
            "n4": Status(Code.Unschedulable, "Too many pods"),
        }
    )
    potential, skipped = nodes_where_preemption_might_help(snap.node_info_list, statuses)
    assert [ni.name for ni in potential] == ["n0", "n4"]
    not_helpful = Status(
        Code.UnschedulableAndUnresolvable, "Preemption is not helpful for scheduling"
    )
    assert dict(skipped) == {"n1": not_helpful, "n2": not_helpful, "n3": not_helpful}
    assert skipped.absent_nodes_status == not_helpful


def test_absent_nodes_take_the_absent_status() -> None:
    snap = mk_snapshot([mknode("n0"), mknode("n1")])
    statuses = NodeToStatus({}, Status(Code.Unschedulable))
    potential, _ = nodes_where_preemption_might_help(snap.node_info_list, statuses)
    assert [ni.name for ni in potential] == ["n0", "n1"]


# --- candidate count and offset --------------------------------------------------------------


@pytest.mark.parametrize(
    ("nodes", "pct", "absolute", "want"),
    [
        (10, 10, 100, 10),  # capped at the node count
        (1000, 10, 100, 100),  # the absolute minimum
        (5000, 10, 100, 500),  # the percentage
        (1000, 40, 100, 400),
        (1000, 0, 10, 10),
        (1000, 1, 0, 10),
        (99, 50, 0, 49),  # integer division
        (0, 10, 100, 0),
    ],
)
def test_calculate_num_candidates(nodes: int, pct: int, absolute: int, want: int) -> None:
    assert calculate_num_candidates(nodes, pct, absolute) == want


def test_default_preemption_args_validation() -> None:
    validate_default_preemption_args(10, 100)
    with pytest.raises(
        ValueError,
        match=r"minCandidateNodesPercentage: Invalid value: 101: not in valid range \[0, 100\]",
    ):
        validate_default_preemption_args(101, 100)
    with pytest.raises(ValueError, match=r"minCandidateNodesAbsolute: Invalid value: -1"):
        validate_default_preemption_args(10, -1)
    with pytest.raises(ValueError, match="cannot be zero"):
        validate_default_preemption_args(0, 0)


def test_offset_is_seeded_and_in_range() -> None:
    a = [get_offset_and_num_candidates(37, random.Random(5)) for _ in range(3)]
    assert len(set(a)) == 1
    offsets = {get_offset_and_num_candidates(37, random.Random(s))[0] for s in range(200)}
    assert offsets <= set(range(37)) and len(offsets) > 20
    assert get_offset_and_num_candidates(37, random.Random(1))[1] == 37
    with pytest.raises(ValueError, match="num_nodes must be positive"):
        get_offset_and_num_candidates(0, random.Random(1))


# --- select_victims_on_node ------------------------------------------------------------------


def test_victims_minimal_and_most_important_first() -> None:
    # node: 1000m cpu; pods 300+300+200+200 (1000 used); preemptor needs 500m.
    pods = [
        mkpod("a", priority=LOW, cpu=300, node_name="n", start_time=1.0),
        mkpod("b", priority=MID, cpu=300, node_name="n", start_time=2.0),
        mkpod("c", priority=LOW, cpu=200, node_name="n", start_time=3.0),
        mkpod("d", priority=HIGH, cpu=200, node_name="n", start_time=4.0),
    ]
    snap = mk_snapshot([mknode("n", cpu=1000)], pods)
    p = mkpod("p", priority=VERY_HIGH, cpu=500)
    victims, nviol, status = select_victims_on_node(p, snap.node_info("n"), [], snapshot=snap)
    # Reprieve order: d (HIGH) fits, b (MID) fits, a (LOW, older) does not, c does not.
    assert status is not None and status.is_success()
    assert keys(victims) == ["default/a", "default/c"]
    assert nviol == 0


def test_equal_priority_is_never_a_victim() -> None:
    snap = mk_snapshot([mknode("n", cpu=1000)], [mkpod("a", priority=MID, cpu=800, node_name="n")])
    victims, nviol, status = select_victims_on_node(
        mkpod("p", priority=MID, cpu=500), snap.node_info("n"), [], snapshot=snap
    )
    assert (victims, nviol) == ([], 0)
    assert status == Status(
        Code.UnschedulableAndUnresolvable, "No preemption victims found for incoming pod"
    )


def test_not_fitting_after_removing_all_victims_returns_the_filter_status() -> None:
    pods = [
        mkpod("hi", priority=HIGH, cpu=800, node_name="n"),
        mkpod("lo", priority=LOW, cpu=100, node_name="n"),
    ]
    snap = mk_snapshot([mknode("n", cpu=1000)], pods)
    victims, _, status = select_victims_on_node(
        mkpod("p", priority=MID, cpu=500), snap.node_info("n"), [], snapshot=snap
    )
    assert victims == []
    assert status == Status(Code.Unschedulable, "Insufficient cpu")


def test_node_info_and_state_are_not_changed() -> None:
    snap = mk_snapshot([mknode("n", cpu=1000)], [mkpod("lo", priority=LOW, cpu=800, node_name="n")])
    ni = snap.node_info("n")
    before = (list(ni.pods), dict(ni.requested), ni.generation)
    p = mkpod("p", priority=MID, cpu=500)
    state = CycleState()
    fw = resources_framework()
    assert fw.run_pre_filter_plugins(state, p, snap).is_success()
    state.write("k", 1)
    data = dict(state.data)
    victims, _, _ = select_victims_on_node(p, ni, [], framework=fw, state=state, snapshot=snap)
    assert keys(victims) == ["default/lo"]
    assert (list(ni.pods), dict(ni.requested), ni.generation) == before
    assert state.data == data


def test_pdb_violating_pods_reprieved_first_then_resorted() -> None:
    # Two LOW pods (a older than b) protected by a PDB allowing one disruption, one MID pod.
    pods = [
        mkpod("a", priority=LOW, cpu=400, node_name="n", start_time=1.0, labels={"app": "x"}),
        mkpod("b", priority=LOW, cpu=400, node_name="n", start_time=2.0, labels={"app": "x"}),
        mkpod("m", priority=MID, cpu=200, node_name="n", start_time=3.0),
    ]
    pdb = mk_pdb("pdb", match={"app": "x"}, allowed=1)
    snap = mk_snapshot([mknode("n", cpu=1000)], pods, [pdb])
    p = mkpod("p", priority=HIGH, cpu=600)
    victims, nviol, status = select_victims_on_node(p, snap.node_info("n"), [pdb], snapshot=snap)
    # Sorted: m, a, b. Violating: b (budget spent by a). b is reprieved first (fits: 400+...).
    # Then non-violating m (fits: b 400 + m 200 = 600 > 400 free? no) and a.
    assert status is not None and status.is_success()
    assert nviol == 0
    assert keys(victims) == ["default/m", "default/a"]


def test_pdb_violation_counted_when_unavoidable() -> None:
    pods = [
        mkpod("a", priority=LOW, cpu=500, node_name="n", labels={"app": "x"}),
        mkpod("b", priority=MID, cpu=500, node_name="n"),
    ]
    pdb = mk_pdb("pdb", match={"app": "x"}, allowed=0)
    snap = mk_snapshot([mknode("n", cpu=1000)], pods, [pdb])
    victims, nviol, _ = select_victims_on_node(
        mkpod("p", priority=HIGH, cpu=1000), snap.node_info("n"), [pdb], snapshot=snap
    )
    # Both must go; violating a and non-violating b, re-sorted most important first.
    assert keys(victims) == ["default/b", "default/a"]
    assert nviol == 1


def test_higher_priority_nominated_pods_reserve_room() -> None:
    node = mknode("n", cpu=1000)
    running = mkpod("lo", priority=LOW, cpu=600, node_name="n")
    nominated_hi = mkpod("nom-hi", priority=HIGH, cpu=600, nominated_node_name="n")
    nominated_lo = mkpod("nom-lo", priority=LOW, cpu=900, nominated_node_name="n")
    p = mkpod("p", priority=MID, cpu=500)
    snap = mk_snapshot([node], [running, nominated_lo])
    victims, _, status = select_victims_on_node(p, snap.node_info("n"), [], snapshot=snap)
    assert keys(victims) == ["default/lo"] and status is not None and status.is_success()
    snap = mk_snapshot([node], [running, nominated_hi])
    victims, _, status = select_victims_on_node(p, snap.node_info("n"), [], snapshot=snap)
    assert victims == [] and status == Status(Code.Unschedulable, "Insufficient cpu")


def test_is_eligible_pod_limits_victims() -> None:
    pods = [
        mkpod("keep", priority=LOW, cpu=500, node_name="n"),
        mkpod("ok", priority=LOW, cpu=500, node_name="n"),
    ]
    snap = mk_snapshot([mknode("n", cpu=1000)], pods)
    p = mkpod("p", priority=HIGH, cpu=500)
    victims, _, _ = select_victims_on_node(
        p, snap.node_info("n"), [], snapshot=snap, is_eligible_pod=lambda ni, v, q: v.name != "keep"
    )
    assert keys(victims) == ["default/ok"]


def test_extension_error_is_returned() -> None:
    node = mknode("node1", cpu=300, labels={"error": "true"})
    snap = mk_snapshot([node], [mkpod("p1", node_name="node1")])
    p = mkpod("p", priority=HIGH, cpu=300)
    _, _, status = select_victims_on_node(
        p, snap.node_info("node1"), [], framework=resources_framework(ErrorPlugin()), snapshot=snap
    )
    assert status == Status(
        Code.Error, 'running RemovePod on PreFilter plugin "test-plugin": failed to remove pod: p'
    )


def test_pod_slots_are_freed_by_victims() -> None:
    snap = mk_snapshot([mknode("node1", cpu=0, pods=1)], [mkpod("p1", node_name="node1")])
    victims, _, status = select_victims_on_node(
        mkpod("p", priority=HIGH), snap.node_info("node1"), [], snapshot=snap
    )
    assert keys(victims) == ["default/p1"] and status is not None and status.is_success()


# --- dry_run_preemption ----------------------------------------------------------------------


def _five_nodes(violating: Sequence[int] = ()) -> tuple[Snapshot, list[PodDisruptionBudget]]:
    pods = []
    for i in range(5):
        labels = {"app": "protected"} if i in violating else {}
        pods.append(mkpod(f"v{i}", priority=LOW, cpu=800, node_name=f"n{i}", labels=labels))
    pdbs = [mk_pdb("pdb", match={"app": "protected"}, allowed=0)]
    return mk_snapshot([mknode(f"n{i}", cpu=1000) for i in range(5)], pods, pdbs), pdbs


def test_dry_run_all_nodes_in_order() -> None:
    snap, pdbs = _five_nodes()
    p = mkpod("p", priority=HIGH, cpu=500)
    cands, statuses = dry_run_preemption(p, snap.node_info_list, pdbs, 0, 5, snapshot=snap)
    assert [c.name for c in cands] == ["n0", "n1", "n2", "n3", "n4"]
    assert cands[0].victims == Victims([snap.node_info("n0").pods[0]], 0)
    assert len(statuses) == 0


def test_dry_run_offset_wraps_and_stops_early() -> None:
    snap, pdbs = _five_nodes()
    p = mkpod("p", priority=HIGH, cpu=500)
    cands, _ = dry_run_preemption(p, snap.node_info_list, pdbs, 3, 2, snapshot=snap)
    assert [c.name for c in cands] == ["n3", "n4"]
    cands, _ = dry_run_preemption(p, snap.node_info_list, pdbs, 4, 2, snapshot=snap)
    assert [c.name for c in cands] == ["n4", "n0"]


def test_dry_run_keeps_searching_while_only_violating_candidates_exist() -> None:
    snap, pdbs = _five_nodes(violating=(0, 1, 2))
    p = mkpod("p", priority=HIGH, cpu=500)
    cands, _ = dry_run_preemption(p, snap.node_info_list, pdbs, 0, 2, snapshot=snap)
    # n0, n1 fill the violating list, n2 is dropped, n3 is the first non-violating: stop.
    assert [(c.name, c.victims.num_pdb_violations) for c in cands] == [
        ("n3", 0),
        ("n0", 1),
        ("n1", 1),
    ]


def test_dry_run_zero_victims_is_an_error_and_failures_are_reported() -> None:
    pods = [
        mkpod("v0", priority=LOW, cpu=100, node_name="n0"),
        mkpod("v1", priority=HIGH, cpu=900, node_name="n1"),
    ]
    snap = mk_snapshot([mknode("n0", cpu=1000), mknode("n1", cpu=1000)], pods)
    p = mkpod("p", priority=MID, cpu=500)
    cands, statuses = dry_run_preemption(p, snap.node_info_list, [], 0, 2, snapshot=snap)
    assert cands == []
    assert statuses.get("n0") == Status(Code.Error, 'expected at least one victim pod on node "n0"')
    assert statuses.get("n1") == Status(
        Code.UnschedulableAndUnresolvable, "No preemption victims found for incoming pod"
    )


def test_dry_run_prefilter_rejection_marks_every_node() -> None:
    class Reject:
        name = "Reject"

        def pre_filter(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> Status | None:
            return Status(Code.Unschedulable, "nope")

        def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
            raise AssertionError("filter must not run")

        def add_pod(self, *args: object) -> Status | None:
            return None

        def remove_pod(self, *args: object) -> Status | None:
            return None

    snap, pdbs = _five_nodes()
    cands, statuses = dry_run_preemption(
        mkpod("p", priority=HIGH, cpu=500),
        snap.node_info_list,
        pdbs,
        0,
        5,
        framework=Framework([Reject()]),
        snapshot=snap,
    )
    assert cands == [] and len(statuses) == 5
    assert statuses.get("n3").message == "nope"


# --- pick_one_node_for_preemption ------------------------------------------------------------


def cand(
    name: str, prios: Sequence[int], *, violations: int = 0, starts: Sequence[float | None] = ()
) -> Candidate:
    starts = list(starts) or [None] * len(prios)
    pods = [
        mkpod(f"{name}-{i}", priority=pr, start_time=st)
        for i, (pr, st) in enumerate(zip(prios, starts, strict=True))
    ]
    return Candidate(name, Victims(pods, violations))


def test_pick_empty_and_single() -> None:
    assert pick_one_node_for_preemption([]) == ""
    assert pick_one_node_for_preemption([Candidate("only", Victims([]))]) == "only"


@pytest.mark.parametrize(
    ("candidates", "want"),
    [
        ([cand("a", [LOW], violations=1), cand("b", [HIGH])], "b"),  # 1. PDB violations
        ([cand("a", [HIGH, LOW]), cand("b", [MID, MID, MID])], "b"),  # 2. highest victim priority
        ([cand("a", [MID, MID]), cand("b", [MID, LOW])], "b"),  # 3. sum of priorities
        ([cand("a", [MID, LOW, LOW]), cand("b", [MID, MID])], "b"),  # 3. sum decides before count
        ([cand("a", [NEG, NEG]), cand("b", [NEG])], "b"),  # 3. shifted sum: fewer negatives win
        (
            [cand("a", [MID, LOW], starts=[1.0, 1.0]), cand("b", [MID, LOW], starts=[2.0, 0.0])],
            "b",
        ),  # 5
        ([cand("a", [MID], starts=[5.0]), cand("b", [MID])], "b"),  # 5. unset start is latest
        ([cand("a", [MID]), cand("b", [MID])], "a"),  # full tie: first given
        ([cand("b", [MID]), cand("a", [MID])], "b"),
    ],
)
def test_pick_criteria_in_order(candidates: list[Candidate], want: str) -> None:
    assert pick_one_node_for_preemption(candidates) == want


def test_pick_fewest_victims_when_sums_tie() -> None:
    # With the 2^31 shift, equal sums and different counts need the minimum int32 priority.
    c = Candidate("c", Victims([mkpod("c0", priority=-(2**31)), mkpod("c1", priority=-(2**31))]))
    d = Candidate("d", Victims([mkpod("d0", priority=-(2**31))]))
    # c: top -2^31, sum 0; d: top -2^31, sum 0 -> count decides: d.
    assert pick_one_node_for_preemption([c, d]) == "d"


def test_pick_latest_start_uses_now() -> None:
    a = cand("a", [MID], starts=[5.0])
    b = cand("b", [MID])
    assert pick_one_node_for_preemption([a, b], now=3.0) == "a"
    assert pick_one_node_for_preemption([a, b], now=9.0) == "b"


def test_pick_rejects_candidates_without_victims_when_scoring() -> None:
    with pytest.raises(ValueError, match='candidate "empty" has no victims'):
        pick_one_node_for_preemption([cand("a", [MID]), Candidate("empty", Victims([]))])
