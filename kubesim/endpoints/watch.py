"""Watch streams, as kube-apiserver's cacher serves them (``watch_stream``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Any, Final

from kube.labels import FieldRequirement, LabelSelector
from kubesim.core.errors import expired
from kubesim.core.scheme import ResourceType
from kubesim.core.store import ADDED, DELETED, MODIFIED, Event, Key, TooOld, dumps
from kubesim.registry.generic import GenericStore

__all__ = ["DEFAULT_TIMEOUT", "WatchRequest", "watch_stream"]

DEFAULT_TIMEOUT: Final = 1800.0
PRE_TIMEOUT_BOOKMARK: Final = 2.0  # seconds before the watch's deadline
BOOKMARK: Final = "BOOKMARK"
ERROR: Final = "ERROR"


@dataclass(slots=True)
class WatchRequest:
    rt: ResourceType
    namespace: str | None  # None: all namespaces
    name: str | None = None  # from a fieldSelector metadata.name or a /watch/.../name path
    labels: LabelSelector | None = None
    fields: tuple[FieldRequirement, ...] = ()
    resource_version: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    allow_bookmarks: bool = False
    send_initial_events: bool = False
    bookmark_interval: float = 60.0
    encode: Callable[[str, dict[str, Any]], bytes] | None = None


def _line(event_type: str, obj_json: bytes) -> bytes:
    return b'{"type":"' + event_type.encode() + b'","object":' + obj_json + b"}\n"


def _with_rv(obj: dict[str, Any], rv: int) -> dict[str, Any]:
    out = dict(obj)
    meta = dict(out.get("metadata") or {})
    meta["resourceVersion"] = str(rv)
    out["metadata"] = meta
    return out


async def watch_stream(registry: GenericStore, req: WatchRequest) -> AsyncGenerator[bytes, None]:
    """Yield encoded watch events until the timeout (or the consumer stops).

    A watch answers 200 with a stream of newline-delimited JSON ``{"type": ..., "object": ...}``
    events (``watch.Event`` through the JSON serializer's framer):

    * ``resourceVersion`` unset or ``"0"``: synthetic ``ADDED`` events for every current object
      that passes the selectors, then live changes ("get state and start at most recent");
    * ``resourceVersion=N``: every change after N from the history ring, then live changes. If N is
      older than the ring (``too old resource version: N (oldest-1)``), the stream carries a single
      ``ERROR`` event with the 410 ``Expired`` Status and ends — the cacher returns an error
      watcher after the request was accepted, so the HTTP status is still 200 (a client sees the
      410 in the event, which is what client-go's reflector and kubernetes-asyncio react to);
    * label and field selectors are applied to the old and new state of each change, so an object
      that stops matching is seen as ``DELETED`` and one that starts matching as ``ADDED``
      (``cacheWatcher.convertToWatchEvent``);
    * ``allowWatchBookmarks=true``: ``BOOKMARK`` events carrying only the current
      resourceVersion, every ``bookmark_interval`` (the watch cache's minute) and once 2 s before
      the watch's deadline (``cacheWatcher.nextBookmarkTime``), so a client that re-watches after
      the timeout starts from the newest resourceVersion instead of replaying or hitting a 410 — no
      pre-timeout bookmark when the whole watch is shorter than those 2 s; with
      ``sendInitialEvents=true`` the initial ADDED events end with a bookmark annotated
      ``k8s.io/initial-events-end: "true"`` (the WatchList protocol);
    * ``timeoutSeconds`` ends the stream cleanly; without it the server's own request timeout
      (30 minutes here, as ``--min-request-timeout``) applies.
    """
    store = registry.store
    rt = req.rt
    storage = rt.storage_name

    def passes(obj: dict[str, Any] | None) -> bool:
        if obj is None:
            return False
        meta = obj.get("metadata") or {}
        if req.namespace is not None and rt.namespaced and meta.get("namespace") != req.namespace:
            return False
        if req.name is not None and meta.get("name") != req.name:
            return False
        return registry.matches(rt, obj, req.labels, req.fields)

    def encode(event_type: str, obj: dict[str, Any], key: Key | None = None) -> bytes:
        if key is not None and req.encode is None:
            # A stored version: its encoding is shared with the answer to the write and with
            # every other watcher.
            return _line(event_type, registry.stored_encoding(rt, key, obj))
        wire = registry.to_wire(rt, obj)
        if req.encode is not None:
            return _line(event_type, req.encode(event_type, wire))
        return _line(event_type, dumps(wire))

    def convert(ev: Event) -> bytes | None:
        cur_ok = ev.type != DELETED and passes(ev.obj)
        prev_ok = passes(ev.prev)
        if ev.type == DELETED:
            return encode(DELETED, ev.obj) if prev_ok else None
        if ev.type == ADDED:
            return encode(ADDED, ev.obj, ev.key) if cur_ok else None
        if cur_ok and prev_ok:
            return encode(MODIFIED, ev.obj, ev.key)
        if cur_ok:
            return encode(ADDED, ev.obj, ev.key)
        if prev_ok and ev.prev is not None:
            return encode(DELETED, _with_rv(ev.prev, ev.rv))
        return None

    def bookmark(rv: int, *, initial_end: bool = False) -> bytes:
        meta: dict[str, Any] = {"resourceVersion": str(rv), "creationTimestamp": None}
        if initial_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        return _line(
            BOOKMARK, dumps({"kind": rt.kind, "apiVersion": rt.api_version, "metadata": meta})
        )

    sub = store.subscribe(storage)
    try:
        rv_param = req.resource_version
        if req.send_initial_events or rv_param in (None, "", "0"):
            last_rv = store.resource_version
            initial = [
                o
                for o in store.items(storage, req.namespace if rt.namespaced else None)
                if passes(o)
            ]
            for obj in initial:
                yield encode(ADDED, obj)
            if req.send_initial_events and req.allow_bookmarks:
                yield bookmark(last_rv, initial_end=True)
        else:
            last_rv = int(rv_param)
            try:
                past = store.events_since(storage, last_rv)
            except TooOld as exc:
                yield _line(ERROR, dumps(expired(str(exc)).to_dict()))
                return
            for ev in past:
                line = convert(ev)
                if line is not None:
                    yield line
                last_rv = ev.rv
        deadline = time.monotonic() + req.timeout

        def next_bookmark_time(now: float) -> float | None:
            # cacheWatcher.nextBookmarkTime: every interval, and PRE_TIMEOUT before the end
            due = min(now + req.bookmark_interval, deadline - PRE_TIMEOUT_BOOKMARK)
            return None if due < now else due

        next_bookmark = next_bookmark_time(time.monotonic()) if req.allow_bookmarks else None
        while True:
            now = time.monotonic()
            if now >= deadline:
                return
            wait = deadline - now
            if next_bookmark is not None:
                if now >= next_bookmark:
                    # Never ahead of changes still queued for this watcher.
                    rv = max(last_rv, store.resource_version) if sub.queue.empty() else last_rv
                    yield bookmark(rv)
                    next_bookmark = next_bookmark_time(now)
                    continue
                wait = min(wait, next_bookmark - now)
            queue = sub.queue
            events: list[Event] = []
            if queue.empty():
                try:
                    events.append(await asyncio.wait_for(queue.get(), timeout=wait))
                except TimeoutError:
                    continue
            # Every event queued by now goes out in one write: a burst of changes costs one
            # chunk and one send, not one per event (the stream is the same bytes).
            while not queue.empty():
                events.append(queue.get_nowait())
            lines: list[bytes] = []
            for ev in events:
                if ev.rv <= last_rv:
                    continue
                last_rv = ev.rv
                line = convert(ev)
                if line is not None:
                    lines.append(line)
            if lines:
                yield b"".join(lines)
    finally:
        store.unsubscribe(sub)
