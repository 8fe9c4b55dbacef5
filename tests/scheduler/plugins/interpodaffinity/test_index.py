"""InterPodAffinity's counts from the snapshot's ``AffinityIndex`` equal the walk over every pod.

PreFilter (the three counts, the Skip, every node's verdict) and PreScore/Score (the Skip, every
node's raw and normalized score) are run with ``use_index`` on and off on random clusters:
node labels, namespaces with and without labels, terms with namespaces, namespaceSelector,
matchLabelKeys and matchExpressions, preferred weights, and hardPodAffinityWeight. The index is
built once and then kept up to date as the cluster changes (pods bound and deleted, nodes
relabelled, removed and added, namespaces relabelled), and the nominated-pods pass's
AddPod/RemovePod change a state without changing the index it borrowed from. The batch Filter
(``filter_nodes``) gives each node the verdict ``filter`` gives it.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kube.objects import Namespace, Node, Pod
from scheduler.framework import Code, CycleState, Status
from scheduler.plugins.interpodaffinity.filtering import (
    PRE_FILTER_STATE_KEY,
    InterPodAffinity,
    PreFilterState,
    existing_anti_affinity_counts,
    incoming_affinity_anti_affinity_counts,
)
from scheduler.plugins.interpodaffinity.index import affinity_index
from scheduler.plugins.interpodaffinity.scoring import InterPodAffinityScorer
from scheduler.snapshot import Snapshot
from tests.support.objects import namespace, node, pod, term

NAMESPACES = ["default", "other", "team"]
KEYS = ["zone", "rack", "kubernetes.io/hostname"]
_LABELS = st.dictionaries(st.sampled_from(["app", "tier"]), st.sampled_from(["a", "b"]), max_size=2)


@st.composite
def _term(draw: st.DrawFn) -> dict[str, Any]:
    selector: dict[str, Any] | None = draw(
        st.none()
        | _LABELS.map(lambda m: {"matchLabels": m})
        | st.sampled_from(
            [
                {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
                {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["a"]}]},
            ]
        )
    )
    extra: dict[str, Any] = {}
    if draw(st.booleans()):
        extra["namespaces"] = draw(st.lists(st.sampled_from(NAMESPACES), min_size=1, max_size=2))
    if draw(st.booleans()):
        extra["namespaceSelector"] = draw(
            st.sampled_from([{}, {"matchLabels": {"env": "prod"}}, {"matchLabels": {"env": "x"}}])
        )
    if selector is not None and draw(st.booleans()):
        extra["matchLabelKeys"] = ["tier"]
    return term(selector, draw(st.sampled_from(KEYS)), **extra)


@st.composite
def _affinity(draw: st.DrawFn) -> dict[str, Any] | None:
    out: dict[str, Any] = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        req = draw(st.lists(_term(), max_size=2))
        pref = draw(st.lists(st.tuples(st.integers(1, 100), _term()), max_size=2))
        if req or pref:
            out[kind] = {
                "requiredDuringSchedulingIgnoredDuringExecution": req,
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": w, "podAffinityTerm": t} for w, t in pref
                ],
            }
    return out or None


@st.composite
def _pod(draw: st.DrawFn, name: str, node_names: list[str]) -> Pod:
    return pod(
        name,
        namespace=draw(st.sampled_from(NAMESPACES)),
        labels=draw(_LABELS),
        affinity=draw(_affinity()),
        node_name=draw(st.sampled_from(node_names)) if node_names else "",
    )


@st.composite
def _node(draw: st.DrawFn, name: str) -> Node:
    labels = {"kubernetes.io/hostname": name}
    for key in ("zone", "rack"):
        value = draw(st.none() | st.sampled_from(["a", "b"]))
        if value is not None:
            labels[key] = value
    return node(name, labels=labels)


@st.composite
def _namespace(draw: st.DrawFn, name: str) -> Namespace | None:
    env = draw(st.none() | st.sampled_from(["prod", "dev"]))
    if env is None and draw(st.booleans()):
        return None  # unknown to the snapshot: only its name label
    return namespace(name, {"env": env} if env else {})


def _compare(snap: Snapshot, incoming: Pod, hard_weight: int) -> None:
    """Index and walk agree on everything InterPodAffinity answers for ``incoming``."""
    results = []
    for use_index in (True, False):
        f = InterPodAffinity()
        f.use_index = use_index
        state = CycleState()
        pre = f.pre_filter(state, incoming, snap)
        pairs = None
        verdicts: list[Status | None] = []
        if pre is None:
            s = state.read(PRE_FILTER_STATE_KEY)
            assert isinstance(s, PreFilterState)
            pairs = s.pairs()
            verdicts = [f.filter(state, incoming, ni) for ni in snap.node_info_list]
            passed, rejected = f.filter_nodes(state, incoming, list(snap.node_info_list))
            batch = {ni.name: None for ni in passed} | {ni.name: v for ni, v in rejected}
            assert [batch[ni.name] for ni in snap.node_info_list] == verdicts
        sc = InterPodAffinityScorer(hard_pod_affinity_weight=hard_weight)
        sc.use_index = use_index
        sstate = CycleState()
        spre = sc.pre_score(sstate, incoming, snap.node_info_list, snap)
        raw: list[int] = []
        normalized: list[int] = []
        if spre is None:
            raw = sc.score_nodes(sstate, incoming, snap.node_info_list)
            normalized = list(raw)
            sc.normalize_score(sstate, incoming, normalized)
        results.append((pre, pairs, verdicts, spre, raw, normalized))
    assert results[0] == results[1]
    pre, pairs, *_ = results[1]
    if pairs is not None:  # and the walk is upstream's pair counting
        flat_aff, flat_anti = incoming_affinity_anti_affinity_counts(incoming, snap)
        assert pairs == (existing_anti_affinity_counts(incoming, snap), flat_aff, flat_anti)


@st.composite
def _cluster(draw: st.DrawFn) -> tuple[Snapshot, list[Pod], int]:
    nodes = [draw(_node(f"n{i}")) for i in range(draw(st.integers(1, 5)))]
    names = [n.name for n in nodes]
    namespaces = [ns for name in NAMESPACES if (ns := draw(_namespace(name))) is not None]
    existing = [draw(_pod(f"e{j}", names)) for j in range(draw(st.integers(0, 8)))]
    incoming = [draw(_pod(f"in{j}", [])) for j in range(2)]
    return (
        Snapshot.from_objects([*nodes, *namespaces, *existing]),
        incoming,
        draw(st.integers(0, 3)),
    )


@settings(deadline=None, max_examples=60)
@given(_cluster())
def test_the_index_answers_as_the_walk(cluster: tuple[Snapshot, list[Pod], int]) -> None:
    snap, incoming, hard_weight = cluster
    for p in incoming:
        _compare(snap, p, hard_weight)


_OPS = st.sampled_from(["bind", "delete", "relabel", "remove_node", "add_node", "namespace"])


@settings(deadline=None, max_examples=40)
@given(_cluster(), st.data())
def test_the_index_follows_the_cluster(
    cluster: tuple[Snapshot, list[Pod], int], data: st.DataObject
) -> None:
    snap, incoming, hard_weight = cluster
    _compare(snap, incoming[0], hard_weight)  # the index exists from here on
    assert affinity_index(snap) is affinity_index(snap)
    for serial, op in enumerate(data.draw(st.lists(_OPS, min_size=1, max_size=6))):
        names = snap.node_names()
        bound = list(snap.bound_pods())
        if op == "bind" and names:
            snap.add_pod(data.draw(_pod(f"b{serial}", list(names))))
        elif op == "delete" and bound:
            snap.remove_pod(data.draw(st.sampled_from(bound)))
        elif op == "relabel" and names:
            name = data.draw(st.sampled_from(names))
            snap.update_node(data.draw(_node(name)))
        elif op == "remove_node" and names:
            snap.remove_node(data.draw(st.sampled_from(names)))
        elif op == "add_node":
            snap.add_node(data.draw(_node(f"m{serial}")))
        elif op == "namespace":
            ns = data.draw(_namespace(data.draw(st.sampled_from(NAMESPACES))))
            if ns is not None:
                snap.namespaces[ns.name] = ns
        for p in incoming:
            _compare(snap, p, hard_weight)


@settings(deadline=None, max_examples=40)
@given(_cluster(), st.data())
def test_add_and_remove_pod_change_the_state_not_the_index(
    cluster: tuple[Snapshot, list[Pod], int], data: st.DataObject
) -> None:
    snap, incoming, _ = cluster
    p = incoming[0]
    states = []
    for use_index in (True, False):
        f = InterPodAffinity()
        f.use_index = use_index
        state = CycleState()
        if f.pre_filter(state, p, snap) is not None:
            return  # Skip: no state to change
        states.append((f, state))
    names = snap.node_names()
    bound = list(snap.bound_pods())
    for i in range(data.draw(st.integers(1, 4))):
        if bound and data.draw(st.booleans()):
            other = data.draw(st.sampled_from(bound))
            ni = snap.node_info(other.node_name)
            for f, state in states:
                assert f.remove_pod(state, p, other, ni) is None
        else:
            other = data.draw(_pod(f"x{i}", list(names)))
            ni = snap.node_info(other.node_name)
            for f, state in states:
                assert f.add_pod(state, p, other, ni) is None
        indexed, walked = (s.read(PRE_FILTER_STATE_KEY) for _, s in states)
        assert isinstance(indexed, PreFilterState) and isinstance(walked, PreFilterState)
        assert indexed.pairs() == walked.pairs()
        assert [states[0][0].filter(states[0][1], p, ni) for ni in snap.node_info_list] == [
            states[1][0].filter(states[1][1], p, ni) for ni in snap.node_info_list
        ]
    _compare(snap, p, 1)  # the index lent its maps and still holds the cluster as it is


def test_a_skipped_pre_filter_and_pre_score_stay_skipped_with_the_index() -> None:
    snap = Snapshot.from_objects([node("n1", labels={"zone": "a"}), pod("e", node_name="n1")])
    plain = pod("p")
    assert InterPodAffinity().pre_filter(CycleState(), plain, snap) == Status(Code.Skip)
    scorer = InterPodAffinityScorer()
    assert scorer.pre_score(CycleState(), plain, snap.node_info_list, snap) == Status(Code.Skip)
