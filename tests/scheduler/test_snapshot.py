from hypothesis import given
from hypothesis import strategies as st

from kube.labels import LabelSelector
from kube.objects import Container, ContainerPort, Pod, PodDisruptionBudget, Taint, Toleration
from scheduler.framework import CycleState
from scheduler.plugins.tainttoleration import TaintToleration
from scheduler.snapshot import NodeInfo, NodeWindow, Snapshot
from tests.support.objects import mknode, mkpod


def test_node_info_aggregates_follow_adds_and_removes() -> None:
    ni = NodeInfo(mknode("a", cpu=4000))
    g0 = ni.generation
    p1, p2 = mkpod("p1", cpu=300), mkpod("p2", cpu=200)
    ni.add_pod(p1)
    ni.add_pod(p2)
    assert ni.requested == {"cpu": 500}
    assert ni.non_zero_requested["cpu"] == 500
    assert ni.generation > g0
    assert ni.remove_pod(mkpod("p1", cpu=100))  # by key, not identity
    assert ni.requested == {"cpu": 200}
    assert not ni.remove_pod(mkpod("missing", cpu=100))


@given(st.data())
def test_a_crowded_node_removes_the_pod_asked_for_and_keeps_the_others_in_order(
    data: st.DataObject,
) -> None:
    # More pods than remove_pod's recent-pods window, so every region of the search is used:
    # the stored object among the last few, the last thousand or before them, or another
    # object with the same key.
    n = data.draw(st.integers(1, 2200))
    pods = [mkpod(f"p{i}", cpu=1) for i in range(n)]
    ni = NodeInfo(mknode("a", cpu=10**6), pods)
    i = data.draw(st.one_of(st.integers(0, n - 1), st.integers(max(0, n - 20), n - 1)))
    target = pods[i] if data.draw(st.booleans()) else mkpod(f"p{i}", cpu=1)
    assert ni.remove_pod(target)
    assert [p.key for p in ni.pods] == [p.key for p in pods if p.key != f"default/p{i}"]
    assert ni.requested == {"cpu": n - 1}
    assert not ni.remove_pod(target)


def test_clone_is_independent() -> None:
    ni = NodeInfo(mknode("a", cpu=4000), [mkpod("p1", cpu=100)])
    copy = ni.clone()
    copy.add_pod(mkpod("p2", cpu=100))
    assert len(ni.pods) == 1 and ni.requested == {"cpu": 100}
    assert len(copy.pods) == 2 and copy.requested == {"cpu": 200}


def test_host_ports_are_counted() -> None:
    with_port = Pod("w", containers=(Container("c", ports=(ContainerPort(80, 8080),)),))
    ni = NodeInfo(mknode("a", cpu=4000), [with_port])
    assert ni.used_ports == {("0.0.0.0", "TCP", 8080): 1}
    ni.remove_pod(with_port)
    assert ni.used_ports == {}


def test_snapshot_places_bound_pending_and_nominated_pods() -> None:
    snap = Snapshot.from_objects(
        [
            mkpod("bound", cpu=100, node_name="a"),
            mkpod("pending", cpu=100),
            mkpod("nominated", cpu=100, nominated_node_name="b"),
            mknode("a", cpu=4000),
            mknode("b", cpu=4000),
            PodDisruptionBudget("pdb"),
        ]
    )
    assert [ni.name for ni in snap.node_info_list] == ["a", "b"]
    assert [p.name for p in snap.node_info("a").pods] == ["bound"]
    assert {p.name for p in snap.pending_pods()} == {"pending", "nominated"}
    assert [p.name for p in snap.nominated_pods_for_node("b")] == ["nominated"]
    assert len(snap.pdbs) == 1


def test_bind_moves_a_pod_and_clears_its_nomination() -> None:
    snap = Snapshot.from_objects(
        [mknode("a", cpu=4000), mknode("b", cpu=4000), mkpod("p", cpu=100, nominated_node_name="b")]
    )
    bound = snap.bind_pod(mkpod("p", cpu=100, nominated_node_name="b"), "a")
    assert bound.node_name == "a" and bound.nominated_node_name == ""
    assert snap.nominated_pods_for_node("b") == []
    assert [p.name for p in snap.node_info("a").pods] == ["p"]
    assert snap.get_pod("default/p") is bound
    assert snap.remove_pod("default/p") is bound
    assert snap.node_info("a").pods == []


def test_pods_on_unknown_nodes_wait_for_the_node() -> None:
    snap = Snapshot.from_objects([mkpod("early", cpu=100, node_name="late")])
    assert snap.get_pod("default/early") is not None
    snap.add_node(mknode("late", cpu=4000))
    assert [p.name for p in snap.node_info("late").pods] == ["early"]
    snap.remove_node("late")
    snap.add_node(mknode("late", cpu=4000))
    assert [p.name for p in snap.node_info("late").pods] == ["early"]


def test_pdb_updates_replace_by_key() -> None:
    snap = Snapshot()
    snap.add_pdb(PodDisruptionBudget("x", disruptions_allowed=1))
    snap.update_pdb(PodDisruptionBudget("x", disruptions_allowed=0))
    assert [p.disruptions_allowed for p in snap.pdbs] == [0]
    snap.remove_pdb("default/x")
    assert snap.pdbs == []


ops = st.lists(
    st.tuples(st.sampled_from(["add", "remove", "bind"]), st.integers(0, 5), st.sampled_from("ab")),
    max_size=40,
)


@given(ops)
def test_aggregates_always_equal_a_fresh_sum(sequence: list[tuple[str, int, str]]) -> None:
    snap = Snapshot.from_objects([mknode("a", cpu=4000), mknode("b", cpu=4000)])
    for op, i, where in sequence:
        p = mkpod(f"p{i}", cpu=100 * (i + 1))
        if op == "add":
            snap.add_pod(p.with_changes(node_name=where))
        elif op == "remove":
            snap.remove_pod(p)
        else:
            snap.bind_pod(p, where)
    keys = [p.key for ni in snap.node_info_list for p in ni.pods]
    assert len(keys) == len(set(keys))  # a pod is on at most one node
    for ni in snap.node_info_list:
        assert ni.requested.get("cpu", 0) == sum(p.requests["cpu"] for p in ni.pods)
        assert ni.non_zero_requested["cpu"] == sum(p.non_zero_requests["cpu"] for p in ni.pods)


def test_pod_changes_list_the_nodes_whose_pods_changed_since_a_cursor() -> None:
    snap = Snapshot.from_objects([mknode("a", cpu=4000), mknode("b", cpu=4000)])
    layout = snap.layout_generation
    cursor, _ = snap.pod_changes(0)
    snap.add_pod(mkpod("p1", cpu=100, node_name="a"))
    snap.add_pod(mkpod("p2", cpu=100, node_name="b"))
    snap.remove_pod("default/p1")
    end, changed = snap.pod_changes(cursor)
    assert changed is not None
    assert [ni.name for ni in changed] == ["a", "b", "a"]
    assert snap.pod_changes(end) == (end, [])
    assert snap.layout_generation == layout  # pods do not change the layout
    assert snap.node_positions() == {"a": 0, "b": 1}
    snap.add_node(mknode("c", cpu=4000))
    assert snap.layout_generation > layout
    assert snap.node_positions() == {"a": 0, "b": 1, "c": 2}
    layout = snap.layout_generation
    snap.add_node(mknode("a", cpu=4000))  # replaced
    assert snap.layout_generation > layout
    layout = snap.layout_generation
    snap.remove_node("b")
    assert snap.layout_generation > layout
    assert snap.node_positions() == {"a": 0, "c": 1}


def test_the_change_log_is_bounded_and_says_when_it_no_longer_reaches_back() -> None:
    snap = Snapshot.from_objects([mknode("a", cpu=4000)])
    cursor, _ = snap.pod_changes(0)
    for i in range(5000):
        snap.add_pod(mkpod(f"p{i}", cpu=100, node_name="a"))
        snap.remove_pod(f"default/p{i}")
    end, changed = snap.pod_changes(cursor)
    assert changed is None  # too old: the caller rebuilds
    assert end == cursor + 10000
    _, recent = snap.pod_changes(end - 10)
    assert recent is not None and len(recent) == 10


node_ops = st.lists(
    st.tuples(
        st.sampled_from(["add", "remove", "read"]),
        st.integers(0, 6),
        st.dictionaries(st.sampled_from(["zone", "rack"]), st.sampled_from(["1", "2"])),
        st.sampled_from([(), (Taint("gpu", "", "NoSchedule"),), (Taint("a"), Taint("b"))]),
    ),
    max_size=40,
)


@given(node_ops)
def test_label_columns_and_positions_follow_nodes_that_come_change_and_go(
    sequence: list[tuple[str, int, dict[str, str], tuple[Taint, ...]]],
) -> None:
    snap = Snapshot.from_objects([mknode("n0", labels={"zone": "1"})])
    for op, i, labels, taints in sequence:
        if op == "add":  # a new node, or a known one replaced with other labels and taints
            snap.add_node(mknode(f"n{i}", labels=labels, taints=tuple(taints)))
        elif op == "remove":
            gone = snap.get_node_info(f"n{i}")
            snap.remove_node(f"n{i}")
            assert gone is None or gone.position is None
        else:  # a column built now must be kept right by every change after it
            snap.label_column("zone" if i % 2 else "rack")
            snap.taints_column()
        assert [ni.position for ni in snap.node_info_list] == list(range(len(snap)))
    for key in ("zone", "rack"):
        assert snap.label_column(key) == [
            ni.node.labels.get(key) for ni in snap.node_info_list if ni.node is not None
        ]
    column = snap.taints_column()
    assert column == [ni.node.taints for ni in snap.node_info_list if ni.node is not None]
    # equal taints are one object, so a verdict per object serves every node that has them
    assert len({id(t) for t in column}) == len(set(column))
    for ni in snap.node_info_list:
        assert ni.clone().position is None


def test_taint_sets_of_nodes_long_gone_are_forgotten() -> None:
    """Nodes that come and go with taints of their own (a value per node) leave the set of
    distinct taints bounded by the nodes there are, and every column entry stays in it as the
    same object, so the TaintToleration batch's per-object verdicts still cover every node."""
    snap = Snapshot.from_objects([mknode(f"n{i}") for i in range(4)])
    snap.taints_column()
    for i in range(500):
        snap.remove_node(f"n{i % 4}")
        snap.add_node(mknode(f"n{i % 4}", taints=(Taint("id", str(i), "NoSchedule"),)))
        assert len(snap.taint_sets()) <= 2 * len(snap) + 8
        ids = {id(t) for t in snap.taint_sets()}
        assert all(id(t) in ids for t in snap.taints_column())
    plugin = TaintToleration()
    window = NodeWindow(snap, 0, len(snap))
    tolerant = mkpod("p", tolerations=(Toleration("id", "Exists"),))
    assert plugin.filter_nodes(CycleState(), tolerant, window)[0] == snap.node_info_list
    assert plugin.filter_nodes(CycleState(), mkpod("q"), window)[0] == []


version_ops = st.lists(
    st.tuples(
        st.sampled_from(["add", "remove", "status", "label", "terminate", "resize", "move"]),
        st.integers(0, 4),
        st.sampled_from("ab"),
    ),
    max_size=40,
)


@given(version_ops)
def test_new_versions_of_bound_pods_leave_the_snapshot_as_a_fresh_one(
    sequence: list[tuple[str, int, str]],
) -> None:
    """Status writes take the stored pod's place without recounting; any other change goes
    through remove and add. Either way every aggregate, the pods' order and what a count over
    a node's pods finds equal a snapshot built afresh from the same nodes and pods, and only
    the changes that count are in ``pod_changes``."""
    from scheduler.plugins.podtopologyspread.common import count_memo_key, match_count

    nodes = [mknode("a", cpu=4000), mknode("b", cpu=4000)]
    snap = Snapshot.from_objects(nodes)
    selector = LabelSelector.from_dict({"matchLabels": {"app": "x"}})
    memo_key = count_memo_key(selector, "default")
    for op, i, where in sequence:
        stored = snap.get_pod(f"default/p{i}")
        cursor, _ = snap.pod_changes(0)
        if op == "add" or stored is None:
            new = mkpod(f"p{i}", cpu=100, node_name=where, labels={"app": "x"}, host_ports=[i])
        elif op == "remove":
            snap.remove_pod(stored)
            continue
        elif op == "status":
            new = stored.with_changes(phase="Running", start_time=float(i), resource_version=op)
        elif op == "label":
            new = stored.with_changes(labels={"app": "y" if stored.labels.get("app") else "x"})
        elif op == "terminate":
            new = stored.with_changes(deletion_timestamp=1.0)
        elif op == "resize":  # requests, or only the host ports, by turns
            c = stored.containers[0]
            if i % 2:
                changed_c = Container(c.name, requests={"cpu": 700}, ports=c.ports)
            else:
                changed_c = Container(c.name, requests=c.requests, ports=())
            new = stored.with_changes(containers=(changed_c,))
        else:
            new = stored.with_changes(node_name=where)
        for ni in snap.node_info_list:  # counts remembered before the change
            match_count(ni, selector, "default", memo_key)
        snap.add_pod(new)
        _, changed = snap.pod_changes(cursor)
        # what the ops change that a node counts (a status write changes none of it)
        counted = ("labels", "deletion_timestamp", "containers", "node_name")
        if stored is None or any(getattr(stored, f) != getattr(new, f) for f in counted):
            assert changed
        else:
            assert changed == []
    fresh = Snapshot.from_objects([*nodes, *snap.bound_pods()])
    for old, new in zip(snap.node_info_list, fresh.node_info_list, strict=True):
        assert [id(p) for p in old.pods] == [id(p) for p in new.pods]
        # (a removal leaves a zero where a fresh sum has no entry)
        assert {k: v for k, v in old.requested.items() if v} == new.requested
        assert old.non_zero_requested == new.non_zero_requested
        assert old.used_ports == new.used_ports
        assert match_count(old, selector, "default", memo_key) == match_count(
            new, selector, "default", memo_key
        )
