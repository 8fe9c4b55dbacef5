"""The PodDisruptionBudgets through the played drain: which pods each selects and counts as
healthy, and whether the eviction subresource grants an eviction
(``pkg/registry/core/pod/storage/eviction.go`` in kubernetes/kubernetes).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, NamedTuple

from evictor.plan.types import BudgetPlan
from kube.objects import Pod, PodDisruptionBudget
from scheduler.snapshot import Snapshot

__all__ = ["Budget", "Budgets", "Verdict", "rule", "selects"]


def selects(pdb: PodDisruptionBudget, pod: Pod) -> bool:
    """policy/v1: ``{}`` selects every pod of the namespace, an absent selector none."""
    return pdb.namespace == pod.namespace and (
        pdb.selector is not None and pdb.selector.matches(pod.labels)
    )


def rule(pdb: PodDisruptionBudget) -> str:
    if pdb.min_available is not None:
        return f"minAvailable {pdb.min_available}"
    if pdb.max_unavailable is not None:
        return f"maxUnavailable {pdb.max_unavailable}"
    return "no rule"


def _ready(pod: Pod) -> bool:
    c = pod.condition("Ready")
    return c is not None and c.status == "True"


@dataclass(slots=True)
class Budget:
    """One budget as the play changes it: ``healthy`` the keys of the pods it counts."""

    pdb: PodDisruptionBudget
    healthy: set[str]
    start: int = 0
    lowest: int = 0

    @property
    def desired(self) -> int:
        return self.pdb.desired_healthy

    def allowed(self) -> int:
        if self.pdb.expected_pods <= 0:
            return 0
        return max(0, len(self.healthy) - self.desired)


class Verdict(NamedTuple):
    """The eviction subresource's answer: ``blocked`` names the budget, ``error`` says why."""

    outcome: Literal["granted", "blocked", "error"]
    budget: Budget | None = None
    message: str = ""


_GRANTED = Verdict("granted")


class Budgets:
    """Every budget of the cluster. The snapshot's copies (what preemption's PDB check reads)
    follow their health."""

    def __init__(self, pdbs: Iterable[PodDisruptionBudget], snapshot: Snapshot) -> None:
        self.by_key: dict[str, Budget] = {pdb.key: Budget(pdb, set()) for pdb in pdbs}
        self.touched: set[str] = set()  # those a drained pod met: the plan reports them
        self._snapshot = snapshot
        # which budgets select a pod (pods of one template share their labels)
        self._selecting: dict[tuple[str, frozenset[tuple[str, str]]], list[str]] = {}

    def count(self, pods: Iterable[Pod]) -> None:
        """The healthy pods at the start: bound, Ready, not terminating, not disrupted."""
        for p in pods:
            if p.node_name and _ready(p) and not p.is_terminating:
                for b in self.of(p):
                    if p.name not in b.pdb.disrupted_pods:
                        b.healthy.add(p.key)
        for b in self.by_key.values():
            b.start = b.lowest = len(b.healthy)

    def of(self, pod: Pod) -> list[Budget]:
        key = (pod.namespace, frozenset(pod.labels.items()))
        found = self._selecting.get(key)
        if found is None:
            found = [k for k, b in self.by_key.items() if selects(b.pdb, pod)]
            self._selecting[key] = found
        return [self.by_key[k] for k in found]

    def touched_counts(self) -> tuple[tuple[str, int], ...]:
        return tuple((k, len(self.by_key[k].healthy)) for k in sorted(self.touched))

    def healthy(self, pod: Pod) -> None:
        """``pod`` is Ready (a scheduled replacement: readiness is not modelled)."""
        for b in self.of(pod):
            b.healthy.add(pod.key)
            self._set_status(b)

    def unhealthy(self, pod: Pod) -> None:
        for b in self.of(pod):
            if pod.key in b.healthy:
                b.healthy.discard(pod.key)
                b.lowest = min(b.lowest, len(b.healthy))
                self._set_status(b)

    def _set_status(self, b: Budget) -> None:
        allowed = b.allowed()
        if allowed != b.pdb.disruptions_allowed or len(b.healthy) != b.pdb.current_healthy:
            b.pdb = b.pdb.with_changes(disruptions_allowed=allowed, current_healthy=len(b.healthy))
            self._snapshot.update_pdb(b.pdb)

    def verdict(self, pod: Pod) -> Verdict:
        """The eviction subresource's rules: a pod not Running or already terminating goes
        without a budget check; more than one matching budget is the server's 500; a pod the
        budget does not count as healthy may go under ``unhealthyPodEvictionPolicy``
        (``AlwaysAllow``, or ``IfHealthyBudget`` while the budget has what it wants);
        otherwise ``currentHealthy - desiredHealthy`` must be positive."""
        if pod.phase in ("Succeeded", "Failed", "Pending") or pod.is_terminating:
            return _GRANTED
        budgets = self.of(pod)
        if not budgets:
            return _GRANTED
        if len(budgets) > 1:
            names = ", ".join(sorted(b.pdb.name for b in budgets))
            return Verdict(
                "error",
                message="This pod has more than one PodDisruptionBudget, which the eviction"
                f" subresource does not support. ({names})",
            )
        b = budgets[0]
        self.touched.add(b.pdb.key)
        if pod.key not in b.healthy:
            policy = b.pdb.unhealthy_pod_eviction_policy
            if policy == "AlwaysAllow" or (len(b.healthy) >= b.desired and b.desired > 0):
                return _GRANTED
        if b.allowed() > 0:
            return _GRANTED
        return Verdict("blocked", b)

    def plans(self) -> list[BudgetPlan]:
        """What the plan reports of the budgets a drained pod met."""
        return [
            BudgetPlan(
                b.pdb.namespace,
                b.pdb.name,
                rule(b.pdb),
                b.desired,
                b.start,
                b.lowest,
                max(0, b.start - b.desired) if b.pdb.expected_pods > 0 else 0,
                stale=b.pdb.observed_generation < b.pdb.generation,
            )
            for b in self.by_key.values()
            if b.pdb.key in self.touched
        ]
