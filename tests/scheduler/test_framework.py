from kube.objects import Pod
from scheduler.framework import (
    Code,
    CycleState,
    Framework,
    NodeToStatus,
    Status,
    fit_error_message,
    is_success,
)
from scheduler.plugins.registry import default_framework
from scheduler.snapshot import NodeInfo, Snapshot
from tests.support.objects import mknode, mkpod


def test_status_basics() -> None:
    st = Status(Code.Unschedulable, ["Too many pods", "Insufficient cpu"])
    assert st.message == "Too many pods, Insufficient cpu"
    assert st.is_rejected() and not st.is_success()
    assert Status(Code.Pending).is_rejected()
    assert not Status(Code.Error, "boom").is_rejected()
    assert is_success(None) and is_success(Status())
    assert Status(Code.Skip).is_skip()
    assert Status(Code.Unschedulable, "x").with_plugin("P").plugin == "P"
    assert Status(Code.Unschedulable, "x") == Status(Code.Unschedulable, ["x"])


def test_fit_error_message_counts_sorts_and_fills_absent_nodes() -> None:
    statuses = NodeToStatus(
        {
            "a": Status(Code.Unschedulable, "Insufficient cpu"),
            "b": Status(Code.Unschedulable, ["Insufficient cpu", "Too many pods"]),
        },
        Status(Code.UnschedulableAndUnresolvable, "Preemption is not helpful for scheduling"),
    )
    assert fit_error_message(4, statuses) == (
        "0/4 nodes are available: 1 Too many pods, 2 Insufficient cpu,"
        " 2 Preemption is not helpful for scheduling."
    )
    assert fit_error_message(2, NodeToStatus(), pre_filter_msg="pod has unbound PVCs") == (
        "0/2 nodes are available: pod has unbound PVCs."
    )
    assert (
        fit_error_message(
            1, NodeToStatus({"a": Status(Code.Unschedulable, "x")}), post_filter_msg="p."
        )
        == "0/1 nodes are available: 1 x. p."
    )
    # Counts sort as strings, as Go's sort.Strings does: "10 ..." before "9 ...".
    many = NodeToStatus({f"n{i}": Status(Code.Unschedulable, "A") for i in range(10)})
    for i in range(9):
        many.set(f"m{i}", Status(Code.Unschedulable, "B"))
    assert fit_error_message(19, many) == "0/19 nodes are available: 10 A, 9 B."


def test_nodes_for_status_code_uses_the_absent_status() -> None:
    infos = [NodeInfo(mknode(n, cpu=4000)) for n in "abc"]
    statuses = NodeToStatus({"a": Status(Code.Unschedulable, "x")})
    assert [ni.name for ni in statuses.nodes_for_status_code(infos, Code.Unschedulable)] == ["a"]
    statuses.set_absent_nodes_status(Status(Code.Unschedulable))
    assert len(statuses.nodes_for_status_code(infos, Code.Unschedulable)) == 3
    assert statuses.get("zzz").code is Code.Unschedulable


def test_cycle_state_clones_values_that_can_clone() -> None:
    class Counter:
        def __init__(self) -> None:
            self.n = 0

        def clone(self) -> "Counter":
            out = Counter()
            out.n = self.n
            return out

    state = CycleState()
    state.write("k", Counter())
    state.write("frozen", (1, 2))
    copy = state.clone()
    copy.read("k").n = 5
    assert state.read("k").n == 0
    assert copy.read("frozen") is state.read("frozen")


class _Recorder:
    """A plugin that rejects everything, recording what it saw."""

    name = "Recorder"

    def __init__(self, pre: Status | None = None) -> None:
        self.pre = pre
        self.filtered: list[str] = []

    def pre_filter(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> Status | None:
        return self.pre

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        self.filtered.append(node_info.name)
        return Status(Code.Unschedulable, "nope")

    def add_pod(self, *args: object) -> Status | None:
        return None

    def remove_pod(self, *args: object) -> Status | None:
        return None


def test_prefilter_skip_and_rejection() -> None:
    snap = Snapshot.from_objects([mknode("a", cpu=4000)])
    skipper = _Recorder(Status(Code.Skip))
    fw = Framework([skipper])
    state = CycleState()
    assert fw.run_pre_filter_plugins(state, mkpod("p", cpu=1), snap).is_success()
    assert fw.run_filter_plugins(state, mkpod("p", cpu=1), snap.node_info("a")).is_success()
    assert skipper.filtered == []
    rejecting = Framework([_Recorder(Status(Code.UnschedulableAndUnresolvable, "no"))])
    st = rejecting.run_pre_filter_plugins(CycleState(), mkpod("p", cpu=1), snap)
    assert st.code is Code.UnschedulableAndUnresolvable and st.plugin == "Recorder"
    erroring = Framework([_Recorder(Status(Code.Error, "boom"))])
    st = erroring.run_pre_filter_plugins(CycleState(), mkpod("p", cpu=1), snap)
    assert st.code is Code.Error and st.message == 'running PreFilter plugin "Recorder": boom'


def test_filter_stops_at_first_rejection_and_tags_plugin() -> None:
    snap = Snapshot.from_objects([mknode("a", cpu=1000)])
    recorder = _Recorder()
    fw = Framework([*default_framework().filter_plugins, recorder])
    st = fw.run_filter_plugins(CycleState(), mkpod("p", cpu=2000), snap.node_info("a"))
    assert st == Status(Code.UnschedulableAndUnresolvable, "Insufficient cpu")
    assert st.plugin == "NodeResourcesFit"
    assert recorder.filtered == []


def test_nominated_pods_of_equal_or_higher_priority_reserve_room() -> None:
    fw = default_framework()
    snap = Snapshot.from_objects([mknode("a", cpu=4000), mkpod("running", cpu=2000, node_name="a")])
    ni = snap.node_info("a")
    incoming = mkpod("in", cpu=1500, priority=10)

    def prefiltered() -> CycleState:
        # Filter plugins with PreFilter state (InterPodAffinity) need PreFilter to have run.
        state = CycleState()
        assert fw.run_pre_filter_plugins(state, incoming, snap).is_success()
        return state

    higher = mkpod("nom-hi", cpu=1000, priority=10, nominated_node_name="a")
    lower = mkpod("nom-lo", cpu=1000, priority=9, nominated_node_name="a")
    st = fw.run_filter_plugins_with_nominated_pods(prefiltered(), incoming, ni, [higher])
    assert st.code is Code.Unschedulable and st.reasons == ("Insufficient cpu",)
    assert fw.run_filter_plugins_with_nominated_pods(
        prefiltered(), incoming, ni, [lower]
    ).is_success()
    # The pod's own nomination never blocks it.
    own = mkpod("in", cpu=1500, priority=10, nominated_node_name="a")
    assert fw.run_filter_plugins_with_nominated_pods(
        prefiltered(), incoming, ni, [own]
    ).is_success()
    # The node itself is not modified by the first pass.
    assert len(ni.pods) == 1 and ni.requested["cpu"] == 2000


def test_second_pass_runs_without_the_nominated_pods() -> None:
    """A filter that passes only when extra pods are present must still fail (pass two)."""

    class NeedsCompany:
        name = "NeedsCompany"

        def pre_filter(self, *a: object) -> None:
            return None

        def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
            ok = len(node_info.pods) >= 2
            return None if ok else Status(Code.Unschedulable, "lonely")

        def add_pod(self, *a: object) -> None:
            return None

        def remove_pod(self, *a: object) -> None:
            return None

    fw = Framework([NeedsCompany()])
    ni = NodeInfo(mknode("a", cpu=4000), [mkpod("x", cpu=1, node_name="a")])
    nominated = [mkpod("n", cpu=1, priority=5, nominated_node_name="a")]
    st = fw.run_filter_plugins_with_nominated_pods(CycleState(), mkpod("p", cpu=1), ni, nominated)
    assert st.reasons == ("lonely",)
