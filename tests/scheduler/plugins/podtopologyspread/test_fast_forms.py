"""PodTopologySpread's fast forms equal the plain ones on random, changing clusters.

``filter_nodes`` must give ``filter``'s verdict on every node, and the match counts kept in
``NodeInfo.memo`` must never be stale: after pods are bound and removed on a long-lived
snapshot, PreFilter and PreScore state, scores and whole decisions equal those computed on a
snapshot rebuilt from scratch (which has no remembered counts).
"""

from __future__ import annotations

from typing import Any
from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st

from kube.objects import Pod
from scheduler.framework import CycleState
from scheduler.plugins.helper import split_by_filter
from scheduler.plugins.podtopologyspread import filtering as spread_filtering
from scheduler.plugins.podtopologyspread.filtering import PRE_FILTER_STATE_KEY
from scheduler.plugins.podtopologyspread.plugin import PodTopologySpread
from scheduler.plugins.podtopologyspread.scoring import PRE_SCORE_STATE_KEY
from scheduler.schedule import schedule_one
from scheduler.snapshot import NodeWindow, Snapshot
from tests.support import objects as obj
from tests.support.spread import BAR, DNS, FOO, HOSTNAME, SA, ZONE, tsc, unschedulable

NODES = 6


@st.composite
def _constraints(draw: st.DrawFn) -> list[dict[str, Any]]:
    keys = draw(st.lists(st.sampled_from([ZONE, HOSTNAME, "rack"]), min_size=1, max_size=3))
    return [
        tsc(
            draw(st.integers(1, 3)),
            key,
            draw(st.sampled_from([DNS, SA])),
            draw(st.sampled_from([FOO, BAR])),
            min_domains=draw(st.sampled_from([None, 1, 4])),
            taints_policy=draw(st.sampled_from([None, "Honor"])),
        )
        for key in keys
    ]


@st.composite
def _cluster(draw: st.DrawFn) -> tuple[Snapshot, list[Pod], Pod]:
    nodes = []
    for i in range(NODES):
        labels = {HOSTNAME: f"n{i}"}
        if draw(st.integers(0, 5)):
            labels[ZONE] = draw(st.sampled_from(["z1", "z2", "z3"]))
        if draw(st.booleans()):
            labels["rack"] = draw(st.sampled_from(["r1", "r2"]))
        nodes.append(obj.node(f"n{i}", labels, taints=unschedulable(draw(st.integers(0, 5)) == 0)))

    def some_pod(name: str) -> Pod:
        return obj.pod(
            name,
            node_name=f"n{draw(st.integers(0, NODES - 1))}",
            namespace=draw(st.sampled_from(["default", "other"])),
            labels=draw(st.sampled_from([{"foo": ""}, {"bar": ""}, {"foo": "", "bar": ""}, {}])),
            terminating=draw(st.integers(0, 6)) == 0,
        )

    bound = [some_pod(f"b{j}") for j in range(draw(st.integers(0, 12)))]
    later = [some_pod(f"l{j}") for j in range(draw(st.integers(0, 6)))]
    incoming = obj.pod(
        "incoming",
        labels=draw(st.sampled_from([{"foo": ""}, {"bar": ""}, {}])),
        spread=draw(_constraints()),
    )
    return Snapshot.from_objects([*nodes, *bound]), later, incoming


def _evolve(snap: Snapshot, later: list[Pod], pts: PodTopologySpread, incoming: Pod) -> None:
    """Change the snapshot between cycles that remember counts."""
    for p in later:
        pts.pre_filter(CycleState(), incoming, snap)  # remember counts of the current nodes
        snap.add_pod(p)
        if len(p.name) % 2:
            snap.remove_pod(next(iter(snap.bound_pods())))


def _fresh(snap: Snapshot) -> Snapshot:
    return Snapshot.from_objects(
        [*(ni.node for ni in snap.node_info_list if ni.node is not None), *snap.bound_pods()]
    )


@settings(deadline=None)
@given(_cluster())
def test_batch_filter_and_remembered_counts_equal_the_plain_forms(
    cluster: tuple[Snapshot, list[Pod], Pod],
) -> None:
    snap, later, incoming = cluster
    pts = PodTopologySpread()
    _evolve(snap, later, pts, incoming)
    fresh = _fresh(snap)
    kept, rebuilt = CycleState(), CycleState()
    assert pts.pre_filter(kept, incoming, snap) == pts.pre_filter(rebuilt, incoming, fresh)
    if kept.read(PRE_FILTER_STATE_KEY) is not None:
        a, b = kept.read(PRE_FILTER_STATE_KEY), rebuilt.read(PRE_FILTER_STATE_KEY)
        assert a.tp_pair_to_match_num == b.tp_pair_to_match_num
        assert a.tp_key_to_critical_paths == b.tp_key_to_critical_paths
        nodes = list(snap.node_info_list)
        got_passed, got_rejected = pts.filter_nodes(kept, incoming, nodes)
        want_passed, want_rejected = split_by_filter(pts.filter, kept, incoming, nodes)
        assert [ni.name for ni in got_passed] == [ni.name for ni in want_passed]
        assert [(ni.name, s.code, s.reasons) for ni, s in got_rejected] == [
            (ni.name, s.code, s.reasons) for ni, s in want_rejected
        ]
    nodes, fresh_nodes = snap.node_info_list, fresh.node_info_list
    assert pts.pre_score(kept, incoming, nodes, snap) == pts.pre_score(
        rebuilt, incoming, fresh_nodes, fresh
    )
    if kept.read(PRE_SCORE_STATE_KEY) is not None:
        assert pts.score_nodes(kept, incoming, nodes) == pts.score_nodes(
            rebuilt, incoming, fresh_nodes
        )
    a_result = schedule_one(incoming, snap, percentage_of_nodes_to_score=100)
    b_result = schedule_one(incoming, fresh, percentage_of_nodes_to_score=100)
    assert a_result.suggested_host == b_result.suggested_host
    assert a_result.message == b_result.message
    assert a_result.node_scores == b_result.node_scores


@settings(deadline=None)
@given(_cluster())
def test_batch_filter_with_listed_domains_and_with_count_lookups(
    cluster: tuple[Snapshot, list[Pod], Pod],
) -> None:
    """The batch lists the domains over the limit when a key has few and looks each node's
    count up when it has many; both give ``filter``'s verdicts, on a list of nodes and on the
    walk's windows (these clusters have few domains, so each form is forced in turn)."""
    snap, later, incoming = cluster
    pts = PodTopologySpread()
    _evolve(snap, later, pts, incoming)
    half = len(snap.node_info_list) // 2
    for few in (0, 1_000_000):
        with patch.object(spread_filtering, "_FEW_DOMAINS", few):
            state = CycleState()
            if pts.pre_filter(state, incoming, snap) is not None:
                continue
            for nodes in (
                list(snap.node_info_list),
                NodeWindow(snap, half, len(snap.node_info_list) - half),
            ):
                got_passed, got_rejected = pts.filter_nodes(state, incoming, nodes)
                want_passed, want_rejected = split_by_filter(pts.filter, state, incoming, nodes)
                assert [ni.name for ni in got_passed] == [ni.name for ni in want_passed]
                assert [(ni.name, s.code, s.reasons) for ni, s in got_rejected] == [
                    (ni.name, s.code, s.reasons) for ni, s in want_rejected
                ]
