"""``--node-taints``: the agent's ``NoSchedule`` taint on its Node for each pressure while it
lasts, as the node lifecycle controller taints for the kubelet's conditions
(``TaintNodesByCondition``: ``node.kubernetes.io/memory-pressure``) — under the agent's own keys,
never the controller's.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

from agent import DOMAIN
from agent.actions.node_conditions import FailedWrite
from evictor.api.calls import MERGE_PATCH, path_segment, send

__all__ = ["PRESSURE_TAINTS", "TAINT_EFFECT", "NodeTaints"]

log = logging.getLogger(__name__)

PRESSURE_TAINTS: Final = {
    "MemoryPressure": f"{DOMAIN}/memory-pressure",
    "DiskPressure": f"{DOMAIN}/disk-pressure",
    "PIDPressure": f"{DOMAIN}/pid-pressure",
}
TAINT_EFFECT: Final = "NoSchedule"
_CONFLICT_RETRIES: Final = 5


class NodeTaints:
    """Keeps one node's pressure taints (nothing in dry run or without an API client)."""

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
        self._written: dict[str, bool] | None = None
        self._failed = FailedWrite()
        self._lock = asyncio.Lock()

    async def _send(self, method: str, body: Any, *, content_type: str = "application/json") -> Any:
        return await send(
            self.api_client,
            method,
            f"/api/v1/nodes/{path_segment(self.node_name)}",
            body=body,
            content_type=content_type,
            timeout=self.request_timeout,
        )

    async def report(self, active: Mapping[str, bool], *, stopped: bool = False) -> bool:
        """Taint the node for the pressures ``active`` says are on, untaint it for the others;
        whether the node has them.

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
        async with self._lock:
            state = dict(active)
            if state == self._written:
                return True
            now = self.clock()
            if not stopped and self._failed.holds(state, now):
                return False
            for _ in range(_CONFLICT_RETRIES):
                status = await self._sync(active)
                if status == 409:
                    continue
                if status is not None and 200 <= status < 300:
                    self._written = state
                    self._failed.clear()
                    return True
                break
            else:
                log.warning("node taints not written: conflicts", extra={"node": self.node_name})
            self._failed.note(state, now)
            return False

    async def _sync(self, active: Mapping[str, bool]) -> int | None:
        try:
            resp = await self._send("GET", None)
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
            resp = await self._send("PATCH", body, content_type=MERGE_PATCH)
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
