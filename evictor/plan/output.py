"""The drain plan's answer: ``DrainPlan``, the whole prediction, as ``evict drain --plan``
prints it (``lines``) and as ``-o json`` (``to_dict``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Final

from evictor.plan.types import BudgetPlan, NodePlan, PlanEvent, PodPlan, Replacement

__all__ = ["DrainPlan"]


@dataclass(slots=True)
class DrainPlan:
    """The whole prediction; ``finishes`` when every node's drain does."""

    nodes: list[NodePlan]
    parallel: int = 1
    rounds: int = 0
    seconds: float | None = None
    verdict: str = ""
    reason: str = ""
    budgets: list[BudgetPlan] = field(default_factory=list)
    others: list[Replacement] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)
    events: list[PlanEvent] = field(default_factory=list)
    orders_tried: int = 1
    given_order: list[str] = field(default_factory=list)

    @property
    def order(self) -> list[str]:
        return [n.name for n in self.nodes]

    @property
    def finishes(self) -> bool:
        return all(n.finishes for n in self.nodes)

    def score(self) -> tuple[int, float, int]:
        """Lower is better: nodes that do not finish, then seconds, then rounds."""
        failing = sum(1 for n in self.nodes if not n.finishes)
        return (failing, self.seconds if self.seconds is not None else math.inf, self.rounds)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "DrainPlan",
            "finishes": self.finishes,
            "verdict": self.verdict,
            "reason": self.reason,
            "order": self.order,
            "givenOrder": list(self.given_order),
            "ordersTried": self.orders_tried,
            "parallel": self.parallel,
            "rounds": self.rounds,
            "seconds": None if self.seconds is None else round(self.seconds, 3),
            "nodes": [n.to_dict() for n in self.nodes],
            "budgets": [b.to_dict() for b in self.budgets],
            "otherPods": [o.to_dict() for o in self.others],
            "assumptions": list(self.assumptions),
            "events": [e.to_dict() for e in self.events],
        }

    def lines(self) -> list[str]:
        """The plan as ``evict drain --plan`` prints it."""
        out: list[str] = []
        names = ", ".join(self.order)
        how = f" (--parallel {self.parallel})" if self.parallel > 1 else ""
        out.append(f"plan: drain {names}{how}; nothing is changed in the cluster")
        width = max((len(p.key) for n in self.nodes for p in n.pods), default=0)
        if self.order != self.given_order and len(self.nodes) > 1:
            out.append(f"order: {' '.join(self.order)} (best of {self.orders_tried} orders played)")
        for n in self.nodes:
            head = f"node/{n.name}: {_VERDICT_WORDS[n.verdict]}"
            if n.verdict == "finishes":
                head += f" in {n.rounds} round(s)"
                if n.finish is not None:
                    head += f", {_seconds(n.finish)}"
            out.append(head)
            said = " ".join(n.blockers)
            out.extend("  " + _pod_line(p, width, said) for p in n.pods)
            if n.warnings:
                out.append(f"  Warning: {n.warnings}")
            out.extend(f"  error: {e}" for e in n.errors)
            out.extend(f"  blocked for good: {b}" for b in n.blockers)
        out.extend(f"also: {o.owner}: {o.describe()}" for o in self.others)
        out.extend(f"assumes: {a}" for a in self.assumptions)
        out.append(self.summary())
        return out

    def summary(self) -> str:
        if self.finishes:
            return (
                f"the drain finishes: {len(self.nodes)} node(s), {self.rounds} round(s),"
                f" {_seconds(self.seconds or 0.0)}"
            )
        if self.verdict == "unknown":
            return f"the drain may not finish: {self.reason}"
        return f"the drain will not finish: {self.reason}"


_VERDICT_WORDS: Final = {
    "finishes": "finishes",
    "stuck": "will not finish",
    "unknown": "cannot tell whether it finishes",
    "refused": "refused by kubectl's filters",
    "fails": "fails",
    "not-reached": "not reached",
}


def _seconds(s: float) -> str:
    return f"at least {s:g}s" if s else "at once"


def _pod_line(p: PodPlan, width: int, said: str = "") -> str:
    """One pod's line; a scheduler message the node's blockers repeat is not printed twice."""
    head = f"{p.key:<{width}}  {p.action:<7}"
    parts: list[str] = []
    if p.round is not None:
        parts.append(f"round {p.round}")
    if p.held_by:
        until = f"until round {p.held_until}" if p.held_until is not None else "for good"
        parts.append(f"held by PDB {p.held_by} {until}")
    if p.error:
        parts.append(f"error: {p.error}")
    if p.reason and p.action in ("skip", "refuse"):
        parts.append(p.reason)
    elif p.reason:
        parts.append(f"({p.reason})")
    rep = p.replacement
    if rep is not None and rep.unschedulable and not rep.node and rep.unschedulable in said:
        parts.append("replacement fits on no node (below)")
    elif rep is not None:
        parts.append(rep.describe())
    elif p.unmodelled:
        parts.append(f"not modelled: {'; '.join(p.unmodelled)}")
    elif p.action in ("evict", "delete") and p.round is not None:
        parts.append("nothing replaces it" + ("" if p.owner else " (no controller)"))
    return f"{head} {'; '.join(parts)}".rstrip()
