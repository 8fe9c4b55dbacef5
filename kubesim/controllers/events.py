"""Events as the controllers and the kubelet record them (client-go ``record.EventRecorder``).

That is what ``kubectl get events`` and ``kubectl describe`` show, so a drain on the living
cluster tells its story: ``Killing``, ``SuccessfulCreate``, ``Scheduled``, ``Started``...
Event aggregation (``count`` > 1, series) is not reproduced.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kube.times import format_time
from kubesim.core.errors import StatusError

if TYPE_CHECKING:
    from kubesim.cluster import Cluster

__all__ = ["EventRecorder"]

log = logging.getLogger("kubesim")


class EventRecorder:
    """Records events for one component (``replicaset-controller``, ``kubelet``...).

    kube-controller-manager and the kubelet write core ``v1`` Events through the legacy recorder
    (``tools/record``, ``makeEvent``): the name is ``<object>.<unix nanoseconds in hex>``, the
    namespace the involved object's (``default`` for cluster-scoped ones), ``source`` and
    ``reportingComponent``/``reportingInstance`` name the component (and the node for the
    kubelet), ``firstTimestamp`` = ``lastTimestamp`` and ``count: 1``; ``eventTime`` stays unset.
    Recording never fails a sync: a refused event is logged and dropped.
    """

    def __init__(self, component: str, *, host: str = "") -> None:
        self.component = component
        self.host = host
        self._last_ns = 0

    def _stamp(self, now: float) -> int:
        # Unique per recorder even within one clock tick.
        self._last_ns = max(int(now * 1e9), self._last_ns + 1)
        return self._last_ns

    def event(
        self,
        cluster: Cluster,
        obj: Mapping[str, Any],
        *,
        type_: str,
        reason: str,
        message: str,
        host: str | None = None,
        field_path: str = "",
    ) -> dict[str, Any] | None:
        rt = cluster.scheme.for_kind("v1", "Event")
        if rt is None:
            return None
        meta = obj.get("metadata") or {}
        name = str(meta.get("name", ""))
        namespace = str(meta.get("namespace") or "default")
        now = cluster.registry.clock()
        stamp = format_time(now)
        source: dict[str, str] = {"component": self.component}
        instance = host if host is not None else self.host
        if instance:
            source["host"] = instance
        involved = {
            "kind": str(obj.get("kind", "")),
            "namespace": str(meta.get("namespace", "")),
            "name": name,
            "uid": str(meta.get("uid", "")),
            "apiVersion": str(obj.get("apiVersion", "")),
            "resourceVersion": str(meta.get("resourceVersion", "")),
        }
        if not involved["namespace"]:
            del involved["namespace"]
        if field_path:
            involved["fieldPath"] = field_path
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{name}.{self._stamp(now):x}", "namespace": namespace},
            "involvedObject": involved,
            "reason": reason,
            "message": message,
            "source": source,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
            "type": type_,
            "reportingComponent": self.component,
            "reportingInstance": instance,
        }
        try:
            return cluster.registry.create(rt, namespace, body)
        except StatusError as err:
            log.info("kubesim: %s event %s dropped: %s", self.component, reason, err.message)
            return None
