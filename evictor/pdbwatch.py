"""Watching PodDisruptionBudgets so a blocked eviction is retried as soon as its budget reopens.

kubectl's drain sleeps a fixed 5 s after every 429 however soon the budget reopens, so a drain
behind ``maxUnavailable: 1`` costs about 5 s per pod. The disruption controller publishes the
budget in ``status.disruptionsAllowed``; one list-then-watch per namespace keeps the latest
status of every PDB there. A blocked eviction registers as a waiter on the budget(s) named in the
429's causes; each status update with ``disruptionsAllowed = k > 0`` wakes the first k waiters in
arrival order (waking everyone would make all of them race for k slots and all but k get another
429). Waiters also give up after a fallback interval (the caller's ``default_retry``, kubectl's
5 s), which is also what happens when the watch is unavailable. Only a 429 without
``Retry-After`` waits here: a server that says when to come back is obeyed to the second
(``evictor.client``), whatever the budget looks like in the watch meanwhile.

A waiter that registers while the cached budget already shows room is released at once, but only
once per observed resourceVersion, so a cache that lags the server cannot cause a hot loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from evictor.transport import TransportError, call, raw_watch
from scheduler.labels import LabelSelector, SelectorError

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
        self.ready = asyncio.Event()
        self.healthy = False
        self.task: asyncio.Task[None] | None = None


class PdbTracker:
    """One list+watch of PDBs per namespace, started on first use; ``close()`` stops them."""

    def __init__(self, api_client: Any, *, start_timeout: float = 5.0) -> None:
        self._api = api_client
        self._spaces: dict[str, _Namespace] = {}
        self._start_timeout = start_timeout

    async def ensure(self, namespace: str) -> bool:
        """Start watching ``namespace``; True once its PDBs are listed and the watch is up."""
        space = self._spaces.get(namespace)
        if space is None:
            space = self._spaces[namespace] = _Namespace()
            space.task = asyncio.create_task(self._run(namespace, space))
        if not space.ready.is_set():
            # asyncio.timeout, not wait_for: 3.11's wait_for can swallow a cancellation
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._start_timeout):
                    await space.ready.wait()
        return space.healthy

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
        from kubernetes_asyncio.client.api.policy_v1_api import PolicyV1Api

        policy = PolicyV1Api(self._api)
        backoff = 0.2
        while True:
            try:
                resp = await call(
                    policy.list_namespaced_pod_disruption_budget(namespace, _preload_content=False)
                )
                if not resp.ok:
                    raise TransportError(f"listing PDBs: {resp.status} {resp.message}")
                body = resp.body if isinstance(resp.body, dict) else {}
                space.pdbs = {}
                for item in body.get("items") or []:
                    st = PdbState.from_dict(item)
                    space.pdbs[st.name] = st
                rv = str((body.get("metadata") or {}).get("resourceVersion", ""))
                space.healthy = True
                space.ready.set()
                for st in list(space.pdbs.values()):
                    self._update(space, st)
                backoff = 0.2
                async with raw_watch() as w:
                    async for event in w.stream(
                        policy.list_namespaced_pod_disruption_budget,
                        namespace,
                        resource_version=rv,
                        allow_watch_bookmarks=True,
                        timeout_seconds=300,
                    ):
                        obj = event.get("raw_object")
                        kind = event.get("type")
                        if not isinstance(obj, dict) or kind == "BOOKMARK":
                            continue
                        st = PdbState.from_dict(obj)
                        if kind == "DELETED":
                            space.pdbs.pop(st.name, None)
                        else:
                            self._update(space, st)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the watch is an optimisation: fall back, try again
                log.debug("PDB watch in %s failed: %s", namespace, exc)
                space.healthy = False
                space.ready.set()
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)

    async def close(self) -> None:
        tasks = [s.task for s in self._spaces.values() if s.task is not None]
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        self._spaces.clear()
