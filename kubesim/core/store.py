"""The object store: etcd plus the watch cache of kube-apiserver, in memory (``Store``).

Stored objects are never mutated: writers hand in a fresh dict and readers get the stored one
and must copy before changing it (``clone``). The encoded JSON of each object is cached, so a
list of 10 000 pods is a join of bytes.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "ADDED",
    "DELETED",
    "MODIFIED",
    "Event",
    "Key",
    "Shared",
    "Store",
    "Subscription",
    "TooOld",
    "clone",
    "dumps",
]

ADDED: Final = "ADDED"
MODIFIED: Final = "MODIFIED"
DELETED: Final = "DELETED"

Key = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped objects

CONTINUE_TOO_OLD: Final = (
    "The provided continue parameter is too old to display a consistent list result. You can"
    " start a new list without the continue parameter, or use the continue token in this"
    " response to retrieve the remainder of the results. Continuing with the provided token"
    " results in an inconsistent list - objects that were created, modified, or deleted"
    " between the time the first chunk was returned and now may show up in the list."
)


class Shared(list[Any]):
    """A list of JSON data nobody changes in place, shared rather than copied by ``clone``:
    an object's ``metadata.managedFields``, which each write replaces whole and which is as
    large as the rest of a pod (``kubesim.core.managedfields``; objects created alike share
    one)."""


def clone(obj: Any) -> Any:
    """A deep copy of JSON-shaped data (dicts, lists, scalars); faster than ``copy.deepcopy``.
    ``Shared`` lists are not copied."""
    if isinstance(obj, dict):
        return {k: clone(v) for k, v in obj.items()}
    if isinstance(obj, list):
        if obj.__class__ is Shared:
            return obj
        return [clone(v) for v in obj]
    return obj


# Compact UTF-8, as kube-apiserver writes JSON. No circular-reference check: what is encoded is
# a decoded document or one built from them, a tree (a cycle would still end in RecursionError
# rather than a hang); the check's bookkeeping is a fifth of the encoding's cost.
_encode: Final = json.JSONEncoder(
    separators=(",", ":"), ensure_ascii=False, check_circular=False
).encode


def dumps(obj: Any) -> bytes:
    return _encode(obj).encode()


@dataclass(frozen=True, slots=True)
class Event:
    """One change; ``prev`` is the state before it (None for ADDED).

    ``decoded`` is the typed view (``kube.objects``) the registry validated ``obj`` as, all
    but its resourceVersion, when it had one: an in-process informer reads it instead of
    converting the same object a second time. None means nobody converted it."""

    type: str
    rv: int
    storage: str
    key: Key
    obj: dict[str, Any]
    prev: dict[str, Any] | None = None
    decoded: Any = None


class TooOld(Exception):
    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {requested} ({oldest})")
        self.requested = requested
        self.oldest = oldest


@dataclass(eq=False)
class Subscription:
    """A live feed of one storage's events (the cacher's per-watcher channel)."""

    storage: str
    queue: asyncio.Queue[Event] = field(default_factory=asyncio.Queue)
    closed: bool = False


@dataclass
class _Resource:
    objects: dict[Key, dict[str, Any]] = field(default_factory=dict)
    # key -> (an object stored there, its JSON): the object now stored, or a version a reader
    # encoded before it was replaced (a watcher catching up encodes it again otherwise)
    raw: dict[Key, tuple[dict[str, Any], bytes]] = field(default_factory=dict)
    history: deque[Event] = field(default_factory=deque)
    compacted_rv: int = 0  # rv of the newest event dropped from the ring
    sorted_keys: list[Key] | None = None
    subscribers: list[Subscription] = field(default_factory=list)
    last_rv: int = 0  # revision of the newest write (what caches of one storage key on)


class Store:
    """In-memory storage for every resource, with history and watch fan-out.

    * one global, strictly increasing ``resourceVersion`` (etcd's revision), written as a
      string of decimal digits; every write of any object takes the next one, and a list
      carries the current one in ``metadata.resourceVersion``;
    * keys ordered as etcd orders ``/registry/<resource>/<namespace>/<name>``, so lists come
      back sorted by namespace then name;
    * a bounded event history per resource (the watch cache's ring). A watch or a
      ``resourceVersionMatch=Exact`` list older than what the ring still holds gets 410
      ``too old resource version: <rv> (<oldest-1>)``, like
      ``watchCache.getAllEventsSinceLocked`` (``events_since``, ``TooOld``);
    * DELETED events carry the last state of the object with the deletion's
      resourceVersion, as etcd3's watcher does;
    * paged lists are consistent snapshots: the continue token remembers the revision of the
      first page, and later pages are served as of that revision (rebuilt from the history),
      or 410 when it has been compacted away — the apiserver's ``The provided continue
      parameter is too old``.
    """

    def __init__(self, *, history_size: int = 10000) -> None:
        self.history_size = history_size
        self._rv = 0
        self._resources: dict[str, _Resource] = {}
        self._rv_waiters: list[tuple[int, asyncio.Future[None]]] = []

    # --- reading ----------------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        return self._rv

    def _res(self, storage: str) -> _Resource:
        res = self._resources.get(storage)
        if res is None:
            res = self._resources[storage] = _Resource()
        return res

    def storages(self) -> list[str]:
        return list(self._resources)

    def revision(self, storage: str) -> int:
        """The revision of the newest write to one storage; 0 before any (a cache's key)."""
        res = self._resources.get(storage)
        return res.last_rv if res is not None else 0

    def get(self, storage: str, key: Key) -> dict[str, Any] | None:
        return self._res(storage).objects.get(key)

    def objects(self, storage: str) -> dict[Key, dict[str, Any]]:
        """The live mapping of one storage (read only)."""
        return self._res(storage).objects

    def raw(self, storage: str, key: Key) -> bytes:
        """The JSON of the object stored at ``key`` (which must exist), encoded once."""
        return self.encoded(storage, key, self._res(storage).objects[key])

    def encoded(self, storage: str, key: Key, obj: dict[str, Any]) -> bytes:
        """The JSON of ``obj``, a version of the object at ``key`` that this store holds or
        held (a write's answer, a watch event's object). The newest encoding is kept: the
        answer to a create and the watch event announcing it are one encoding, even when the
        object changed in between (a pod bound before its watchers were sent the ADDED)."""
        res = self._res(storage)
        hit = res.raw.get(key)
        if hit is not None and hit[0] is obj:
            return hit[1]
        data = dumps(obj)
        if res.objects.get(key) is obj:
            res.raw[key] = (obj, data)
        return data

    def keys(self, storage: str, namespace: str | None = None) -> list[Key]:
        """Keys in etcd order, optionally only one namespace's."""
        res = self._res(storage)
        if res.sorted_keys is None:
            res.sorted_keys = sorted(res.objects)
        if namespace is None:
            return res.sorted_keys
        return [k for k in res.sorted_keys if k[0] == namespace]

    def items(self, storage: str, namespace: str | None = None) -> Iterator[dict[str, Any]]:
        objects = self._res(storage).objects
        for key in self.keys(storage, namespace):
            yield objects[key]

    def snapshot(
        self, storage: str, rv: int, namespace: str | None = None
    ) -> list[tuple[Key, dict[str, Any]]]:
        """The objects as they were at revision ``rv`` (sorted), or TooOld."""
        res = self._res(storage)
        if res.compacted_rv > rv:
            raise TooOld(rv, self._oldest(res) - 1)
        if not res.history or res.history[-1].rv <= rv:
            return [(k, res.objects[k]) for k in self.keys(storage, namespace)]
        state = dict(res.objects)
        for ev in reversed(res.history):
            if ev.rv <= rv:
                break
            if ev.type == ADDED:
                state.pop(ev.key, None)
            elif ev.prev is not None:
                state[ev.key] = ev.prev
        keys = sorted(k for k in state if namespace is None or k[0] == namespace)
        return [(k, state[k]) for k in keys]

    @staticmethod
    def _oldest(res: _Resource) -> int:
        return res.history[0].rv if res.history else res.compacted_rv + 1

    def events_since(self, storage: str, rv: int) -> list[Event]:
        """History after ``rv`` (the watch cache's interval), or TooOld."""
        res = self._res(storage)
        if rv < res.compacted_rv:
            raise TooOld(rv, self._oldest(res) - 1)
        out: list[Event] = []
        for ev in reversed(res.history):
            if ev.rv <= rv:
                break
            out.append(ev)
        out.reverse()
        return out

    # --- writing ----------------------------------------------------------------------------

    def next_rv(self) -> int:
        self._rv += 1
        return self._rv

    def put(
        self, storage: str, key: Key, obj: dict[str, Any], *, rv: int, decoded: Any = None
    ) -> Event:
        """Store ``obj`` (already carrying ``rv``) and emit ADDED or MODIFIED; ``decoded`` is
        its typed view, if the writer has one (``Event.decoded``)."""
        res = self._res(storage)
        prev = res.objects.get(key)
        if prev is None:
            res.sorted_keys = None
        res.objects[key] = obj
        ev = Event(ADDED if prev is None else MODIFIED, rv, storage, key, obj, prev, decoded)
        self._record(res, ev)
        return ev

    def remove(self, storage: str, key: Key, *, rv: int) -> Event:
        """Drop the object and emit DELETED carrying its last state at ``rv``."""
        res = self._res(storage)
        prev = res.objects.pop(key)
        res.raw.pop(key, None)
        res.sorted_keys = None
        final = dict(prev)
        meta = dict(final.get("metadata") or {})
        meta["resourceVersion"] = str(rv)
        final["metadata"] = meta
        ev = Event(DELETED, rv, storage, key, final, prev)
        self._record(res, ev)
        return ev

    def _record(self, res: _Resource, ev: Event) -> None:
        res.last_rv = ev.rv
        if self.history_size > 0:
            if len(res.history) >= self.history_size:
                dropped = res.history.popleft()
                res.compacted_rv = dropped.rv
            res.history.append(ev)
        else:
            res.compacted_rv = ev.rv
        for sub in res.subscribers:
            if not sub.closed:
                sub.queue.put_nowait(ev)
        if self._rv_waiters:
            self._wake_rv_waiters()

    def _wake_rv_waiters(self) -> None:
        still: list[tuple[int, asyncio.Future[None]]] = []
        for want, fut in self._rv_waiters:
            if self._rv >= want:
                if not fut.done():
                    fut.set_result(None)
            else:
                still.append((want, fut))
        self._rv_waiters = still

    async def wait_for_rv(self, rv: int, timeout: float) -> bool:
        """Wait until the store reached ``rv`` (the cacher's ``waitUntilFreshAndBlock``)."""
        if self._rv >= rv:
            return True
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._rv_waiters.append((rv, fut))
        try:
            await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            return False
        return True

    # --- subscriptions ----------------------------------------------------------------------

    def subscribe(self, storage: str) -> Subscription:
        sub = Subscription(storage)
        self._res(storage).subscribers.append(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        sub.closed = True
        subs = self._res(sub.storage).subscribers
        if sub in subs:
            subs.remove(sub)
