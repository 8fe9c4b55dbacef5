"""Fault injection: acting on the typed fault file (``kubesim.faults.file``) while serving.

Clients of a real cluster meet slow answers, throttling, dropped connections and pods that do not
go away on time; the eviction client and kubectl drain must be tested against all of them.
``FaultInjector`` plugs into the server's request hooks (before any handler runs), the kubelet
and the store. Every request, faulted or not, is in the request log with the code actually sent
(0 for a dropped connection).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import web

from kube.conditions import update_pod_condition
from kube.times import format_time
from kubesim.core.errors import StatusError
from kubesim.core.store import DELETED, clone
from kubesim.endpoints.request import RequestContext
from kubesim.endpoints.server import DropConnection
from kubesim.faults.file import Fault, FaultSet, PodFault, TimelineStep
from kubesim.registry.generic import DeleteOptions

if TYPE_CHECKING:
    from kubesim.cluster import Cluster
    from kubesim.endpoints.requestlog import RequestLog
    from kubesim.node.kubelet import Kubelet

__all__ = ["ActiveFault", "FaultInjector"]

log = logging.getLogger("kubesim")

SILENT_POLL = 0.05  # seconds between checks that a silent stream's client is still there

ObjectKey = tuple[str, str, str, str, str]  # verb, resource, subresource, namespace, name


@dataclass(slots=True)
class ActiveFault:
    """A loaded fault with its per-object call counters."""

    fault: Fault
    counts: dict[ObjectKey, int] = field(default_factory=dict)

    def matches(self, verb: str, resource: str, subresource: str, ns: str, name: str) -> bool:
        m = self.fault.match
        want_resource = m.resource
        want_sub = m.subresource
        if want_resource is not None and "/" in want_resource:
            want_resource, _, implied = want_resource.partition("/")
            want_sub = want_sub if want_sub is not None else implied
        if m.verb is not None and m.verb != verb:
            return False
        if want_resource is not None and want_resource != resource:
            return False
        if want_sub != "*" and (want_sub or "") != subresource:
            return False
        if m.namespace is not None and m.namespace != ns:
            return False
        return m.name is None or m.name == name

    def count(self, key: ObjectKey) -> int:
        n = self.counts.get(key, 0) + 1
        self.counts[key] = n
        return n


class FaultInjector:
    """Applies faults to a cluster: a request's in ``hook``, a pod's in ``run``. ``faults`` is
    the set the server's latency is read from (it grows as faults are added), ``request_log``
    where a silenced request is logged, ``kubelet`` the node kubelet deletion faults are given
    to (None while the cluster runs none).

    ``pods[]``: ``deletionDelay`` and ``neverDelete`` override the kubelet's graceful-deletion
    time for that pod (seconds of wall time, not scaled); ``recreateAfterDelete`` brings the
    pod back ``after`` seconds after it is gone (``_recreate_pod``); ``timeline`` steps run
    ``after`` seconds past the server start (faults given when the server is built) or past the
    moment the faults were added at run time (``_run_step``).
    """

    def __init__(
        self,
        cluster: Cluster,
        *,
        faults: FaultSet,
        request_log: RequestLog,
        kubelet: Callable[[], Kubelet | None],
    ) -> None:
        self.cluster = cluster
        self.faults = faults
        self.request_log = request_log
        self.kubelet = kubelet
        self.active: list[ActiveFault] = []
        self._recreate: dict[tuple[str, str], PodFault] = {}
        self._pending_timelines: list[PodFault] = []
        self._handles: list[asyncio.TimerHandle] = []
        self._running = False

    # --- loading ----------------------------------------------------------------------------

    def load(self, faults: FaultSet) -> None:
        """Activate faults; timelines start now when serving, else at ``start``."""
        self.active.extend(ActiveFault(f) for f in faults.faults)
        kubelet = self.kubelet()
        for pf in faults.pods:
            key = (pf.namespace, pf.name)
            if kubelet is not None:
                if pf.never_delete:
                    kubelet.set_deletion_override(pf.namespace, pf.name, None)
                elif pf.deletion_delay is not None:
                    kubelet.set_deletion_override(pf.namespace, pf.name, pf.deletion_delay)
            if pf.recreate_after_delete is not None:
                self._recreate[key] = pf
            if pf.timeline:
                if self._running:
                    self._schedule_timeline(pf)
                else:
                    self._pending_timelines.append(pf)

    # --- requests ---------------------------------------------------------------------------

    async def hook(self, ctx: RequestContext) -> web.StreamResponse | None:
        """The request's faults, or None to serve it normally.

        ``latency``: every API request waits that long first. ``faults[]``: a request matches
        when every given ``match`` field equals the request's (``verb``, ``resource``,
        ``subresource``, ``namespace``, ``name``; ``resource`` may be written
        ``pods/eviction``); an unset ``subresource`` matches only the main resource, ``"*"``
        any. ``calls`` counts, per fault, the matching requests of that verb on that object
        (1-based, from the moment the fault was loaded); the fault applies to the calls in its
        range. Applying means ``delay`` seconds of waiting (delays of several faults add up),
        then the first ``respond`` (a ``Status`` with ``Retry-After`` when
        ``retryAfterSeconds > 0``), ``drop`` (the connection is closed with no answer, watches
        too) or ``silent`` (``_silent``) among the applicable faults; with none of them, the
        request is served normally after the delay."""
        latency = self.faults.latency
        if latency > 0:
            await asyncio.sleep(latency)
        if not self.active:
            return None
        info = ctx.info
        key: ObjectKey = (info.verb, info.resource, info.subresource, info.namespace, info.name)
        delay = 0.0
        outcome: Fault | None = None
        for af in self.active:
            if not af.matches(*key):
                continue
            n = af.count(key)
            if not af.fault.match.calls.contains(n):
                continue
            delay += af.fault.delay
            if outcome is None and (
                af.fault.respond is not None or af.fault.drop or af.fault.silent
            ):
                outcome = af.fault
        if delay > 0:
            await asyncio.sleep(delay)
        if outcome is None:
            return None
        if outcome.silent:
            return await self._silent(ctx)
        if outcome.respond is not None:
            raise dataclasses.replace(outcome.respond, headers=dict(outcome.respond.headers))
        raise DropConnection

    async def _silent(self, ctx: RequestContext) -> web.StreamResponse:
        """200 with a watch stream's headers, then nothing at all — no event, no bookmark, no
        end — while the connection is held open until the client closes it: the hung watch
        behind a proxy that stopped forwarding, which only a client's own liveness bound
        notices."""
        resp = web.StreamResponse(status=200)
        resp.headers["Content-Type"] = "application/json"
        resp.headers["Transfer-Encoding"] = "chunked"
        await resp.prepare(ctx.request)
        ctx.record.code = 200
        self.request_log.append(ctx.record)
        transport = ctx.request.transport
        while transport is not None and not transport.is_closing():
            await asyncio.sleep(SILENT_POLL)
        return resp

    # --- pods -------------------------------------------------------------------------------

    async def run(self) -> None:
        """Background part: timelines and recreation after deletion."""
        store = self.cluster.store
        sub = store.subscribe("pods")
        self._running = True
        try:
            for pf in self._pending_timelines:
                self._schedule_timeline(pf)
            self._pending_timelines.clear()
            while True:
                ev = await sub.queue.get()
                if ev.type != DELETED:
                    continue
                gone = self._recreate.pop(ev.key) if ev.key in self._recreate else None
                if gone is not None and gone.recreate_after_delete is not None:
                    self._later(gone.recreate_after_delete.after, self._recreate_pod, gone, ev.obj)
        finally:
            self._running = False
            store.unsubscribe(sub)
            for handle in self._handles:
                handle.cancel()
            self._handles.clear()

    def _later(self, delay: float, fn: Any, *args: Any) -> None:
        loop = asyncio.get_running_loop()
        self._handles.append(loop.call_later(max(0.0, delay), self._guarded, fn, *args))

    @staticmethod
    def _guarded(fn: Any, *args: Any) -> None:
        try:
            fn(*args)
        except StatusError as err:
            log.warning("kubesim: pod fault failed: %s", err)
        except Exception:
            log.exception("kubesim: pod fault failed")

    def _schedule_timeline(self, pf: PodFault) -> None:
        for step in pf.timeline:
            self._later(step.after, self._run_step, pf, step)

    def _run_step(self, pf: PodFault, step: TimelineStep) -> None:
        rt = self.cluster.scheme.for_storage("pods")
        registry = self.cluster.registry
        pod = registry.find(rt, pf.namespace, pf.name)
        if pod is None:
            log.warning("kubesim: timeline step for missing pod %s/%s", pf.namespace, pf.name)
            return
        if step.set:
            self._apply_set(pod, step.set)
        if step.delete:
            registry.delete(rt, pf.namespace, pf.name, DeleteOptions())

    def _apply_set(self, pod: dict[str, Any], values: Mapping[str, Any]) -> None:
        """A timeline step's ``set``: dotted paths (``status.phase``, ``metadata.labels.KEY``,
        ``metadata.annotations.KEY``, and ``status.conditions.TYPE`` for a condition's
        status). Setting ``status.phase`` to ``Failed`` or ``Succeeded`` also turns ``Ready``
        and ``ContainersReady`` False as the kubelet does, unless the step sets them; a step's
        ``delete: true`` deletes the pod as ``kubectl delete`` would (gracefully)."""
        rt = self.cluster.scheme.for_storage("pods")
        registry = self.cluster.registry
        meta = pod.get("metadata") or {}
        ns, name = meta.get("namespace", ""), meta.get("name", "")
        new = clone(pod)
        status_paths = False
        other_paths = False
        prefix = "status.conditions."
        explicit_conditions = {p[len(prefix) :] for p in values if p.startswith(prefix)}
        now = format_time(registry.clock())
        for path, value in values.items():
            parts = path.split(".")
            if parts[0] == "status":
                status_paths = True
            else:
                other_paths = True
            if path.startswith("status.conditions.") and len(parts) >= 3:
                condition = {"type": ".".join(parts[2:]), "status": _condition_status(value)}
                update_pod_condition(new.setdefault("status", {}), condition, now=now)
            elif parts[0] == "metadata" and parts[1:2] in (["labels"], ["annotations"]):
                new["metadata"].setdefault(parts[1], {})[".".join(parts[2:])] = value
            else:
                _set_path(new, parts, value)
            if path == "status.phase" and value in ("Failed", "Succeeded"):
                reason = "PodFailed" if value == "Failed" else "PodCompleted"
                for ctype in ("Ready", "ContainersReady"):
                    if ctype not in explicit_conditions:
                        condition = {"type": ctype, "status": "False", "reason": reason}
                        update_pod_condition(new["status"], condition, now=now)
        if other_paths:
            updated, _ = registry.update(rt, ns, name, new)
            if status_paths:
                new["metadata"]["resourceVersion"] = updated["metadata"]["resourceVersion"]
        if status_paths:
            registry.update(rt, ns, name, new, subresource="status")

    def _recreate_pod(self, pf: PodFault, last: Mapping[str, Any]) -> None:
        """The pod back under the same name with the given ``uid`` (a fresh one if unset) on
        the given ``node`` (the old one if unset), started by the kubelet — the StatefulSet
        case of kubernetes/kubernetes#138229."""
        spec_r = pf.recreate_after_delete
        assert spec_r is not None
        rt = self.cluster.scheme.for_storage("pods")
        if self.cluster.registry.find(rt, pf.namespace, pf.name) is not None:
            log.warning("kubesim: %s/%s exists again; not recreating it", pf.namespace, pf.name)
            return
        old_meta = last.get("metadata") or {}
        meta: dict[str, Any] = {"name": pf.name, "namespace": pf.namespace}
        for k in ("labels", "annotations", "ownerReferences", "generateName"):
            if old_meta.get(k):
                meta[k] = clone(old_meta[k])
        meta["uid"] = spec_r.uid or str(uuid.uuid4())
        spec = clone(last.get("spec") or {})
        if spec_r.node is not None:
            spec["nodeName"] = spec_r.node
        self.cluster.registry.seed(
            rt, {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
        )


def _condition_status(value: Any) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    return str(value)


def _set_path(obj: dict[str, Any], parts: list[str], value: Any) -> None:
    cur = obj
    for part in parts[:-1]:
        nxt = cur.get(part)
        if not isinstance(nxt, dict):
            nxt = cur[part] = {}
        cur = nxt
    cur[parts[-1]] = value
