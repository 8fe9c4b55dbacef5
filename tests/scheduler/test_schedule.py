"""find_feasible_nodes and schedule_one: FitError text, PreFilter, nominated pods, round robin."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kube.objects import KubeObject, Node, Pod
from scheduler.framework import Code, CycleState, Framework, Status
from scheduler.plugins.helper import NoPreFilterExtensions
from scheduler.plugins.registry import default_framework
from scheduler.schedule import (
    SchedulingError,
    find_feasible_nodes,
    find_nodes_that_fit_pod,
    num_feasible_nodes_to_find,
    schedule_one,
)
from scheduler.snapshot import NodeInfo, Snapshot
from tests.support.objects import node, pod, required, term
from tests.support.strategies import arbitrary_pod, clusters

UU = Code.UnschedulableAndUnresolvable
ZONE = "topology.kubernetes.io/zone"


def _snap(*objects: KubeObject) -> Snapshot:
    return Snapshot.from_objects(objects)


# --- FitError ---------------------------------------------------------------------------------


def _mixed_cluster() -> Snapshot:
    ssd = {"disk": "ssd"}
    return _snap(
        node("n1", labels=ssd, unschedulable=True),
        node("n2"),
        node("n3", labels=ssd, cpu="1"),
        node("n4", labels=ssd),
        node("n5"),
        pod("busy", cpu="3", node_name="n4"),
    )


def test_fit_error_histogram_is_sorted_as_strings() -> None:
    result = schedule_one(pod("p", cpu="2", node_selector={"disk": "ssd"}), _mixed_cluster())
    assert result.suggested_host == ""
    assert result.status.code is Code.Unschedulable
    assert result.message == (
        "0/5 nodes are available: 1 node(s) were unschedulable, 2 Insufficient cpu,"
        " 2 node(s) didn't match Pod's node affinity/selector."
    )
    assert result.status.message == result.message
    statuses = result.node_statuses
    assert statuses.get("n3") == Status(UU, "Insufficient cpu")  # more than the node has
    assert statuses.get("n4") == Status(Code.Unschedulable, "Insufficient cpu")
    assert statuses.get("n1").plugin == "NodeUnschedulable"
    assert result.diagnosis.unschedulable_plugins == {
        "NodeUnschedulable",
        "NodeAffinity",
        "NodeResourcesFit",
    }
    assert result.evaluated_nodes == 5


def test_every_reason_of_a_node_is_counted() -> None:
    snap = _snap(node("a", cpu="1", memory="1Gi"), node("b", cpu="1", memory="1Gi"))
    result = schedule_one(pod("p", cpu="2", memory="2Gi"), snap)
    assert result.message == "0/2 nodes are available: 2 Insufficient cpu, 2 Insufficient memory."


def test_prefilter_rejection_marks_every_node() -> None:
    def name_in(v: str) -> dict[str, Any]:
        return {"key": "metadata.name", "operator": "In", "values": [v]}

    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [name_in("n1"), name_in("n2")]}]
            }
        }
    }
    snap = _mixed_cluster()
    result = schedule_one(pod("p", affinity=affinity), snap)
    assert result.message == "0/5 nodes are available: pod affinity terms conflict."
    assert result.node_statuses.get("n1") == Status(UU, "pod affinity terms conflict")
    assert len(result.node_statuses) == 0
    assert result.evaluated_nodes == 0
    assert result.next_start_index == 0
    feasible, statuses = find_feasible_nodes(pod("p", affinity=affinity), snap)
    assert feasible == []
    assert statuses.absent_nodes_status.reasons == ("pod affinity terms conflict",)
    assert statuses.absent_nodes_status.plugin == "NodeAffinity"


def test_prefilter_result_restricts_the_nodes() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n3"]}]}
                ]
            }
        }
    }
    snap = _mixed_cluster()
    result = schedule_one(pod("p", cpu="2", affinity=affinity), snap)
    assert result.message == (
        "0/5 nodes are available: 1 Insufficient cpu,"
        " 4 node(s) didn't satisfy plugin(s) [NodeAffinity]."
    )
    assert result.evaluated_nodes == 1
    assert result.diagnosis.unschedulable_plugins == {"NodeAffinity", "NodeResourcesFit"}
    assert schedule_one(pod("p", affinity=affinity), snap).suggested_host == "n3"
    feasible, statuses = find_feasible_nodes(pod("p", affinity=affinity), snap)
    assert [ni.name for ni in feasible] == ["n3"]
    assert statuses.get("n2") == Status(UU, "node(s) didn't satisfy plugin(s) [NodeAffinity]")


def test_no_nodes() -> None:
    result = schedule_one(pod("p"), Snapshot())
    assert result.status == Status(Code.Error, "no nodes available to schedule pods")


# --- nominated pods: the two-pass rule --------------------------------------------------------


def test_nominated_pods_of_equal_or_higher_priority_hold_their_room() -> None:
    def cluster(nominated_priority: int) -> Snapshot:
        reserved = pod("q", cpu="600m", priority=nominated_priority, nominated="n1")
        return _snap(node("n1", cpu="1"), reserved)

    incoming = pod("p", cpu="600m", priority=10)
    for held in (10, 11):
        result = schedule_one(incoming, cluster(held))
        assert result.message == "0/1 nodes are available: 1 Insufficient cpu."
    assert schedule_one(incoming, cluster(9)).suggested_host == "n1"
    # Its own nomination does not count against the pod.
    own = pod("p", cpu="600m", priority=10, nominated="n1")
    assert schedule_one(own, _snap(node("n1", cpu="1"), own)).suggested_host == "n1"


def test_pod_must_fit_without_the_nominated_pods_too() -> None:
    # A web pod is nominated to n1 (zone a); the only running web pod is in zone b.
    nominated_web = pod("web-next", labels={"app": "web"}, priority=100, nominated="n1")
    running_web = pod("web", labels={"app": "web"}, node_name="n2")
    snap = _snap(
        node("n1", labels={ZONE: "a"}), node("n2", labels={ZONE: "b"}), nominated_web, running_web
    )
    incoming = pod(
        "p", affinity=required("podAffinity", term({"matchLabels": {"app": "web"}}, ZONE))
    )
    feasible, statuses = find_feasible_nodes(incoming, snap)
    # With web-next added n1 passes, without it n1 fails: both passes are required.
    assert [ni.name for ni in feasible] == ["n2"]
    assert statuses.get("n1") == Status(UU, "node(s) didn't match pod affinity rules")


def test_nominated_pods_anti_affinity_is_ignored_when_the_plugin_skips() -> None:
    # Upstream quirk kept on purpose: InterPodAffinity's PreFilter only looks at bound pods, so
    # with nothing to check it answers Skip and a nominated pod's anti-affinity is not seen.
    guard = pod(
        "guard",
        priority=100,
        nominated="n1",
        affinity=required("podAntiAffinity", term({"matchLabels": {"app": "p"}}, ZONE)),
    )
    snap = _snap(node("n1", labels={ZONE: "a"}), guard)
    assert schedule_one(pod("p", labels={"app": "p"}), snap).suggested_host == "n1"


# --- how many nodes, and from where -----------------------------------------------------------


@pytest.mark.parametrize(
    ("percentage", "nodes", "expected"),
    [
        (0, 50, 50),
        (0, 100, 100),  # 49% of 100 is below the minimum of 100
        (0, 1000, 420),  # 50 - 1000/125 = 42%
        (0, 5000, 500),  # 10%
        (0, 6000, 300),  # 50 - 48 = 2% -> at least 5%
        (10, 5000, 500),
        (1, 5000, 100),
        (100, 5000, 5000),
        (50, 99, 99),
    ],
)
def test_num_feasible_nodes_to_find(percentage: int, nodes: int, expected: int) -> None:
    assert num_feasible_nodes_to_find(percentage, nodes) == expected


def test_percentage_out_of_range() -> None:
    with pytest.raises(ValueError, match=r"must be in the range \[0, 100\], not 101"):
        num_feasible_nodes_to_find(101, 10)


def test_round_robin_start_index() -> None:
    nodes = [node(f"n{i:03}") for i in range(200)]
    cordoned = [n.with_changes(unschedulable=True) for n in nodes[150:160]]
    snap = Snapshot.from_objects([*nodes[:150], *cordoned, *nodes[160:]])
    feasible, diagnosis, next_start = find_nodes_that_fit_pod(
        pod("p"), snap, percentage_of_nodes_to_score=50, start_index=150
    )
    # 100 feasible nodes wanted; the walk starts at 150, wraps, and skips the cordoned ones.
    assert [ni.name for ni in feasible] == [f"n{i:03}" for i in [*range(160, 200), *range(60)]]
    assert len(diagnosis.node_to_status) == 10
    assert next_start == (150 + 110) % 200
    result = schedule_one(pod("p"), snap, percentage_of_nodes_to_score=50, start_index=150)
    assert (result.evaluated_nodes, result.feasible_nodes, result.next_start_index) == (
        110,
        100,
        60,
    )
    every = schedule_one(pod("p"), snap, percentage_of_nodes_to_score=100, start_index=150)
    assert (every.evaluated_nodes, every.next_start_index) == (200, 150)


def test_without_filter_plugins_nodes_are_taken_in_walk_order() -> None:
    snap = _snap(*(node(f"n{i}") for i in range(5)))
    feasible, _, next_start = find_nodes_that_fit_pod(
        pod("p"), snap, framework=Framework([]), start_index=3
    )
    assert [ni.name for ni in feasible] == ["n3", "n4", "n0", "n1", "n2"]
    assert next_start == 3
    result = schedule_one(pod("p"), snap, framework=Framework([]), score_plugins=[], start_index=3)
    # Neither filters nor scores: the first node of the walk is enough.
    assert (result.suggested_host, result.evaluated_nodes) == ("n3", 1)


def test_one_feasible_node_is_taken_without_scoring() -> None:
    snap = _snap(node("a", cpu="1"), node("b"), node("c", cpu="1"))
    result = schedule_one(pod("p", cpu="2"), snap)
    assert result.suggested_host == "b"
    assert result.scores is None and result.node_scores == {}
    assert (result.evaluated_nodes, result.feasible_nodes) == (3, 1)


def test_ties_go_to_the_first_node_in_evaluation_order_or_to_the_rng() -> None:
    snap = _snap(*(node(f"n{i}") for i in range(4)))
    assert schedule_one(pod("p"), snap).suggested_host == "n0"
    assert schedule_one(pod("p"), snap, start_index=2).suggested_host == "n2"
    chosen = {
        schedule_one(pod("p"), snap, rng=random.Random(seed)).suggested_host for seed in range(60)
    }
    assert chosen == {"n0", "n1", "n2", "n3"}
    again = [schedule_one(pod("p"), snap, rng=random.Random(7)).suggested_host for _ in range(3)]
    assert len(set(again)) == 1


def test_nominated_node_is_tried_first() -> None:
    snap = _snap(node("big", cpu="64", memory="256Gi"), node("small", cpu="2"), node("other"))
    nominated = pod("p", cpu="1", nominated="small")
    result = schedule_one(nominated, snap, start_index=1)
    assert result.suggested_host == "small"
    assert (result.evaluated_nodes, result.feasible_nodes, result.next_start_index) == (1, 1, 1)
    # When the nominated node no longer fits, the search runs as usual and records it.
    too_big = pod("p", cpu="3", nominated="small")
    result = schedule_one(too_big, snap)
    assert result.suggested_host == "big"
    assert result.node_statuses.get("small") == Status(UU, "Insufficient cpu")
    assert schedule_one(pod("p", nominated="gone"), snap).suggested_host == "big"


def test_schedule_one_does_not_change_the_snapshot() -> None:
    p = pod("p", cpu="1")
    snap = _snap(node("a"), node("b"), pod("x", node_name="a"), p)
    before = (
        snap.generation,
        [(ni.name, len(ni.pods), dict(ni.requested)) for ni in snap.node_info_list],
    )
    result = schedule_one(p, snap)
    assert result.suggested_host == "b"
    after = (
        snap.generation,
        [(ni.name, len(ni.pods), dict(ni.requested)) for ni in snap.node_info_list],
    )
    assert before == after
    assert snap.get_pod(p.key) is p
    snap.bind_pod(p, result.suggested_host)
    assert snap.node_info("b").requested["cpu"] == 1000


# --- plugins that misbehave or that only know Filter ------------------------------------------


class _PerNodeOnly(NoPreFilterExtensions):
    """A plugin without filter_nodes: the scheduler falls back to Filter per node."""

    name = "OddNodes"

    def pre_filter(self, state: CycleState, p: Pod, snapshot: Snapshot) -> Status | None:
        return None

    def filter(self, state: CycleState, p: Pod, node_info: NodeInfo) -> Status | None:
        if int(node_info.name[1:]) % 2:
            return Status(Code.Unschedulable, "odd")
        if node_info.name == "n4":
            return Status(Code.Error, "boom")
        return None


def test_filter_without_batch_support_and_errors() -> None:
    fwk = Framework([*default_framework().filter_plugins, _PerNodeOnly()])
    snap = _snap(*(node(f"n{i}") for i in range(4)))
    feasible, statuses = find_feasible_nodes(pod("p"), snap, framework=fwk)
    assert [ni.name for ni in feasible] == ["n0", "n2"]
    assert statuses.get("n1") == Status(Code.Unschedulable, "odd")
    assert statuses.get("n1").plugin == "OddNodes"
    broken = _snap(*(node(f"n{i}") for i in range(5)))
    with pytest.raises(SchedulingError, match='running "OddNodes" filter plugin: boom'):
        find_feasible_nodes(pod("p"), broken, framework=fwk)
    result = schedule_one(pod("p"), broken, framework=fwk)
    assert result.status == Status(Code.Error, 'running "OddNodes" filter plugin: boom')


_ODD = Status(Code.Unschedulable, "odd")  # untagged: the walk tags each with the plugin
_FAR = Status(Code.UnschedulableAndUnresolvable, "far")


class _MixedBatch(_PerNodeOnly):
    """A batch plugin answering with two shared, untagged statuses."""

    name = "MixedBatch"

    def filter(self, state: CycleState, p: Pod, node_info: NodeInfo) -> Status | None:
        i = int(node_info.name[1:])
        return None if i % 3 == 0 else _ODD if i % 3 == 1 else _FAR

    def filter_nodes(
        self, state: CycleState, p: Pod, node_infos: list[NodeInfo]
    ) -> tuple[list[NodeInfo], list[tuple[NodeInfo, Status]]]:
        verdicts = [(ni, self.filter(state, p, ni)) for ni in node_infos]
        return [ni for ni, v in verdicts if v is None], [(ni, v) for ni, v in verdicts if v]


def test_a_batch_of_several_untagged_statuses_is_recorded_tagged_each() -> None:
    fwk = Framework([*default_framework().filter_plugins, _MixedBatch()])
    snap = _snap(*(node(f"n{i}") for i in range(7)))
    _, diagnosis, _ = find_nodes_that_fit_pod(pod("p"), snap, framework=fwk)
    got = {n: (s.code, s.reasons, s.plugin) for n, s in diagnosis.node_to_status.statuses.items()}
    odd = (Code.Unschedulable, ("odd",), "MixedBatch")
    far = (Code.UnschedulableAndUnresolvable, ("far",), "MixedBatch")
    assert got == {"n1": odd, "n2": far, "n4": odd, "n5": far}
    assert list(got) == ["n1", "n2", "n4", "n5"]
    assert diagnosis.unschedulable_plugins == {"MixedBatch"}


# --- properties ---------------------------------------------------------------------------------


def _individually(p: Pod, snapshot: Snapshot, node_info: NodeInfo) -> list[Status]:
    """Each default plugin alone: PreFilter then Filter, the failures."""
    out = []
    for plugin in default_framework().filter_plugins:
        state = CycleState()
        pre = plugin.pre_filter(state, p, snapshot)
        if pre is not None and pre.code is Code.Skip:
            continue
        status = pre if pre is not None else plugin.filter(state, p, node_info)
        if status is not None and not status.is_success():
            out.append(status)
    return out


@given(clusters())
def test_feasible_nodes_pass_every_filter_individually(cluster: tuple[Snapshot, Pod]) -> None:
    snapshot, incoming = cluster
    feasible, statuses = find_feasible_nodes(incoming, snapshot)
    names = {ni.name for ni in feasible}
    for ni in snapshot.node_info_list:
        failures = _individually(incoming, snapshot, ni)
        assert (ni.name in names) == (not failures)
        if ni.name not in names and statuses.statuses:
            assert statuses.get(ni.name) in failures


def _rebuilt(snapshot: Snapshot, order: Sequence[int]) -> Snapshot:
    nodes: list[Node] = [ni.node for ni in snapshot.node_info_list if ni.node is not None]
    pods = list(snapshot.bound_pods())
    return Snapshot.from_objects([*(nodes[i] for i in order), *pods])


@given(st.data())
def test_feasible_set_does_not_depend_on_node_order(data: st.DataObject) -> None:
    snapshot, incoming = data.draw(clusters())
    order = data.draw(st.permutations(range(len(snapshot.node_info_list))))
    shuffled = _rebuilt(snapshot, order)
    a_nodes, a_statuses = find_feasible_nodes(incoming, snapshot)
    b_nodes, b_statuses = find_feasible_nodes(incoming, shuffled)
    assert {ni.name for ni in a_nodes} == {ni.name for ni in b_nodes}
    assert {n: (s.code, s.reasons) for n, s in a_statuses} == {
        n: (s.code, s.reasons) for n, s in b_statuses
    }
    result = schedule_one(incoming, snapshot, percentage_of_nodes_to_score=100)
    assert result.suggested_host in {ni.name for ni in a_nodes} | {""}
    if result.scores is not None:
        best = max(result.scores.total_scores)
        assert result.scores.total_scores[result.scores.index_of(result.suggested_host)] == best


@given(st.data())
def test_decisions_on_a_long_lived_snapshot_match_a_fresh_one(data: st.DataObject) -> None:
    # NodeInfo.memo must never serve a stale verdict or score: after every bind, schedule
    # the next pod on the evolving snapshot and on one rebuilt from scratch.
    snapshot, first = data.draw(clusters())
    drawn = [
        first,
        *(data.draw(arbitrary_pod(f"next{i}")) for i in range(data.draw(st.integers(1, 5)))),
    ]
    for p in (d.with_changes(node_name="") for d in drawn):
        fresh = _rebuilt(snapshot, range(len(snapshot.node_info_list)))
        kept = schedule_one(p, snapshot, percentage_of_nodes_to_score=100)
        rebuilt = schedule_one(p, fresh, percentage_of_nodes_to_score=100)
        assert kept.suggested_host == rebuilt.suggested_host
        assert kept.message == rebuilt.message
        assert kept.node_scores == rebuilt.node_scores
        if kept.suggested_host:
            snapshot.bind_pod(p, kept.suggested_host)
