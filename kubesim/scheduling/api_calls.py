"""The scheduler loop's writes to the API, made through kubesim's REST layer as a client's are.

kube-scheduler's API calls (``framework/api_calls``, the DefaultBinder, preemption's
``prepareCandidate``, the events recorder): the bind through ``pods/binding`` with the pod's
UID as precondition, the preempted victims' ``DisruptionTarget`` condition and deletion, the
pod's ``PodScheduled`` condition and nomination, and ``events.k8s.io/v1`` events from
``default-scheduler`` — validated and watched like any client's.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final

from kube.conditions import DISRUPTION_TARGET, update_pod_condition
from kube.objects import DEFAULT_SCHEDULER_NAME, Pod
from kube.times import format_micro_time, format_time
from kubesim.core.errors import StatusError
from kubesim.core.store import clone
from kubesim.registry.generic import DeleteOptions
from scheduler.preemption.core import PREEMPTION_BY_SCHEDULER

if TYPE_CHECKING:
    from kubesim.cluster import Cluster

__all__ = ["MAX_MESSAGE", "APICalls", "truncate"]

log = logging.getLogger("kubesim")

REPORTING_INSTANCE: Final = "default-scheduler-kubesim"
MAX_MESSAGE: Final = 1024  # the events recorder truncates notes to 1 kB


def truncate(message: str) -> str:
    """A note as the events recorder keeps it (and the condition repeats it): 1 kB at most."""
    return message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 3] + "..."


class APICalls:
    """The API writes of the scheduler named ``scheduler_name``, on ``cluster``."""

    def __init__(self, cluster: Cluster, *, scheduler_name: str) -> None:
        self._cluster = cluster
        self.scheduler_name = scheduler_name
        self.binder = cluster.binding  # pods/binding storage (a test may stand in for it)
        self._pods_rt = cluster.scheme.for_kind("v1", "Pod")
        self._events_rt = cluster.scheme.for_kind("events.k8s.io/v1", "Event")
        self._last_stamp = 0

    def bind(self, pod: Pod, host: str) -> dict[str, Any]:
        """``DefaultBinder``: ``pods/binding`` with the same checks as the HTTP subresource and
        the pod's UID as precondition; the stored pod, or the API's ``StatusError``."""
        stored: dict[str, Any] = self.binder.bind(pod.namespace, pod.name, host, uid=pod.uid)
        return stored

    def preempt_victims(
        self, preemptor: Pod, victims: Iterable[Pod], *, node: str
    ) -> tuple[str, ...]:
        """``prepareCandidate``'s API side: each victim not already terminating gets
        ``DisruptionTarget=True`` (reason ``PreemptionByScheduler``) and is deleted with default
        options — its own grace period — with a ``Preempted`` event regarding it, related to
        the preemptor. The keys of the victims gone or going."""
        assert self._pods_rt is not None
        registry = self._cluster.registry
        now = format_time(registry.clock())
        preemptor_obj = registry.store.get("pods", (preemptor.namespace, preemptor.name))
        done: list[str] = []
        for victim in victims:
            stored = registry.store.get("pods", (victim.namespace, victim.name))
            if stored is None or (stored.get("metadata") or {}).get("uid") != victim.uid:
                continue  # already gone
            done.append(victim.key)
            if (stored.get("metadata") or {}).get("deletionTimestamp"):
                continue  # already terminating
            new = clone(stored)
            changed = update_pod_condition(
                new.setdefault("status", {}),
                {
                    "type": DISRUPTION_TARGET,
                    "status": "True",
                    "reason": PREEMPTION_BY_SCHEDULER,
                    "message": f"{preemptor.scheduler_name or DEFAULT_SCHEDULER_NAME}: preempting"
                    " to accommodate a higher priority pod",
                },
                now=now,
            )
            try:
                if changed:
                    registry.update(
                        self._pods_rt, victim.namespace, victim.name, new, subresource="status"
                    )
                registry.delete(
                    self._pods_rt,
                    victim.namespace,
                    victim.name,
                    DeleteOptions(uid=victim.uid),
                )
            except StatusError as err:
                if err.code != 404:
                    log.warning("kubesim: preempting %s failed: %s", victim.key, err.message)
                continue
            self.event(
                stored,
                related=preemptor_obj,
                type_="Normal",
                reason="Preempted",
                action="Preempting",
                note=f"Preempted by pod {preemptor.uid} on node {node}",
                reporting_controller=preemptor.scheduler_name,
            )
        return tuple(done)

    def stored(self, pod: Pod) -> dict[str, Any] | None:
        """The stored pod, if it is still this pod (same UID)."""
        obj = self._cluster.store.get("pods", (pod.namespace, pod.name))
        if obj is None or (obj.get("metadata") or {}).get("uid") != pod.uid:
            return None
        return obj

    def write_pod_status(
        self,
        pod: Pod,
        *,
        condition: tuple[str, str] | None = None,
        nominated_node_name: str | None = None,
    ) -> None:
        """``updatePod``: one status write, only when the condition or nomination changes.

        ``condition`` is the ``PodScheduled=False`` reason and message; ``nominated_node_name``
        sets ``status.nominatedNodeName`` ("" clears it, None leaves it as is).
        """
        assert self._pods_rt is not None
        stored = self.stored(pod)
        if stored is None:
            return
        new = clone(stored)
        status = new.setdefault("status", {})
        changed = False
        registry = self._cluster.registry
        if condition is not None:
            reason, message = condition
            changed = update_pod_condition(
                status,
                {"type": "PodScheduled", "status": "False", "reason": reason, "message": message},
                now=registry.clock(),
            )
        if (
            nominated_node_name is not None
            and (status.get("nominatedNodeName") or "") != nominated_node_name
        ):
            changed = True
            if nominated_node_name:
                status["nominatedNodeName"] = nominated_node_name
            else:
                status.pop("nominatedNodeName", None)
        if not changed:
            return
        try:
            registry.update(self._pods_rt, pod.namespace, pod.name, new, subresource="status")
        except StatusError as err:
            log.warning("kubesim: scheduler status update of %s failed: %s", pod.key, err.message)

    def _event_stamp(self) -> int:
        """The recorder's name suffix (nanoseconds), strictly increasing so names never clash."""
        self._last_stamp = max(time.time_ns(), self._last_stamp + 1)
        return self._last_stamp

    def event(
        self,
        regarding: Mapping[str, Any],
        *,
        type_: str,
        reason: str,
        action: str,
        note: str,
        related: Mapping[str, Any] | None = None,
        reporting_controller: str = "",
    ) -> None:
        """An ``events.k8s.io/v1`` Event from the scheduler (``reporting_controller``: the
        pod's profile, as each of kube-scheduler's profiles records its own; the scheduler's
        name by default) regarding a pod (no series aggregation), through the REST layer."""
        if self._events_rt is None:
            return
        registry = self._cluster.registry
        now = registry.clock()
        meta = regarding.get("metadata") or {}
        namespace = str(meta.get("namespace") or "default")
        event: dict[str, Any] = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {
                "name": f"{meta.get('name', '')}.{self._event_stamp():x}",
                "namespace": namespace,
            },
            "eventTime": format_micro_time(now),
            "reportingController": reporting_controller or self.scheduler_name,
            "reportingInstance": REPORTING_INSTANCE,
            "action": action,
            "reason": reason,
            "type": type_,
            "note": note,
            "regarding": _reference(regarding),
        }
        if related is not None:
            event["related"] = _reference(related)
        try:
            # typed: every value is a string of a stored pod's metadata or of this signature
            registry.create(self._events_rt, namespace, event, owned=True, typed=True, stored=True)
        except StatusError as err:
            log.warning("kubesim: scheduler event %s failed: %s", reason, err.message)


def _reference(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": meta.get("namespace", ""),
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "resourceVersion": meta.get("resourceVersion", ""),
    }
