"""The order search: which order of the nodes drains them all soonest. Every order is played
up to ``MAX_EXHAUSTIVE`` nodes; beyond, the given order and a few heuristics.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import Final

from evictor.plan.output import DrainPlan
from evictor.plan.play import plan_drain
from evictor.plan.types import ClusterView, PlanOptions

__all__ = ["MAX_EXHAUSTIVE", "best_plan"]

MAX_EXHAUSTIVE: Final = 4  # up to this many nodes, every order is played


def _orders(nodes: Sequence[str], view: ClusterView) -> Iterable[tuple[str, ...]]:
    """Every order; or the given one, reversed, and by the nodes' pod counts both ways."""
    if len(nodes) <= MAX_EXHAUSTIVE:
        yield from itertools.permutations(nodes)
        return
    given = tuple(nodes)
    yield given
    yield tuple(reversed(given))
    count: dict[str, int] = {}
    for pod in view.pods:
        if pod.node_name in count or pod.node_name in given:
            count[pod.node_name] = count.get(pod.node_name, 0) + 1
    yield tuple(sorted(given, key=lambda n: (count.get(n, 0), given.index(n))))
    yield tuple(sorted(given, key=lambda n: (-count.get(n, 0), given.index(n))))


def best_plan(
    view: ClusterView,
    nodes: Sequence[str],
    options: PlanOptions | None = None,
) -> DrainPlan:
    """The order of ``nodes`` whose drain finishes soonest (``DrainPlan.score``); the given
    order wins ties. With one node, that node's plan."""
    opts = options or PlanOptions()
    best: DrainPlan | None = None
    tried = 0
    seen: set[tuple[str, ...]] = set()
    for order in _orders(nodes, view):
        if order in seen:
            continue
        seen.add(order)
        tried += 1
        plan = plan_drain(view, order, opts)
        if best is None or plan.score() < best.score():
            best = plan
    assert best is not None
    best.orders_tried = tried
    best.given_order = list(nodes)
    if not best.finishes and len(nodes) > 1:
        best.reason = _never(best)
    return best


def _never(plan: DrainPlan) -> str:
    """The reason, naming the nodes that cannot go even in the best order played."""
    cannot = [n.name for n in plan.nodes if not n.finishes]
    return (
        f"no order of the {len(plan.nodes)} nodes played drains them all; at best"
        f" {', '.join(cannot)} cannot go: {plan.reason}"
    )
