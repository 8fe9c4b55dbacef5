"""PodTopologySpread's kept counts (``SpreadCounts``) equal the walk over every node.

The plugin keeps its sums per topology pair between cycles and brings them up to date from
the snapshot's change log. On a long-lived snapshot changed at random between cycles (pods
bound, made terminating and removed, nodes added, relabelled and tainted), PreFilter and
PreScore state must equal what the walk (``use_index = False``) computes on the same
snapshot — pair order and critical paths included, since ties go to the first pair met.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.framework import CycleState, Status
from scheduler.objects import Pod, Service
from scheduler.plugins.podtopologyspread.filtering import PRE_FILTER_STATE_KEY, PreFilterState
from scheduler.plugins.podtopologyspread.plugin import PodTopologySpread
from scheduler.plugins.podtopologyspread.scoring import PRE_SCORE_STATE_KEY, PreScoreState
from scheduler.snapshot import Snapshot
from tests.support import objects as obj
from tests.support.spread import BAR, DNS, FOO, HOSTNAME, SA, ZONE, tolerate, tsc, unschedulable

NODES = 5
LABELS = [{"foo": ""}, {"bar": ""}, {"foo": "", "bar": ""}, {}]


@st.composite
def _incoming(draw: st.DrawFn) -> Pod:
    keys = draw(st.lists(st.sampled_from([ZONE, HOSTNAME, "rack"]), max_size=3))
    spread = [
        tsc(
            draw(st.integers(1, 3)),
            key,
            draw(st.sampled_from([DNS, SA])),
            draw(st.sampled_from([FOO, BAR])),
            min_domains=draw(st.sampled_from([None, 1, 4])),
            taints_policy=draw(st.sampled_from([None, "Honor"])),
            affinity_policy=draw(st.sampled_from([None, "Honor", "Ignore"])),
        )
        for key in keys
    ]
    return obj.pod(
        "incoming",
        labels=draw(st.sampled_from(LABELS)),
        spread=spread,
        node_selector=draw(st.sampled_from([None, {"disk": "ssd"}])),
        tolerations=tolerate(draw(st.sampled_from(["", "node.kubernetes.io/unschedulable"]))),
    )


def _node_labels(draw: st.DrawFn, i: int) -> dict[str, str]:
    labels = {HOSTNAME: f"n{i}"}
    if draw(st.integers(0, 4)):
        labels[ZONE] = draw(st.sampled_from(["z1", "z2", "z3", ""]))
    if draw(st.booleans()):
        labels["rack"] = draw(st.sampled_from(["r1", "r2"]))
    if draw(st.booleans()):
        labels["disk"] = "ssd"
    return labels


# One step of change between cycles.
_STEPS = st.sampled_from(["bind", "bind", "bind", "remove", "terminate", "add-node", "relabel"])


def _step(draw: st.DrawFn, snap: Snapshot, step: str, serial: int) -> None:
    names = [ni.name for ni in snap.node_info_list]
    bound = list(snap.bound_pods())
    if step == "bind" or (step in ("remove", "terminate") and not bound):
        snap.add_pod(
            obj.pod(
                f"p{serial}",
                node_name=draw(st.sampled_from(names)),
                namespace=draw(st.sampled_from(["default", "other"])),
                labels=draw(st.sampled_from(LABELS)),
            )
        )
    elif step == "remove":
        snap.remove_pod(draw(st.sampled_from(bound)))
    elif step == "terminate":
        pod = draw(st.sampled_from(bound))
        snap.update_pod(pod.with_changes(deletion_timestamp=1.0))
    elif step == "add-node":
        i = len(names) + serial
        snap.add_node(
            obj.node(f"n{i}", _node_labels(draw, i), taints=unschedulable(draw(st.booleans())))
        )
    else:
        ni = snap.node_info(draw(st.sampled_from(names)))
        assert ni.node is not None
        i = int(ni.name[1:])
        snap.add_node(
            obj.node(ni.name, _node_labels(draw, i), taints=unschedulable(draw(st.booleans())))
        )


def _pre_filter(pts: PodTopologySpread, pod: Pod, snap: Snapshot) -> Any:
    state = CycleState()
    status = pts.pre_filter(state, pod, snap)
    s = state.read(PRE_FILTER_STATE_KEY)
    if not isinstance(s, PreFilterState):
        return (status, None)
    paths = {key: (list(p.values), list(p.nums)) for key, p in s.tp_key_to_critical_paths.items()}
    return (
        status,
        list(s.tp_pair_to_match_num.items()),
        list(s.tp_key_to_domains_num.items()),
        list(paths.items()),
    )


def _pre_score(pts: PodTopologySpread, pod: Pod, snap: Snapshot) -> Any:
    state = CycleState()
    status: Status | None = pts.pre_score(state, pod, snap.node_info_list, snap)
    s = state.read(PRE_SCORE_STATE_KEY)
    if not isinstance(s, PreScoreState):
        return (status, None)
    return (status, list((s.topology_pair_to_pod_counts or {}).items()), s.ignored_nodes)


@settings(deadline=None, max_examples=150)
@given(st.data(), _incoming(), st.lists(_STEPS, max_size=25), st.booleans())
def test_kept_counts_equal_the_walk_through_changes(
    data: st.DataObject, incoming: Pod, steps: list[str], service: bool
) -> None:
    nodes = [
        obj.node(
            f"n{i}",
            _node_labels(data.draw, i),
            taints=unschedulable(data.draw(st.integers(0, 4)) == 0),
        )
        for i in range(NODES)
    ]
    objects: list[Any] = [*nodes]
    if service:  # system default spreading for a pod without constraints of its own
        objects.append(
            Service.from_dict(
                {
                    "kind": "Service",
                    "metadata": {"name": "s", "namespace": "default"},
                    "spec": {"selector": {"foo": ""}},
                }
            )
        )
    snap = Snapshot.from_objects(objects)
    kept = PodTopologySpread()
    walk = PodTopologySpread()
    walk.use_index = False
    for serial, step in enumerate(steps):
        assert _pre_filter(kept, incoming, snap) == _pre_filter(walk, incoming, snap)
        assert _pre_score(kept, incoming, snap) == _pre_score(walk, incoming, snap)
        _step(data.draw, snap, step, serial)
    assert _pre_filter(kept, incoming, snap) == _pre_filter(walk, incoming, snap)
    assert _pre_score(kept, incoming, snap) == _pre_score(walk, incoming, snap)


def test_critical_paths_ties_go_to_the_first_pair_met() -> None:
    """Three zones with equal counts: the paths are the first two zones of the node order,
    as ``CriticalPaths.update`` over the walk leaves them."""
    nodes = [obj.node(f"n{i}", {HOSTNAME: f"n{i}", ZONE: z}) for i, z in enumerate("cab")]
    snap = Snapshot.from_objects(nodes)
    pod = obj.pod("p", labels={"foo": ""}, spread=[tsc(1, ZONE, DNS, FOO)])
    pts = PodTopologySpread()
    state = CycleState()
    pts.pre_filter(state, pod, snap)
    s = state.read(PRE_FILTER_STATE_KEY)
    assert isinstance(s, PreFilterState)
    assert (s.tp_key_to_critical_paths[ZONE].values, s.tp_key_to_critical_paths[ZONE].nums) == (
        ["c", "a"],
        [0, 0],
    )
    # A pod in zone c: now a and b are the smallest, a met first.
    snap.add_pod(obj.pod("x", node_name="n0", labels={"foo": ""}))
    state = CycleState()
    pts.pre_filter(state, pod, snap)
    s = state.read(PRE_FILTER_STATE_KEY)
    assert isinstance(s, PreFilterState)
    assert (s.tp_key_to_critical_paths[ZONE].values, s.tp_key_to_critical_paths[ZONE].nums) == (
        ["a", "b"],
        [0, 0],
    )
    assert s.tp_pair_to_match_num == {(ZONE, "c"): 1, (ZONE, "a"): 0, (ZONE, "b"): 0}
