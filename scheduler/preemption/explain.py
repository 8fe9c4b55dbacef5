"""Why each node was or was not chosen, kept cheap and rendered only when asked.

A decision over 5000 nodes must not format 5000 lines it will usually never show, so
``Explanation`` keeps references to what the decision saw — the node names, the Filter status
each node came with, and the dry-run outcome per node (immutable values) — and derives the
per-node verdicts on ``nodes()`` / ``lines()`` / ``str()``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from kube.objects import Pod
from kube.times import format_time
from scheduler.framework import Code, Status
from scheduler.preemption.core import (
    NOT_HELPFUL_MESSAGE,
    PICK_CRITERIA,
    NodeOutcome,
    PickKey,
    eliminating_criterion,
)

__all__ = ["Explanation", "NodeVerdict", "Verdict"]

Verdict = Literal[
    "chosen",  # the nominated node
    "outranked",  # a candidate that lost on ``criterion``
    "dropped",  # a candidate beyond the bounded candidate list (sampled mode)
    "not_candidate",  # victim selection failed; ``reason`` is its status
    "not_considered",  # its Filter status was not Unschedulable
    "not_evaluated",  # the sampled search stopped before reaching it
]
"""``NodeVerdict.verdict``: what preemption made of one node."""


@dataclass(frozen=True, slots=True)
class NodeVerdict:
    node: str
    verdict: Verdict
    reason: str
    victims: tuple[Pod, ...] = ()
    num_pdb_violations: int = 0
    criterion: int | None = None  # index in PICK_CRITERIA, 5 = full tie (order decided)


def _fmt_start(neg_start: float) -> str:
    t = -neg_start
    return "unset (now)" if math.isinf(t) else format_time(t)


def _criterion_values(c: int, key: PickKey, winner: PickKey) -> str:
    if c == 4:
        return f"{_fmt_start(key[4])} vs {_fmt_start(winner[4])}"
    return f"{key[c]} vs {winner[c]}"


class Explanation:
    """The reasons behind one ``preempt`` decision.

    ``summary`` is always set. Per-node data is present when the decision reached the node
    evaluation; ``nodes()`` lists a ``NodeVerdict`` per node in snapshot order.
    """

    __slots__ = (
        "_chosen",
        "_dropped",
        "_names",
        "_nodes",
        "_outcomes",
        "_statuses",
        "_summary",
        "_visited",
        "mode",
    )

    def __init__(
        self,
        summary: str | Callable[[], str],
        *,
        mode: str = "exhaustive",
        names: Sequence[str] = (),
        statuses: Sequence[Status] = (),
        outcomes: Sequence[NodeOutcome | None] | Mapping[int, NodeOutcome] = (),
        chosen: int = -1,
        dropped: frozenset[int] = frozenset(),
        visited: Callable[[int], bool] | None = None,
    ) -> None:
        self._summary = summary
        self.mode = mode
        self._names = names
        self._statuses = statuses
        self._outcomes = outcomes
        self._chosen = chosen
        self._dropped = dropped
        self._visited = visited
        self._nodes: list[NodeVerdict] | None = None

    @property
    def summary(self) -> str:
        """One line: the decision and its reason."""
        if not isinstance(self._summary, str):
            self._summary = self._summary()
        return self._summary

    @summary.setter
    def summary(self, value: str | Callable[[], str]) -> None:
        self._summary = value

    @property
    def chosen_node(self) -> str:
        return self._names[self._chosen] if self._chosen >= 0 else ""

    def _outcome(self, i: int) -> NodeOutcome | None:
        outcomes = self._outcomes
        if isinstance(outcomes, Mapping):
            return outcomes.get(i)
        return outcomes[i] if i < len(outcomes) else None

    def nodes(self) -> list[NodeVerdict]:
        if self._nodes is None:
            self._nodes = [self._verdict(i) for i in range(len(self._names))]
        return self._nodes

    def verdict(self, node: str) -> NodeVerdict | None:
        for v in self.nodes():
            if v.node == node:
                return v
        return None

    def _verdict(self, i: int) -> NodeVerdict:
        name = self._names[i]
        filter_status = self._statuses[i]
        if filter_status.code is not Code.Unschedulable:
            why = filter_status.message or filter_status.code.name
            return NodeVerdict(name, "not_considered", f"{NOT_HELPFUL_MESSAGE} (Filter: {why})")
        out = self._outcome(i)
        if out is None or (self._visited is not None and not self._visited(i)):
            return NodeVerdict(name, "not_evaluated", "the sampled search stopped before this node")
        cand = out.candidate
        if cand is None:
            status = out.status
            why = (status.message or status.code.name) if status is not None else "unknown"
            return NodeVerdict(name, "not_candidate", why)
        victims = tuple(cand.victims.pods)
        nviol = cand.victims.num_pdb_violations
        if i == self._chosen:
            return NodeVerdict(name, "chosen", "nominated", victims, nviol)
        if i in self._dropped:
            return NodeVerdict(
                name, "dropped", "the bounded candidate list was already full", victims, nviol
            )
        winner = self._outcome(self._chosen) if self._chosen >= 0 else None
        if winner is None or winner.key is None or out.key is None:
            return NodeVerdict(name, "outranked", "not chosen", victims, nviol)
        c = eliminating_criterion(out.key, winner.key)
        other = self._names[self._chosen]
        if c == len(PICK_CRITERIA):
            reason = (
                f"tied with {other} on every criterion; the earlier candidate in visiting"
                " order was chosen"
            )
        else:
            values = _criterion_values(c, out.key, winner.key)
            reason = f"{PICK_CRITERIA[c]}: {values} on {other}"
        return NodeVerdict(name, "outranked", reason, victims, nviol, c)

    def lines(self) -> list[str]:
        out = [self.summary]
        for v in self.nodes():
            text = f"  {v.node}: {v.verdict.replace('_', ' ')}: {v.reason}"
            if v.victims:
                keys = ", ".join(p.key for p in v.victims)
                text += f" [victims: {keys}; PDB violations: {v.num_pdb_violations}]"
            out.append(text)
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def __repr__(self) -> str:
        return f"<Explanation {self.summary!r}>"
