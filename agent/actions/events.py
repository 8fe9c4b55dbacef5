"""The agent's Events: the kubelet's Warning ``Evicted`` on the pod it evicts, and
``EvictionHeldBack`` on a pod the brake kept, as ``events.k8s.io/v1`` Events through
``evictor.api.calls.send``. A failed write is logged, never an error: it must not stop an
eviction.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, Final

from agent import DOMAIN
from agent.eviction import EvictionDecision
from agent.logs import pod_ref
from evictor.api.calls import path_segment, send
from kube.times import format_micro_time

__all__ = ["HELD_BACK_REASON", "REPORTING_CONTROLLER", "EventWriter", "build_event"]

log = logging.getLogger(__name__)

REPORTING_CONTROLLER: Final = f"{DOMAIN}/eviction-agent"
EVENT_ACTION: Final = "Evict"
HELD_BACK_REASON: Final = "EvictionHeldBack"
_NOTE_LIMIT: Final = 1024
# how long an Evicted Event is remembered, so a retried eviction does not repeat it
_EVENTED_FOR: Final = 3600.0


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

    By default the kubelet's ``Evicted`` Event with the decision's message and annotations
    (``offending_containers``, ``offending_containers_usage``, ``starved_resource``);
    ``reason`` and ``note`` replace them (``EvictionHeldBack`` when the brake holds the
    decision back).
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


class EventWriter:
    """Writes one node's eviction Events (nothing in dry run or without an API client)."""

    def __init__(
        self,
        api_client: Any,
        *,
        node_name: str,
        dry_run: bool = False,
        request_timeout: float = 5.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.api_client = api_client
        self.node_name = node_name
        self.dry_run = dry_run
        self.request_timeout = request_timeout
        self.clock = clock
        # UIDs whose Evicted event was written: a retried eviction does not repeat it.
        self._evented: dict[str, float] = {}

    async def _send(self, body: dict[str, Any]) -> Any:
        namespace = path_segment(body["metadata"]["namespace"])
        return await send(
            self.api_client,
            "POST",
            f"/apis/events.k8s.io/v1/namespaces/{namespace}/events",
            body=body,
            timeout=self.request_timeout,
        )

    async def evicted(self, decision: EvictionDecision) -> bool:
        """The kubelet's ``Evicted`` Event, once per pod; whether it is written."""
        pod = decision.pod
        if pod.uid and pod.uid in self._evented:
            return True
        now = self.clock()
        body = build_event(decision, node_name=self.node_name, now=now)
        try:
            resp = await self._send(body)
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
                if now - at > _EVENTED_FOR:
                    del self._evented[uid]
            self._evented[pod.uid] = now
        return True

    async def held_back(self, decision: EvictionDecision, note: str) -> bool:
        """A Warning Event ``EvictionHeldBack`` on the pod the brake kept."""
        pod = decision.pod
        if self.dry_run or self.api_client is None:
            return True
        body = build_event(
            decision, node_name=self.node_name, now=self.clock(), reason=HELD_BACK_REASON, note=note
        )
        body["metadata"]["annotations"] = {}
        try:
            resp = await self._send(body)
        except Exception as exc:
            log.warning("held-back event not written", extra={"pod": pod_ref(pod), "err": str(exc)})
            return False
        if not resp.ok:
            log.warning(
                "held-back event rejected",
                extra={"pod": pod_ref(pod), "err": f"{resp.status} {resp.message}"},
            )
        return bool(resp.ok)
