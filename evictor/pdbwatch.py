"""Watching PodDisruptionBudgets so a blocked eviction is retried as soon as its budget reopens.

kubectl's drain sleeps a fixed 5 s after every 429 however soon the budget reopens, so a drain
behind ``maxUnavailable: 1`` costs about 5 s per pod. The disruption controller publishes the
budget in ``status.disruptionsAllowed``; one list-then-watch per namespace keeps the latest
status of every PDB there (``PdbTracker``), and a blocked eviction waits on it
(``wait_reopen``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from evictor.api.watching import (
    BOOKMARK_INTERVAL,
    LIVENESS_FACTOR,
    Page,
    WatchState,
    list_and_watch,
)
from kube.labels import LabelSelector, SelectorError

__all__ = ["PdbState", "PdbTracker"]

log = logging.getLogger("evictor.pdbwatch")


@dataclass(slots=True)
class PdbState:
    name: str
    namespace: str
    resource_version: str = ""
    generation: int = 0
    observed_generation: int = 0
    disruptions_allowed: int = 0
    current_healthy: int = 0
    desired_healthy: int = 0
    expected_pods: int = 0
    selector: LabelSelector | None = None  # None: selects nothing (absent or invalid)
    conditions: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> PdbState:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        selector: LabelSelector | None = None
        if spec.get("selector") is not None:
            try:
                selector = LabelSelector.from_dict(spec.get("selector"))
            except SelectorError:
                selector = None

        def num(m: Mapping[str, Any], key: str) -> int:
            v = m.get(key)
            return v if isinstance(v, int) else 0

        return cls(
            name=str(meta.get("name", "")),
            namespace=str(meta.get("namespace", "")),
            resource_version=str(meta.get("resourceVersion", "")),
            generation=num(meta, "generation"),
            observed_generation=num(status, "observedGeneration"),
            disruptions_allowed=num(status, "disruptionsAllowed"),
            current_healthy=num(status, "currentHealthy"),
            desired_healthy=num(status, "desiredHealthy"),
            expected_pods=num(status, "expectedPods"),
            selector=selector,
            conditions=[c for c in status.get("conditions") or [] if isinstance(c, dict)],
        )

    @property
    def open(self) -> bool:
        return self.disruptions_allowed > 0 and self.observed_generation >= self.generation

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "namespace": self.namespace,
            "disruptionsAllowed": self.disruptions_allowed,
            "currentHealthy": self.current_healthy,
            "desiredHealthy": self.desired_healthy,
            "expectedPods": self.expected_pods,
        }


class _Namespace:
    def __init__(self) -> None:
        self.pdbs: dict[str, PdbState] = {}
        self.waiters: dict[str, deque[asyncio.Future[None]]] = {}
        self.state = WatchState()
        self.task: asyncio.Task[None] | None = None

    @property
    def healthy(self) -> bool:
        """Listed, and the watch neither failed nor went silent since."""
        return self.state.live and self.state.listed


class PdbTracker:
    """One list+watch of PDBs per namespace, started on first use; ``close()`` stops them.

    The list-then-watch is ``evictor.api.watching``'s (410 relists, errors back off with
    jitter, a watch gone silent is restarted from a relist within its liveness bound); while
    it is not live, waiters fall back to the interval, never to a budget view that may have
    stopped moving."""

    def __init__(
        self,
        api_client: Any,
        *,
        start_timeout: float = 5.0,
        bookmark_interval: float = BOOKMARK_INTERVAL,
        liveness_factor: float = LIVENESS_FACTOR,
    ) -> None:
        self._api = api_client
        self._spaces: dict[str, _Namespace] = {}
        self._start_timeout = start_timeout
        self._bookmark_interval = bookmark_interval
        self._liveness_factor = liveness_factor

    async def ensure(self, namespace: str) -> bool:
        """Start watching ``namespace``; True once its PDBs are listed and the watch is up."""
        space = self._spaces.get(namespace)
        if space is None:
            space = self._spaces[namespace] = _Namespace()
            space.task = asyncio.create_task(self._run(namespace, space))
        if not space.state.settled.is_set():  # listed, or the first attempt failed
            # asyncio.timeout, not wait_for: 3.11's wait_for can swallow a cancellation
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._start_timeout):
                    await space.state.settled.wait()
        return space.healthy

    def state(self, namespace: str) -> WatchState | None:
        """How the watch of ``namespace`` is doing; None when it is not watched."""
        space = self._spaces.get(namespace)
        return None if space is None else space.state

    def get(self, namespace: str, name: str) -> PdbState | None:
        space = self._spaces.get(namespace)
        return None if space is None else space.pdbs.get(name)

    def matching(self, namespace: str, labels: Mapping[str, str]) -> list[PdbState]:
        space = self._spaces.get(namespace)
        if space is None:
            return []
        return [
            p for p in space.pdbs.values() if p.selector is not None and p.selector.matches(labels)
        ]

    async def wait_reopen(
        self,
        namespace: str,
        names: tuple[str, ...],
        *,
        timeout: float,
        seen: dict[str, str],
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> bool:
        """Wait until one of ``names`` has room (True) or ``timeout`` passes (False).

        A blocked eviction waits on the budget(s) named in the 429's causes; each status update
        with ``disruptionsAllowed = k > 0`` wakes the first k waiters in arrival order (waking
        everyone would make all of them race for k slots and all but k get another 429).
        Waiters also give up after ``timeout`` (the caller's ``default_retry``, kubectl's
        5 s), which is also what happens when the watch is unavailable. Only a 429 without
        ``Retry-After`` waits here: a server that says when to come back is obeyed to the
        second (``evictor.client``), whatever the budget looks like in the watch meanwhile. A
        waiter that registers while the cached budget already shows room is released at once,
        but only once per observed resourceVersion, so a cache that lags the server cannot
        cause a hot loop.

        ``seen`` maps a PDB name to the resourceVersion this caller was already released on;
        it is updated, so pass the same dict on every retry of one pod. ``sleep`` measures the
        timeout (the caller's clock: a test's fake one).
        """
        space = self._spaces.get(namespace)
        if space is None or not space.healthy or not names:
            await sleep(max(timeout, 0.0))
            return False
        for name in names:
            state = space.pdbs.get(name)
            if state is not None and state.open and seen.get(name) != state.resource_version:
                seen[name] = state.resource_version
                return True
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        for name in names:
            space.waiters.setdefault(name, deque()).append(fut)
        timer = asyncio.ensure_future(sleep(max(timeout, 0.0)))
        try:
            await asyncio.wait((fut, timer), return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
            for name in names:
                q = space.waiters.get(name)
                if q is not None:
                    with contextlib.suppress(ValueError):
                        q.remove(fut)
        if not fut.done():
            fut.cancel()  # a later update skips it
            return False
        for name in names:
            state = space.pdbs.get(name)
            if state is not None:
                seen[name] = state.resource_version
        return True

    def _update(self, space: _Namespace, state: PdbState) -> None:
        space.pdbs[state.name] = state
        if not state.open:
            return
        q = space.waiters.get(state.name)
        woken = 0
        while q and woken < state.disruptions_allowed:
            fut = q.popleft()
            if not fut.done():
                fut.set_result(None)
                woken += 1

    async def _run(self, namespace: str, space: _Namespace) -> None:
        building: dict[str, PdbState] = {}
        async for item in list_and_watch(
            self._api,
            f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets",
            bookmark_interval=self._bookmark_interval,
            liveness_factor=self._liveness_factor,
            state=space.state,
            log_level=logging.DEBUG,  # an optimisation: waits fall back to the interval
        ):
            if isinstance(item, Page):
                if item.first:
                    building = {}
                for obj in item.items:
                    st = PdbState.from_dict(obj)
                    building[st.name] = st
                if item.last:
                    space.pdbs, building = building, {}
                    for st in list(space.pdbs.values()):
                        self._update(space, st)
            elif item.type == "DELETED":
                space.pdbs.pop(PdbState.from_dict(item.object).name, None)
            else:
                self._update(space, PdbState.from_dict(item.object))

    async def close(self) -> None:
        tasks = [s.task for s in self._spaces.values() if s.task is not None]
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        self._spaces.clear()
