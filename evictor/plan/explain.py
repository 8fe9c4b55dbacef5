"""Why a drain does not finish, in words an operator acts on: what keeps each budget shut for
good, the drain's verdict and first reason, and what the plan assumed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from evictor.plan.budgets import Budget, Budgets, rule, selects
from evictor.plan.clock import DEFAULT_GRACE
from evictor.plan.controllers import Controllers
from evictor.plan.scheduling import Scheduling
from evictor.plan.types import NodePlan, PodPlan, Replacement
from kube.objects import Pod

__all__ = ["ASSUMPTIONS", "Explanation", "assumptions", "overall"]

ASSUMPTIONS: Final = (
    "a replacement is Ready as soon as it is scheduled (readiness probes, image pulls and"
    " start-up are not modelled)",
    "an evicted or preempted pod is gone after its grace period (--grace-period, else its"
    f" terminationGracePeriodSeconds, {DEFAULT_GRACE}s when unset)",
    "evictions the budgets allow at one moment are granted in the node's pod-list order, and"
    " the controllers create the replacements in that order",
)


class Explanation:
    """The reasons of one play; ``plans`` are its pods' plans by key, ``original`` the pods as
    read."""

    def __init__(
        self,
        *,
        plans: Mapping[str, PodPlan],
        pods: Mapping[str, Pod],
        original: Mapping[str, Pod],
        budgets: Budgets,
        controllers: Controllers,
        scheduling: Scheduling,
        timeout: float,
    ) -> None:
        self._plans = plans
        self._pods = pods
        self._original = original
        self._budgets = budgets
        self._controllers = controllers
        self._scheduling = scheduling
        self._timeout = timeout

    def conclude_stuck(self, plan: NodePlan, todo: Iterable[str], *, timed_out: bool) -> None:
        """A node whose pods ``todo`` are still held: ``stuck``, or ``unknown`` when what
        holds it is not modelled; its blockers, one per budget."""
        blockers: dict[str, tuple[str, bool]] = {}
        for key in todo:
            pp = self._plans[key]
            pod = self._pods.get(key)
            if pod is None or not pp.held_by:
                continue
            b = next((b for b in self._budgets.of(pod)), None)
            if b is None or b.pdb.key in blockers:
                continue
            blockers[b.pdb.key] = self.why_stuck(b, pod)
        unknown = any(u for _, u in blockers.values())
        plan.blockers = [text for text, _ in blockers.values()]
        if timed_out:
            plan.blockers.append(f"the drain gives up after --timeout {self._timeout:g}s")
        plan.verdict = "unknown" if unknown else "stuck"

    def why_stuck(self, b: Budget, blocked: Pod) -> tuple[str, bool]:
        """The sentence naming what keeps budget ``b`` shut for good; True when the reason is
        something this plan does not model."""
        head = f"PDB {b.pdb.name} {rule(b.pdb)}: {len(b.healthy)} healthy"
        gone: list[tuple[str, Replacement | None, tuple[str, ...]]] = [
            (pp.key, pp.replacement, pp.unmodelled)
            for pp in self._plans.values()
            if pp.round is not None
        ]
        gone += [(o.replaces, o, o.unmodelled) for o in self._controllers.others if o.replaces]
        for key, rep, unmodelled in gone:
            original = self._original.get(key)
            if original is None or not selects(b.pdb, original):
                continue
            if unmodelled or (rep is not None and rep.unmodelled):
                what = "; ".join(unmodelled or (rep.unmodelled if rep else ()))
                return (
                    f"{head}, the replacement of {original.name} is not modelled ({what}):"
                    " whether it comes and becomes Ready is unknown",
                    True,
                )
            if rep is None or rep.node:
                continue
            if rep.gated:
                return (f"{head}, the replacement of {original.name} {rep.gated}", False)
            if rep.unschedulable:
                return (
                    f"{head}, the replacement of {original.name} fits on no node:"
                    f" {rep.unschedulable}",
                    False,
                )
            return (
                f"{head}, the replacement of {original.name} is never created ({rep.owner}"
                " creates its pods one at a time, lowest ordinal first, each once the lower"
                " ones are Running and Ready)",
                False,
            )
        # No replacement is on its way: the budget has no slack. Would one more pod fit?
        wk = self._controllers.members.get(blocked.key)
        wl = self._controllers.workloads.get(wk) if wk is not None else None
        if wl is None or wl.template is None:
            return (
                f"{head} of {b.desired} desired: it allows no disruption, and {blocked.name}"
                " has no controller whose replacement could add a healthy pod",
                False,
            )
        probe = wl.template.with_changes(
            name=f"{blocked.name}-probe", namespace=blocked.namespace, uid="plan-probe"
        )
        probe = self._scheduling.admit(probe) or probe
        scheduling = self._scheduling
        result = scheduling.schedule(probe)
        if result.succeeded:
            return (
                f"{head} of {b.desired} desired: it allows no disruption (the replacement of"
                f" {blocked.name} would fit on {result.suggested_host}: relax the budget or"
                " scale the workload up)",
                False,
            )
        outcome, message = scheduling.post_filter(probe, result)
        if outcome.nominated_node_name:
            return (
                f"{head} of {b.desired} desired: it allows no disruption (the replacement of"
                f" {blocked.name} would fit on {outcome.nominated_node_name} by preemption)",
                False,
            )
        return (f"{head}, the replacement of {blocked.name} fits on no node: {message}", False)


def overall(nodes: Sequence[NodePlan]) -> tuple[str, str]:
    """The drain's verdict and, when it does not finish, the first reason, naming its node."""
    for verdict in ("stuck", "unknown", "refused", "fails", "not-reached"):
        bad = [n for n in nodes if n.verdict == verdict]
        if not bad:
            continue
        n = bad[0]
        if verdict == "stuck":
            why = "; ".join(n.blockers)
        elif verdict == "unknown":
            why = "cannot tell: " + "; ".join(n.blockers)
        elif verdict in ("refused", "fails"):
            why = "; ".join(n.errors)
        else:
            stuck = next((m.name for m in nodes if m.verdict in ("stuck", "unknown")), "")
            why = f"not reached: node/{stuck} never finishes and no --timeout ends it"
        return verdict, f"node/{n.name}: {why}"
    return "finishes", ""


def assumptions(*, nodes: int, score_all: bool, ties: bool, stale: Sequence[str]) -> list[str]:
    """What the plan assumed: always ``ASSUMPTIONS``; the scoring of every node of a cluster of
    more than 100, ties broken by taking the first, budgets whose status may be stale."""
    out = list(ASSUMPTIONS)
    if score_all:
        out.append(
            f"every one of the {nodes} nodes is scored (kube-scheduler"
            " scores a sample of the nodes of clusters above 100)"
        )
    if ties:
        out.append(
            "where nodes tie for the best score, kube-scheduler picks one at random;"
            " the plan (as kubesim) takes the first"
        )
    if stale:
        out.append(
            f"the disruption controller has not processed the latest spec of PDB"
            f" {', '.join(stale)}: its status is taken as it stands"
        )
    return out
