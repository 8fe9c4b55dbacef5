"""One play of the drain: the nodes in one order, from the cordon to the last pod gone, on
the cluster as read — kubectl's filters per node, the evictions the budgets grant, the
controllers' replacements and the scheduler placing them, until nothing more happens.
``plan_drain`` plays it and returns the ``DrainPlan``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from evictor.drain.filters import MIRROR_POD_ANNOTATION, StatusType, get_pods_for_deletion
from evictor.drain.order import order_by_priority
from evictor.plan.budgets import Budgets
from evictor.plan.clock import Clock, grace_period
from evictor.plan.controllers import Controllers, owner_title, unmodelled
from evictor.plan.explain import Explanation, assumptions, overall
from evictor.plan.output import DrainPlan
from evictor.plan.scheduling import POD_EVENT_PLUGINS, Scheduling
from evictor.plan.types import ClusterView, NodePlan, PlanOptions, PodPlan
from kube.objects import Pod
from scheduler.framework import Framework

__all__ = ["DrainPlay", "NodeDrain", "plan_drain"]


@dataclass(slots=True)
class NodeDrain:
    """One node's drain as it is played: ``groups`` the pods still to evict, a group at a
    time (one priority level with ``--order=priority``); ``todo`` the current group's pods
    not granted yet, ``waiting`` those granted and not gone."""

    plan: NodePlan
    groups: list[list[str]]
    todo: list[str] = field(default_factory=list)
    waiting: set[str] = field(default_factory=set)
    refused: bool = False
    state: str = "waiting"  # waiting -> active -> done
    timed_out: bool = False


class DrainPlay:
    """The drain of ``order``, played in kubesim's order of events.

    The targets are cordoned; kubectl's filters run per node (``evictor.drain.filters``) and a
    node they refuse is reported as kubectl would refuse it, with nothing evicted there. The
    nodes are drained one after another, or ``--parallel`` at a time; a node's pods are
    evicted all at once, or one priority level at a time (``evictor.drain.order``), and a node
    is done when its pods are gone. Evictions the budgets allow at one moment are granted in
    the node's pod-list order (a round); the rest wait for their budget to reopen, as
    ``evict`` retries as soon as it does. An evicted pod terminates for its grace period
    (it no longer counts for topology spreading, kubernetes/kubernetes#87621), then is gone.

    Its parts: ``clock`` (time, rounds, events), ``scheduling`` (the queue, the cycle and the
    snapshot), ``budgets``, ``controllers`` (the replacements), ``explanation`` (why a node
    never finishes). ``pods`` is the cluster's pods as they change, shared by the parts.
    """

    def __init__(
        self,
        view: ClusterView,
        order: Sequence[str],
        options: PlanOptions,
        framework: Framework | None,
    ) -> None:
        self.view = view
        self.options = options
        self.clock = Clock(healthy=self._healthy)
        self.original: dict[str, Pod] = {p.key: p for p in view.pods}
        self.pods: dict[str, Pod] = {}
        self.scheduling = Scheduling(
            view,
            cordoned=set(order),
            framework=framework,
            pods=self.pods,
            clock=self.clock,
            cluster=self,
            config=options.scheduler_config,
        )
        self.snapshot = self.scheduling.snapshot
        for pod in self.pods.values():
            if pod.is_terminating and pod.node_name:
                left = (pod.deletion_timestamp or view.now) - view.now
                self.clock.gone_after(pod.key, max(left, 0.0))
        self.budgets = Budgets(view.pdbs, self.snapshot)
        self.budgets.count(self.pods.values())
        self.controllers = Controllers(
            view.workloads, pods=self.pods, scheduling=self.scheduling, clock=self.clock
        )
        self.drains = [self._drain(name) for name in order]
        self.by_key: dict[str, PodPlan] = {
            p.key: p for d in self.drains for p in d.plan.pods if d.plan.name == p.node
        }
        self.explanation = Explanation(
            plans=self.by_key,
            pods=self.pods,
            original=self.original,
            budgets=self.budgets,
            controllers=self.controllers,
            scheduling=self.scheduling,
            timeout=options.timeout,
        )

    def _healthy(self) -> tuple[tuple[str, int], ...]:
        return self.budgets.touched_counts()

    # --- the nodes, through kubectl's filters ---------------------------------------------

    def _drain(self, name: str) -> NodeDrain:
        opts = self.options
        mine = [p for p in self.view.pods if p.node_name == name]
        if opts.pod_selector is not None:
            mine = [p for p in mine if opts.pod_selector.matches(p.labels)]
        daemonsets = self.view.daemonsets

        def owner_exists(namespace: str, ds: str) -> bool:
            return (namespace, ds) in daemonsets

        filtered = get_pods_for_deletion(
            mine, options=opts.drain, owner_exists=owner_exists, now=self.view.now
        )
        plan = NodePlan(name)
        verb = "delete" if opts.disable_eviction or not self.view.eviction else "evict"
        refused = False
        to_evict: list[Pod] = []
        for item in filtered.items:
            pod, status = self.pods.get(item.pod.key, item.pod), item.status
            pp = PodPlan(
                pod.namespace, pod.name, name, verb, owner=owner_title(pod, self.view.workloads)
            )
            if status.delete:
                pp.reason = status.message
                to_evict.append(pod)
            elif status.reason is StatusType.ERROR:
                pp.action, pp.reason = "refuse", status.message or "unexpected error"
                refused = True
            else:
                pp.action = "skip"
                pp.reason = status.message or (
                    "mirror pod" if MIRROR_POD_ANNOTATION in pod.annotations else "deleted"
                )
            plan.pods.append(pp)
        plan.warnings = filtered.warnings()
        if refused:
            plan.errors = filtered.errors()
            for pp in plan.pods:
                if pp.action in ("evict", "delete"):
                    pp.action, pp.reason = "refuse", "the node's drain is refused"
        if opts.order == "priority":
            groups = [[p.key for p in g] for g in order_by_priority(to_evict, now=self.view.now)]
        else:
            groups = [[p.key for p in to_evict]] if to_evict else []
        for pp in plan.pods:
            if pp.action in ("evict", "delete"):
                pp.unmodelled = unmodelled(
                    self.pods.get(pp.key), self.view.workloads, self.scheduling
                )
        return NodeDrain(plan, [] if refused else groups, refused=refused)

    # --- what happens to a pod ----------------------------------------------------------------

    def _terminating(self, pod: Pod, *, evicted: bool) -> None:
        """The pod gets its deletionTimestamp: it stops being active and healthy."""
        grace = grace_period(pod, evicted=evicted, override=self.options.grace_period)
        marked = pod.with_changes(deletion_timestamp=self.view.now + self.clock.t + grace)
        self.pods[pod.key] = marked
        if marked.node_name and self.snapshot.get_pod(marked.key) is not None:
            self.snapshot.update_pod(marked)  # a finished pod is not in it and holds nothing
        self.budgets.unhealthy(marked)
        self.controllers.terminating(pod.key)
        self.clock.gone_after(pod.key, grace)
        self.scheduling.dirty(POD_EVENT_PLUGINS)

    def _gone(self, key: str) -> None:
        pod = self.pods.pop(key, None)
        if pod is None:
            return
        self.scheduling.remove(key)
        self.controllers.gone(key)
        for d in self.drains:
            if key in d.waiting:
                d.waiting.discard(key)
                pp = self.by_key.get(key)
                if pp is not None:
                    pp.gone = self.clock.t
        self.scheduling.dirty()
        self.clock.record("gone", key, pod.node_name)

    # scheduling.Cluster: what the scheduler's decisions do here

    def bound(self, pod: Pod, *, counts: bool) -> None:
        if counts:
            self.budgets.healthy(pod)
        self.controllers.touch(pod.key)

    def preempt(self, victim: Pod, *, by: str, node: str) -> None:
        self._terminating(victim, evicted=False)
        self.clock.record("preempt", victim.key, node, detail=f"by {by}")
        self.controllers.owe(victim, note=f"preempted by {by}")

    # --- the drains ---------------------------------------------------------------------------

    def _start_drains(self) -> bool:
        active = sum(1 for d in self.drains if d.state == "active")
        changed = False
        for d in self.drains:
            if active >= max(self.options.parallel, 1):
                break
            if d.state != "waiting":
                continue
            d.state = "active"
            d.plan.start = self.clock.t
            self.clock.record("start", node=d.plan.name)
            active += 1
            changed = True
            if self.options.timeout > 0:
                self.clock.deadline_after(d.plan.name, self.options.timeout)
            if d.groups:
                self._take_group(d)
        return changed

    def _finish_drains(self) -> bool:
        changed = False
        for d in self.drains:
            if d.state != "active" or d.todo or d.waiting:
                continue
            if d.groups:
                self._take_group(d)
                changed = True
                continue
            d.state = "done"
            d.plan.finish = self.clock.t
            if d.refused:
                d.plan.verdict = "refused"
            elif d.plan.errors:
                d.plan.verdict = "fails"
            else:
                d.plan.verdict = "finishes"
            self.clock.record("end", node=d.plan.name, detail=d.plan.verdict)
            changed = True
        return changed

    def _take_group(self, d: NodeDrain) -> None:
        """The next group's pods are to be evicted; one already gone (it was terminating) is
        skipped, as kubectl would no longer list it."""
        for key in d.groups.pop(0):
            if key in self.pods:
                d.todo.append(key)
            else:
                pp = self.by_key[key]
                pp.action, pp.reason = "skip", "gone before its turn"

    def _evict_wave(self) -> bool:
        """One round: every eviction the budgets grant now, in the nodes' pod-list order."""
        this_round = self.clock.round + 1
        granted: list[Pod] = []
        failed = False
        for d in self.drains:
            if d.state != "active":
                continue
            for key in list(d.todo):
                pp = self.by_key[key]
                pod = self.pods[key]
                verdict = self._try_evict(pod, pp, this_round)
                if verdict == "blocked":
                    continue
                d.todo.remove(key)
                if verdict == "error":
                    failed = True
                    d.plan.errors.append(
                        f'error when evicting pods/"{pod.name}" -n "{pod.namespace}": {pp.error}'
                    )
                    continue
                pp.round, pp.seconds = this_round, self.clock.t
                if pp.held_by and pp.held_until is None:
                    pp.held_until = this_round
                d.waiting.add(key)
                granted.append(pod)
                self.budgets.unhealthy(pod)  # the server spends the budget as it grants
        if not granted:
            return failed
        self.clock.round = this_round
        for pod in granted:
            pp = self.by_key[pod.key]
            if pod.is_terminating:
                self.clock.record("evict", pod.key, pod.node_name, detail="already terminating")
                continue
            self._terminating(pod, evicted=True)
            rep = self.controllers.owe(pod)
            pp.replacement = rep
            if rep is not None and pp.unmodelled:
                rep.unmodelled = pp.unmodelled
            self.clock.record("evict", pod.key, pod.node_name)
        return True

    def _try_evict(self, pod: Pod, pp: PodPlan, this_round: int) -> str:
        """``granted``, ``blocked`` or ``error``, as the eviction subresource decides
        (``Budgets.verdict``); a DELETE is always granted."""
        if pp.action == "delete":
            return "granted"
        verdict = self.budgets.verdict(pod)
        if verdict.outcome == "error":
            pp.error = verdict.message
            self.clock.record("error", pod.key, pod.node_name, pp.error)
        elif verdict.outcome == "blocked" and not pp.held_by:
            assert verdict.budget is not None
            pp.held_by, pp.held_from = verdict.budget.pdb.name, this_round
            self.clock.record("blocked", pod.key, pod.node_name, verdict.budget.pdb.name)
        return verdict.outcome

    # --- time ---------------------------------------------------------------------------------

    def _deadline_live(self, node: str) -> bool:
        return any(d.plan.name == node and d.state == "active" for d in self.drains)

    def _advance(self, t: float) -> None:
        self.clock.advance(t)
        for key in self.clock.gone_by(t):
            self._gone(key)
        for name in self.clock.deadlines_by(t):
            for d in self.drains:
                if d.plan.name == name and d.state == "active" and (d.todo or d.waiting):
                    d.state = "done"
                    d.timed_out = True
                    d.plan.finish = self.clock.t
                    self.explanation.conclude_stuck(d.plan, d.todo, timed_out=True)
                    self.clock.record("end", node=name, detail="timeout")

    def _settle(self) -> None:
        """Everything that happens at this moment, until nothing more does."""
        for _ in range(100_000):
            changed = self.controllers.sync()
            changed |= self.scheduling.schedule_pending()
            changed |= self._finish_drains()
            changed |= self._start_drains()
            changed |= self._evict_wave()
            if not changed:
                return
        raise RuntimeError("the drain plan did not settle")  # a bug, never user input

    def run(self) -> DrainPlan:
        self._start_drains()
        while True:
            self._settle()
            t = self.clock.next_time(live=self._deadline_live)
            if t is None:
                break
            self._advance(t)
        for d in self.drains:
            if d.state == "active":
                self.explanation.conclude_stuck(d.plan, d.todo, timed_out=d.timed_out)
        return self._result()

    def _result(self) -> DrainPlan:
        nodes = [d.plan for d in self.drains]
        for d in self.drains:
            d.plan.rounds = len({p.round for p in d.plan.pods if p.round is not None})
            if d.state == "waiting":
                d.plan.verdict = "not-reached"
        finishing = [n.finish for n in nodes if n.finish is not None]
        plan = DrainPlan(
            nodes=nodes,
            parallel=max(self.options.parallel, 1),
            rounds=self.clock.round,
            seconds=max(finishing) if finishing and all(n.finishes for n in nodes) else None,
            others=self.controllers.others,
            events=self.clock.events,
        )
        plan.budgets = self.budgets.plans()
        plan.assumptions = assumptions(
            nodes=len(self.view.nodes),
            score_all=self.scheduling.score_all,
            ties=self.scheduling.ties,
            stale=[b.name for b in plan.budgets if b.stale],
        )
        plan.verdict, plan.reason = overall(nodes)
        return plan


def plan_drain(
    view: ClusterView,
    nodes: Sequence[str],
    options: PlanOptions | None = None,
    *,
    framework: Framework | None = None,
) -> DrainPlan:
    """Play the drain of ``nodes`` in this order (``DrainPlay``), with nothing read or
    written: the cluster is ``view``; the scheduler's profiles are those of
    ``options.scheduler_config`` (kube's default one without), their Filter plugins replaced
    by ``framework`` when given."""
    opts = options or PlanOptions()
    plan = DrainPlay(view, nodes, opts, framework).run()
    plan.given_order = list(nodes)
    return plan
