"""The pods bound to this node, kept current by list-then-watch, as a client-go informer does:
LIST with ``fieldSelector=spec.nodeName=<node>``, then WATCH from the list's
``resourceVersion`` (``evictor.api.watching``: bookmarks, ``410 Gone`` → relist, backoff, the
liveness bound). Each pod is kept slim (``slim_pod``), converted once, and a malformed one is
logged and skipped: it can never be ranked or evicted by mistake.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import tenacity

from agent.eviction.pods import kubelet_view
from agent.eviction.preference import EVICTION_PREFERENCE_ANNOTATION
from agent.sources.pods import PodIdentity
from evictor.api.watching import (
    BOOKMARK_INTERVAL,
    LIVENESS_FACTOR,
    Event,
    Page,
    WatchState,
    list_and_watch,
)
from evictor.backoff import WATCH_BACKOFF
from kube.critical import CONFIG_MIRROR_ANNOTATION_KEY, CONFIG_SOURCE_ANNOTATION_KEY
from kube.objects import InvalidObject, Pod

__all__ = ["PodEntry", "PodInformer", "is_active", "slim_pod"]

log = logging.getLogger(__name__)

TERMINAL_PHASES = ("Succeeded", "Failed")


@dataclass(frozen=True, slots=True)
class PodEntry:
    pod: Pod
    # container ID (without the ``runtime://`` prefix) -> container name, from the status
    containers: Mapping[str, str]


# What the agent reads of a pod; everything else is dropped before conversion.
KEPT_METADATA: Final = ("name", "namespace", "uid", "resourceVersion", "deletionTimestamp")
KEPT_ANNOTATIONS: Final = frozenset(
    {EVICTION_PREFERENCE_ANNOTATION, CONFIG_SOURCE_ANNOTATION_KEY, CONFIG_MIRROR_ANNOTATION_KEY}
)
KEPT_SPEC: Final = (
    "nodeName",
    "priority",
    "priorityClassName",
    "terminationGracePeriodSeconds",
    "overhead",
    "resources",
    "tolerations",
)
KEPT_CONTAINER: Final = ("name", "resources", "restartPolicy")
LIST_PAGE_SIZE: Final = 50


def _containers(value: Any) -> Any:
    if not isinstance(value, list):
        return value  # malformed: Pod.from_dict names it
    return [
        {k: c[k] for k in KEPT_CONTAINER if k in c} if isinstance(c, dict) else c for c in value
    ]


def _volumes(value: Any) -> Any:
    if not isinstance(value, list):
        return value
    out = []
    for v in value:
        if not isinstance(v, dict):
            out.append(v)
            continue
        # the source's kind (the first key besides the name) decides whether it is local
        # ephemeral storage; only an emptyDir's own fields (medium, sizeLimit) are read
        source = next((k for k in v if k != "name"), "")
        if len(v) <= 2 and (source == "emptyDir" or v.get(source) == {}):
            out.append(v)  # already as slim as it gets: kept, not copied (40,000 emptyDirs)
            continue
        slim: dict[str, Any] = {"name": v.get("name")} if "name" in v else {}
        if source:
            slim[source] = v[source] if source == "emptyDir" else {}
        out.append(slim)
    return out


def _container_statuses(value: Any) -> Any:
    if not isinstance(value, list):
        return None
    return [
        {k: cs[k] for k in ("name", "containerID") if k in cs}
        for cs in value
        if isinstance(cs, dict) and cs.get("containerID") and cs.get("name")
    ]


def slim_pod(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a pod manifest the agent reads; malformed parts are kept as they are, so
    that ``Pod.from_dict`` still refuses them with the field's name. Slimming a slim pod changes
    nothing, and ``container_names`` reads the same from both.

    What is kept: what the decision core reads (requests, limits, priority, QoS, the kind of each
    volume and an emptyDir's medium and size limit, grace period, the critical-pod and
    eviction-preference annotations, tolerations for admission), what the actions need (name,
    namespace, uid) and what the stats sources need (container IDs → names). A pod as the API
    serves it is ~30 KB of JSON on a real node (``managedFields``, the
    ``last-applied-configuration`` annotation, environment, probes), ~120 KB as Python objects;
    slim, about 4.6 KB. A volume already as slim as it gets (``{"name", "emptyDir": {}}``) is kept
    as parsed, not copied (a pod may have 40,000).
    """
    out: dict[str, Any] = {}
    for key in ("apiVersion", "kind"):
        if key in obj:
            out[key] = obj[key]
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        slim_meta = {k: meta[k] for k in KEPT_METADATA if k in meta}
        annotations = meta.get("annotations")
        if isinstance(annotations, dict):
            kept = {k: v for k, v in annotations.items() if k in KEPT_ANNOTATIONS}
            if kept:
                slim_meta["annotations"] = kept
        elif annotations is not None:
            slim_meta["annotations"] = annotations
        out["metadata"] = slim_meta
    elif meta is not None:
        out["metadata"] = meta
    spec = obj.get("spec")
    if isinstance(spec, dict):
        slim_spec = {k: spec[k] for k in KEPT_SPEC if k in spec}
        for key in ("containers", "initContainers"):
            if key in spec:
                slim_spec[key] = _containers(spec[key])
        if "volumes" in spec:
            slim_spec["volumes"] = _volumes(spec["volumes"])
        out["spec"] = slim_spec
    elif spec is not None:
        out["spec"] = spec
    status = obj.get("status")
    if isinstance(status, dict):
        slim_status = {"phase": status["phase"]} if "phase" in status else {}
        for key in ("containerStatuses", "initContainerStatuses"):
            statuses = _container_statuses(status.get(key))
            if statuses:
                slim_status[key] = statuses
        out["status"] = slim_status
    elif status is not None:
        out["status"] = status
    return out


def container_names(obj: Mapping[str, Any]) -> dict[str, str]:
    """Container ID -> name from a pod's status, for ``agent.sources`` (cgroup → container)."""
    containers: dict[str, str] = {}
    status = obj.get("status")
    if not isinstance(status, dict):
        return containers
    for key in ("containerStatuses", "initContainerStatuses"):
        for cs in status.get(key) or []:
            if isinstance(cs, dict) and cs.get("containerID") and cs.get("name"):
                containers[str(cs["containerID"]).partition("://")[2]] = str(cs["name"])
    return containers


def is_active(pod: Pod) -> bool:
    """The kubelet's ``filterOutInactivePods``: not terminal, and no termination requested."""
    return pod.phase not in TERMINAL_PHASES and pod.deletion_timestamp is None


class PodInformer:
    """List+watch of one node's pods; ``pods`` is the current view, keyed by UID.

    Its ``WatchState`` (``state``) tells ``/readyz`` whether the view is current; failures never
    stop the agent, which keeps running on the last known pods. A list is read in pages of at most
    ``list_page_size`` pods (``limit``/``continue``, as client-go's pager) and of at most
    ``evictor.api.watching.MAX_OBJECT_BYTES`` of JSON, and each pod is slimmed as soon as it is
    parsed, before the next one is, so a relist holds the slim old view, the slim new one and one
    page's text — never the node's pods parsed, whatever their authors put in them. A continue
    token that expired (410) starts the list again. A pod too large to read within the bound fails
    the list instead of being left out of the view (``evictor.api.watching`` says why): the
    informer keeps its last complete view, the log line names the pod, and ``/readyz`` reports
    the watch down.
    """

    def __init__(
        self,
        api_client: Any,
        node_name: str,
        *,
        watch_timeout: int = 300,
        request_timeout: float = 30.0,
        backoff: tenacity.wait.wait_base | None = None,
        on_change: Callable[[], None] | None = None,
        list_page_size: int = LIST_PAGE_SIZE,
        bookmark_interval: float = BOOKMARK_INTERVAL,
        liveness_factor: float = LIVENESS_FACTOR,
    ) -> None:
        self.api_client = api_client
        self.list_page_size = list_page_size
        self.node_name = node_name
        self.watch_timeout = watch_timeout
        self.request_timeout = request_timeout
        self.backoff = backoff or WATCH_BACKOFF
        self.bookmark_interval = bookmark_interval
        self.liveness_factor = liveness_factor
        self.on_change = on_change
        self.pods: dict[str, PodEntry] = {}
        self.state = WatchState()
        self.synced = asyncio.Event()
        self._building: dict[str, PodEntry] = {}
        self._changed = asyncio.Condition()

    # --- how the watch is doing (``evictor.api.watching.WatchState``) --------------------------

    @property
    def connected(self) -> bool:
        return self.state.live

    @property
    def failures(self) -> int:
        return self.state.failures

    @property
    def last_error(self) -> str:
        return self.state.last_error

    @property
    def relists(self) -> int:
        return self.state.relists

    @property
    def resource_version(self) -> str:
        return self.state.resource_version

    # --- reads ---------------------------------------------------------------------------------

    def active_pods(self) -> list[Pod]:
        return [e.pod for e in self.pods.values() if is_active(e.pod)]

    def get(self, uid: str) -> PodEntry | None:
        return self.pods.get(uid)

    def lookup(self, uid: str) -> PodIdentity | None:
        """``agent.sources`` asks who a pod cgroup belongs to: the pod with that UID, or the
        mirror pod of the static pod the kubelet runs under it — only a mirror the kubelet's
        view trusts (``kubelet_view``: the one active pod claiming that UID). A node has a few
        static pods, so a miss scans the view rather than keeping an index in step."""
        entry = self.pods.get(uid)
        if entry is None:
            active = [e.pod for e in self.pods.values() if is_active(e.pod)]
            mirror = kubelet_view(active, node_pod_uids=(uid,)).mirrors.get(uid)
            entry = self.pods.get(mirror.uid) if mirror is not None else None
            if entry is None:
                return None
        return PodIdentity(entry.pod.name, entry.pod.namespace, dict(entry.containers))

    async def wait_gone(self, uid: str, timeout: float) -> bool:
        """True once the pod is deleted or terminal; False after ``timeout`` seconds."""

        def gone() -> bool:
            entry = self.pods.get(uid)
            return entry is None or entry.pod.phase in TERMINAL_PHASES

        async with self._changed:
            try:
                await asyncio.wait_for(self._changed.wait_for(gone), timeout)
            except TimeoutError:
                return gone()
        return True

    # --- the loop ------------------------------------------------------------------------------

    def _stream(self, *, max_failures: int = 0) -> Any:
        return list_and_watch(
            self.api_client,
            "/api/v1/pods",
            query=[("fieldSelector", f"spec.nodeName={self.node_name}")],
            page_size=self.list_page_size,
            watch_timeout=self.watch_timeout,
            request_timeout=self.request_timeout,
            bookmark_interval=self.bookmark_interval,
            liveness_factor=self.liveness_factor,
            backoff=self.backoff,
            max_failures=max_failures,
            state=self.state,
            transform=slim_pod,  # each pod slimmed as soon as it is parsed
        )

    async def run(self) -> None:
        """List, then watch, forever (``evictor.api.watching``: 410 relists, errors back off,
        a silent watch is restarted); cancel to stop."""
        async for item in self._stream():
            await self.apply(item)
            del item  # a list page's objects go before the next page is fetched

    async def list_once(self) -> None:
        """List the node's pods once (``eviction-agent explain``); raises when it cannot."""
        stream = self._stream(max_failures=1)
        try:
            async for item in stream:
                await self.apply(item)
                if isinstance(item, Page) and item.last:
                    return
                del item  # a list page's objects go before the next page is fetched
        finally:
            await stream.aclose()

    async def apply(self, item: Page | Event) -> None:
        """Take one list page or watch event into the view."""
        if isinstance(item, Page):
            if item.first:
                self._building = {}
            for obj in item.items:
                entry = self._convert(obj)
                if entry is not None:
                    self._building[entry.pod.uid] = entry
            if not item.last:
                return
            # the page's full objects are gone; the new view replaces the old one at once
            self.pods, self._building = self._building, {}
            self.synced.set()
        else:
            obj = item.object
            uid = str((obj.get("metadata") or {}).get("uid") or "")
            if item.type == "DELETED":
                self.pods.pop(uid, None)
            else:
                entry = self._convert(obj)
                if entry is not None:
                    self.pods[entry.pod.uid] = entry
                else:
                    self.pods.pop(uid, None)
        await self._notify()

    def _convert(self, obj: dict[str, Any]) -> PodEntry | None:
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        ref = {
            "name": str((meta or {}).get("name", "")),
            "namespace": str((meta or {}).get("namespace", "")),
        }
        try:
            pod = Pod.from_dict(slim_pod(obj))
        except (InvalidObject, ValueError, TypeError, KeyError, AttributeError) as exc:
            log.warning("malformed pod skipped", extra={"pod": ref, "err": str(exc)})
            return None
        if not pod.uid:
            log.warning("pod without uid skipped", extra={"pod": ref})
            return None
        if pod.node_name and pod.node_name != self.node_name:
            return None
        return PodEntry(pod, container_names(obj))

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()
        if self.on_change is not None:
            with contextlib.suppress(Exception):
                self.on_change()
