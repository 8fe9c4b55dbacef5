"""Hypothesis properties of the scheduling queue and the backoff rule."""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from scheduler.queue import QueuedPodInfo, SchedulingQueue, backoff_duration, less
from scheduler.queue import events as ev
from scheduler.queue.scheduling_queue import ACTIVE_Q
from tests.scheduler.test_queue_helpers import FakeClock, mkpod

NAMES = [f"p{i}" for i in range(8)]
PLUGINS = ["NodeResourcesFit", "NodeAffinity", "InterPodAffinity", "fooPlugin", ""]
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
)


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
