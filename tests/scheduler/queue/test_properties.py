"""Hypothesis properties of the scheduling queue and the backoff rule."""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.objects import Pod
from scheduler.queue import QueuedPodInfo, SchedulingQueue, backoff_duration, less
from scheduler.queue import events as ev
from scheduler.queue.scheduling_queue import ACTIVE_Q, UNSCHEDULABLE_Q
from tests.support.clock import FakeClock
from tests.support.objects import mkpod

NAMES = [f"p{i}" for i in range(8)]
PLUGINS = [
    "NodeResourcesFit",
    "NodeAffinity",
    "InterPodAffinity",
    "PodTopologySpread",
    "fooPlugin",
    "",
]
EVENTS = [ev.NodeAdd, ev.NodeLabelChange, ev.AssignedPodDelete, ev.UnschedulableTimeout, ev.PvAdd]

op = st.one_of(
    st.tuples(st.just("add"), st.sampled_from(NAMES), st.integers(-2, 2), st.booleans()),
    st.tuples(st.just("pop")),
    st.tuples(st.just("reject"), st.sampled_from(PLUGINS), st.booleans()),
    st.tuples(st.just("update"), st.sampled_from(NAMES), st.integers(-2, 2), st.booleans()),
    st.tuples(st.just("delete"), st.sampled_from(NAMES)),
    st.tuples(st.just("step"), st.sampled_from([0.0, 0.3, 1.0, 2.5, 11.0, 400.0])),
    st.tuples(st.just("flush")),
    st.tuples(st.just("leftover")),
    st.tuples(st.just("move"), st.sampled_from(EVENTS)),
    st.tuples(st.just("activate"), st.sampled_from(NAMES)),
    st.tuples(st.just("assigned"), st.sampled_from(["default", "other"]), st.booleans()),
    st.tuples(st.just("affinity"), st.sampled_from(NAMES), st.booleans()),
)


def with_affinity(pod: Pod, on: bool) -> Pod:
    """The pod with (or without) a required pod-affinity term towards ``app: x`` pods."""
    if not on:
        return pod.with_changes(affinity=None)
    manifest = {
        "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
        "spec": {
            "affinity": {
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "zone"}
                    ]
                }
            }
        },
    }
    return pod.with_changes(affinity=Pod.from_dict(manifest).affinity)


def cross_topology_reference(
    q: SchedulingQueue, pod: Pod, event: ev.ClusterEvent | None = None
) -> list[str]:
    """``getUnschedulablePodsWithCrossTopologyTerm`` written out over the whole pool; with an
    event, without the gated pods it cannot move (the move would skip them)."""
    ns = {"kubernetes.io/metadata.name": pod.namespace}
    return [
        p.pod.key
        for where, p in q.queued_pod_infos()
        if where == UNSCHEDULABLE_Q
        and (
            ("PodTopologySpread" in p.unschedulable_plugins and p.pod.namespace == pod.namespace)
            or any(t.matches(pod, ns) for t in p.required_affinity_terms)
        )
        and (
            event is None
            or not p.gated
            or ev.match_any_cluster_event(event, p.gating_plugin_events)
        )
    ]


def active_infos(q: SchedulingQueue) -> list[QueuedPodInfo]:
    return [p for where, p in q.queued_pod_infos() if where == ACTIVE_Q]


def check_one_sub_queue(q: SchedulingQueue) -> None:
    keys = Counter(p.pod.key for _where, p in q.queued_pod_infos())
    assert all(n == 1 for n in keys.values()), keys
    assert len(q) == len(keys)
    for key in keys:
        assert q.where(key) is not None


def run(ops: list[tuple[Any, ...]]) -> None:
    c = FakeClock()
    q = SchedulingQueue(c)
    in_flight: list[QueuedPodInfo] = []
    known: dict[str, Any] = {}
    for o in ops:
        kind = o[0]
        if kind == "add":
            if q.where(f"default/{o[1]}") is None and all(p.pod.name != o[1] for p in in_flight):
                gates = ("g",) if o[3] else ()
                known[o[1]] = mkpod(o[1], o[2], scheduling_gates=gates)
                q.add(known[o[1]])
        elif kind == "pop":
            before = active_infos(q)
            got = q.pop()
            if got is not None:
                if before:
                    assert got in before
                    # The popped pod is never behind any pod that shared activeQ with it.
                    assert not any(less(other, got) for other in before if other is not got)
                in_flight.append(got)
            else:
                assert not before
        elif kind == "reject" and in_flight:
            pinfo = in_flight.pop(0)
            pinfo.unschedulable_plugins = {o[1]} if o[1] else set()
            if q.where(pinfo.pod) is None:
                q.add_unschedulable_if_not_present(pinfo, q.scheduling_cycle - int(o[2]))
        elif kind == "update" and o[1] in known:
            old = known[o[1]]
            new = old.with_changes(
                spec_priority=o[2], scheduling_gates=old.scheduling_gates if o[3] else ()
            )
            known[o[1]] = new
            q.update(old, new)
        elif kind == "delete" and o[1] in known:
            q.delete(known.pop(o[1]))
            in_flight = [p for p in in_flight if p.pod.name != o[1]]
        elif kind == "step":
            c.step(o[1])
        elif kind == "flush":
            moved = q.flush_backoff_q_completed()
            assert all(q.where(p.pod) == ACTIVE_Q for p in moved)
        elif kind == "leftover":
            q.flush_unschedulable_pods_leftover()
        elif kind == "move":
            q.move_all_to_active_or_backoff_queue(o[1])
        elif kind == "activate" and o[1] in known:
            q.activate([known[o[1]]])
        elif kind == "affinity" and o[1] in known:
            old = known[o[1]]
            known[o[1]] = with_affinity(old, o[2])
            q.update(old, known[o[1]])
        elif kind == "assigned":
            bound = mkpod("bound", ns=o[1], labels={"app": "x"} if o[2] else {}, node_name="n")
            got = q._pods_with_cross_topology_term(bound, ev.AssignedPodAdd)
            assert [p.pod.key for p in got] == cross_topology_reference(q, bound, ev.AssignedPodAdd)
            q.assigned_pod_added(bound)
        check_one_sub_queue(q)
        for _where, pinfo in q.queued_pod_infos():
            # A gated pod is always in the pool.
            assert not pinfo.gated or q.where(pinfo.pod) == "Unschedulable"


@given(st.lists(op, max_size=60))
def test_queue_invariants_under_random_operations(ops: list[tuple[Any, ...]]) -> None:
    run(ops)


@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("add"), st.sampled_from(NAMES)),
            st.tuples(st.just("delete"), st.sampled_from(NAMES)),
        ),
        max_size=80,
    )
)
def test_add_delete_keep_counts(ops: list[tuple[str, str]]) -> None:
    q = SchedulingQueue(FakeClock())
    model: set[str] = set()
    for kind, name in ops:
        pod = mkpod(name)
        if kind == "add":
            q.add(pod)
            model.add(name)
        else:
            q.delete(pod)
            model.discard(name)
        assert len(q) == len(model)
        assert q.pending_pods()[1] == f"activeQ:{len(model)}; backoffQ:0; unschedulablePods:0"
    assert sorted(p.name for p in q.pending_pods()[0]) == sorted(model)


@given(st.lists(st.tuples(st.integers(-5, 5), st.floats(0, 10)), min_size=1, max_size=40))
def test_pop_order_is_sorted_by_less(specs: list[tuple[int, float]]) -> None:
    c = FakeClock()
    q = SchedulingQueue(c)
    for i, (prio, dt) in enumerate(specs):
        c.step(dt)
        q.add(mkpod(f"p{i}", prio))
    popped = []
    while (p := q.pop()) is not None:
        popped.append(p)
    assert len(popped) == len(specs)
    for earlier, later in itertools.pairwise(popped):
        assert not less(later, earlier)


ints = st.integers(0, 2**40)
counts = st.integers(0, 200)


@given(ints, ints, counts, counts)
def test_backoff_duration_monotone_and_capped_int(
    initial: int, maximum: int, c1: int, c2: int
) -> None:
    lo, hi = sorted((c1, c2))
    d_lo, d_hi = backoff_duration(lo, initial, maximum), backoff_duration(hi, initial, maximum)
    assert d_lo <= d_hi <= max(maximum, 0)
    assert type(d_hi) is int
    if hi > 0:
        assert d_hi == min(initial * 2 ** (hi - 1), maximum)
    else:
        assert d_hi == 0


@given(st.floats(0, 1e6), st.floats(0, 1e6), counts, counts)
def test_backoff_duration_monotone_and_capped_float(
    initial: float, maximum: float, c1: int, c2: int
) -> None:
    lo, hi = sorted((c1, c2))
    d_lo, d_hi = backoff_duration(lo, initial, maximum), backoff_duration(hi, initial, maximum)
    assert 0.0 <= d_lo <= d_hi <= maximum
    assert type(d_hi) is float


cross_op = st.one_of(
    st.tuples(st.just("add"), st.sampled_from(NAMES[:4]), st.booleans()),
    st.tuples(st.just("pop")),
    st.tuples(st.just("reject"), st.sampled_from(["PodTopologySpread", "InterPodAffinity", ""])),
    st.tuples(st.just("affinity"), st.sampled_from(NAMES[:4]), st.booleans()),
    st.tuples(st.just("assigned"), st.sampled_from(["default", "other"]), st.booleans()),
    st.tuples(st.just("move"), st.sampled_from([ev.NodeAdd, ev.AssignedPodDelete])),
    st.tuples(st.just("delete"), st.sampled_from(NAMES[:4])),
)


@settings(max_examples=300)
@given(st.lists(cross_op, min_size=15, max_size=50))
def test_assigned_pod_added_sees_exactly_the_pool_pods_with_cross_topology_terms(
    ops: list[tuple[Any, ...]],
) -> None:
    """The pool's side index of pods with cross-topology terms stays the pool's subset, in
    the pool's order, through rejections, moves, deletions and in-place affinity changes."""
    q = SchedulingQueue(FakeClock())
    known: dict[str, Pod] = {}
    in_flight: list[QueuedPodInfo] = []
    for o in ops:
        kind = o[0]
        if kind == "add" and q.where(f"default/{o[1]}") is None:
            if all(p.pod.name != o[1] for p in in_flight):
                known[o[1]] = with_affinity(mkpod(o[1]), o[2])
                q.add(known[o[1]])
        elif kind == "pop" and (got := q.pop()) is not None:
            in_flight.append(got)
        elif kind == "reject" and in_flight:
            pinfo = in_flight.pop(0)
            pinfo.unschedulable_plugins = {o[1]} if o[1] else set()
            if pinfo.pod.name in known and q.where(pinfo.pod) is None:
                pinfo.pod = known[pinfo.pod.name]
                q.add_unschedulable_if_not_present(pinfo, q.scheduling_cycle + 1)
        elif kind == "affinity" and o[1] in known:
            old = known[o[1]]
            known[o[1]] = with_affinity(old, o[2])
            q.update(old, known[o[1]])
        elif kind == "assigned":
            bound = mkpod("bound", ns=o[1], labels={"app": "x"} if o[2] else {}, node_name="n")
            got = q._pods_with_cross_topology_term(bound, ev.AssignedPodAdd)
            assert [p.pod.key for p in got] == cross_topology_reference(q, bound, ev.AssignedPodAdd)
            q.assigned_pod_added(bound)
        elif kind == "move":
            q.move_all_to_active_or_backoff_queue(o[1])
        elif kind == "delete" and o[1] in known:
            q.delete(known.pop(o[1]))
            in_flight = [p for p in in_flight if p.pod.name != o[1]]


class WalkingQueue(SchedulingQueue):
    """The reference: every event walks the whole pool, gated pods included."""

    def move_all_to_active_or_backoff_queue(
        self,
        event: ev.ClusterEvent,
        pre_check: Any = None,
        *,
        old_obj: object = None,
        new_obj: object = None,
    ) -> None:
        if not self.is_event_of_interest(event):
            return
        candidates = [p for _w, p in self.queued_pod_infos() if _w == UNSCHEDULABLE_Q]
        candidates = [p for p in candidates if pre_check is None or pre_check(p.pod)]
        self._move_pods_to_active_or_backoff_queue(candidates, event, old_obj, new_obj)

    def assigned_pod_added(self, pod: Pod) -> None:
        keys = set(cross_topology_reference(self, pod))  # gated pods included
        candidates = [p for _w, p in self.queued_pod_infos() if p.pod.key in keys]
        self._move_pods_to_active_or_backoff_queue(candidates, ev.AssignedPodAdd, None, pod)


gated_op = st.one_of(
    st.tuples(st.just("add"), st.sampled_from(NAMES), st.booleans()),
    st.tuples(st.just("assigned"), st.booleans()),
    st.tuples(st.just("pop")),
    st.tuples(st.just("reject"), st.sampled_from(PLUGINS)),
    st.tuples(st.just("ungate"), st.sampled_from(NAMES)),
    st.tuples(st.just("step"), st.sampled_from([0.3, 2.5, 400.0])),
    st.tuples(st.just("move"), st.sampled_from([*EVENTS, ev.UnscheduledPodUpdate])),
    st.tuples(st.just("leftover")),
    st.tuples(st.just("delete"), st.sampled_from(NAMES)),
)


@settings(max_examples=300)
@given(st.lists(gated_op, min_size=20, max_size=60))
def test_leaving_gated_pods_out_of_moves_changes_nothing(ops: list[tuple[Any, ...]]) -> None:
    """Moves that skip the gated pods (when no gating plugin registered the event), and
    AssignedPodAdded that leaves them out before matching their terms, leave every sub-queue
    exactly as walking the whole pool does."""
    clocks = [FakeClock(), FakeClock()]
    queues = [SchedulingQueue(clocks[0]), WalkingQueue(clocks[1])]
    known: dict[str, Pod] = {}
    in_flight: list[list[QueuedPodInfo]] = [[], []]
    for o in ops:
        kind = o[0]
        for i, q in enumerate(queues):
            if kind == "add" and q.where(f"default/{o[1]}") is None:
                if all(p.pod.name != o[1] for p in in_flight[i]):
                    pod = known.get(o[1]) if i else None
                    if pod is None:
                        gates = ("g",) if o[2] else ()
                        pod = known[o[1]] = with_affinity(mkpod(o[1], scheduling_gates=gates), True)
                    q.add(pod)
            elif kind == "pop" and (got := q.pop()) is not None:
                in_flight[i].append(got)
            elif kind == "reject" and in_flight[i]:
                pinfo = in_flight[i].pop(0)
                pinfo.unschedulable_plugins = {o[1]} if o[1] else set()
                if q.where(pinfo.pod) is None:
                    q.add_unschedulable_if_not_present(pinfo, q.scheduling_cycle)
            elif kind == "ungate" and o[1] in known:
                old = known[o[1]]
                new = old.with_changes(scheduling_gates=())
                q.update(old, new)
                if i:
                    known[o[1]] = new
            elif kind == "step":
                clocks[i].step(o[1])
            elif kind == "move":
                q.move_all_to_active_or_backoff_queue(o[1])
            elif kind == "assigned":
                labels = {"app": "x"} if o[1] else {}
                q.assigned_pod_added(mkpod("bound", labels=labels, node_name="n"))
            elif kind == "leftover":
                q.flush_unschedulable_pods_leftover()
            elif kind == "delete" and o[1] in known:
                q.delete(known[o[1]])
                in_flight[i] = [p for p in in_flight[i] if p.pod.name != o[1]]
        if kind == "delete":
            known.pop(o[1], None)
        a, b = (
            [(where, p.pod.key, p.attempts, p.gated) for where, p in q.queued_pod_infos()]
            for q in queues
        )
        assert a == b
