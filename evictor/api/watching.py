"""One list-then-watch generator: the informer's, the PDB watch's and the deletion wait's.

client-go's reflector is the contract: LIST (in pages of ``limit``/``continue`` when asked, as
its pager does), then WATCH from the list's ``resourceVersion`` with ``allowWatchBookmarks``,
resuming from the last version seen (an event's or a bookmark's) whenever the server ends the
stream. ``410 Gone`` — as the watch's HTTP answer, as an ``ERROR`` event with code 410, or as an
expired ``continue`` token — means the version fell out of the watch cache: the view is rebuilt
from a relist, at once and without counting as a failure. Every other failure (no answer, a 5xx,
a 401/403, an ``ERROR`` event) backs off with jitter (tenacity's wait strategy through
``evictor.backoff``) and resumes from the last version, as the reflector's backoff manager does.

What the reflector lacks, and the agent needs (issue 15): a **liveness bound**. A watch whose
connection stays open but delivers nothing — a proxy or load balancer that stopped forwarding, a
wedged apiserver — looks to the reader exactly like a quiet node, and the agent would keep
evicting from a view that misses every new pod. The apiserver sends a bookmark to every
``allowWatchBookmarks`` watcher about once a minute (``cacheWatcher.nextBookmarkTime``), so
silence longer than ``liveness_factor`` × ``bookmark_interval`` means the stream is dead: it is
dropped and the view rebuilt from a relist (a resume could reuse the same dead path and version).

The generator yields ``Page`` objects (one per list page, so a caller can slim each page before
the next is fetched, as the agent does for its footprint) and ``Event`` objects (``ADDED``,
``MODIFIED``, ``DELETED``; bookmarks only move the resume point). ``WatchState`` tells how the
watch is doing (live or not, the last error and its HTTP status, counts), for ``/readyz`` and
metrics. Malformed lines are logged and skipped, never fatal: one bad object must not stop the
view of all the others.

Requests go through ``evictor.api.calls.request`` (kubernetes-asyncio's public ``call_api``);
kubernetes-asyncio's ``Watch`` is not used, because it deserializes into models and opens an
``ApiClient`` of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import tenacity

from evictor.api.calls import request
from evictor.backoff import WATCH_BACKOFF
from evictor.backoff import delay as backoff_delay

__all__ = [
    "BOOKMARK_INTERVAL",
    "LIVENESS_FACTOR",
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
) -> AsyncGenerator[Page | Event, None]:
    """List ``path`` (a collection URL, e.g. ``/api/v1/pods``) with ``query`` (selectors), then
    watch it, forever; close or cancel to stop.

    ``resource_version``: start watching from there without listing (the caller has just
    listed); a 410 still relists. ``page_size`` > 0 lists in pages. ``max_failures`` > 0:
    raise ``WatchError`` after that many consecutive failures instead of backing off again
    (for a caller with a fallback, such as the deletion wait's polling). ``log_level``: of
    the failure and stall lines (a caller with a fallback logs them at DEBUG: ``evict`` prints
    no warning for a watch it can do without).
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
    raw = await resp.read()
    text = raw.decode(errors="replace")
    reason = ""
    message = text[:300]
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    if isinstance(body, Mapping):
        reason = str(body.get("reason") or "")
        message = str(body.get("message") or message)
    return WatchError(
        f"{what} answered {resp.status}: {message}", status=resp.status, reason=reason
    )


async def _list(target: _Target, st: WatchState) -> AsyncGenerator[Page, None]:
    token = ""
    first = True
    while True:
        items, token, rv = await _list_page(target, token)
        if not token:
            st.resource_version = rv
            st.listed = True
            st._up()
            st.consecutive_failures = 0
            st.settled.set()
        page = Page(items, first=first, last=not token, resource_version=rv)
        del items
        yield page
        del page  # this page's objects go before the next page comes (the agent's footprint)
        if not token:
            return
        first = False
        await asyncio.sleep(0)  # a large list comes in many pages: let the loop run


async def _list_page(target: _Target, token: str) -> tuple[list[dict[str, Any]], str, str]:
    """One page's items, the continue token ("" on the last page) and the list's version."""
    resp: Any = await request(
        target.api_client,
        "GET",
        target.path,
        query=[*target.query, ("limit", target.page_size or None), ("continue", token or None)],
        timeout=target.request_timeout,
    )
    try:
        if resp.status == 410 and token:
            raise _Gone()  # the continue token expired: list again from the start
        if resp.status != 200:
            raise await _failure(resp, "list")
        body = json.loads(await resp.read())
    finally:
        resp.release()
    if not isinstance(body, dict) or not isinstance(body.get("items") or [], list):
        raise WatchError("list answered with a body that is not a list", status=200)
    meta = body.get("metadata") or {}
    token = str(meta.get("continue") or "")
    items = [i for i in body.get("items") or [] if isinstance(i, dict)]
    return items, token, "" if token else str(meta.get("resourceVersion") or "")


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
        while True:
            try:
                async with asyncio.timeout(target.liveness):
                    line = await resp.content.readline()
            except TimeoutError:
                raise _Stalled() from None
            if not line:
                return  # the server ended the watch (its timeout): resume from the version
            st.last_event_at = time.monotonic()
            event = parse_event(line, st, path=target.path)
            if event is not None:
                yield event
            # buffered lines return without suspending: a burst must not starve the loop
            await asyncio.sleep(0)
    finally:
        resp.release()


def _parse_line(line: bytes, path: str) -> tuple[str, dict[str, Any]] | None:
    if not line.strip():
        return None
    try:
        event = json.loads(line)
    except ValueError:
        log.warning(
            "malformed watch line skipped",
            extra={"path": path, "line": line[:200].decode(errors="replace")},
        )
        return None
    etype = event.get("type") if isinstance(event, dict) else None
    obj = event.get("object") if isinstance(event, dict) else None
    if not isinstance(obj, dict) or not isinstance(etype, str):
        log.warning("watch event without object skipped", extra={"event_type": etype})
        return None
    return etype, obj


def parse_event(line: bytes, st: WatchState, *, path: str = "") -> Event | None:
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
