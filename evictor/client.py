"""``Evictor``: API-initiated eviction with a retry policy that reads the server's answer.

What kubectl's drain does (``k8s.io/kubectl/pkg/drain``), with waits bounded by what the server
says rather than by fixed sleeps; ``Evictor`` lists where it differs.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from evictor.api.calls import (
    Response,
    TransportError,
    current_request_timeout,
    path_segment,
    send,
)
from evictor.api.watching import (
    BOOKMARK_INTERVAL,
    LIVENESS_FACTOR,
    Event,
    Page,
    WatchError,
    list_and_watch,
)
from evictor.backoff import RETRY_BACKOFF, delay
from evictor.deleteoptions import PodDeleteOptions
from evictor.listener import EvictionListener
from evictor.pdbwatch import PdbState, PdbTracker
from evictor.result import (
    Decision,
    EvictionResult,
    Outcome,
    Verdict,
    classify,
)

__all__ = [
    "DeletionWait",
    "EvictionListener",
    "Evictor",
    "PodRef",
    "WaitOutcome",
]

_TRANSIENT_ATTEMPTS = 6
_NAMESPACE_TERMINATING_RETRY = 1.0


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


@dataclass(frozen=True, slots=True)
class _Request:
    """One request of the client, as ``send`` takes it."""

    method: str
    path: str
    query: Sequence[tuple[str, Any]] = ()
    body: Any = None


def _pod_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{path_segment(namespace)}/pods/{path_segment(name)}"


# the storage's precondition failure, as kube-apiserver words it in a 409 to a DELETE
_UID_NOW = re.compile(r"UID in object meta: (\S+)")


def _replaced(result: EvictionResult, uid: str, message: str) -> str:
    """What ``_reread`` says of a replaced pod, from a 409's message when it names the UID."""
    found = _UID_NOW.search(message)
    if found is None:
        return f"pod {result.namespace}/{result.name} was replaced: {message}"
    return f"pod {result.namespace}/{result.name} was replaced (uid {uid} is now {found[1]})"


@dataclass(slots=True)
class _Run:
    """One pod's eviction (or delete) while it is retried: the result so far, the UID every
    request is conditioned on, the latest copy of the pod, and what the pauses need."""

    result: EvictionResult
    uid: str  # "" until known (read before the first request)
    reads: bool = True  # False: the answers alone settle the pod (a DELETE with a known UID)
    pod: dict[str, Any] | None = None
    transient: int = 0  # transport errors and 5xx answers so far
    seen: dict[str, str] = field(default_factory=dict)  # PDB → resourceVersion released on

    def end(self, outcome: Outcome, message: str, **changes: Any) -> None:
        """The pod is settled: ``outcome``, and the answer fields that ``changes`` corrects."""
        self.result.outcome = outcome
        self.result.message = message
        for key, value in changes.items():
            setattr(self.result, key, value)

    def give_up(self, verdict: Verdict) -> None:
        """Out of attempts or time while still retrying: the last answer is the result."""
        self.result.pdbs = verdict.pdbs or self.result.pdbs
        blocked = verdict.decision is Decision.PDB_BLOCKED
        self.end(
            Outcome.BLOCKED_BY_PDB if blocked else Outcome.ERROR,
            verdict.message,
            status_code=verdict.status_code,
            reason=verdict.reason,
        )

    def timed_out(self) -> None:
        """The deadline passed before the next request could go out."""
        r = self.result
        if r.status_code == 429 and r.pdbs:
            r.outcome = Outcome.BLOCKED_BY_PDB
        else:
            r.outcome = Outcome.ERROR
            r.message = "global timeout reached" + (f": {r.message}" if r.message else "")


@dataclass(frozen=True, slots=True)
class WaitOutcome:
    """How waiting for one pod ended: ``deleted``, ``skipped``, ``timeout`` or ``error``."""

    state: str
    message: str = ""


class Evictor:
    """Evicts pods through one kubernetes-asyncio ``ApiClient`` (not closed here).

    Where it differs from kubectl's drain:

    * kubectl sleeps a fixed 5 s after a PodDisruptionBudget 429 (no ``Retry-After``: the budget is
      exhausted). Here the PDBs named in the 429's causes are watched and the pod is retried as soon
      as ``status.disruptionsAllowed > 0`` (``evictor.pdbwatch``), falling back to ``default_retry``
      (5 s) when the watch is unavailable.
    * ``Retry-After`` is a floor for every retry it comes with, as in client-go (whose REST layer
      waits ``max(backoff, Retry-After)`` before it retries a 429 or 5xx by itself): the next
      attempt never goes out sooner, whatever the PDB watch shows meanwhile. That matters for the
      apiserver's own "The disruption budget NAME is still being processed by the server" 429
      (``Retry-After: 10``): the budget's status can look open in the watch before the server
      accepts it again. The watch only shortens waits the server did not bound. Nor is the server's
      value capped: only the deadline ends such a wait, and then without another attempt.
    * The listed pod's UID is sent as ``deleteOptions.preconditions.uid``, and the pod is re-read
      before every retry: a same-name replacement (StatefulSet, kubernetes/kubernetes#138229) is
      reported as ``pod_replaced`` and never evicted. A DELETE with a known UID is never preceded by
      a read: its precondition already answers, 404 for a pod that is gone and 409 for a
      replacement, so a client that only deletes (the agent's default mode) needs no pods ``get``.
    * 403 ``NamespaceTerminating``: the pod is re-read (kubectl ≤ 1.34 re-evicted a stale copy);
      once it is terminating, the namespace controller is deleting it and that counts as evicted.
    * 500 "more than one PodDisruptionBudget" is never retried; the result names the PDBs.
    * Transport errors and other 5xx retry with jittered exponential backoff (kubectl gives up).
    * One ``deadline`` (seconds since the epoch) bounds requests and waits; everything is
      cancellable (``asyncio.CancelledError`` propagates).
    """

    def __init__(
        self,
        api_client: Any,
        *,
        default_retry: float = 5.0,
        min_retry_after: float = 1.0,
        concurrency: int = 50,
        listener: EvictionListener | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        poll_interval: float = 1.0,
        bookmark_interval: float = BOOKMARK_INTERVAL,
        liveness_factor: float = LIVENESS_FACTOR,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        if min_retry_after < 0:
            raise ValueError(f"min_retry_after must not be negative, got {min_retry_after}")
        self.api_client = api_client
        self.default_retry = default_retry
        self.min_retry_after = min_retry_after
        self.concurrency = concurrency
        self.listener = listener or EvictionListener()
        self.clock = clock
        self.sleep = sleep  # every pause between attempts: a test passes a fake clock's
        self.poll_interval = poll_interval
        # the watches' liveness bound (``evictor.api.watching``): bookmark_interval × factor
        self.bookmark_interval = bookmark_interval
        self.liveness_factor = liveness_factor
        self.pdbs = PdbTracker(
            api_client, bookmark_interval=bookmark_interval, liveness_factor=liveness_factor
        )
        self._slots = asyncio.Semaphore(concurrency)
        self._eviction_version: str | None = None
        self._discovered = False
        self._discovery_lock = asyncio.Lock()

    async def close(self) -> None:
        await self.pdbs.close()

    async def __aenter__(self) -> Evictor:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- plumbing -----------------------------------------------------------------------------

    def _remaining(self, deadline: float | None) -> float | None:
        return None if deadline is None else deadline - self.clock()

    async def _request(self, req: _Request, deadline: float | None) -> Response:
        """One API call within the concurrency bound and the deadline."""
        remaining = self._remaining(deadline)
        if remaining is not None and remaining <= 0:
            raise TimeoutError
        async with self._slots:
            return await send(
                self.api_client,
                req.method,
                req.path,
                query=req.query,
                body=req.body,
                timeout=None if remaining is None else max(remaining, 0.001),
            )

    async def eviction_version(self) -> str | None:
        """``policy/v1`` or ``policy/v1beta1`` as ``/api/v1`` advertises, None: delete instead.

        kubectl's ``CheckEvictionSupport``: the ``pods/eviction`` entry of ``/api/v1`` names the
        policy group version to use (v1 preferred, v1beta1 accepted); without it, pods are
        deleted."""
        async with self._discovery_lock:
            if not self._discovered:
                resp = await self._request(_Request("GET", "/api/v1/"), None)
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
        resp = await self._request(_Request("GET", _pod_path(namespace, name)), deadline)
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

        def build(uid: str) -> _Request:
            opts = PodDeleteOptions(
                uid=uid, grace_period_seconds=grace_period_seconds, dry_run=dry_run
            )
            body = opts.eviction(version, namespace, name)
            return _Request("POST", _pod_path(namespace, name) + "/eviction", body=body)

        return await self._with_retries(
            namespace,
            name,
            build,
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

        def build(uid: str) -> _Request:
            opts = PodDeleteOptions(
                uid=uid, grace_period_seconds=grace_period_seconds, dry_run=dry_run
            )
            return _Request("DELETE", _pod_path(namespace, name), opts.query(), opts.body())

        return await self._with_retries(
            namespace,
            name,
            build,
            method="delete",
            expected_uid=expected_uid,
            deadline=deadline,
            max_attempts=max_attempts,
        )

    # --- the retry loop -----------------------------------------------------------------------

    async def _with_retries(
        self,
        namespace: str,
        name: str,
        send: Callable[[str], _Request],
        *,
        method: str,
        expected_uid: str | None,
        deadline: float | None,
        max_attempts: int | None,
    ) -> EvictionResult:
        """Send until an answer settles the pod, the attempts run out or the deadline passes.

        Each round, top to bottom: re-read the pod (before every retry, and before the first
        request when its UID is not known) — gone or replaced ends it; send; an answer that
        settles the pod ends it; out of attempts or time ends it with the last answer;
        otherwise pause as that answer says, and go round again.
        """
        started = self.clock()
        run = _Run(
            EvictionResult(namespace, name, Outcome.ERROR, method=method),
            expected_uid or "",
            reads=method != "delete" or not expected_uid,
        )
        try:
            while True:
                if (
                    run.reads
                    and (not run.uid or run.result.attempts)
                    and await self._reread(run, deadline)
                ):
                    break
                retry = await self._settle(run, await self._send(run, send, deadline), deadline)
                if retry is None:
                    break
                if self._exhausted(run, max_attempts, deadline):
                    run.give_up(retry)
                    break
                await self._pause(run, retry, deadline)
        except TimeoutError:  # the deadline passed before a request could go out
            run.timed_out()
        run.result.seconds = self.clock() - started
        return run.result

    async def _reread(self, run: _Run, deadline: float | None) -> bool:
        """Re-read the pod; True when that settles it: gone, or replaced under its name (kubectl
        would chase the replacement). A failed read is ignored, as kubectl does."""
        result = run.result
        try:
            run.pod = await self.read_pod(result.namespace, result.name, deadline=deadline)
        except TransportError:
            return False
        if run.pod is None:
            run.end(
                Outcome.ALREADY_GONE,
                f'pods "{result.name}" not found',
                status_code=404,
                reason="NotFound",
            )
            return True
        current = str((run.pod.get("metadata") or {}).get("uid", ""))
        if run.uid and current != run.uid:
            run.end(
                Outcome.POD_REPLACED,
                f"pod {result.namespace}/{result.name} was replaced "
                f"(uid {run.uid} is now {current})",
            )
            return True
        run.uid = run.uid or current
        return False

    async def _send(
        self, run: _Run, send: Callable[[str], _Request], deadline: float | None
    ) -> Verdict:
        """One request, conditioned on the pod's UID; its answer is recorded in the result."""
        result = run.result
        result.uid = run.uid
        remaining = self._remaining(deadline)
        if remaining is not None and remaining <= 0:
            raise TimeoutError
        result.attempts += 1
        self.listener.attempt(result.namespace, result.name, result.attempts)
        try:
            resp = await self._request(send(run.uid), deadline)
        except TransportError as exc:
            run.transient += 1
            return Verdict(Decision.TRANSIENT, None, str(exc))
        verdict = classify(resp.status, resp.headers, resp.body)
        result.status_code = resp.status
        result.reason = verdict.reason
        result.message = verdict.message
        result.causes = [dict(c) for c in verdict.causes]
        result.retry_after = verdict.retry_after
        if verdict.decision is Decision.TRANSIENT:
            run.transient += 1
        return verdict

    async def _settle(self, run: _Run, verdict: Verdict, deadline: float | None) -> Verdict | None:
        """None when ``verdict`` settles the pod (the result says how); otherwise the verdict to
        retry on, with the PodDisruptionBudgets to watch when a budget blocked."""
        result = run.result
        d = verdict.decision
        if d is Decision.SUCCESS:
            run.end(Outcome.EVICTED, verdict.message)
        elif d is Decision.GONE:
            run.end(Outcome.ALREADY_GONE, verdict.message)
        elif d is Decision.PDB_BLOCKED:
            names = verdict.pdbs or await self._pdbs_selecting(result.namespace, run.pod)
            if names:
                await self.pdbs.ensure(result.namespace)
            result.pdbs = names
            return dataclasses.replace(verdict, pdbs=names)
        elif d in (Decision.RETRY_AFTER, Decision.TRANSIENT):
            return verdict
        elif d is Decision.NAMESPACE_TERMINATING:
            # the namespace controller deletes the pod: once it is terminating, that is done
            if not await self._reread(run, deadline):
                if run.pod is None or not (run.pod.get("metadata") or {}).get("deletionTimestamp"):
                    return verdict
                run.end(Outcome.EVICTED, verdict.message)
        elif d is Decision.CONFLICT and not run.reads:
            # a DELETE whose only precondition is the UID: the name is another pod's now
            run.end(Outcome.POD_REPLACED, _replaced(result, run.uid, verdict.message))
        elif d is Decision.CONFLICT:
            if not await self._reread(run, deadline):  # gone / replaced settle it there
                run.end(Outcome.ERROR, verdict.message)
        elif d is Decision.MULTIPLE_PDBS:
            if run.pod is None:
                with contextlib.suppress(TransportError, TimeoutError):
                    run.pod = await self.read_pod(result.namespace, result.name, deadline=deadline)
            names = await self._pdbs_selecting(result.namespace, run.pod)
            message = verdict.message
            if names:
                message = f"{message} (PodDisruptionBudgets: {', '.join(names)})"
            run.end(Outcome.ERROR, message, pdbs=names)
        else:
            run.end(Outcome.ERROR, verdict.message)
        return None

    def _exhausted(self, run: _Run, max_attempts: int | None, deadline: float | None) -> bool:
        if max_attempts is not None and run.result.attempts >= max_attempts:
            return True
        if run.transient >= _TRANSIENT_ATTEMPTS:
            return True
        remaining = self._remaining(deadline)
        return remaining is not None and remaining <= 0

    def _wait_for(self, verdict: Verdict, attempts: int) -> float:
        """How long to wait before the next attempt. A ``Retry-After`` is a floor, as in
        client-go: it is waited in full (``_pause`` lets nothing shorten it)."""
        if verdict.retry_after is not None:
            return max(verdict.retry_after, self.min_retry_after)
        if verdict.decision is Decision.PDB_BLOCKED:
            return self.default_retry
        if verdict.decision is Decision.NAMESPACE_TERMINATING:
            return _NAMESPACE_TERMINATING_RETRY
        return delay(RETRY_BACKOFF, attempts)

    async def _pause(self, run: _Run, verdict: Verdict, deadline: float | None) -> None:
        """Wait before the next attempt, never past the deadline. Only a budget 429 that the
        server did not bound (no ``Retry-After``) ends as soon as the watched budget reopens;
        its retry line tells the real wait afterwards. Every other wait, a budget's with
        ``Retry-After`` included, is slept in full and reported up front."""
        result = run.result
        seconds = self._wait_for(verdict, result.attempts)
        remaining = self._remaining(deadline)
        if remaining is not None:
            seconds = max(min(seconds, remaining), 0.0)
        blocked = verdict.decision is Decision.PDB_BLOCKED and bool(verdict.pdbs)
        if blocked and verdict.retry_after is None:
            began = self.clock()
            self.listener.blocked(result, seconds)
            await self.pdbs.wait_reopen(
                result.namespace, verdict.pdbs, timeout=seconds, seen=run.seen, sleep=self.sleep
            )
            self.listener.retry(result, self.clock() - began)
            return
        if blocked:
            self.listener.blocked(result, seconds)
        self.listener.retry(result, seconds)
        await self.sleep(seconds)

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
        nodes = {getattr(p, "node_name", "") for p in pods}
        waiter = self.deletion_wait(
            deadline=deadline,
            skip_wait_for_delete_timeout=skip_wait_for_delete_timeout,
            on_done=on_done,
            node=nodes.pop() if len(nodes) == 1 else "",
        )
        for p in pods:
            waiter.add(p)
        waiter.close()
        return await waiter.run()

    def deletion_wait(
        self,
        *,
        deadline: float | None,
        skip_wait_for_delete_timeout: float = 0,
        on_done: Callable[[PodLike, WaitOutcome], None] | None = None,
        node: str = "",
        snapshot: tuple[Sequence[Mapping[str, Any]], str] | None = None,
    ) -> DeletionWait:
        """A ``DeletionWait`` that pods can be added to while it runs (``wait_for_deletion``
        adds them all at once; a drain adds each pod as soon as its eviction is granted)."""
        return DeletionWait(
            self,
            deadline=deadline,
            skip_wait_for_delete_timeout=skip_wait_for_delete_timeout,
            on_done=on_done,
            node=node,
            snapshot=snapshot,
        )


Key = tuple[str, str]


class DeletionWait:
    """Waits for pods to be gone while more are being added, over one list+watch.

    kubectl waits for each pod in the goroutine that evicted it, right after its eviction, so
    ``pod/X evicted`` appears as soon as X is gone even while other pods are still blocked by a
    budget. One watch per pod would cost a connection each (thousands on a big node); here one
    watch of the node's pods keeps the latest object per name, and a pod added later is checked
    against it at once: a pod absent since the list, or present under another UID, is gone.
    When the watch cannot be used, pending pods are polled every ``poll_interval`` seconds.
    """

    def __init__(
        self,
        evictor: Evictor,
        *,
        deadline: float | None,
        skip_wait_for_delete_timeout: float = 0,
        on_done: Callable[[PodLike, WaitOutcome], None] | None = None,
        node: str = "",
        snapshot: tuple[Sequence[Mapping[str, Any]], str] | None = None,
    ) -> None:
        self._ev = evictor
        # the caller's recent list of the node's pods and its resourceVersion: watch from there
        # instead of listing again (a drain has just listed them to plan)
        self.snapshot = snapshot
        self.deadline = deadline
        self.skip = skip_wait_for_delete_timeout
        self.on_done = on_done
        self.node = node
        self.pending: dict[Key, PodLike] = {}
        self.done: dict[Key, WaitOutcome] = {}
        self._deleting: dict[Key, float] = {}
        self._seen: dict[Key, Mapping[str, Any]] | None = None  # the watch's view while live
        self._closed = False
        self._over = False
        self._finished = asyncio.Event()
        self._added = asyncio.Event()

    # --- feeding ------------------------------------------------------------------------------

    def add(self, pod: PodLike) -> None:
        """Wait for ``pod`` too; checked at once against what the watch has seen."""
        key = (pod.namespace, pod.name)
        if key in self.done or key in self.pending:
            return
        self.pending[key] = pod
        if self._over:
            self._finish(key, WaitOutcome("timeout", "timed out waiting for the condition"))
        elif self._seen is not None:
            self._observe(key, self._seen.get(key))
        self._added.set()

    def close(self) -> None:
        """No more pods will be added: ``run`` returns once the pending ones are settled."""
        self._closed = True
        self._check_finished()

    # --- bookkeeping --------------------------------------------------------------------------

    def _check_finished(self) -> None:
        if self._closed and not self.pending:
            self._finished.set()

    def _finish(self, key: Key, outcome: WaitOutcome) -> None:
        pod = self.pending.pop(key, None)
        if pod is None:
            return
        self.done[key] = outcome
        self._deleting.pop(key, None)
        if self.on_done is not None:
            self.on_done(pod, outcome)
        self._check_finished()

    def _observe(self, key: Key, obj: Mapping[str, Any] | None) -> None:
        pod = self.pending.get(key)
        if pod is None:
            return
        if obj is None:
            self._finish(key, WaitOutcome("deleted"))
            return
        meta = obj.get("metadata") or {}
        if pod.uid and meta.get("uid") != pod.uid:
            self._finish(key, WaitOutcome("deleted"))
            return
        ts = meta.get("deletionTimestamp")
        if ts and self.skip > 0:
            from kube.times import parse_time

            with contextlib.suppress(ValueError):
                self._deleting[key] = parse_time(ts)
        self._check_skips()

    def _check_skips(self) -> None:
        if self.skip <= 0:
            return
        now = self._ev.clock()
        for key, since in list(self._deleting.items()):
            if key in self.pending and now - since > self.skip:
                self._finish(
                    key,
                    WaitOutcome(
                        "skipped",
                        f'pod "{key[1]}" has DeletionTimestamp older than '
                        f"{int(self.skip)} seconds, skipping",
                    ),
                )

    def _remaining(self) -> float | None:
        return self._ev._remaining(self.deadline)

    # --- running ------------------------------------------------------------------------------

    async def run(self) -> dict[Key, WaitOutcome]:
        """Until every pod added is settled and ``close`` was called, or the deadline."""
        try:
            with contextlib.suppress(TransportError, TimeoutError, WatchError):
                await self._watch()
            self._seen = None  # no longer current: later pods are polled
            await self._poll()
        finally:
            self._over = True
            for key in list(self.pending):
                self._finish(key, WaitOutcome("timeout", "timed out waiting for the condition"))
        return self.done

    async def _poll(self) -> None:
        ev = self._ev
        while not self._finished.is_set():
            remaining = self._remaining()
            if remaining is not None and remaining <= 0:
                return
            keys = list(self.pending)
            results = await asyncio.gather(
                *(ev.read_pod(ns, name, deadline=self.deadline) for ns, name in keys),
                return_exceptions=True,
            )
            for key, res in zip(keys, results, strict=True):
                if isinstance(res, TimeoutError):
                    continue
                if isinstance(res, BaseException):
                    self._finish(key, WaitOutcome("error", str(res)))
                else:
                    self._observe(key, res)
            if self._finished.is_set():
                return
            wait_for = ev.poll_interval
            remaining = self._remaining()
            if remaining is not None:
                wait_for = min(wait_for, max(remaining, 0.0))
            self._added.clear()
            # a pod added meanwhile is checked at once (kubectl's first check is immediate)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait_for):
                    await self._added.wait()

    async def _watch(self) -> None:
        """Take the caller's snapshot (or list), then watch from there, through
        ``evictor.api.watching`` (410 relists, a silent watch is restarted); any other failure
        ends the watch with ``WatchError`` and the pending pods are polled, as kubectl does."""
        ev = self._ev
        query = [("fieldSelector", f"spec.nodeName={self.node}")] if self.node else []
        snapshot, self.snapshot = self.snapshot, None
        rv = ""
        if snapshot is not None and snapshot[1]:
            items, rv = snapshot
            self._view([i for i in items if isinstance(i, dict)])
            if self._finished.is_set():
                return
        stream = list_and_watch(
            ev.api_client,
            "/api/v1/pods",
            query=query,
            resource_version=rv,
            watch_timeout=60,
            request_timeout=current_request_timeout() or 30.0,
            bookmark_interval=ev.bookmark_interval,
            liveness_factor=ev.liveness_factor,
            max_failures=1,
            log_level=logging.DEBUG,  # polling takes over
        )

        async def consume() -> None:
            building: list[dict[str, Any]] = []
            async with contextlib.aclosing(stream):
                async for item in stream:
                    if isinstance(item, Page):
                        if item.first:
                            self._seen = None  # stale until the relist completes
                        building = item.items if item.first else [*building, *item.items]
                        if item.last:
                            self._view(building)
                            building = []
                    else:
                        self._event(item)
                    if self._finished.is_set():
                        return

        async def tick() -> None:
            while not self._finished.is_set():
                await asyncio.sleep(1.0)
                self._check_skips()

        consumer = asyncio.create_task(consume())
        tasks = [consumer, asyncio.create_task(tick()), asyncio.create_task(self._finished.wait())]
        remaining = self._remaining()
        try:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(None if remaining is None else max(remaining, 0.0)):
                    await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        if consumer.done() and not consumer.cancelled() and consumer.exception() is not None:
            raise cast(BaseException, consumer.exception())

    def _view(self, items: Sequence[Mapping[str, Any]]) -> None:
        """A (re)list: the latest object per name, and every pending pod checked against it."""
        seen: dict[Key, Mapping[str, Any]] = {}
        for item in items:
            meta = item.get("metadata") or {}
            seen[(str(meta.get("namespace", "")), str(meta.get("name", "")))] = item
        self._seen = seen
        for key in list(self.pending):
            self._observe(key, seen.get(key))

    def _event(self, event: Event) -> None:
        seen = self._seen
        if seen is None:
            return
        obj = event.object
        meta = obj.get("metadata") or {}
        key = (str(meta.get("namespace", "")), str(meta.get("name", "")))
        if event.type == "DELETED":
            current = seen.get(key)
            if current is None or (current.get("metadata") or {}).get("uid") == meta.get("uid"):
                seen.pop(key, None)
            pod = self.pending.get(key)
            if pod is not None and (not pod.uid or meta.get("uid") == pod.uid):
                self._observe(key, None)
        else:
            seen[key] = obj
            self._observe(key, obj)


def refs(pods: Iterable[Any]) -> list[PodRef]:
    """PodRefs from ``kube.objects`` Pods or dicts."""
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
