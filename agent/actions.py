"""Carrying out one eviction decision against the API, as the kubelet's ``evictPod`` does.

The kubelet (spec §6) refuses critical pods, records a Warning Event ``Evicted`` with the
annotations ``offending_containers``/``offending_containers_usage``/``starved_resource``, then
kills the pod and writes ``DisruptionTarget`` (reason ``TerminationByKubelet``) with the same
message. The agent is not the kubelet, so it works through the API:

- ``--eviction-mode=delete`` (default, the kubelet's semantics — PodDisruptionBudgets are not
  consulted): Event, then the ``DisruptionTarget`` condition through ``pods/status`` (reason
  ``TerminationByNodePressureAgent``, so dashboards can tell who evicted), then DELETE with a UID
  precondition (a same-name replacement is never hit) and the decision's grace period.
- ``--eviction-mode=eviction-api``: soft evictions go through the Eviction API, so PDBs are
  respected (the API server adds its own DisruptionTarget condition; the Event is written after the
  eviction is accepted, so a budget that blocks for hours does not leave a false "Evicted"). Under a
  hard threshold one Eviction is tried and a 429 falls back to the delete path — a node running out
  of memory does not wait for a budget.

Grace: the kubelet's raw override (1 s hard; soft ``min(evictionMaxPodGracePeriod, pod TGPS)``)
goes through the pod worker's rules (``effective_grace_period_seconds``): 0 means the pod's own
grace (30 s if unset) and anything below 1 becomes 1 — so ``--eviction-max-pod-grace-period=0``
gives soft evictions the pod's full grace and a negative value gives 1 s (#118172).

A failed Event or condition write is logged and never stops the eviction. ``--dry-run`` writes
nothing. Every write goes through ``evictor`` or one bounded request here.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote

from agent import DOMAIN
from agent.eviction import EvictionDecision, effective_grace_period_seconds
from agent.eviction.pods import is_critical_pod
from agent.eviction.preference import is_eviction_forbidden
from agent.logs import pod_ref
from evictor.api.calls import MERGE_PATCH, STRATEGIC_MERGE_PATCH, send
from kube.objects import Pod
from kube.times import format_micro_time, format_time

__all__ = [
    "DISRUPTION_REASON",
    "HELD_BACK_REASON",
    "NODE_CONDITION_PREFIX",
    "NODE_WRITE_RETRY",
    "OUTCOMES",
    "PRESSURE_TAINTS",
    "REPORTING_CONTROLLER",
    "ActionResult",
    "Actions",
    "build_event",
]

log = logging.getLogger(__name__)

REPORTING_CONTROLLER: Final = f"{DOMAIN}/eviction-agent"
DISRUPTION_REASON: Final = "TerminationByNodePressureAgent"
NODE_CONDITION_PREFIX: Final = "NodePressureAgent"
EVENT_ACTION: Final = "Evict"
HELD_BACK_REASON: Final = "EvictionHeldBack"
# ``--node-taints``: our own keys, as the node lifecycle controller maps the kubelet's conditions
# to ``node.kubernetes.io/memory-pressure:NoSchedule`` (TaintNodesByCondition) — never its keys.
PRESSURE_TAINTS: Final = {
    "MemoryPressure": f"{DOMAIN}/memory-pressure",
    "DiskPressure": f"{DOMAIN}/disk-pressure",
    "PIDPressure": f"{DOMAIN}/pid-pressure",
}
TAINT_EFFECT: Final = "NoSchedule"
_TAINT_CONFLICT_RETRIES: Final = 5
# A node write that failed is tried again, with the same content, no sooner than this: the
# kubelet's nodeStatusUpdateFrequency (10 s), not on every 1 s sync while the API server is down.
NODE_WRITE_RETRY: Final = 10.0
_NOTE_LIMIT: Final = 1024


def _seg(value: str) -> str:
    """One URL path segment."""
    return quote(value, safe="")


def build_event(
    decision: EvictionDecision,
    *,
    node_name: str,
    now: float,
    uid: str = "",
    reason: str = "",
    note: str = "",
) -> dict[str, Any]:
    """An ``events.k8s.io/v1`` Event that kube-apiserver's validation accepts.

    By default the kubelet's ``Evicted`` Event with the decision's message; ``reason`` and
    ``note`` replace them (``EvictionHeldBack`` when the brake holds the decision back).
    """
    pod = decision.pod
    note = note or decision.message
    if len(note.encode()) > _NOTE_LIMIT:
        note = note.encode()[: _NOTE_LIMIT - 3].decode(errors="ignore") + "..."
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {
            "name": f"{pod.name[:200].rstrip('-.') or 'pod'}.{time.time_ns():x}",
            "namespace": pod.namespace,
            "annotations": dict(decision.annotations),
        },
        "eventTime": format_micro_time(now),
        "reportingController": REPORTING_CONTROLLER,
        "reportingInstance": f"eviction-agent-{node_name}"[:128],
        "action": EVENT_ACTION,
        "reason": reason or decision.reason or "Evicted",
        "type": "Warning",
        "note": note,
        "regarding": {
            "apiVersion": "v1",
            "kind": "Pod",
            "namespace": pod.namespace,
            "name": pod.name,
            "uid": uid or pod.uid,
        },
        "related": {"apiVersion": "v1", "kind": "Node", "name": node_name},
    }


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


@dataclass(slots=True)
class _FailedWrite:
    """The last node write that failed, so the same one is not sent again at once."""

    state: dict[str, bool] | None = None
    at: float = -math.inf

    def note(self, state: dict[str, bool], at: float) -> None:
        self.state, self.at = state, at

    def clear(self) -> None:
        self.state = None

    def holds(self, state: dict[str, bool], now: float) -> bool:
        """True while ``state`` is the one that failed less than ``NODE_WRITE_RETRY`` ago."""
        return self.state == state and now - self.at < NODE_WRITE_RETRY


class Actions:
    """Writes for one node. ``evictor`` is an ``evictor.client.Evictor`` over the same client."""

    def __init__(
        self,
        api_client: Any,
        *,
        node_name: str,
        mode: str = "delete",
        dry_run: bool = False,
        evictor: Any = None,
        request_timeout: float = 5.0,
        clock: Callable[[], float] = time.time,
        preference_namespaces: Collection[str] = (),
        node_status_report_frequency: float = 300.0,
        rng: random.Random | None = None,
    ) -> None:
        if mode not in ("delete", "eviction-api"):
            raise ValueError(f"eviction mode {mode!r}: must be delete or eviction-api")
        self.node_name = node_name
        # where ``eviction-preference: never`` is honoured: the manager's setting, checked again
        # here as the last guard before a write
        self.preference_namespaces = frozenset(preference_namespaces)
        self.mode = mode
        self.dry_run = dry_run
        self.request_timeout = request_timeout
        self.clock = clock
        self.api_client = api_client
        if api_client is not None and evictor is None:
            from evictor.client import Evictor

            evictor = Evictor(api_client)
        self.evictor = evictor
        self.node_status_report_frequency = node_status_report_frequency
        self.rng = rng if rng is not None else random.Random()
        self._node_conditions: dict[str, bool] = {}
        self._conditions_due = -math.inf  # when unchanged conditions are written again
        self._conditions_failed = _FailedWrite()
        self._condition_lock = asyncio.Lock()
        self._node_taints: dict[str, bool] | None = None
        self._taints_failed = _FailedWrite()
        self._taint_lock = asyncio.Lock()
        # UIDs whose Evicted event was written: a retried eviction does not repeat it.
        self._evented: dict[str, float] = {}

    # --- one decision --------------------------------------------------------------------------

    async def execute(
        self, decision: EvictionDecision, *, hard: bool, deadline: float
    ) -> ActionResult:
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
        from evictor.result import Outcome

        pod = decision.pod
        event_ok = await self.write_event(decision) if event else False
        condition_ok = False
        if decision.condition is not None:
            status = await self.write_condition(decision)
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
            event_ok = await self.write_event(decision)
        return ActionResult(
            outcome, "delete", result.message, grace, event_ok, condition_ok, requested
        )

    async def _via_eviction_api(
        self, decision: EvictionDecision, grace: int, *, hard: bool, deadline: float
    ) -> ActionResult:
        from evictor.api.calls import TransportError
        from evictor.result import Outcome

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
            event_ok = await self.write_event(decision)
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

    # --- writes that must never stop an eviction ---------------------------------------------

    async def _raw(
        self, method: str, path: str, body: Any, *, content_type: str = "application/json"
    ) -> Any:
        return await send(
            self.api_client,
            method,
            path,
            body=body,
            content_type=content_type,
            timeout=self.request_timeout,
        )

    async def write_event(self, decision: EvictionDecision) -> bool:
        pod = decision.pod
        if pod.uid and pod.uid in self._evented:
            return True
        now = self.clock()
        body = build_event(decision, node_name=self.node_name, now=now)
        try:
            resp = await self._raw(
                "POST", f"/apis/events.k8s.io/v1/namespaces/{_seg(pod.namespace)}/events", body
            )
        except Exception as exc:
            log.warning("eviction event not written", extra={"pod": pod_ref(pod), "err": str(exc)})
            return False
        if not resp.ok:
            log.warning(
                "eviction event rejected",
                extra={"pod": pod_ref(pod), "err": f"{resp.status} {resp.message}"},
            )
            return False
        if pod.uid:
            for uid, at in list(self._evented.items()):
                if now - at > 3600:
                    del self._evented[uid]
            self._evented[pod.uid] = now
        return True

    async def write_held_back_event(self, decision: EvictionDecision, note: str) -> bool:
        """A Warning Event ``EvictionHeldBack`` on the pod the brake kept (nothing in dry run)."""
        pod = decision.pod
        if self.dry_run or self.api_client is None:
            return True
        body = build_event(
            decision, node_name=self.node_name, now=self.clock(), reason=HELD_BACK_REASON, note=note
        )
        body["metadata"]["annotations"] = {}
        try:
            resp = await self._raw(
                "POST", f"/apis/events.k8s.io/v1/namespaces/{_seg(pod.namespace)}/events", body
            )
        except Exception as exc:
            log.warning("held-back event not written", extra={"pod": pod_ref(pod), "err": str(exc)})
            return False
        if not resp.ok:
            log.warning(
                "held-back event rejected",
                extra={"pod": pod_ref(pod), "err": f"{resp.status} {resp.message}"},
            )
        return bool(resp.ok)

    async def write_condition(self, decision: EvictionDecision) -> int | None:
        """Patch the DisruptionTarget condition; the HTTP status, None without an answer."""
        cond = decision.condition
        assert cond is not None
        pod = decision.pod
        body: dict[str, Any] = {
            "status": {
                "conditions": [
                    {
                        "type": cond.type,
                        "status": cond.status,
                        "reason": DISRUPTION_REASON,
                        "message": cond.message,
                        "lastTransitionTime": format_time(self.clock()),
                    }
                ]
            }
        }
        if pod.uid:
            body["metadata"] = {"uid": pod.uid}
        try:
            resp = await self._raw(
                "PATCH",
                f"/api/v1/namespaces/{_seg(pod.namespace)}/pods/{_seg(pod.name)}/status",
                body,
                content_type=STRATEGIC_MERGE_PATCH,
            )
        except Exception as exc:
            log.warning(
                "DisruptionTarget condition not written",
                extra={"pod": pod_ref(pod), "err": str(exc)},
            )
            return None
        if not resp.ok:
            log.warning(
                "DisruptionTarget condition rejected",
                extra={"pod": pod_ref(pod), "err": f"{resp.status} {resp.message}"},
            )
        status: int = resp.status
        return status

    async def report_node_conditions(
        self, active: Mapping[str, bool], *, stopped: bool = False
    ) -> bool:
        """``--node-conditions``: our own condition types, so we never fight the kubelet's.

        Written at once when a condition changes; unchanged, only once
        ``node_status_report_frequency`` seconds (on ``clock``) have passed since the last
        write, refreshing ``lastHeartbeatTime`` — the kubelet's ``nodeStatusReportFrequency``
        (``tryUpdateNodeStatus`` in pkg/kubelet/kubelet_node_status.go), so a fleet of agents
        costs the API server what the kubelets' own status does. As the kubelet's
        ``delayAfterNodeStatusChange``, the first report after a change (or the agent's start)
        comes a random ±50 % of the period later: agents restarted together do not keep
        writing together. A failed write of the same state is tried again no sooner than
        ``NODE_WRITE_RETRY``.
        ``stopped`` writes every condition ``False`` with reason ``NodePressureAgentStopped``:
        a condition left ``True`` by an agent that is gone would be believed for good.
        """
        if self.dry_run or self.api_client is None:
            return True
        async with self._condition_lock:
            now_s = self.clock()
            state = {name: bool(on) and not stopped for name, on in active.items()}
            changed = state != self._node_conditions
            if not stopped:
                if not changed and now_s < self._conditions_due:
                    return True
                if self._conditions_failed.holds(state, now_s):
                    return False
            now = format_time(now_s)
            conditions = []
            for name, on in sorted(state.items()):
                previous = self._node_conditions.get(name)
                if stopped:
                    reason = f"{NODE_CONDITION_PREFIX}Stopped"
                    message = f"eviction-agent stopped: {name} is no longer reported by it"
                elif on:
                    reason = f"{NODE_CONDITION_PREFIX}{name}"
                    message = f"eviction-agent reports {name}"
                else:
                    reason = f"NodeHasNo{name}"
                    message = f"eviction-agent reports no {name}"
                cond = {
                    "type": f"{NODE_CONDITION_PREFIX}{name}",
                    "status": "True" if on else "False",
                    "reason": reason,
                    "message": message,
                    "lastHeartbeatTime": now,
                }
                if previous is None or previous != on:
                    cond["lastTransitionTime"] = now
                conditions.append(cond)
            body = {"status": {"conditions": conditions}}
            try:
                resp = await self._raw(
                    "PATCH",
                    f"/api/v1/nodes/{_seg(self.node_name)}/status",
                    body,
                    content_type=STRATEGIC_MERGE_PATCH,
                )
            except Exception as exc:
                log.warning("node conditions not written", extra={"err": str(exc)})
                self._conditions_failed.note(state, now_s)
                return False
            if not resp.ok:
                log.warning(
                    "node conditions rejected", extra={"err": f"{resp.status} {resp.message}"}
                )
                self._conditions_failed.note(state, now_s)
                return False
            period = self.node_status_report_frequency
            jitter = period * (self.rng.random() - 0.5) if changed else 0.0
            self._conditions_due = now_s + period + jitter
            self._node_conditions = state
            self._conditions_failed.clear()
            return True

    async def report_node_taints(
        self, active: Mapping[str, bool], *, stopped: bool = False
    ) -> bool:
        """``--node-taints``: our ``NoSchedule`` taint per pressure while it lasts.

        ``spec.taints`` has no strategic-merge key (the list is replaced whole), so the node is
        read and written back with its ``resourceVersion``: a 409 (the kubelet, the node
        lifecycle controller or an operator changed the node meanwhile) reads it again.
        Taints of other owners are kept as they are. The node is read only when the pressure
        changes (and once at start), never on every sync; a failed attempt at the same state is
        tried again no sooner than ``NODE_WRITE_RETRY`` (``stopped``, the agent's farewell, is
        tried whatever failed before).
        """
        if self.dry_run or self.api_client is None:
            return True
        async with self._taint_lock:
            state = dict(active)
            if state == self._node_taints:
                return True
            now = self.clock()
            if not stopped and self._taints_failed.holds(state, now):
                return False
            for _ in range(_TAINT_CONFLICT_RETRIES):
                status = await self._sync_taints(active)
                if status == 409:
                    continue
                if status is not None and 200 <= status < 300:
                    self._node_taints = state
                    self._taints_failed.clear()
                    return True
                break
            else:
                log.warning("node taints not written: conflicts", extra={"node": self.node_name})
            self._taints_failed.note(state, now)
            return False

    async def _sync_taints(self, active: Mapping[str, bool]) -> int | None:
        path = f"/api/v1/nodes/{_seg(self.node_name)}"
        try:
            resp = await self._raw("GET", path, None)
        except Exception as exc:
            log.warning("node taints: node not read", extra={"err": str(exc)})
            return None
        if not resp.ok or not isinstance(resp.body, dict):
            log.warning(
                "node taints: node not read", extra={"err": f"{resp.status} {resp.message}"}
            )
            return None
        node = resp.body
        taints = [t for t in (node.get("spec") or {}).get("taints") or [] if isinstance(t, dict)]
        ours = {
            PRESSURE_TAINTS[name] for name, on in active.items() if on and name in PRESSURE_TAINTS
        }
        managed = set(PRESSURE_TAINTS.values())
        kept = [
            t
            for t in taints
            if t.get("key") not in managed
            or (t.get("key") in ours and t.get("effect") == TAINT_EFFECT)
        ]
        present = {t.get("key") for t in kept}
        wanted = kept + [
            {"key": key, "effect": TAINT_EFFECT} for key in sorted(ours) if key not in present
        ]
        if wanted == taints:
            return 200
        body = {
            "metadata": {"resourceVersion": (node.get("metadata") or {}).get("resourceVersion")},
            "spec": {"taints": wanted},
        }
        try:
            resp = await self._raw("PATCH", path, body, content_type=MERGE_PATCH)
        except Exception as exc:
            log.warning("node taints not written", extra={"err": str(exc)})
            return None
        if resp.ok:
            log.info(
                "node taints updated",
                extra={"node": self.node_name, "taints": sorted(ours)},
            )
        elif resp.status != 409:
            log.warning("node taints rejected", extra={"err": f"{resp.status} {resp.message}"})
        status: int = resp.status
        return status


def describe(pod: Pod) -> str:
    return f"{pod.namespace}/{pod.name}"
