"""Invariants of PodTopologySpread on random small clusters (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kube.objects import KubeObject, Pod
from scheduler.framework import Code, CycleState
from scheduler.plugins.podtopologyspread.filtering import PRE_FILTER_STATE_KEY
from scheduler.plugins.podtopologyspread.plugin import PodTopologySpread
from scheduler.snapshot import Snapshot
from tests.support import objects as obj
from tests.support.spread import DNS, SA, tsc

NODES = 5


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[KubeObject], list[Pod]]:
    """Nodes node-0..4 in 2-3 zones (one may lack its zone label) and labelled pods on them."""
    zones = draw(
        st.lists(st.sampled_from(["z1", "z2", "z3", None]), min_size=NODES, max_size=NODES)
    )
    nodes: list[KubeObject] = []
    for i, zone in enumerate(zones):
        labels = {"node": f"node-{i}"}
        if zone is not None:
            labels["zone"] = zone
        nodes.append(obj.node(f"node-{i}", labels))
    placed = draw(
        st.lists(
            st.tuples(st.integers(0, NODES - 1), st.booleans(), st.sampled_from(["default", "o"])),
            max_size=14,
        )
    )
    pods = [
        obj.pod(
            f"e{j}", node_name=f"node-{i}", namespace=ns, labels={"foo": ""} if foo else {"bar": ""}
        )
        for j, (i, foo, ns) in enumerate(placed)
    ]
    return nodes, pods


def passing(pl: PodTopologySpread, pod: Pod, snapshot: Snapshot) -> set[str]:
    state = CycleState()
    assert pl.pre_filter(state, pod, snapshot) is None
    return {ni.name for ni in snapshot.node_info_list if pl.filter(state, pod, ni) is None}


@settings(max_examples=60, deadline=None)
@given(clusters(), st.sampled_from(["zone", "node"]), st.integers(1, 4), st.integers(1, 4))
def test_filter_is_monotone_in_max_skew(
    cluster: tuple[list[KubeObject], list[Pod]], key: str, skew: int, min_domains: int
) -> None:
    nodes, pods = cluster
    snapshot = Snapshot.from_objects([*nodes, *pods])
    pl = PodTopologySpread(defaulting_type="List")

    def pod(max_skew: int) -> Pod:
        return obj.pod(
            "p", labels={"foo": ""}, spread=[tsc(max_skew, key, min_domains=min_domains)]
        )

    tight, loose = passing(pl, pod(skew), snapshot), passing(pl, pod(skew + 1), snapshot)
    assert tight <= loose
    # A node without the topology key never passes, whatever the skew.
    unlabelled = {ni.name for ni in snapshot.node_info_list if key not in ni.node.labels}  # type: ignore[union-attr]
    assert not (loose & unlabelled)


@settings(max_examples=60, deadline=None)
@given(clusters(), st.integers(0, NODES - 1))
def test_removing_victims_keeps_counts_and_minimum_exact(
    cluster: tuple[list[KubeObject], list[Pod]], victim_node: int
) -> None:
    """What preemption does: remove pods from one node, then add some back."""
    nodes, pods = cluster
    snapshot = Snapshot.from_objects([*nodes, *pods])
    pl = PodTopologySpread(defaulting_type="List")
    preemptor = obj.pod("p", labels={"foo": ""}, spread=[tsc(1, "zone"), tsc(1, "node")])
    state = CycleState()
    assert pl.pre_filter(state, preemptor, snapshot) is None
    s = state.read(PRE_FILTER_STATE_KEY)
    before = dict(s.tp_pair_to_match_num)
    ni = snapshot.node_info(f"node-{victim_node}").clone()
    victims = list(ni.pods)
    for v in victims:
        ni.remove_pod(v)
        assert pl.remove_pod(state, preemptor, v, ni) is None
    for key in ("zone", "node"):
        counts = [n for (k, _), n in s.tp_pair_to_match_num.items() if k == key]
        if counts:
            assert s.tp_key_to_critical_paths[key].nums[0] == min(counts)
    # A fresh PreFilter on the cluster without the victims counts the same.
    fresh = Snapshot.from_objects([*nodes, *(p for p in pods if p not in victims)])
    other = CycleState()
    pl.pre_filter(other, preemptor, fresh)
    assert s.tp_pair_to_match_num == other.read(PRE_FILTER_STATE_KEY).tp_pair_to_match_num
    for v in victims:
        ni.add_pod(v)
        pl.add_pod(state, preemptor, v, ni)
    assert s.tp_pair_to_match_num == before


@settings(max_examples=60, deadline=None)
@given(clusters(), st.integers(1, 3), st.booleans())
def test_normalized_scores_stay_in_range(
    cluster: tuple[list[KubeObject], list[Pod]], skew: int, system: bool
) -> None:
    nodes, pods = cluster
    snapshot = Snapshot.from_objects([*nodes, *pods])
    if system:
        pl = PodTopologySpread()
        pod = obj.pod("p", labels={"foo": ""}, owner=None)
    else:
        pl = PodTopologySpread(defaulting_type="List")
        pod = obj.pod(
            "p", labels={"foo": ""}, spread=[tsc(skew, "zone", SA), tsc(skew, "node", SA)]
        )
    state = CycleState()
    status = pl.pre_score(state, pod, snapshot.node_info_list, snapshot)
    if status is not None:
        assert status.code is Code.Skip and system  # no Service selects the pod
        return
    scores = pl.score_nodes(state, pod, snapshot.node_info_list)
    pl.normalize_score(state, pod, scores)
    assert all(0 <= s <= 100 for s in scores)
    # Nodes missing a topology key score 0.
    for ni, score in zip(snapshot.node_info_list, scores, strict=True):
        if "zone" not in ni.node.labels:  # type: ignore[union-attr]
            assert score == 0


def test_do_not_schedule_constraint_is_unschedulable_for_preemption() -> None:
    pl = PodTopologySpread(defaulting_type="List")
    snapshot = Snapshot.from_objects(
        [
            obj.node("a", {"zone": "z1"}),
            obj.node("b", {"zone": "z2"}),
            obj.pod("e", node_name="a", labels={"foo": ""}),
        ]
    )
    state = CycleState()
    pod = obj.pod("p", labels={"foo": ""}, spread=[tsc(1, "zone", DNS)])
    pl.pre_filter(state, pod, snapshot)
    # a: 1 + 1 - 0 > 1 -> Unschedulable (preemption may remove e and help).
    status = pl.filter(state, pod, snapshot.node_info("a"))
    assert status is not None and status.code is Code.Unschedulable
