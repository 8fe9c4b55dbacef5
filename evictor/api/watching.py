"""One list-then-watch generator: the informer's, the PDB watch's and the deletion wait's.

client-go's reflector is the contract (``list_and_watch`` says how it is kept), with two
additions the agent needs: a liveness bound that restarts a watch gone silent, and memory
bounded in bytes, whatever the objects carry (``_list``). Requests go through
``evictor.api.calls.request``; kubernetes-asyncio's ``Watch`` is not used, because it
deserializes into models and opens an ``ApiClient`` of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import tenacity

from evictor.api.calls import BodyTooLarge, read_bounded, request
from evictor.backoff import WATCH_BACKOFF
from evictor.backoff import delay as backoff_delay
from kube.boundedjson import Cursor, loads

__all__ = [
    "BOOKMARK_INTERVAL",
    "LIVENESS_FACTOR",
    "MAX_OBJECT_BYTES",
    "Event",
    "Page",
    "WatchError",
    "WatchState",
    "list_and_watch",
    "parse_event",
]

log = logging.getLogger("evictor.api.watching")

# The apiserver's bookmark frequency (cacher's ``bookmarkFrequency``: one minute).
BOOKMARK_INTERVAL: Final = 60.0
# Silence for this many bookmark intervals restarts the watch from a relist.
LIVENESS_FACTOR: Final = 3.0
# A list page's body and a watch line are read up to this many bytes: any object a client can
# write in JSON or YAML in one request, with what the server adds (``_list``).
MAX_OBJECT_BYTES: Final = 4 << 20
# A caller that lists unpaged is paged from this many objects once a list is over the bound
# (kubectl's --chunk-size); growing back after small pages stops there too.
UNPAGED_RETRY_LIMIT: Final = 500
# An error answer is read up to this much (a Status is a few hundred bytes).
_STATUS_BYTES: Final = 64 << 10

Transform = Callable[[dict[str, Any]], dict[str, Any]]


class WatchError(Exception):
    """A list or watch failed; ``status`` is the HTTP status (0: no answer), ``reason`` the
    Status reason when the server sent one."""

    def __init__(self, message: str, *, status: int = 0, reason: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason


class _Gone(Exception):
    """The resourceVersion (or continue token) expired: relist."""


class _Stalled(Exception):
    """Nothing arrived within the liveness bound."""


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a (re)list. ``first``: a new view starts; ``last``: it is complete and
    replaces the old one (``resource_version`` is the list's)."""

    items: list[dict[str, Any]]
    first: bool
    last: bool
    resource_version: str = ""


@dataclass(frozen=True, slots=True)
class Event:
    """A change: ``type`` is ADDED, MODIFIED or DELETED."""

    type: str
    object: dict[str, Any]


@dataclass(slots=True)
class WatchState:
    """How the watch is doing; updated by ``list_and_watch`` as it goes."""

    live: bool = False  # just listed, or the watch answered 200 and has not failed or gone silent
    resource_version: str = ""
    failures: int = 0  # failed lists/watches so far
    consecutive_failures: int = 0  # since the last successful list or watch start
    last_error: str = ""
    last_status: int = 0  # HTTP status of the last failure (0: no answer)
    relists: int = 0  # lists after the first (410, stall)
    stalls: int = 0  # watches restarted by the liveness bound
    last_event_at: float = 0.0  # monotonic time of the last line (event or bookmark)
    listed: bool = False  # at least one list completed
    down_since: float | None = None  # monotonic time live turned False (None: live or never)
    settled: asyncio.Event = field(default_factory=asyncio.Event)  # first list done or failed

    def _down(self) -> None:
        if self.live or self.down_since is None:
            self.down_since = time.monotonic()
        self.live = False

    def _up(self) -> None:
        self.live = True
        self.down_since = None

    def _failed(self, exc: BaseException) -> None:
        self._down()
        self.failures += 1
        self.consecutive_failures += 1
        self.last_status = exc.status if isinstance(exc, WatchError) else 0
        self.last_error = f"{type(exc).__name__}: {exc}"
        self.settled.set()


@dataclass(frozen=True, slots=True)
class _Target:
    """What is listed and watched, and how."""

    api_client: Any
    path: str
    query: Sequence[tuple[str, Any]]
    page_size: int
    watch_timeout: int
    request_timeout: float
    liveness: float
    transform: Transform | None
    max_bytes: int


async def list_and_watch(
    api_client: Any,
    path: str,
    *,
    query: Sequence[tuple[str, Any]] = (),
    resource_version: str = "",
    page_size: int = 0,
    watch_timeout: int = 300,
    request_timeout: float = 30.0,
    bookmark_interval: float = BOOKMARK_INTERVAL,
    liveness_factor: float = LIVENESS_FACTOR,
    backoff: tenacity.wait.wait_base = WATCH_BACKOFF,
    max_failures: int = 0,
    state: WatchState | None = None,
    log_level: int = logging.WARNING,
    transform: Transform | None = None,
    max_bytes: int = MAX_OBJECT_BYTES,
) -> AsyncGenerator[Page | Event, None]:
    """List ``path`` (a collection URL, e.g. ``/api/v1/pods``) with ``query`` (selectors), then
    watch it, forever; close or cancel to stop.

    ``resource_version``: start watching from there without listing (the caller has just
    listed); a 410 still relists. ``page_size`` > 0 lists in pages (of fewer objects when they
    are large: ``max_bytes`` bounds a page's body and a watch line). ``max_failures`` > 0:
    raise ``WatchError`` after that many consecutive failures instead of backing off again
    (for a caller with a fallback, such as the deletion wait's polling). ``log_level``: of
    the failure and stall lines (a caller with a fallback logs them at DEBUG: ``evict`` prints
    no warning for a watch it can do without). ``transform``: applied to every listed object
    and every event's object as soon as it is parsed (the objects yielded are its results).

    As client-go's reflector: LIST (in pages of ``limit``/``continue`` when asked, as its pager
    does), then WATCH from the list's ``resourceVersion`` with ``allowWatchBookmarks``,
    resuming from the last version seen (an event's or a bookmark's) whenever the server ends
    the stream. ``410 Gone`` — as the watch's HTTP answer, as an ``ERROR`` event with code 410,
    or as an expired ``continue`` token — means the version fell out of the watch cache: the
    view is rebuilt from a relist, at once and without counting as a failure. Every other
    failure (no answer, a 5xx, a 401/403, an ``ERROR`` event) backs off with jitter
    (``backoff``, tenacity's wait strategy through ``evictor.backoff``) and resumes from the
    last version, as the reflector's backoff manager does.

    Beyond the reflector, a liveness bound: a watch whose connection stays open but delivers
    nothing — a proxy or load balancer that stopped forwarding, a wedged apiserver — looks to
    the reader exactly like a quiet node, and the agent would keep evicting from a view that
    misses every new pod. The apiserver sends a bookmark to every ``allowWatchBookmarks``
    watcher about once a minute (``cacheWatcher.nextBookmarkTime``), so silence longer than
    ``liveness_factor`` × ``bookmark_interval`` means the stream is dead: it is dropped and the
    view rebuilt from a relist (a resume could reuse the same dead path and version).

    Yields ``Page`` objects (one per list page, so a caller can slim each page before the next
    is fetched, as the agent does for its footprint) and ``Event`` objects (``ADDED``,
    ``MODIFIED``, ``DELETED``; bookmarks only move the resume point). ``state`` tells how the
    watch is doing (live or not, the last error and its HTTP status, counts), for ``/readyz``
    and metrics. Malformed lines — not JSON, or nested deeper than
    ``kube.boundedjson.MAX_DEPTH`` — are logged and skipped, never fatal: one bad object must
    not stop the view of all the others.
    """
    st = state if state is not None else WatchState()
    st.resource_version = resource_version
    target = _Target(
        api_client,
        path,
        tuple(query),
        page_size,
        watch_timeout,
        request_timeout,
        bookmark_interval * liveness_factor,
        transform,
        max_bytes,
    )
    while True:
        await asyncio.sleep(0)  # a relist answered at once (410 after 410) still yields
        try:
            # closed as soon as they end or fail, so a page or a response is never kept
            if not st.resource_version:
                async with contextlib.aclosing(_list(target, st)) as pages:
                    async for page in pages:
                        yield page
                        del page
            async with contextlib.aclosing(_watch(target, st)) as events:
                async for event in events:
                    yield event
        except _Gone:
            log.info("watch of %s expired, relisting", path)
            st.resource_version = ""
            st.relists += 1
        except _Stalled:
            log.log(
                log_level,
                "watch of %s silent for %.3g s (no event, no bookmark), restarting from a relist",
                path,
                target.liveness,
            )
            st._down()
            st.resource_version = ""
            st.stalls += 1
            st.relists += 1
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            st._failed(exc)
            if max_failures and st.consecutive_failures >= max_failures:
                if isinstance(exc, WatchError):
                    raise
                raise WatchError(st.last_error) from exc
            wait = backoff_delay(backoff, st.consecutive_failures)
            log.log(
                log_level,
                "list/watch of %s failed, retrying",
                path,
                extra={"err": st.last_error, "retry_in": round(wait, 3)},
            )
            await asyncio.sleep(wait)


async def _failure(resp: Any, what: str) -> WatchError:
    try:
        raw = await read_bounded(resp, _STATUS_BYTES)
    except BodyTooLarge as big:
        raw = bytearray(big.head)
    reason = ""
    message = raw[:300].decode(errors="replace")
    try:
        body = loads(raw)
    except ValueError:
        body = None
    if isinstance(body, Mapping):
        reason = str(body.get("reason") or "")
        message = str(body.get("message") or message)
    return WatchError(
        f"{what} answered {resp.status}: {message}", status=resp.status, reason=reason
    )


def _named(head: bytes, member: str) -> str:
    """``namespace/name`` of the object at ``member`` (or of the first item, for an array) of
    a text of which only ``head`` was read; "" when the head does not tell."""
    cursor = Cursor(head.decode("utf-8", errors="ignore"))
    found: dict[str, str] = {}
    with contextlib.suppress(ValueError, StopIteration):
        for key in cursor.members():
            if key != member:
                cursor.value()
                continue
            if cursor.peek() == "[":
                next(cursor.elements())
            for field_name in cursor.members():
                if field_name != "metadata":
                    cursor.value()
                    continue
                for meta_key in cursor.members():
                    value = cursor.value()
                    if meta_key in ("name", "namespace") and isinstance(value, str):
                        found[meta_key] = value
    name = found.get("name", "")
    return f"{found['namespace']}/{name}" if name and found.get("namespace") else name


def _too_large(target: _Target, head: bytes, member: str, what: str) -> WatchError:
    ref = _named(head, member)
    return WatchError(
        f"{what} of {target.path}: {'object ' + ref if ref else 'an object'} is larger than "
        f"the {target.max_bytes} bytes of JSON read for one object; it cannot be read until "
        "it is smaller or gone",
        status=200,
    )


@dataclass(frozen=True, slots=True)
class _ListPage:
    items: list[dict[str, Any]]
    token: str  # the next page's continue token ("" on the last page)
    resource_version: str  # the list's, on the last page
    count: int  # objects in the page
    size: int  # bytes of the body


async def _list(target: _Target, st: WatchState) -> AsyncGenerator[Page, None]:
    """One list, page by page, its memory bounded in bytes whatever the objects carry.

    A count of objects is no bound: a pod may carry 1.5 MB of ``args`` (kube-apiserver stores
    objects up to etcd's 1.5 MiB, and takes request bodies up to 3 MiB), so a page of 50 can
    be 70 MB of JSON and several times that parsed. So every page's body is read up to
    ``max_bytes`` (``MAX_OBJECT_BYTES``, 4 MiB). A page over it is abandoned and asked again
    from the same ``continue`` token with half the ``limit`` (a caller that lists unpaged is
    paged from half ``UNPAGED_RETRY_LIMIT``), down to 1; after each page the next ``limit`` is what
    fits the bound at that page's size per object, up to the caller's page size. Within a page
    the items are parsed one at a time (``kube.boundedjson.Cursor``) and passed through the
    caller's ``transform`` (the agent's ``slim_pod``) before the next is parsed, and the
    body's bytes are decoded a piece at a time as they are read, never held whole with their
    text.

    A single object over the bound — a page of one, or one watch line — cannot be read within
    it, and is not skipped: the list (or, for a watch line, the next list) fails with an error
    naming the object, as client-go's reflector fails a list it cannot decode, and is retried
    with backoff. Leaving the object out would give a view of the node without it — a pod its
    author made immune to eviction by making it big — where a failing list keeps the last
    complete view and says why. Only a client writing protobuf, or growing an object patch by
    patch, can make one that big.
    """
    token = ""
    first = True
    limit: int | None = target.page_size or None
    most = target.page_size or UNPAGED_RETRY_LIMIT
    while True:
        try:
            body = await _list_page(target, token, limit)
        except BodyTooLarge as big:
            if limit == 1:
                raise _too_large(target, big.head, "items", "list") from None
            limit = max(1, (limit or UNPAGED_RETRY_LIMIT) // 2)
            log.debug(
                "list page of %s over %d bytes, asking for %d", target.path, target.max_bytes, limit
            )
            continue
        token = body.token
        if body.count and limit is not None:
            # as many objects as fit the bound at this page's size per object
            limit = max(1, min(most, body.count * target.max_bytes // max(body.size, 1)))
        if not token:
            st.resource_version = body.resource_version
            st.listed = True
            st._up()
            st.consecutive_failures = 0
            st.settled.set()
        page = Page(body.items, first=first, last=not token, resource_version=body.resource_version)
        del body
        yield page
        del page  # this page's objects go before the next page comes (the agent's footprint)
        if not token:
            return
        first = False
        await asyncio.sleep(0)  # a large list comes in many pages: let the loop run


def _read_list(
    cursor: Cursor, transform: Transform | None
) -> tuple[list[dict[str, Any]], int, Any]:
    """A list's items (each transformed as soon as it is parsed), their count and its
    metadata."""
    items: list[dict[str, Any]] = []
    count = 0
    meta: Any = None
    for key in cursor.members():
        if key == "items" and cursor.peek() == "[":
            for _ in cursor.elements():
                item = cursor.value()
                count += 1
                if isinstance(item, dict):
                    items.append(transform(item) if transform is not None else item)
                del item
        elif key == "items":
            if cursor.value() is not None:
                raise ValueError("items is not an array")
        elif key == "metadata":
            meta = cursor.value()
        else:
            cursor.value()
    cursor.end()
    return items, count, meta


async def _list_page(target: _Target, token: str, limit: int | None) -> _ListPage:
    """One page (``BodyTooLarge`` when its body is over the bound)."""
    resp: Any = await request(
        target.api_client,
        "GET",
        target.path,
        query=[*target.query, ("limit", limit), ("continue", token or None)],
        timeout=target.request_timeout,
    )
    try:
        if resp.status == 410 and token:
            raise _Gone()  # the continue token expired: list again from the start
        if resp.status != 200:
            raise await _failure(resp, "list")
        raw = await read_bounded(resp, target.max_bytes)
    finally:
        resp.release()
    size = len(raw)
    try:
        items, count, meta = _read_list(Cursor.of(raw), target.transform)  # empties raw
    except ValueError as exc:
        raise WatchError(
            f"list answered with a body that is not a list: {exc}", status=200
        ) from None
    if not isinstance(meta, Mapping):
        meta = {}
    token = str(meta.get("continue") or "")
    rv = "" if token else str(meta.get("resourceVersion") or "")
    return _ListPage(items, token, rv, count, size)


class _Lines:
    """The lines of a watch stream, each up to ``limit`` bytes (``BodyTooLarge`` beyond)."""

    def __init__(self, content: Any, limit: int) -> None:
        self.content = content
        self.limit = limit
        self.buffer = bytearray()
        self.scanned = 0  # how much of the buffer holds no newline

    async def next(self) -> bytearray:
        """The next line; empty at the end of the stream."""
        while True:
            end = self.buffer.find(b"\n", self.scanned)
            if end >= self.limit or (end < 0 and len(self.buffer) > self.limit):
                raise BodyTooLarge(self.buffer)
            if end >= 0:
                line = self.buffer[: end + 1]
                del self.buffer[: end + 1]
                self.scanned = 0
                return line
            self.scanned = len(self.buffer)
            chunk = await self.content.readany()
            if not chunk:
                line, self.buffer = self.buffer, bytearray()
                return line
            self.buffer += chunk


async def _watch(target: _Target, st: WatchState) -> AsyncGenerator[Event, None]:
    resp: Any = await request(
        target.api_client,
        "GET",
        target.path,
        query=[
            *target.query,
            ("watch", "true"),
            ("allowWatchBookmarks", "true"),  # as client-go spells it
            ("resourceVersion", st.resource_version or None),
            ("timeoutSeconds", target.watch_timeout),
        ],
        timeout=target.watch_timeout + target.request_timeout,
    )
    try:
        if resp.status == 410:
            raise _Gone()
        if resp.status != 200:
            raise await _failure(resp, "watch")
        st._up()
        st.consecutive_failures = 0
        st.last_event_at = time.monotonic()
        lines = _Lines(resp.content, target.max_bytes)
        while True:
            try:
                async with asyncio.timeout(target.liveness):
                    line = await lines.next()
            except TimeoutError:
                raise _Stalled() from None
            except BodyTooLarge as big:
                # the event cannot be read, nor skipped (the view would miss it): the next
                # attempt lists, and names the object if it is still too large
                st.resource_version = ""
                raise _too_large(target, big.head, "object", "watch") from None
            if not line:
                return  # the server ended the watch (its timeout): resume from the version
            st.last_event_at = time.monotonic()
            event = parse_event(line, st, path=target.path)
            del line
            if event is not None:
                if target.transform is not None:
                    event = Event(event.type, target.transform(event.object))
                yield event
            # buffered lines return without suspending: a burst must not starve the loop
            await asyncio.sleep(0)
    finally:
        resp.release()


def _parse_line(line: bytes | bytearray, path: str) -> tuple[str, dict[str, Any]] | None:
    if not line.strip():
        return None
    try:
        event = loads(line)
    except ValueError as exc:
        log.warning(
            "malformed watch line skipped",
            extra={
                "path": path,
                "line": bytes(line[:200]).decode(errors="replace"),
                "err": str(exc)[:200],
            },
        )
        return None
    etype = event.get("type") if isinstance(event, dict) else None
    obj = event.get("object") if isinstance(event, dict) else None
    if not isinstance(obj, dict) or not isinstance(etype, str):
        log.warning("watch event without object skipped", extra={"event_type": etype})
        return None
    return etype, obj


def parse_event(line: bytes | bytearray, st: WatchState, *, path: str = "") -> Event | None:
    """The event of one watch line, after moving the resume point; None for a bookmark or a
    malformed line. Raises for an ERROR event (410: relist)."""
    parsed = _parse_line(line, path)
    if parsed is None:
        return None
    etype, obj = parsed
    if etype == "ERROR":
        code = obj.get("code")
        if code == 410:
            raise _Gone()
        raise WatchError(
            f"watch ERROR {code}: {obj.get('message')}",
            status=code if isinstance(code, int) else 0,
            reason=str(obj.get("reason") or ""),
        )
    meta = obj.get("metadata")
    rv = meta.get("resourceVersion") if isinstance(meta, dict) else None
    if rv:
        st.resource_version = str(rv)
    if etype == "BOOKMARK":
        return None
    if etype not in ("ADDED", "MODIFIED", "DELETED"):
        log.warning("unknown watch event type skipped", extra={"event_type": etype})
        return None
    return Event(etype, obj)
