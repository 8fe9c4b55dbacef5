"""Carrying out one eviction decision against the API, as the kubelet's ``evictPod`` does.

The kubelet refuses critical pods, records a Warning Event ``Evicted``, then kills the pod and
writes its ``DisruptionTarget`` condition (``pkg/kubelet/eviction/eviction_manager.go``,
``evictPod``). The agent is not the kubelet, so it works through the API — DELETE or the
Eviction API through ``evictor.client.Evictor``, the Event and the condition through
``agent.actions.events`` and ``agent.actions.disruption`` — as ``PodEviction.execute`` says.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, Final

from agent.actions.disruption import DisruptionTargetWriter
from agent.actions.events import EventWriter
from agent.config import EVICTION_MODES
from agent.eviction import EvictionDecision, effective_grace_period_seconds
from agent.eviction.pods import is_critical_pod
from agent.eviction.preference import is_eviction_forbidden
from agent.logs import pod_ref
from evictor.api.calls import TransportError
from evictor.result import Outcome

__all__ = ["OUTCOMES", "ActionResult", "PodEviction"]

log = logging.getLogger(__name__)


# every ActionResult.outcome, in the order of its docstring (the metrics start each at 0)
OUTCOMES: Final = ("evicted", "already_gone", "dry_run", "refused", "blocked", "failed")


@dataclass(frozen=True, slots=True)
class ActionResult:
    """How one decision ended.

    ``outcome`` (one of ``OUTCOMES``): ``evicted`` (delete or eviction accepted),
    ``already_gone``, ``dry_run``, ``refused`` (critical / ``never``), ``blocked`` (PDB,
    eviction-api soft), ``failed``.
    """

    outcome: str
    method: str = ""
    message: str = ""
    grace_period_seconds: int = 0
    event_written: bool = False
    condition_written: bool = False
    requested_at: float = 0.0

    @property
    def done(self) -> bool:
        return self.outcome in ("evicted", "already_gone")


class PodEviction:
    """Evicts the manager's decisions on one node, one ``execute`` at a time.

    ``evictor`` is an ``evictor.client.Evictor`` (its ``delete`` and ``evict``); ``events`` and
    ``disruption`` write the Event and the ``DisruptionTarget`` condition.
    """

    def __init__(
        self,
        evictor: Any,
        *,
        events: EventWriter,
        disruption: DisruptionTargetWriter,
        mode: str = "delete",
        dry_run: bool = False,
        preference_namespaces: Collection[str] = (),
        clock: Callable[[], float] = time.time,
    ) -> None:
        if mode not in EVICTION_MODES:
            raise ValueError(f"eviction mode {mode!r}: must be delete or eviction-api")
        self.evictor = evictor
        self.events = events
        self.disruption = disruption
        self.mode = mode
        self.dry_run = dry_run
        # where ``eviction-preference: never`` is honoured: the manager's setting, checked again
        # here as the last guard before a write
        self.preference_namespaces = frozenset(preference_namespaces)
        self.clock = clock

    async def execute(
        self, decision: EvictionDecision, *, hard: bool, deadline: float
    ) -> ActionResult:
        """Evict the decision's pod; how it ended. Never a protected pod (critical, or
        ``eviction-preference: never`` where the operator allows it); ``dry_run`` writes
        nothing.

        - ``--eviction-mode=delete`` (default, the kubelet's semantics — PodDisruptionBudgets
          are not consulted): the Event, then ``DisruptionTarget``, then DELETE with a UID
          precondition (a same-name replacement is never hit) and the decision's grace period.
        - ``--eviction-mode=eviction-api``: soft evictions go through the Eviction API, so
          budgets are respected (the API server adds its own DisruptionTarget; the Event is
          written once the eviction is accepted, so a budget that blocks for hours leaves no
          false "Evicted"). Under a hard threshold one Eviction is tried and a 429 falls back
          to the delete path: a node running out of memory does not wait for a budget.

        Grace: the kubelet's raw override (1 s hard; soft ``min(evictionMaxPodGracePeriod, pod
        TGPS)``) goes through the pod worker's rules (``effective_grace_period_seconds``): 0
        means the pod's own grace (30 s if unset) and anything below 1 becomes 1 — so
        ``--eviction-max-pod-grace-period=0`` gives soft evictions the pod's full grace and a
        negative value 1 s (https://github.com/kubernetes/kubernetes/issues/118172). A failed
        Event or condition write is logged and never stops the eviction.
        """
        pod = decision.pod
        extra = {"pod": pod_ref(pod), "signal": decision.signal}
        if is_critical_pod(pod) or is_eviction_forbidden(pod, allowed=self.preference_namespaces):
            log.error("refusing to evict a protected pod", extra=extra)
            return ActionResult("refused", message="critical or eviction-preference: never")
        grace = effective_grace_period_seconds(decision.grace_period_override, pod)
        if self.dry_run:
            log.info(
                "dry run: would evict pod",
                extra={
                    **extra,
                    "grace": grace,
                    "eviction_message": decision.message,
                    "mode": self.mode,
                },
            )
            return ActionResult("dry_run", grace_period_seconds=grace)
        if self.mode == "eviction-api":
            return await self._via_eviction_api(decision, grace, hard=hard, deadline=deadline)
        return await self._via_delete(decision, grace, deadline=deadline)

    async def _via_delete(
        self, decision: EvictionDecision, grace: int, *, deadline: float, event: bool = True
    ) -> ActionResult:
        pod = decision.pod
        event_ok = await self.events.evicted(decision) if event else False
        condition_ok = False
        if decision.condition is not None:
            status = await self.disruption.write(decision)
            if status == 404:
                return ActionResult("already_gone", "delete", "pod not found", grace, event_ok)
            condition_ok = status is not None and 200 <= status < 300
        requested = self.clock()
        log.info(
            "evicting pod",
            extra={"pod": pod_ref(pod), "signal": decision.signal, "grace": grace},
        )
        result = await self.evictor.delete(
            pod.namespace,
            pod.name,
            grace_period_seconds=grace,
            expected_uid=pod.uid or None,
            deadline=deadline,
        )
        outcome = {
            Outcome.EVICTED: "evicted",
            Outcome.ALREADY_GONE: "already_gone",
            Outcome.POD_REPLACED: "already_gone",
        }.get(result.outcome, "failed")
        if outcome == "evicted" and event and not event_ok:
            # the API came back while the delete was retried: record the eviction after all
            event_ok = await self.events.evicted(decision)
        return ActionResult(
            outcome, "delete", result.message, grace, event_ok, condition_ok, requested
        )

    async def _via_eviction_api(
        self, decision: EvictionDecision, grace: int, *, hard: bool, deadline: float
    ) -> ActionResult:
        pod = decision.pod
        requested = self.clock()
        log.info(
            "evicting pod through the Eviction API",
            extra={"pod": pod_ref(pod), "signal": decision.signal, "grace": grace, "hard": hard},
        )
        try:
            result = await self.evictor.evict(
                pod.namespace,
                pod.name,
                grace_period_seconds=grace,
                expected_uid=pod.uid or None,
                deadline=deadline,
                max_attempts=1 if hard else None,
            )
        except (TransportError, TimeoutError) as exc:
            return ActionResult("failed", "eviction", str(exc), grace, requested_at=requested)
        if result.outcome is Outcome.EVICTED:
            event_ok = await self.events.evicted(decision)
            return ActionResult(
                "evicted", "eviction", result.message, grace, event_ok, True, requested
            )
        if result.outcome in (Outcome.ALREADY_GONE, Outcome.POD_REPLACED):
            return ActionResult("already_gone", "eviction", result.message, grace)
        if hard and (result.status_code == 429 or result.outcome is Outcome.BLOCKED_BY_PDB):
            log.warning(
                "eviction refused under a hard threshold, deleting",
                extra={"pod": pod_ref(pod), "signal": decision.signal, "err": result.message},
            )
            return await self._via_delete(decision, grace, deadline=deadline)
        if result.outcome is Outcome.BLOCKED_BY_PDB:
            return ActionResult(
                "blocked", "eviction", result.message, grace, requested_at=requested
            )
        return ActionResult("failed", "eviction", result.message, grace, requested_at=requested)
