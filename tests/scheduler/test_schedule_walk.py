"""``find_nodes_that_fit_pod`` on clusters large enough for the search to stop early.

From 100 nodes on, kube stops after ``numFeasibleNodesToFind`` feasible nodes. The batched
search sizes its chunks from the pass rate and drops what it evaluated past the last node
wanted; everything it reports — feasible nodes, every status in evaluation order, the plugins
of the diagnosis, the next start index — must be the node-by-node walk's (written out here
with ``run_filter_plugins_with_nominated_pods``, one node at a time).
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.framework import Code, CycleState, Framework, Status
from scheduler.objects import Pod
from scheduler.plugins.registry import default_framework
from scheduler.schedule import find_nodes_that_fit_pod, num_feasible_nodes_to_find
from scheduler.snapshot import Snapshot
from tests.support import objects as obj
from tests.support.spread import DNS, HOSTNAME, ZONE, tolerate, tsc, unschedulable


def _reference(
    fwk: Framework, pod: Pod, snap: Snapshot, percentage: int, start: int
) -> tuple[Any, ...] | None:
    state = CycleState()
    if not fwk.run_pre_filter_plugins(state, pod, snap).is_success():
        return None
    nodes = snap.node_info_list
    n = len(nodes)
    want = num_feasible_nodes_to_find(percentage, n)
    feasible: list[str] = []
    statuses: list[tuple[str, Any, Any, str]] = []
    for i in range(n):
        if len(feasible) >= want:
            break
        ni = nodes[(start + i) % n]
        status = fwk.run_filter_plugins_with_nominated_pods(
            state, pod, ni, snap.nominated_pods_for_node(ni.name)
        )
        if status.is_success():
            feasible.append(ni.name)
        else:
            statuses.append((ni.name, status.code, status.reasons, status.plugin))
    plugins = sorted({plugin for *_, plugin in statuses})
    return feasible, statuses, plugins, (start + len(feasible) + len(statuses)) % n


@st.composite
def _cluster(draw: st.DrawFn) -> tuple[Snapshot, Pod]:
    count = draw(st.integers(100, 180))
    nodes = [
        obj.node(
            f"n{i:03d}",
            {HOSTNAME: f"n{i:03d}", ZONE: f"z{draw(st.integers(0, 2))}"},
            taints=unschedulable(draw(st.integers(0, 6)) == 0),
            cpu=draw(st.sampled_from(["1", "4"])),
        )
        for i in range(count)
    ]
    # Nodes filled at random: where the spread constraint and the cpu request reject.
    pods = [
        obj.pod(
            f"b{j}",
            node_name=f"n{draw(st.integers(0, count - 1)):03d}",
            labels={"foo": ""},
            cpu=draw(st.sampled_from(["100m", "900m"])),
        )
        for j in range(draw(st.integers(0, 2 * count)))
    ]
    nominated = [
        obj.pod(f"nom{j}", labels={"foo": ""}, cpu="900m").with_changes(
            nominated_node_name=f"n{draw(st.integers(0, count - 1)):03d}", spec_priority=10
        )
        for j in range(draw(st.integers(0, 3)))
    ]
    spread = draw(
        st.sampled_from(
            [[], [tsc(1, HOSTNAME, DNS)], [tsc(2, ZONE, DNS)], [tsc(1, HOSTNAME), tsc(3, ZONE)]]
        )
    )
    incoming = obj.pod(
        "incoming",
        labels={"foo": ""},
        spread=spread,
        cpu=draw(st.sampled_from(["100m", "900m", "3"])),
        tolerations=tolerate(draw(st.sampled_from(["", "node.kubernetes.io/unschedulable"]))),
    ).with_changes(spec_priority=draw(st.sampled_from([0, 10])))
    return Snapshot.from_objects([*nodes, *pods, *nominated]), incoming


@settings(deadline=None, max_examples=60)
@given(_cluster(), st.sampled_from([0, 5, 30]), st.integers(0, 200))
def test_batched_search_equals_the_node_by_node_walk(
    cluster: tuple[Snapshot, Pod], percentage: int, start: int
) -> None:
    snap, incoming = cluster
    fwk = default_framework()
    want = _reference(fwk, incoming, snap, percentage, start)
    if want is None:
        return
    for uniform in (True, False):
        feasible, diagnosis, next_start = find_nodes_that_fit_pod(
            incoming,
            snap,
            framework=fwk,
            percentage_of_nodes_to_score=percentage,
            start_index=start,
            uniform=uniform,
        )
        got = (
            [ni.name for ni in feasible],
            [(n, s.code, s.reasons, s.plugin) for n, s in diagnosis.node_to_status],
            sorted(diagnosis.unschedulable_plugins | diagnosis.pending_plugins),
            next_start,
        )
        assert got == want


class CountingFit:
    """A node-local filter that counts its calls and admits at most ``limit`` pods."""

    name = "CountingFit"
    node_local = True

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.calls = 0

    def pre_filter(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: Any) -> Any:
        self.calls += 1
        if len(node_info.pods) >= self.limit:
            return Status(Code.Unschedulable, "full")
        return None

    def add_pod(self, *args: object) -> None:
        return None

    def remove_pod(self, *args: object) -> None:
        return None


def test_nominated_nodes_are_judged_once_per_pod_shape_until_they_change() -> None:
    plugin = CountingFit(limit=1)
    fwk = Framework([plugin])
    nodes = [obj.node(f"n{i}", {HOSTNAME: f"n{i}"}) for i in range(3)]
    waiting = [
        obj.pod(f"w{i}", labels={"n": str(i)}).with_changes(nominated_node_name=f"n{i}")
        for i in range(3)
    ]
    snap = Snapshot.from_objects([*nodes, *waiting])

    def cycle(name: str) -> tuple[list[str], list[str]]:
        feasible, diagnosis, _ = find_nodes_that_fit_pod(
            obj.pod(name, labels={"app": "web"}), snap, framework=fwk
        )
        return [ni.name for ni in feasible], [n for n, _ in diagnosis.node_to_status]

    assert cycle("a") == ([], ["n0", "n1", "n2"])
    first = plugin.calls
    assert first == 3  # each node once, with its nominated pod: full
    assert cycle("b") == ([], ["n0", "n1", "n2"])
    assert plugin.calls == first  # same shape, nothing changed: remembered
    snap.remove_pod(waiting[1])  # n1 has no nominated pod now: judged as a plain node
    snap.add_pod(obj.pod("x", node_name="n2"))  # n2 changed: judged again
    assert cycle("c") == (["n1"], ["n0", "n2"])
    assert plugin.calls == first + 2
