"""The ``DisruptionTarget`` condition on a pod the agent deletes, through ``pods/status``.

The kubelet writes it when it evicts (``PodDisruptionConditions``), with the reason
``TerminationByKubelet``; the agent writes ``TerminationByNodePressureAgent``, so dashboards can
tell who evicted. Through the Eviction API the API server writes its own instead.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, Final

from agent.eviction import EvictionDecision
from agent.logs import pod_ref
from evictor.api.calls import STRATEGIC_MERGE_PATCH, path_segment, send
from kube.times import format_time

__all__ = ["DISRUPTION_REASON", "DisruptionTargetWriter"]

log = logging.getLogger(__name__)

DISRUPTION_REASON: Final = "TerminationByNodePressureAgent"


class DisruptionTargetWriter:
    """Patches a decision's ``DisruptionTarget`` condition onto its pod."""

    def __init__(
        self,
        api_client: Any,
        *,
        request_timeout: float = 5.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.api_client = api_client
        self.request_timeout = request_timeout
        self.clock = clock

    async def write(self, decision: EvictionDecision) -> int | None:
        """The HTTP status of the patch, None without an answer (logged, never raised). The
        pod's UID is a precondition: a same-name replacement is never marked."""
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
        path = (
            f"/api/v1/namespaces/{path_segment(pod.namespace)}/pods/{path_segment(pod.name)}/status"
        )
        try:
            resp = await send(
                self.api_client,
                "PATCH",
                path,
                body=body,
                content_type=STRATEGIC_MERGE_PATCH,
                timeout=self.request_timeout,
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
