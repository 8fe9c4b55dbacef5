"""``Evictor``: API-initiated eviction with a retry policy that reads the server's answer.

What kubectl's drain does (``k8s.io/kubectl/pkg/drain``) and where this differs:

* kubectl sleeps a fixed 5 s after a PodDisruptionBudget 429 (no ``Retry-After``: the budget is
  exhausted). Here the PDBs named in the 429's causes are watched and the pod is retried as soon
  as ``status.disruptionsAllowed > 0`` (``evictor.pdbwatch``), falling back to ``default_retry``
  (5 s) when the watch is unavailable.
* A 429 or 5xx with ``Retry-After`` waits what the server said, bounded by
  ``retry_after_bounds`` (client-go waits it out by itself, up to 10 times).
* The listed pod's UID is sent as ``deleteOptions.preconditions.uid``, and the pod is re-read
  before every retry: a same-name replacement (StatefulSet, kubernetes/kubernetes#138229) is
  reported as ``pod_replaced`` and never evicted.
* 403 ``NamespaceTerminating``: the pod is re-read (kubectl ≤ 1.34 re-evicted a stale copy);
  once it is terminating, the namespace controller is deleting it and that counts as evicted.
* 500 "more than one PodDisruptionBudget" is never retried; the result names the PDBs.
* Transport errors and other 5xx retry with jittered exponential backoff (kubectl gives up).
* One ``deadline`` (seconds since the epoch) bounds requests and waits; everything is
  cancellable (``asyncio.CancelledError`` propagates).

Discovery follows kubectl's ``CheckEvictionSupport``: the ``pods/eviction`` entry of ``/api/v1``
names the policy group version to use (v1 preferred, v1beta1 accepted); without it, pods are
deleted.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

import tenacity

from evictor.listener import EvictionListener
from evictor.pdbwatch import PdbState, PdbTracker
from evictor.result import (
    Decision,
    EvictionResult,
    Outcome,
    Verdict,
    classify,
)
from evictor.transport import Response, TransportError, call

__all__ = [
    "EvictionListener",
    "Evictor",
    "PodRef",
    "WaitOutcome",
]

_TRANSIENT_ATTEMPTS = 6
_NAMESPACE_TERMINATING_RETRY = 1.0
_BACKOFF = tenacity.wait_exponential_jitter(multiplier=0.2, max=5.0, jitter=0.2)


class PodLike(Protocol):
    @property
    def namespace(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def uid(self) -> str: ...


@dataclass(frozen=True, slots=True)
class PodRef:
    namespace: str
    name: str
    uid: str = ""
    node_name: str = ""


class _Retry(Exception):
    def __init__(self, verdict: Verdict) -> None:
        super().__init__(verdict.message)
        self.verdict = verdict


class _Final(Exception):
    def __init__(self, result: EvictionResult) -> None:
        super().__init__(result.message)
        self.result = result


@dataclass(frozen=True, slots=True)
class WaitOutcome:
    """How waiting for one pod ended: ``deleted``, ``skipped``, ``timeout`` or ``error``."""

    state: str
    message: str = ""


class Evictor:
    """Evicts pods through one kubernetes-asyncio ``ApiClient`` (not closed here)."""

    def __init__(
        self,
        api_client: Any,
        *,
        default_retry: float = 5.0,
        retry_after_bounds: tuple[float, float] = (1.0, 60.0),
        concurrency: int = 50,
        listener: EvictionListener | None = None,
        clock: Callable[[], float] = time.time,
        poll_interval: float = 1.0,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        lo, hi = retry_after_bounds
        if not 0 <= lo <= hi:
            raise ValueError(f"retry_after_bounds must be 0 <= low <= high, got {lo}, {hi}")
        self.api_client = api_client
        self.default_retry = default_retry
        self.retry_after_bounds = (lo, hi)
        self.concurrency = concurrency
        self.listener = listener or EvictionListener()
        self.clock = clock
        self.poll_interval = poll_interval
        self.pdbs = PdbTracker(api_client)
        self._slots = asyncio.Semaphore(concurrency)
        self._eviction_version: str | None = None
        self._discovered = False
        self._discovery_lock = asyncio.Lock()

    @functools.cached_property
    def core(self) -> Any:
        """``CoreV1Api``, imported on first use and from its own module: the node agent keeps
        kubernetes-asyncio's ~770 models out of memory (``agent.kube``) until it evicts."""
        from kubernetes_asyncio.client.api.core_v1_api import CoreV1Api

        return CoreV1Api(self.api_client)

    async def close(self) -> None:
        await self.pdbs.close()

    async def __aenter__(self) -> Evictor:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- plumbing -----------------------------------------------------------------------------

    def _remaining(self, deadline: float | None) -> float | None:
        return None if deadline is None else deadline - self.clock()

    async def _request(self, make: Callable[..., Any], deadline: float | None) -> Response:
        """One API call within the concurrency bound and the deadline."""
        remaining = self._remaining(deadline)
        if remaining is not None and remaining <= 0:
            raise TimeoutError
        async with self._slots:
            kw: dict[str, Any] = {"_preload_content": False}
            if remaining is not None:
                kw["_request_timeout"] = max(remaining, 0.001)
            return await call(make(**kw))

    async def eviction_version(self) -> str | None:
        """``policy/v1`` or ``policy/v1beta1`` as ``/api/v1`` advertises, None: delete instead."""
        async with self._discovery_lock:
            if not self._discovered:
                resp = await self._request(self.core.get_api_resources, None)
                version = None
                if resp.ok and isinstance(resp.body, dict):
                    for res in resp.body.get("resources") or []:
                        if (
                            res.get("name") == "pods/eviction"
                            and res.get("kind") == "Eviction"
                            and res.get("group")
                            and res.get("version")
                        ):
                            version = f"{res['group']}/{res['version']}"
                            break
                elif not resp.ok:
                    raise TransportError(f"discovery of /api/v1 failed: {resp.status}")
                self._eviction_version = version
                self._discovered = True
        return self._eviction_version

    async def read_pod(
        self, namespace: str, name: str, *, deadline: float | None = None
    ) -> dict[str, Any] | None:
        """The pod as a dict, None when it is gone; raises TransportError on other failures."""
        resp = await self._request(
            lambda **kw: self.core.read_namespaced_pod(name, namespace, **kw), deadline
        )
        if resp.status == 404:
            return None
        if not resp.ok or not isinstance(resp.body, dict):
            raise TransportError(f"reading pod {namespace}/{name}: {resp.status} {resp.message}")
        return resp.body

    # --- evict / delete -----------------------------------------------------------------------

    async def evict(
        self,
        namespace: str,
        name: str,
        *,
        grace_period_seconds: int | None = None,
        dry_run: bool = False,
        expected_uid: str | None = None,
        deadline: float | None = None,
        max_attempts: int | None = None,
    ) -> EvictionResult:
        """Evict one pod, retrying as the answers allow; never raises for API answers."""
        version = await self.eviction_version()
        if version is None:
            return await self.delete(
                namespace,
                name,
                grace_period_seconds=grace_period_seconds,
                dry_run=dry_run,
                expected_uid=expected_uid,
                deadline=deadline,
            )

        def body(uid: str) -> dict[str, Any]:
            opts: dict[str, Any] = {"preconditions": {"uid": uid}} if uid else {}
            if grace_period_seconds is not None and grace_period_seconds >= 0:
                opts["gracePeriodSeconds"] = grace_period_seconds
            if dry_run:
                opts["dryRun"] = ["All"]
            return {
                "apiVersion": version,
                "kind": "Eviction",
                "metadata": {"name": name, "namespace": namespace},
                "deleteOptions": opts,
            }

        def send(uid: str) -> Callable[..., Any]:
            return lambda **kw: self.core.create_namespaced_pod_eviction(
                name, namespace, cast(Any, body(uid)), **kw
            )

        return await self._with_retries(
            namespace,
            name,
            send,
            method="eviction",
            expected_uid=expected_uid,
            deadline=deadline,
            max_attempts=max_attempts,
        )

    async def delete(
        self,
        namespace: str,
        name: str,
        *,
        grace_period_seconds: int | None = None,
        dry_run: bool = False,
        expected_uid: str | None = None,
        deadline: float | None = None,
        max_attempts: int | None = None,
    ) -> EvictionResult:
        """DELETE one pod (``--disable-eviction``, kubelet-like agents); PDBs are not consulted."""

        def send(uid: str) -> Callable[..., Any]:
            opts: dict[str, Any] = {"preconditions": {"uid": uid}} if uid else {}
            kwargs: dict[str, Any] = {}
            if grace_period_seconds is not None and grace_period_seconds >= 0:
                opts["gracePeriodSeconds"] = grace_period_seconds
                kwargs["grace_period_seconds"] = grace_period_seconds
            if dry_run:
                opts["dryRun"] = ["All"]
                kwargs["dry_run"] = "All"
            return lambda **kw: self.core.delete_namespaced_pod(
                name, namespace, body=cast(Any, opts), **kwargs, **kw
            )

        return await self._with_retries(
            namespace,
            name,
            send,
            method="delete",
            expected_uid=expected_uid,
            deadline=deadline,
            max_attempts=max_attempts,
        )

    async def _with_retries(
        self,
        namespace: str,
        name: str,
        send: Callable[[str], Callable[..., Any]],
        *,
        method: str,
        expected_uid: str | None,
        deadline: float | None,
        max_attempts: int | None,
    ) -> EvictionResult:
        started = self.clock()
        result = EvictionResult(namespace, name, Outcome.ERROR, method=method)
        uid = expected_uid or ""
        seen: dict[str, str] = {}
        transient = 0
        pod: dict[str, Any] | None = None

        def final(outcome: Outcome, message: str, **kw: Any) -> _Final:
            result.outcome = outcome
            result.message = message
            for k, v in kw.items():
                setattr(result, k, v)
            return _Final(result)

        async def refresh() -> None:
            """Re-read the pod: gone or replaced ends the loop (kubectl chases replacements)."""
            nonlocal pod
            try:
                pod = await self.read_pod(namespace, name, deadline=deadline)
            except TransportError:
                return  # kubectl ignores a failed re-read
            if pod is None:
                raise final(Outcome.ALREADY_GONE, f'pods "{name}" not found', status_code=404)
            current = str((pod.get("metadata") or {}).get("uid", ""))
            if uid and current != uid:
                raise final(
                    Outcome.POD_REPLACED,
                    f"pod {namespace}/{name} was replaced (uid {uid} is now {current})",
                )

        async def attempt() -> None:
            nonlocal uid, transient, pod
            if not uid or result.attempts > 0:
                await refresh()
                if not uid and pod is not None:
                    uid = str((pod.get("metadata") or {}).get("uid", ""))
            result.uid = uid
            remaining = self._remaining(deadline)
            if remaining is not None and remaining <= 0:
                raise TimeoutError
            result.attempts += 1
            self.listener.attempt(namespace, name, result.attempts)
            try:
                resp = await self._request(send(uid), deadline)
            except TransportError as exc:
                transient += 1
                raise _Retry(Verdict(Decision.TRANSIENT, None, str(exc))) from None
            verdict = classify(resp.status, resp.headers, resp.body)
            result.status_code = resp.status
            result.message = verdict.message
            result.causes = [dict(c) for c in verdict.causes]
            result.retry_after = verdict.retry_after
            d = verdict.decision
            if d is Decision.SUCCESS:
                raise final(Outcome.EVICTED, verdict.message)
            if d is Decision.GONE:
                raise final(Outcome.ALREADY_GONE, verdict.message)
            if d is Decision.PDB_BLOCKED:
                names = verdict.pdbs or await self._pdbs_selecting(namespace, pod)
                if names:
                    await self.pdbs.ensure(namespace)
                result.pdbs = names
                raise _Retry(
                    Verdict(
                        d, resp.status, verdict.message, verdict.causes, verdict.retry_after, names
                    )
                )
            if d in (Decision.RETRY_AFTER, Decision.TRANSIENT):
                if d is Decision.TRANSIENT:
                    transient += 1
                raise _Retry(verdict)
            if d is Decision.NAMESPACE_TERMINATING:
                await refresh()
                if pod is not None and (pod.get("metadata") or {}).get("deletionTimestamp"):
                    raise final(Outcome.EVICTED, verdict.message)
                raise _Retry(verdict)
            if d is Decision.CONFLICT:
                await refresh()  # gone / replaced end here
                raise final(Outcome.ERROR, verdict.message)
            if d is Decision.MULTIPLE_PDBS:
                if pod is None:
                    with contextlib.suppress(TransportError, TimeoutError):
                        pod = await self.read_pod(namespace, name, deadline=deadline)
                names = await self._pdbs_selecting(namespace, pod)
                msg = verdict.message
                if names:
                    msg = f"{msg} (PodDisruptionBudgets: {', '.join(names)})"
                raise final(Outcome.ERROR, msg, pdbs=names)
            raise final(Outcome.ERROR, verdict.message)

        def wait(state: tenacity.RetryCallState) -> float:
            exc = state.outcome.exception() if state.outcome else None
            assert isinstance(exc, _Retry)
            v = exc.verdict
            lo, hi = self.retry_after_bounds
            if v.decision is Decision.PDB_BLOCKED:
                seconds = min(max(v.retry_after, lo), hi) if v.retry_after else self.default_retry
            elif v.decision is Decision.RETRY_AFTER and v.retry_after:
                seconds = min(max(v.retry_after, lo), hi)
            elif v.decision is Decision.NAMESPACE_TERMINATING:
                seconds = _NAMESPACE_TERMINATING_RETRY
            elif v.retry_after:
                seconds = min(max(v.retry_after, lo), hi)
            else:
                seconds = _BACKOFF(state)
            remaining = self._remaining(deadline)
            if remaining is not None:
                seconds = max(min(seconds, remaining), 0.0)
            result.pdbs = v.pdbs or result.pdbs
            return seconds

        def before_sleep(state: tenacity.RetryCallState) -> None:
            v = last[-1] if last else None
            if v is not None and v.decision is Decision.PDB_BLOCKED and v.pdbs:
                return
            action = state.next_action
            self.listener.retry(result, action.sleep if action is not None else 0.0)

        last: list[Verdict] = []

        async def sleep(seconds: float) -> None:
            v = last[-1] if last else None
            if v is not None and v.decision is Decision.PDB_BLOCKED and v.pdbs:
                # the real wait is known only afterwards: report it then
                began = self.clock()
                self.listener.blocked(result, seconds)
                await self.pdbs.wait_reopen(namespace, v.pdbs, timeout=seconds, seen=seen)
                self.listener.retry(result, self.clock() - began)
            else:
                await asyncio.sleep(seconds)

        def stop(state: tenacity.RetryCallState) -> bool:
            exc = state.outcome.exception() if state.outcome else None
            if isinstance(exc, _Retry):
                last.append(exc.verdict)
                del last[:-1]
            if max_attempts is not None and result.attempts >= max_attempts:
                return True
            if transient >= _TRANSIENT_ATTEMPTS:
                return True
            remaining = self._remaining(deadline)
            return remaining is not None and remaining <= 0

        retrying = tenacity.AsyncRetrying(
            retry=tenacity.retry_if_exception_type(_Retry),
            wait=wait,
            stop=stop,
            sleep=sleep,
            before_sleep=before_sleep,
            reraise=True,
        )
        try:
            await retrying(attempt)
        except _Final as done:
            result = done.result
        except _Retry as exc:  # attempts, transient budget or deadline exhausted
            v = exc.verdict
            result.pdbs = v.pdbs or result.pdbs
            if v.decision is Decision.PDB_BLOCKED:
                result.outcome = Outcome.BLOCKED_BY_PDB
            else:
                result.outcome = Outcome.ERROR
            result.message = v.message
            result.status_code = v.status_code
        except TimeoutError:
            if result.status_code == 429 and result.pdbs:
                result.outcome = Outcome.BLOCKED_BY_PDB
            else:
                result.outcome = Outcome.ERROR
                result.message = "global timeout reached" + (
                    f": {result.message}" if result.message else ""
                )
        result.seconds = self.clock() - started
        return result

    async def _pdbs_selecting(
        self, namespace: str, pod: Mapping[str, Any] | None
    ) -> tuple[str, ...]:
        if pod is None:
            return ()
        if not await self.pdbs.ensure(namespace):
            return ()
        labels = (pod.get("metadata") or {}).get("labels") or {}
        return tuple(sorted(p.name for p in self.pdbs.matching(namespace, labels)))

    def pdb_state(self, namespace: str, name: str) -> PdbState | None:
        return self.pdbs.get(namespace, name)

    # --- waiting ------------------------------------------------------------------------------

    async def wait_for_deletion(
        self,
        pods: Sequence[PodLike],
        *,
        deadline: float | None,
        skip_wait_for_delete_timeout: float = 0,
        on_done: Callable[[PodLike, WaitOutcome], None] | None = None,
    ) -> dict[tuple[str, str], WaitOutcome]:
        """Wait until each pod is gone: 404, or the name now belongs to another UID.

        One watch covers all pods (scoped to their node when they share one); when it cannot be
        used the pods are polled every ``poll_interval`` s, as kubectl does. A pod whose
        deletionTimestamp is older than ``skip_wait_for_delete_timeout`` (> 0) is skipped.
        """
        pending: dict[tuple[str, str], PodLike] = {(p.namespace, p.name): p for p in pods}
        done: dict[tuple[str, str], WaitOutcome] = {}
        deleting: dict[tuple[str, str], float] = {}

        def finish(key: tuple[str, str], outcome: WaitOutcome) -> None:
            pod = pending.pop(key, None)
            if pod is None:
                return
            done[key] = outcome
            if on_done is not None:
                on_done(pod, outcome)

        def observe(key: tuple[str, str], obj: Mapping[str, Any] | None) -> None:
            pod = pending.get(key)
            if pod is None:
                return
            if obj is None:
                finish(key, WaitOutcome("deleted"))
                return
            meta = obj.get("metadata") or {}
            if pod.uid and meta.get("uid") != pod.uid:
                finish(key, WaitOutcome("deleted"))
                return
            ts = meta.get("deletionTimestamp")
            if ts and skip_wait_for_delete_timeout > 0:
                from scheduler.objects import parse_time

                with contextlib.suppress(ValueError):
                    deleting[key] = parse_time(ts)
            check_skips()

        def check_skips() -> None:
            if skip_wait_for_delete_timeout <= 0:
                return
            now = self.clock()
            for key, since in list(deleting.items()):
                if key in pending and now - since > skip_wait_for_delete_timeout:
                    finish(
                        key,
                        WaitOutcome(
                            "skipped",
                            f'pod "{key[1]}" has DeletionTimestamp older than '
                            f"{int(skip_wait_for_delete_timeout)} seconds, skipping",
                        ),
                    )

        nodes = {getattr(p, "node_name", "") for p in pods}
        node = nodes.pop() if len(nodes) == 1 else ""
        with contextlib.suppress(TransportError, TimeoutError, _WatchFailed):
            await self._watch_deletions(pending, observe, check_skips, node=node, deadline=deadline)
        while pending:
            remaining = self._remaining(deadline)
            if remaining is not None and remaining <= 0:
                break
            keys = list(pending)
            results = await asyncio.gather(
                *(self._probe(ns, name, deadline) for ns, name in keys),
                return_exceptions=True,
            )
            for key, res in zip(keys, results, strict=True):
                if isinstance(res, TimeoutError):
                    continue
                if isinstance(res, BaseException):
                    finish(key, WaitOutcome("error", str(res)))
                else:
                    observe(key, res)
            if not pending:
                break
            wait_for = self.poll_interval
            remaining = self._remaining(deadline)
            if remaining is not None:
                wait_for = min(wait_for, max(remaining, 0.0))
            await asyncio.sleep(wait_for)
        for key in list(pending):
            finish(key, WaitOutcome("timeout", "timed out waiting for the condition"))
        return done

    async def _probe(self, namespace: str, name: str, deadline: float | None) -> Any:
        return await self.read_pod(namespace, name, deadline=deadline)

    async def _watch_deletions(
        self,
        pending: dict[tuple[str, str], PodLike],
        observe: Callable[[tuple[str, str], Mapping[str, Any] | None], None],
        check_skips: Callable[[], None],
        *,
        node: str,
        deadline: float | None,
    ) -> None:
        from kubernetes_asyncio import watch

        field_selector = f"spec.nodeName={node}" if node else None
        kw: dict[str, Any] = {"field_selector": field_selector} if field_selector else {}
        resp = await self._request(
            lambda **k: self.core.list_pod_for_all_namespaces(**kw, **k), deadline
        )
        if not resp.ok or not isinstance(resp.body, dict):
            raise _WatchFailed(resp.message)
        present: dict[tuple[str, str], Mapping[str, Any]] = {}
        for item in resp.body.get("items") or []:
            meta = item.get("metadata") or {}
            present[(meta.get("namespace", ""), meta.get("name", ""))] = item
        for key in list(pending):
            observe(key, present.get(key))
        rv = str((resp.body.get("metadata") or {}).get("resourceVersion", ""))
        if not pending:
            return
        finished = asyncio.Event()

        async def consume() -> None:
            nonlocal rv
            while pending:
                remaining = self._remaining(deadline)
                timeout = 60 if remaining is None else max(1, min(60, int(remaining) + 1))
                async with watch.Watch(return_type="object") as w:
                    async for event in w.stream(
                        self.core.list_pod_for_all_namespaces,
                        resource_version=rv,
                        allow_watch_bookmarks=True,
                        timeout_seconds=timeout,
                        **kw,
                    ):
                        obj = event.get("raw_object")
                        if not isinstance(obj, dict):
                            continue
                        meta = obj.get("metadata") or {}
                        if meta.get("resourceVersion"):
                            rv = str(meta["resourceVersion"])
                        if event.get("type") == "BOOKMARK":
                            continue
                        key = (str(meta.get("namespace", "")), str(meta.get("name", "")))
                        if key not in pending:
                            continue
                        if event.get("type") == "DELETED":
                            pod = pending[key]
                            if not pod.uid or meta.get("uid") == pod.uid:
                                observe(key, None)
                        else:
                            observe(key, obj)
                        if not pending:
                            finished.set()
                            return
            finished.set()

        async def tick() -> None:
            while pending:
                await asyncio.sleep(1.0)
                check_skips()
            finished.set()

        consumer = asyncio.create_task(consume())
        tasks = [consumer, asyncio.create_task(tick()), asyncio.create_task(finished.wait())]
        remaining = self._remaining(deadline)
        try:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(None if remaining is None else max(remaining, 0.0)):
                    await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        if consumer.done() and not consumer.cancelled() and consumer.exception() is not None:
            raise _WatchFailed(str(consumer.exception()))


class _WatchFailed(Exception):
    pass


def refs(pods: Iterable[Any]) -> list[PodRef]:
    """PodRefs from scheduler Pods or dicts."""
    out: list[PodRef] = []
    for p in pods:
        if isinstance(p, Mapping):
            meta = p.get("metadata") or {}
            out.append(
                PodRef(
                    str(meta.get("namespace", "")),
                    str(meta.get("name", "")),
                    str(meta.get("uid", "")),
                    str((p.get("spec") or {}).get("nodeName", "")),
                )
            )
        else:
            out.append(PodRef(p.namespace, p.name, p.uid, getattr(p, "node_name", "")))
    return out
