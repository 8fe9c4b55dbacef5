"""Snapshot/NodeInfo aggregates the filter plugins rely on."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from kube.objects import Node, Pod, Taint
from scheduler.snapshot import NodeInfo, Snapshot, host_ports


def _pod(name: str, **spec: Any) -> Pod:
    return Pod.from_dict({"metadata": {"name": name}, "spec": spec})


def test_host_ports_include_sidecars_but_not_plain_init_containers() -> None:
    pod = _pod(
        "p",
        initContainers=[
            {"name": "init", "ports": [{"containerPort": 1, "hostPort": 9001}]},
            {
                "name": "sidecar",
                "restartPolicy": "Always",
                "ports": [{"containerPort": 2, "hostPort": 9002, "protocol": "UDP"}],
            },
        ],
        containers=[
            {
                "name": "app",
                "ports": [
                    {"containerPort": 80},
                    {"containerPort": 3, "hostPort": 9003, "hostIP": "10.0.0.1"},
                ],
            }
        ],
    )
    assert list(host_ports(pod)) == [("0.0.0.0", "UDP", 9002), ("10.0.0.1", "TCP", 9003)]
    ni = NodeInfo(Node("n"), [pod])
    assert ni.used_ports == {("0.0.0.0", "UDP", 9002): 1, ("10.0.0.1", "TCP", 9003): 1}
    ni.remove_pod(pod)
    assert ni.used_ports == {}


# --- affinity indexes -------------------------------------------------------------------------

_ANTI = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"a": "b"}}, "topologyKey": "zone"}
        ]
    }
}
_PREFERRED = {
    "podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 5,
                "podAffinityTerm": {"labelSelector": {}, "topologyKey": "zone"},
            }
        ]
    }
}


def _kind_pod(name: str, kind: int, node: str) -> Pod:
    spec: dict[str, Any] = {"nodeName": node}
    if kind == 1:
        spec["affinity"] = _ANTI
    elif kind == 2:
        spec["affinity"] = _PREFERRED
    return Pod.from_dict({"metadata": {"name": name}, "spec": spec})


def _scan(snap: Snapshot) -> tuple[set[str], set[str]]:
    with_affinity = {ni.name for ni in snap.node_info_list if ni.pods_with_affinity}
    with_anti = {ni.name for ni in snap.node_info_list if ni.pods_with_required_anti_affinity}
    return with_affinity, with_anti


def _indexed(snap: Snapshot) -> tuple[set[str], set[str]]:
    a = snap.have_pods_with_affinity_list()
    b = snap.have_pods_with_required_anti_affinity_list()
    assert len(a) == len({ni.name for ni in a}) and len(b) == len({ni.name for ni in b})
    return {ni.name for ni in a}, {ni.name for ni in b}


_ops = st.lists(
    st.tuples(
        st.sampled_from(["add", "remove", "bind", "drop_node", "add_node"]),
        st.integers(0, 5),  # pod
        st.integers(0, 2),  # pod kind: plain / required anti-affinity / preferred affinity
        st.integers(0, 3),  # node
    ),
    max_size=40,
)


@given(_ops)
def test_affinity_indexes_agree_with_a_full_scan(ops: list[tuple[str, int, int, int]]) -> None:
    snap = Snapshot.from_objects([Node(f"n{i}") for i in range(3)])
    for op, p, kind, n in ops:
        pod = _kind_pod(f"p{p}", kind, f"n{n}")
        if op == "add":
            snap.add_pod(pod)
        elif op == "remove":
            snap.remove_pod(pod)
        elif op == "bind":
            snap.bind_pod(pod.with_changes(node_name=""), f"n{n}")
        elif op == "drop_node":
            snap.remove_node(f"n{n}")
        else:
            snap.add_node(Node(f"n{n}"))
        assert _indexed(snap) == _scan(snap)


def test_clones_do_not_touch_the_index() -> None:
    snap = Snapshot.from_objects([Node("n0"), _kind_pod("a", 1, "n0")])
    assert _indexed(snap) == ({"n0"}, {"n0"})
    clone = snap.node_info("n0").clone()
    clone.remove_pod(_kind_pod("a", 1, "n0"))
    assert _indexed(snap) == ({"n0"}, {"n0"})
    snap.remove_pod("default/a")
    assert _indexed(snap) == (set(), set())


def test_memo_is_emptied_by_every_change_and_not_shared_with_clones() -> None:
    snap = Snapshot.from_objects([Node("n0"), _kind_pod("a", 0, "n0")])
    ni = snap.node_info("n0")
    ni.memo["k"] = 1
    clone = ni.clone()
    assert clone.memo == {}
    clone.memo["k"] = 2
    assert ni.memo == {"k": 1}
    snap.add_pod(_kind_pod("b", 0, "n0"))
    assert ni.memo == {}
    ni.memo["k"] = 1
    snap.remove_pod("default/b")
    assert ni.memo == {}
    ni.memo["k"] = 1
    snap.update_node(Node("n0", labels={"x": "y"}))
    assert ni.memo == {}
    ni.memo["k"] = 1
    snap.bind_pod(_kind_pod("c", 0, ""), "n0")
    assert ni.memo == {}


_node_ops = st.lists(
    st.tuples(
        st.sampled_from(["add", "update", "remove", "direct"]),
        st.integers(0, 3),
        st.booleans(),  # unschedulable
        st.lists(st.sampled_from(["NoSchedule", "NoExecute", "PreferNoSchedule"]), max_size=2),
    ),
    max_size=30,
)


@given(_node_ops)
def test_node_trait_counts_agree_with_a_full_scan(
    ops: list[tuple[str, int, bool, list[str]]],
) -> None:
    snap = Snapshot()
    for op, i, cordoned, effects in ops:
        n = Node(
            f"n{i}", unschedulable=cordoned, taints=tuple(Taint(f"k{e}", "", e) for e in effects)
        )
        if op in ("add", "update"):
            snap.add_node(n)
        elif op == "remove":
            snap.remove_node(n.name)
        elif snap.get_node_info(n.name) is not None:
            snap.node_info(n.name).set_node(n)  # a NodeInfo changed behind the Snapshot's back
        nodes = [ni.node for ni in snap.node_info_list if ni.node is not None]
        assert snap.has_unschedulable_nodes() == any(x.unschedulable for x in nodes)
        for effect in ("NoSchedule", "NoExecute", "PreferNoSchedule"):
            expected = any(t.effect == effect for x in nodes for t in x.taints)
            assert snap.has_nodes_with_taint_effect(effect) == expected
    # Clones never report to the snapshot.
    if snap.node_info_list:
        clone = snap.node_info_list[0].clone()
        clone.set_node(Node("x", unschedulable=True))
        assert snap.has_unschedulable_nodes() == any(
            ni.node is not None and ni.node.unschedulable for ni in snap.node_info_list
        )
