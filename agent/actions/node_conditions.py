"""``--node-conditions``: the agent's own pressure conditions on its Node, through
``nodes/status`` — its own condition types (``NodePressureAgentMemoryPressure``…), so it never
fights the kubelet over the kubelet's.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from evictor.api.calls import STRATEGIC_MERGE_PATCH, path_segment, send
from kube.times import format_time

__all__ = ["NODE_CONDITION_PREFIX", "NODE_WRITE_RETRY", "FailedWrite", "NodeConditions"]

log = logging.getLogger(__name__)

NODE_CONDITION_PREFIX: Final = "NodePressureAgent"
# A node write that failed is tried again, with the same content, no sooner than this: the
# kubelet's nodeStatusUpdateFrequency (10 s), not on every 1 s sync while the API server is down.
NODE_WRITE_RETRY: Final = 10.0


@dataclass(slots=True)
class FailedWrite:
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


class NodeConditions:
    """Reports one node's pressure conditions (nothing in dry run or without an API client)."""

    def __init__(
        self,
        api_client: Any,
        *,
        node_name: str,
        dry_run: bool = False,
        report_frequency: float = 300.0,
        request_timeout: float = 5.0,
        clock: Callable[[], float] = time.time,
        rng: random.Random | None = None,
    ) -> None:
        self.api_client = api_client
        self.node_name = node_name
        self.dry_run = dry_run
        self.report_frequency = report_frequency
        self.request_timeout = request_timeout
        self.clock = clock
        self.rng = rng if rng is not None else random.Random()
        self._written: dict[str, bool] = {}
        self._due = -math.inf  # when unchanged conditions are written again
        self._failed = FailedWrite()
        self._lock = asyncio.Lock()

    async def _send(self, body: dict[str, Any]) -> Any:
        return await send(
            self.api_client,
            "PATCH",
            f"/api/v1/nodes/{path_segment(self.node_name)}/status",
            body=body,
            content_type=STRATEGIC_MERGE_PATCH,
            timeout=self.request_timeout,
        )

    async def report(self, active: Mapping[str, bool], *, stopped: bool = False) -> bool:
        """Write the conditions ``active`` says (pressure name → on); whether they are written.

        Written at once when a condition changes; unchanged, only once ``report_frequency``
        seconds (on ``clock``) have passed since the last write, refreshing
        ``lastHeartbeatTime`` — the kubelet's ``nodeStatusReportFrequency``
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
        async with self._lock:
            now_s = self.clock()
            state = {name: bool(on) and not stopped for name, on in active.items()}
            changed = state != self._written
            if not stopped:
                if not changed and now_s < self._due:
                    return True
                if self._failed.holds(state, now_s):
                    return False
            now = format_time(now_s)
            conditions = []
            for name, on in sorted(state.items()):
                previous = self._written.get(name)
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
            try:
                resp = await self._send({"status": {"conditions": conditions}})
            except Exception as exc:
                log.warning("node conditions not written", extra={"err": str(exc)})
                self._failed.note(state, now_s)
                return False
            if not resp.ok:
                log.warning(
                    "node conditions rejected", extra={"err": f"{resp.status} {resp.message}"}
                )
                self._failed.note(state, now_s)
                return False
            period = self.report_frequency
            jitter = period * (self.rng.random() - 0.5) if changed else 0.0
            self._due = now_s + period + jitter
            self._written = state
            self._failed.clear()
            return True
