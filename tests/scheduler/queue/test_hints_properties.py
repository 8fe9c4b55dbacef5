"""Queueing hints change how often a pod is retried, never where pods go.

The same small cluster, the same pending pods and the same random order of cluster events
(nodes added, relabelled, untainted, uncordoned; bound pods deleted or added) run through the
queue and ``schedule_one`` twice: with SchedulerQueueingHints off (every registered event moves
a rejected pod) and on (the rejecting plugins' hints judge each event). The placements must be
the same, and hints never cost an attempt.

So that only the hints differ, the scheduler's clock jumps past every backoff before each pop
(pods reach activeQ, which orders them by their distinct priorities). Upstream's
InterPodAffinity hints miss four cases, and the generated clusters leave them out (the
periodic flush of the pool retries such pods): a term that only a ``namespaceSelector`` would
satisfy; a node added without an anti-affinity term's topology key (it cannot violate the
term; the hint wants the key); a bound pod whose own anti-affinity rejected the pending pod,
deleted (bound pods here have no affinity terms); and the last pod matching an affinity term
the pending pod satisfies itself, deleted (the first pod of a self-affine group may go
anywhere: the hint looks only at the pending pod's anti-affinity on a deletion).
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kube.objects import Node, Pod
from scheduler import eventhandlers as handlers
from scheduler.framework import Code
from scheduler.hints import DEFAULT_PLUGIN_HINTS
from scheduler.queue import SchedulingQueue
from scheduler.queue import events as ev
from scheduler.schedule import schedule_one
from scheduler.snapshot import Snapshot
from tests.support.clock import FakeClock

ZONES = ("a", "b")
TAINT = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}


def node(name: str, *, zone: str | None, cpu: int, tainted: bool, cordoned: bool) -> Node:
    labels = {"kubernetes.io/hostname": name}
    if zone is not None:
        labels["zone"] = zone
    return Node.from_dict(
        {
            "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "spec": {"taints": [TAINT] if tainted else [], "unschedulable": cordoned},
            "status": {"capacity": {"cpu": str(cpu), "memory": "32Gi", "pods": "110"}},
        }
    )


def pod(name: str, spec: dict[str, Any], *, app: str, node_name: str = "") -> Pod:
    full = {"containers": [{"name": "c", "resources": {"requests": {"cpu": spec["cpu"]}}}]}
    full["nodeName"] = node_name
    for key in ("priority", "nodeSelector", "tolerations", "affinity"):
        if key in spec:
            full[key] = spec[key]
    if "spread" in spec:
        full["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": spec["spread"],
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": app}},
            }
        ]
    return Pod.from_dict(
        {
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": full,
        }
    ).with_changes(labels={"app": app})


def _term(app: str, key: str) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}


nodes_st = st.lists(
    st.tuples(
        st.sampled_from(ZONES),
        st.sampled_from((1, 2, 4)),
        st.booleans(),
        st.booleans(),
    ),
    min_size=1,
    max_size=3,
)


@st.composite
def pending_spec(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {"cpu": draw(st.sampled_from(("500m", "1", "2", "3")))}
    if draw(st.booleans()):
        spec["nodeSelector"] = {"zone": draw(st.sampled_from(ZONES))}
    if draw(st.booleans()):
        spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    kind = draw(st.sampled_from(("none", "affinity", "anti", "spread")))
    key = draw(st.sampled_from(("zone", "kubernetes.io/hostname")))
    other = draw(st.sampled_from(("web", "db")))
    if kind == "affinity":
        spec["affinity"] = {
            "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term(other, key)]}
        }
    elif kind == "anti":
        spec["affinity"] = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [_term(other, key)]
            }
        }
    elif kind == "spread":
        spec["spread"] = key
    apps = ("web", "db", "batch")
    if kind == "affinity":  # not a term it satisfies itself (see the module's docstring)
        apps = tuple(a for a in apps if a != other)
    spec["app"] = draw(st.sampled_from(apps))
    return spec


event_st = st.one_of(
    st.tuples(st.just("add-node"), st.sampled_from(ZONES), st.sampled_from((1, 2, 4))),
    st.tuples(st.just("label"), st.integers(0, 5), st.sampled_from(ZONES)),
    st.tuples(st.just("untaint"), st.integers(0, 5)),
    st.tuples(st.just("uncordon"), st.integers(0, 5)),
    st.tuples(st.just("delete-bound"), st.integers(0, 5)),
    st.tuples(st.just("add-bound"), st.integers(0, 5), st.sampled_from(("web", "db"))),
)


class Run:
    """The queue, the snapshot and ``schedule_one``, as kube-scheduler's loop drives them."""

    def __init__(self, *, hints: bool) -> None:
        self.clock = FakeClock()
        self.snapshot = Snapshot()
        self.queue = SchedulingQueue(
            self.clock,
            pod_lister=self.snapshot,
            namespace_labels=self.snapshot.namespace_labels,
            queueing_hints=DEFAULT_PLUGIN_HINTS if hints else None,
        )
        self.attempts = 0
        self.bound_extra: list[Pod] = []
        # An event delivered while the first pod popped is being scheduled (after its
        # decision, before its failure handler): what in-flight tracking is for.
        self.mid_cycle: tuple[Any, ...] | None = None

    def drain(self) -> None:
        while True:
            self.clock.step(20.0)  # past every backoff: activeQ orders by priority alone
            self.queue.flush_backoff_q_completed()
            pinfo = self.queue.pop()
            if pinfo is None:
                return
            self.attempts += 1
            cycle = self.queue.scheduling_cycle
            result = schedule_one(pinfo.pod, self.snapshot, percentage_of_nodes_to_score=100)
            if self.mid_cycle is not None:
                event, self.mid_cycle = self.mid_cycle, None
                self.apply(event)
            if result.succeeded:
                bound = self.snapshot.bind_pod(pinfo.pod, result.suggested_host)
                self.queue.done(pinfo.pod.uid)
                self.queue.assigned_pod_added(bound)
                continue
            assert result.status.code is Code.Unschedulable, result.status
            pinfo.unschedulable_plugins = set(result.diagnosis.unschedulable_plugins)
            pinfo.pending_plugins = set(result.diagnosis.pending_plugins)
            self.queue.add_unschedulable_if_not_present(pinfo, cycle)
            self.queue.done(pinfo.pod.uid)

    def nodes(self) -> list[Node]:
        infos = [self.snapshot.node_info(name) for name in sorted(self.snapshot.node_names())]
        return [ni.node for ni in infos if ni.node is not None]

    def apply(self, event: tuple[Any, ...]) -> None:
        nodes = self.nodes()
        kind = event[0]
        if kind == "add-node":
            name = f"extra{len(nodes)}"
            new = node(name, zone=event[1], cpu=event[2], tainted=False, cordoned=False)
            handlers.add_node(self.snapshot, self.queue, new)
        elif kind in ("label", "untaint", "uncordon"):
            old = nodes[event[1] % len(nodes)]
            if kind == "label":
                new = old.with_changes(labels={**old.labels, "zone": event[2]})
                change = ev.NodeLabelChange
            elif kind == "untaint":
                new = old.with_changes(taints=())
                change = ev.NodeTaintChange
            else:
                new = old.with_changes(unschedulable=False)
                change = ev.NodeSpecUnschedulableChange
            if new == old:
                return
            self.snapshot.update_node(new)
            self.queue.move_all_to_active_or_backoff_queue(change, old_obj=old, new_obj=new)
        elif kind == "delete-bound":
            if not self.bound_extra:
                return
            victim = self.bound_extra.pop(event[1] % len(self.bound_extra))
            handlers.delete_pod(self.snapshot, self.queue, victim)
        else:
            target = nodes[event[1] % len(nodes)]
            name = f"bound{self.attempts}-{len(self.bound_extra)}"
            p = pod(name, {"cpu": "500m"}, app=event[2], node_name=target.name)
            self.bound_extra.append(p)
            handlers.add_assigned_pod(self.snapshot, self.queue, p)

    def placements(self) -> dict[str, str]:
        return {
            p.name: p.node_name
            for name in self.snapshot.node_names()
            for p in self.snapshot.node_info(name).pods
            if p.name.startswith("p")
        }


def _run(
    *,
    hints: bool,
    nodes: list[tuple[Any, ...]],
    pods: list[dict[str, Any]],
    events: list[Any],
    in_flight: bool,
) -> Run:
    run = Run(hints=hints)
    if in_flight and events:
        run.mid_cycle, events = events[0], events[1:]
    for i, (zone, cpu, tainted, cordoned) in enumerate(nodes):
        new = node(f"n{i}", zone=zone, cpu=cpu, tainted=tainted, cordoned=cordoned)
        handlers.add_node(run.snapshot, run.queue, new)
    for i, drawn in enumerate(pods):
        spec = {**drawn, "priority": 100 - i}  # distinct: activeQ's order needs no timestamps
        handlers.add_pending_pod(run.snapshot, run.queue, pod(f"p{i}", spec, app=spec["app"]))
    run.drain()
    for event in events:
        run.apply(event)
        run.drain()
    return run


@settings(max_examples=150, deadline=None)
@given(
    nodes=nodes_st,
    pods=st.lists(pending_spec(), min_size=1, max_size=5),
    events=st.lists(event_st, max_size=8),
    in_flight=st.booleans(),
)
def test_same_placements_with_hints_on_and_off(
    nodes: list[tuple[Any, ...]], pods: list[dict[str, Any]], events: list[Any], in_flight: bool
) -> None:
    off = _run(hints=False, nodes=nodes, pods=pods, events=events, in_flight=in_flight)
    on = _run(hints=True, nodes=nodes, pods=pods, events=events, in_flight=in_flight)
    assert on.placements() == off.placements()
    assert on.attempts <= off.attempts
    assert not on.queue.in_flight_pods()
