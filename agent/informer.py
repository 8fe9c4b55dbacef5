"""The pods bound to this node, kept current by list-then-watch.

The kubelet knows its pods from its own pod manager; the agent learns them from the API, the way
a client-go informer does: LIST with ``fieldSelector=spec.nodeName=<node>``, then WATCH from the
list's ``resourceVersion`` with bookmarks, resuming from the last version seen after every
disconnect. A ``410 Gone`` (the version fell out of the watch cache) or an ``ERROR`` event with
code 410 means the cache must be rebuilt: relist. Failures back off exponentially with jitter and
the agent keeps running on the last known pods (the eviction loop only reads them).

A malformed pod (one that ``scheduler.objects.Pod.from_dict`` refuses) is logged and skipped: it
can never be ranked or evicted by mistake. Objects stay raw dicts until converted once here.

Watch lines are read from the raw response (``_preload_content=False``) rather than through
``kubernetes_asyncio.watch.Watch``, which deserializes every event into a model (a malformed pod
would break the stream) and opens its own ``ApiClient``.

Footprint: a pod as the API serves it is ~30 KB of JSON on a real node (``managedFields``, the
``last-applied-configuration`` annotation, environment, probes, affinity), ~120 KB as Python
objects, and 110 of them were most of the agent's memory. ``slim_pod`` keeps only what the
agent reads — the decision core (``agent.eviction``: requests, limits, priority, QoS, emptyDir
volumes, grace period, the critical-pod and eviction-preference annotations, tolerations for
admission), the actions (name, namespace, uid) and the stats sources (container IDs → names) —
before the pod is converted; nothing else is kept, not even the raw object. A list is read in
pages of ``list_page_size`` (``limit``/``continue``, as client-go's pager does) and each page is
slimmed before the next is fetched, so a relist holds the slim old view, the slim new one and
one page — never two full copies of the node's pods. A continue token that expired (410) starts
the list again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import tenacity

from agent.eviction.preference import EVICTION_PREFERENCE_ANNOTATION
from agent.kube import request
from agent.sources.pods import PodIdentity
from evictor.backoff import WATCH_BACKOFF
from evictor.backoff import delay as backoff_delay
from scheduler.objects import InvalidObject, Pod
from scheduler.priority import CONFIG_MIRROR_ANNOTATION_KEY, CONFIG_SOURCE_ANNOTATION_KEY

__all__ = ["GoneError", "PodEntry", "PodInformer", "is_active", "slim_pod"]

log = logging.getLogger(__name__)

TERMINAL_PHASES = ("Succeeded", "Failed")


class GoneError(Exception):
    """The resourceVersion is too old: relist."""


class WatchError(Exception):
    """The watch failed with an HTTP or ERROR answer other than 410."""


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
        slim: dict[str, Any] = {"name": v.get("name")} if "name" in v else {}
        if source:
            slim[source] = v[source] if source == "emptyDir" else {}
        out.append(slim)
    return out


def slim_pod(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a pod manifest the agent reads (module docstring); malformed parts are kept
    as they are, so that ``Pod.from_dict`` still refuses them with the field's name."""
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
        out["status"] = {"phase": status["phase"]} if "phase" in status else {}
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


def pod_ref(pod: Pod) -> dict[str, str]:
    """klog's ``KObj``: how logs name a pod."""
    return {"name": pod.name, "namespace": pod.namespace}


class PodInformer:
    """List+watch of one node's pods; ``pods`` is the current view, keyed by UID."""

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
    ) -> None:
        self.api_client = api_client
        self.list_page_size = list_page_size
        self.node_name = node_name
        self.watch_timeout = watch_timeout
        self.request_timeout = request_timeout
        self.backoff = backoff or WATCH_BACKOFF
        self.on_change = on_change
        self.pods: dict[str, PodEntry] = {}
        self.resource_version = ""
        self.synced = asyncio.Event()
        self.connected = False
        self.failures = 0
        self.last_error = ""
        self.relists = 0
        self.last_event_at = 0.0
        self._changed = asyncio.Condition()

    # --- reads ---------------------------------------------------------------------------------

    def active_pods(self) -> list[Pod]:
        return [e.pod for e in self.pods.values() if is_active(e.pod)]

    def get(self, uid: str) -> PodEntry | None:
        return self.pods.get(uid)

    def lookup(self, uid: str) -> PodIdentity | None:
        """``agent.sources`` asks who a pod cgroup belongs to."""
        entry = self.pods.get(uid)
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

    async def run(self) -> None:
        """List, then watch, forever; cancel to stop."""
        attempt = 0
        while True:
            await asyncio.sleep(0)  # a relist answered at once (410 after 410) still yields
            try:
                if not self.resource_version:
                    await self._list()
                await self._watch()
                attempt = 0
            except asyncio.CancelledError:
                raise
            except GoneError:
                log.info("pod watch expired, relisting", extra={"node": self.node_name})
                self.resource_version = ""
                self.relists += 1
                continue
            except Exception as exc:
                attempt += 1
                self.failures += 1
                self.connected = False
                self.last_error = f"{type(exc).__name__}: {exc}"
                delay = backoff_delay(self.backoff, attempt)
                log.warning(
                    "pod list/watch failed, retrying",
                    extra={"err": self.last_error, "retry_in": round(delay, 3)},
                )
                await asyncio.sleep(delay)

    def _selector(self) -> str:
        return f"spec.nodeName={self.node_name}"

    async def _list(self) -> None:
        """List the node's pods page by page, slimming each page before fetching the next."""
        pods: dict[str, PodEntry] = {}
        resource_version = ""
        token = ""
        while True:
            page = await self._list_page(token)
            items = page.get("items") or []
            if not isinstance(items, list):
                raise WatchError("list answered with non-list items")
            for item in items:
                entry = self._convert(item)
                if entry is not None:
                    pods[entry.pod.uid] = entry
            meta = page.get("metadata") or {}
            del page, items  # this page's full objects go before the next page comes
            resource_version = resource_version or str(meta.get("resourceVersion") or "")
            token = str(meta.get("continue") or "")
            if not token:
                resource_version = str(meta.get("resourceVersion") or "") or resource_version
                break
            await asyncio.sleep(0)  # a large node lists in many pages: let the loop run
        self.pods = pods
        self.resource_version = resource_version
        self.connected = True
        self.synced.set()
        await self._notify()

    async def _list_page(self, token: str) -> dict[str, Any]:
        resp: Any = await request(
            self.api_client,
            "GET",
            "/api/v1/pods",
            query=[
                ("fieldSelector", self._selector()),
                ("limit", self.list_page_size),
                ("continue", token or None),
            ],
            timeout=self.request_timeout,
        )
        try:
            raw = await resp.read()
        finally:
            resp.release()
        if resp.status == 410 and token:
            raise GoneError()  # the continue token expired: list again from the start
        if resp.status != 200:
            text = raw.decode(errors="replace")[:300]
            raise WatchError(f"list answered {resp.status}: {text}")
        body = json.loads(raw)
        if not isinstance(body, dict):
            raise WatchError("list answered with a non-object body")
        return body

    async def _watch(self) -> None:
        resp: Any = await request(
            self.api_client,
            "GET",
            "/api/v1/pods",
            query=[
                ("fieldSelector", self._selector()),
                ("watch", True),
                ("allowWatchBookmarks", True),
                ("resourceVersion", self.resource_version or None),
                ("timeoutSeconds", self.watch_timeout),
            ],
            timeout=self.watch_timeout + self.request_timeout,
        )
        try:
            if resp.status == 410:
                raise GoneError()
            if resp.status != 200:
                text = (await resp.read()).decode(errors="replace")[:300]
                raise WatchError(f"watch answered {resp.status}: {text}")
            self.connected = True
            while True:
                line = await resp.content.readline()
                if not line:
                    return  # server closed (timeout): resume from the last version
                if line.strip():
                    await self._handle(line)
                # buffered lines return without suspending: a burst must not starve the loop
                await asyncio.sleep(0)
        finally:
            resp.release()

    async def _handle(self, line: bytes) -> None:
        try:
            event = json.loads(line)
        except ValueError:
            log.warning(
                "malformed watch line skipped", extra={"line": line[:200].decode(errors="replace")}
            )
            return
        etype = event.get("type") if isinstance(event, dict) else None
        obj = event.get("object") if isinstance(event, dict) else None
        if not isinstance(obj, dict):
            log.warning("watch event without object skipped", extra={"event_type": etype})
            return
        self.last_event_at = time.time()
        if etype == "ERROR":
            if obj.get("code") == 410:
                raise GoneError()
            raise WatchError(f"watch ERROR {obj.get('code')}: {obj.get('message')}")
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if etype == "BOOKMARK":
            if rv:
                self.resource_version = str(rv)
            return
        uid = str((obj.get("metadata") or {}).get("uid") or "")
        if etype == "DELETED":
            self.pods.pop(uid, None)
        elif etype in ("ADDED", "MODIFIED"):
            entry = self._convert(obj)
            if entry is not None:
                self.pods[entry.pod.uid] = entry
            else:
                self.pods.pop(uid, None)
        else:
            log.warning("unknown watch event type skipped", extra={"event_type": etype})
        if rv:
            self.resource_version = str(rv)
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
