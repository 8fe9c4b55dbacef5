"""Drain planning (pure) and the drain helper (I/O), after kubectl's ``pkg/drain``.

``get_pods_for_deletion`` runs kubectl's filter chain on every pod of a node, in kubectl's order
— skip deleted, DaemonSet, mirror, local storage, unreplicated, then any extra filters — and
stops at the first filter that says "do not delete"; the status of the *last* filter that ran
is the pod's status. That reproduces two kubectl quirks on purpose: the "deleting Pods with
local storage" warning and the orphaned-DaemonSet NotFound warning are overwritten by a later
filter's "okay", so kubectl never prints them. Completed pods (Succeeded/Failed) always pass the
DaemonSet, local-storage and unreplicated filters (kubernetes/kubernetes#26080).

Unlike kubectl ≤ 1.34, a controller of kind DaemonSet counts as a DaemonSet only when its
apiVersion is in the ``apps`` group (newer kubectl checks the group too).

``DrainHelper`` lists a node's pods (paged with ``chunk_size``), resolves DaemonSet owners,
plans, then evicts (or deletes) and waits, reporting kubectl's lines through callbacks.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evictor.api.calls import api_error_text
from evictor.listener import EvictionListener
from kube.critical import CONFIG_MIRROR_ANNOTATION_KEY
from kube.objects import InvalidObject, Pod

if TYPE_CHECKING:
    from evictor.client import Evictor, WaitOutcome
    from evictor.result import EvictionResult

__all__ = [
    "DAEMONSET_FATAL",
    "DAEMONSET_WARNING",
    "LOCAL_STORAGE_FATAL",
    "LOCAL_STORAGE_WARNING",
    "MIRROR_POD_ANNOTATION",
    "UNMANAGED_FATAL",
    "UNMANAGED_WARNING",
    "DrainHelper",
    "DrainOptions",
    "OwnerLookupError",
    "PodDelete",
    "PodDeleteList",
    "PodDeleteStatus",
    "StatusType",
    "get_pods_for_deletion",
    "go_duration",
    "order_by_priority",
]

log = logging.getLogger("evictor.drain")

DAEMONSET_FATAL = "DaemonSet-managed Pods (use --ignore-daemonsets to ignore)"
DAEMONSET_WARNING = "ignoring DaemonSet-managed Pods"
LOCAL_STORAGE_FATAL = "Pods with local storage (use --delete-emptydir-data to override)"
LOCAL_STORAGE_WARNING = "deleting Pods with local storage"
UNMANAGED_FATAL = "Pods that declare no controller (use --force to override)"
UNMANAGED_WARNING = "deleting Pods that declare no controller"
MIRROR_POD_ANNOTATION = CONFIG_MIRROR_ANNOTATION_KEY  # corev1.MirrorPodAnnotationKey in drain

_TERMINAL = ("Succeeded", "Failed")


class StatusType(enum.StrEnum):
    OKAY = "Okay"
    SKIP = "Skip"
    WARNING = "Warning"
    ERROR = "Error"


@dataclass(frozen=True, slots=True)
class PodDeleteStatus:
    delete: bool
    reason: StatusType
    message: str = ""

    @classmethod
    def okay(cls) -> PodDeleteStatus:
        return cls(True, StatusType.OKAY)

    @classmethod
    def skip(cls) -> PodDeleteStatus:
        return cls(False, StatusType.SKIP)

    @classmethod
    def warning(cls, delete: bool, message: str) -> PodDeleteStatus:
        return cls(delete, StatusType.WARNING, message)

    @classmethod
    def error(cls, message: str) -> PodDeleteStatus:
        return cls(False, StatusType.ERROR, message)


PodFilter = Callable[[Pod], PodDeleteStatus]


class OwnerLookupError(Exception):
    """Looking up a DaemonSet failed for a reason other than NotFound (fatal for the pod)."""


@dataclass(frozen=True, slots=True)
class DrainOptions:
    force: bool = False
    ignore_daemonsets: bool = False
    delete_emptydir_data: bool = False
    skip_wait_for_delete_timeout: int = 0
    additional_filters: tuple[PodFilter, ...] = ()


@dataclass(frozen=True, slots=True)
class PodDelete:
    pod: Pod
    status: PodDeleteStatus


@dataclass(slots=True)
class PodDeleteList:
    items: list[PodDelete] = field(default_factory=list)

    def pods(self) -> list[Pod]:
        return [i.pod for i in self.items if i.status.delete]

    def _grouped(self, reason: StatusType) -> dict[str, list[str]]:
        groups: dict[str, list[str]] = {}
        for i in self.items:
            if i.status.reason is reason:
                msg = i.status.message
                if reason is StatusType.ERROR and not msg:
                    msg = "unexpected error"
                groups.setdefault(msg, []).append(i.pod.key)
        return groups

    def warnings(self) -> str:
        """``msg: ns/a, ns/b; msg2: ...`` as kubectl prints after ``Warning:``."""
        return "; ".join(
            f"{msg}: {', '.join(keys)}" for msg, keys in self._grouped(StatusType.WARNING).items()
        )

    def errors(self) -> list[str]:
        """One ``cannot delete <msg>: ns/a, ns/b`` per distinct message, in pod order."""
        return [
            f"cannot delete {msg}: {', '.join(keys)}"
            for msg, keys in self._grouped(StatusType.ERROR).items()
        ]


def _is_daemonset_ref(api_version: str, kind: str) -> bool:
    return (
        kind == "DaemonSet"
        and api_version.split("/", maxsplit=1)[0] == "apps"
        and "/" in api_version
    )


def get_pods_for_deletion(
    pods: Iterable[Pod],
    *,
    options: DrainOptions,
    owner_exists: Callable[[str, str], bool],
    now: float | None = None,
) -> PodDeleteList:
    """Run kubectl's filter chain on each pod; see the module docstring.

    ``owner_exists(namespace, name)`` says whether a DaemonSet exists; it raises
    ``OwnerLookupError`` when that cannot be known (the pod is then a blocking error).
    ``now`` (seconds since the epoch) dates ``--skip-wait-for-delete-timeout``; tests pass it.
    """
    if now is None:
        now = time.time()

    def skip_deleted(pod: Pod) -> PodDeleteStatus:
        skip = options.skip_wait_for_delete_timeout
        if (
            skip > 0
            and pod.deletion_timestamp is not None
            and int(now - pod.deletion_timestamp) > skip
        ):
            return PodDeleteStatus.skip()
        return PodDeleteStatus.okay()

    def daemonset(pod: Pod) -> PodDeleteStatus:
        ref = pod.controller_ref()
        if ref is None or not _is_daemonset_ref(ref.api_version, ref.kind):
            return PodDeleteStatus.okay()
        if pod.phase in _TERMINAL:
            return PodDeleteStatus.okay()
        try:
            exists = owner_exists(pod.namespace, ref.name)
        except OwnerLookupError as exc:
            return PodDeleteStatus.error(str(exc))
        if not exists:
            message = f'daemonsets.apps "{ref.name}" not found'
            if options.force:
                return PodDeleteStatus.warning(True, message)
            return PodDeleteStatus.error(message)
        if not options.ignore_daemonsets:
            return PodDeleteStatus.error(DAEMONSET_FATAL)
        return PodDeleteStatus.warning(False, DAEMONSET_WARNING)

    def mirror(pod: Pod) -> PodDeleteStatus:
        if MIRROR_POD_ANNOTATION in pod.annotations:
            return PodDeleteStatus.skip()
        return PodDeleteStatus.okay()

    def local_storage(pod: Pod) -> PodDeleteStatus:
        if not any(v.source == "emptyDir" for v in pod.volumes):
            return PodDeleteStatus.okay()
        if pod.phase in _TERMINAL:
            return PodDeleteStatus.okay()
        if not options.delete_emptydir_data:
            return PodDeleteStatus.error(LOCAL_STORAGE_FATAL)
        return PodDeleteStatus.warning(True, LOCAL_STORAGE_WARNING)

    def unreplicated(pod: Pod) -> PodDeleteStatus:
        if pod.phase in _TERMINAL:
            return PodDeleteStatus.okay()
        if pod.controller_ref() is not None:
            return PodDeleteStatus.okay()
        if options.force:
            return PodDeleteStatus.warning(True, UNMANAGED_WARNING)
        return PodDeleteStatus.error(UNMANAGED_FATAL)

    chain: tuple[PodFilter, ...] = (
        skip_deleted,
        daemonset,
        mirror,
        local_storage,
        unreplicated,
        *options.additional_filters,
    )
    out = PodDeleteList()
    for pod in pods:
        status = PodDeleteStatus.okay()
        for f in chain:
            status = f(pod)
            if not status.delete:
                break
        out.items.append(PodDelete(pod, status))
    return out


def order_by_priority(pods: Sequence[Pod], *, now: float | None = None) -> list[list[Pod]]:
    """Groups of equal priority, lowest first; inside a group the least important first.

    Importance is ``scheduler``'s ``more_important_pod`` (priority, then earlier start).
    """
    from functools import cmp_to_key

    from scheduler.preemption.core import more_important_pod

    def cmp(a: Pod, b: Pod) -> int:
        if more_important_pod(a, b, now=now):
            return 1
        if more_important_pod(b, a, now=now):
            return -1
        return 0

    ordered = sorted(pods, key=cmp_to_key(cmp))
    groups: list[list[Pod]] = []
    for pod in ordered:
        if groups and groups[-1][0].priority == pod.priority:
            groups[-1].append(pod)
        else:
            groups.append([pod])
    return groups


def go_duration(seconds: float) -> str:
    """A duration as Go's ``time.Duration.String`` prints it (``5s``, ``1m0s``, ``250ms``)."""
    if seconds <= 0:
        return "0s"
    if seconds < 1e-6:
        return f"{round(seconds * 1e9)}ns"
    if seconds < 1e-3:
        return f"{round(seconds * 1e6, 3):g}µs"
    if seconds < 1:
        ms = round(seconds * 1000, 3)
        return f"{ms:g}ms"
    total = round(seconds, 3)
    h, rest = divmod(total, 3600)
    m, s = divmod(rest, 60)
    s_text = f"{round(s, 3):g}s"
    if h:
        return f"{int(h)}h{int(m)}m{s_text}"
    if m:
        return f"{int(m)}m{s_text}"
    return s_text


# --- I/O ---------------------------------------------------------------------------------------


@dataclass(slots=True)
class PodReport:
    pod: Pod
    result: EvictionResult | None = None
    wait: WaitOutcome | None = None
    started: float = 0.0
    finished: float = 0.0
    attempts: int = 0
    blocked_by: tuple[str, ...] = ()
    next_retry: float | None = None
    last_message: str = ""

    @property
    def ok(self) -> bool:
        if self.result is None:
            return False
        if not self.result.ok:
            return False
        return self.wait is None or self.wait.state in ("deleted", "skipped")


class DrainHelper:
    """kubectl's ``drain.Helper`` on top of an ``Evictor``.

    ``out`` and ``err`` receive whole lines (stdout and stderr in the CLI). ``dry_run`` is
    ``none``, ``client`` or ``server``; ``timeout`` 0 means no deadline (kubectl's default).
    """

    def __init__(
        self,
        evictor: Evictor,
        *,
        options: DrainOptions | None = None,
        grace_period_seconds: int = -1,
        timeout: float = 0.0,
        pod_selector: str = "",
        disable_eviction: bool = False,
        chunk_size: int = 500,
        dry_run: str = "none",
        order: str = "none",
        out: Callable[[str], None] = lambda _line: None,
        err: Callable[[str], None] = lambda _line: None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.evictor = evictor
        self.options = options or DrainOptions()
        self.grace_period_seconds = grace_period_seconds
        self.timeout = timeout
        self.pod_selector = pod_selector
        self.disable_eviction = disable_eviction
        self.chunk_size = chunk_size
        self.dry_run = dry_run
        self.order = order
        self.out = out
        self.err = err
        self.clock = clock
        self.reports: list[PodReport] = []
        # node -> its last full pod list and resourceVersion, where the deletion watch starts
        self.listed: dict[str, tuple[list[dict[str, Any]], str]] = {}

    @property
    def _suffix(self) -> str:
        return {"client": " (dry run)", "server": " (server dry run)"}.get(self.dry_run, "")

    # --- cordon -------------------------------------------------------------------------------

    async def cordon(self, node: Mapping[str, Any] | str, desired: bool) -> str:
        """Set ``spec.unschedulable``; returns kubectl's word for what happened."""
        from evictor.api.calls import STRATEGIC_MERGE_PATCH, TransportError, path_segment, send

        api = self.evictor.api_client
        if isinstance(node, str):
            resp = await send(api, "GET", f"/api/v1/nodes/{path_segment(node)}")
            if not resp.ok:
                raise TransportError(api_error_text(resp.status, resp.body, resp.message))
            node = resp.body
        assert isinstance(node, Mapping)
        name = str((node.get("metadata") or {}).get("name", ""))
        current = bool((node.get("spec") or {}).get("unschedulable", False))
        word = "cordoned" if desired else "uncordoned"
        if current == desired:
            return f"already {word}"
        if self.dry_run != "client":
            patch = {"spec": {"unschedulable": True if desired else None}}
            resp = await send(
                api,
                "PATCH",
                f"/api/v1/nodes/{path_segment(name)}",
                query=[("dryRun", "All")] if self.dry_run == "server" else (),
                body=patch,
                content_type=STRATEGIC_MERGE_PATCH,
            )
            if not resp.ok:
                raise TransportError(api_error_text(resp.status, resp.body, resp.message))
        return word

    # --- listing and planning -----------------------------------------------------------------

    async def list_pods(
        self,
        node_name: str,
        on_page: Callable[[list[dict[str, Any]]], None] | None = None,
    ) -> list[dict[str, Any]]:
        """The node's pods, ``--chunk-size`` at a time, every page read at the first one's
        resourceVersion. ``on_page`` sees each page while the next one is being fetched."""
        from evictor.api.calls import TURNS_TO_SEND, TransportError, let_requests_out, send

        api = self.evictor.api_client
        items: list[dict[str, Any]] = []
        rv = ""
        self.listed.pop(node_name, None)

        def fetch(token: str) -> asyncio.Future[Any]:
            query = [
                ("continue", token or None),
                ("fieldSelector", f"spec.nodeName={node_name}"),
                ("labelSelector", self.pod_selector or None),
                ("limit", self.chunk_size if self.chunk_size > 0 else None),
            ]
            return asyncio.ensure_future(send(api, "GET", "/api/v1/pods", query=query))

        pending = fetch("")
        try:
            while True:
                resp = await pending
                if not resp.ok or not isinstance(resp.body, dict):
                    raise TransportError(api_error_text(resp.status, resp.body, resp.message))
                page = [i for i in resp.body.get("items") or [] if isinstance(i, dict)]
                if not rv:  # the first page's version: every page is read at it
                    rv = str((resp.body.get("metadata") or {}).get("resourceVersion") or "")
                token = str((resp.body.get("metadata") or {}).get("continue") or "")
                if token:
                    pending = fetch(token)
                    if on_page is not None:
                        # parsing this page then overlaps the next one's round trip
                        await let_requests_out(TURNS_TO_SEND)
                if on_page is not None:
                    on_page(page)
                items.extend(page)
                if not token:
                    if not self.pod_selector:
                        self.listed[node_name] = (items, rv)
                    return items
        finally:
            if not pending.done():  # cancelled or failed while the next page was in flight
                pending.cancel()

    async def get_pods_for_deletion(self, node_name: str) -> PodDeleteList:
        from evictor.api.calls import path_segment, send

        pods: list[Pod] = []

        def parse(page: list[dict[str, Any]]) -> None:
            for raw in page:
                try:
                    pods.append(Pod.from_dict(raw))
                except InvalidObject as exc:  # malformed objects are logged and skipped
                    log.warning("skipping malformed pod: %s", exc)

        await self.list_pods(node_name, on_page=parse)
        owners = {
            (p.namespace, ref.name)
            for p in pods
            if (ref := p.controller_ref()) is not None
            and _is_daemonset_ref(ref.api_version, ref.kind)
            and p.phase not in _TERMINAL
        }
        api = self.evictor.api_client
        found: dict[tuple[str, str], bool | str] = {}

        async def lookup(ns: str, name: str) -> None:
            try:
                resp = await send(
                    api,
                    "GET",
                    f"/apis/apps/v1/namespaces/{path_segment(ns)}/daemonsets/{path_segment(name)}",
                )
            except Exception as exc:
                found[(ns, name)] = str(exc)
                return
            if resp.ok:
                found[(ns, name)] = True
            elif resp.status == 404:
                found[(ns, name)] = False
            else:
                found[(ns, name)] = api_error_text(resp.status, resp.body, resp.message)

        await asyncio.gather(*(lookup(ns, n) for ns, n in owners))

        def owner_exists(ns: str, name: str) -> bool:
            v = found.get((ns, name), False)
            if isinstance(v, str):
                raise OwnerLookupError(v)
            return v

        return get_pods_for_deletion(
            pods, options=self.options, owner_exists=owner_exists, now=self.clock()
        )

    # --- evicting -----------------------------------------------------------------------------

    async def delete_or_evict_pods(self, pods: Sequence[Pod]) -> list[str]:
        """Evict (or delete) and wait; kubectl's lines go to ``out``/``err``; returns errors."""
        if not pods:
            return []
        if self.dry_run == "client":
            for pod in pods:
                self.out(f"evicting pod {pod.key}{self._suffix}")
            return []
        deadline = self.clock() + self.timeout if self.timeout > 0 else None
        groups = order_by_priority(pods) if self.order == "priority" else [list(pods)]
        errors: list[str] = []
        for group in groups:
            errors.extend(await self._evict_group(group, deadline))
        return errors

    async def _evict_group(self, pods: Sequence[Pod], deadline: float | None) -> list[str]:
        use_delete = self.disable_eviction or await self.evictor.eviction_version() is None
        reports = {pod.key: PodReport(pod, started=self.clock()) for pod in pods}
        self.reports.extend(reports.values())
        routes = _Routes.of(self.evictor)
        routes.add(_Lines(self, reports, use_delete=use_delete))
        try:
            return await self._evict_and_wait(pods, reports, deadline, use_delete=use_delete)
        finally:
            routes.remove(reports)

    async def _evict_and_wait(
        self,
        pods: Sequence[Pod],
        reports: Mapping[str, PodReport],
        deadline: float | None,
        *,
        use_delete: bool,
    ) -> list[str]:
        from evictor.result import Outcome

        verb = "deleted" if use_delete else "evicted"
        server_dry = self.dry_run == "server"
        errors: list[str] = []
        timeout_text = go_duration(self.timeout)

        def done(pod: Any, outcome: WaitOutcome) -> None:
            rep = reports[f"{pod.namespace}/{pod.name}"]
            rep.wait = outcome
            rep.finished = self.clock()
            if outcome.state == "deleted":
                self.out(f"pod/{pod.name} {verb}")
            elif outcome.state == "skipped":
                self.out(outcome.message)

        # As kubectl, each pod is waited for right after its eviction is granted (kubectl: in
        # the goroutine that evicted it), so its line appears while others are still blocked.
        # A server dry-run deletes nothing: no wait (kubernetes/kubectl#1830).
        nodes = {p.node_name for p in pods}
        node = nodes.pop() if len(nodes) == 1 else ""
        waiter = (
            None
            if server_dry
            else self.evictor.deletion_wait(
                deadline=deadline,
                skip_wait_for_delete_timeout=self.options.skip_wait_for_delete_timeout,
                on_done=done,
                node=node,
                snapshot=self.listed.get(node) if node else None,
            )
        )

        async def one(pod: Pod) -> None:
            rep = reports[pod.key]
            if use_delete:
                res = await self.evictor.delete(
                    pod.namespace,
                    pod.name,
                    grace_period_seconds=self._grace(),
                    dry_run=server_dry,
                    expected_uid=pod.uid or None,
                    deadline=deadline,
                )
            else:
                res = await self.evictor.evict(
                    pod.namespace,
                    pod.name,
                    grace_period_seconds=self._grace(),
                    dry_run=server_dry,
                    expected_uid=pod.uid or None,
                    deadline=deadline,
                )
            rep.result = res
            rep.finished = self.clock()
            if res.outcome is Outcome.EVICTED and waiter is not None:
                waiter.add(pod)
            if res.outcome is Outcome.ERROR:
                if res.message.startswith("global timeout reached"):
                    msg = f"global timeout reached: {timeout_text}"
                else:
                    msg = res.message
                what = "deleting" if use_delete else "evicting"
                errors.append(f'error when {what} pods/"{pod.name}" -n "{pod.namespace}": {msg}')
            elif res.outcome is Outcome.BLOCKED_BY_PDB:
                errors.append(
                    f'error when evicting pods/"{pod.name}" -n "{pod.namespace}": '
                    f"global timeout reached: {timeout_text}"
                )

        if waiter is None:
            await self._all(one, pods)
            return errors
        waiting = asyncio.create_task(waiter.run())
        try:
            await self._all(one, pods)
        except BaseException:
            waiting.cancel()
            await asyncio.gather(waiting, return_exceptions=True)
            raise
        waiter.close()
        results = await waiting
        for (ns, name), outcome in results.items():
            if outcome.state == "timeout":
                errors.append(
                    f'error when waiting for pod "{name}" in namespace "{ns}" to terminate: '
                    f"global timeout reached: {timeout_text}"
                )
            elif outcome.state == "error":
                errors.append(
                    f'error when waiting for pod "{name}" in namespace "{ns}" to terminate: '
                    f"{outcome.message}"
                )
        return errors

    async def _all(
        self, one: Callable[[Pod], Coroutine[Any, Any, None]], pods: Sequence[Pod]
    ) -> None:
        """``one(pod)`` for every pod at once (kubectl: a goroutine each), started a slot's worth
        at a time: the first requests are on the wire while the rest are still being set up,
        instead of after all of them (a 1000-pod node would otherwise wait ~0.2 s for the
        first)."""
        from evictor.api.calls import TURNS_TO_CONNECT, let_requests_out

        step = max(self.evictor.concurrency, 1)
        tasks: list[asyncio.Task[None]] = []
        try:
            for i, pod in enumerate(pods, 1):
                tasks.append(asyncio.create_task(one(pod)))
                if i % step == 0:
                    # the first slot's worth open their connections and send before the
                    # rest are set up; later ones get a turn between each slot's worth
                    await let_requests_out(TURNS_TO_CONNECT if i == step else 1)
            await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    def _grace(self) -> int | None:
        return self.grace_period_seconds if self.grace_period_seconds >= 0 else None


class _Routes(EvictionListener):
    """The ``Evictor``'s listener while drains share it (``--parallel``): each pod's hooks go
    to the ``_Lines`` of the drain that evicts it."""

    def __init__(self) -> None:
        super().__init__()
        self.routes: dict[str, _Lines] = {}

    @classmethod
    def of(cls, evictor: Evictor) -> _Routes:
        if not isinstance(evictor.listener, _Routes):
            evictor.listener = cls()
        return evictor.listener

    def add(self, lines: _Lines) -> None:
        for key in lines.reports:
            self.routes[key] = lines

    def remove(self, reports: Mapping[str, PodReport]) -> None:
        for key in reports:
            self.routes.pop(key, None)

    def attempt(self, namespace: str, name: str, attempt: int) -> None:
        lines = self.routes.get(f"{namespace}/{name}")
        if lines is not None:
            lines.attempt(namespace, name, attempt)

    def blocked(self, result: EvictionResult, wait: float) -> None:
        lines = self.routes.get(f"{result.namespace}/{result.name}")
        if lines is not None:
            lines.blocked(result, wait)

    def retry(self, result: EvictionResult, wait: float) -> None:
        lines = self.routes.get(f"{result.namespace}/{result.name}")
        if lines is not None:
            lines.retry(result, wait)


class _Lines(EvictionListener):
    """Evictor hooks printing kubectl's per-attempt lines and keeping progress state."""

    def __init__(
        self, helper: DrainHelper, reports: Mapping[str, PodReport], *, use_delete: bool
    ) -> None:
        super().__init__()
        self.helper = helper
        self.reports = reports
        self.use_delete = use_delete

    def attempt(self, namespace: str, name: str, attempt: int) -> None:
        rep = self.reports.get(f"{namespace}/{name}")
        if rep is not None:
            rep.attempts = attempt
            rep.next_retry = None
        if not self.use_delete:
            self.helper.out(f"evicting pod {namespace}/{name}{self.helper._suffix}")

    def blocked(self, result: EvictionResult, wait: float) -> None:
        rep = self.reports.get(f"{result.namespace}/{result.name}")
        if rep is not None:
            rep.blocked_by = result.pdbs
            rep.next_retry = self.helper.clock() + wait
            rep.last_message = result.message

    def retry(self, result: EvictionResult, wait: float) -> None:
        rep = self.reports.get(f"{result.namespace}/{result.name}")
        if rep is not None:
            rep.blocked_by = result.pdbs
            rep.last_message = result.message
            if not result.pdbs:  # a fixed wait (Retry-After, backoff) starts now
                rep.next_retry = self.helper.clock() + wait
        what = "deleting" if self.use_delete else "evicting"
        self.helper.err(
            f'error when {what} pods/"{result.name}" -n "{result.namespace}" '
            f"(will retry after {go_duration(wait)}): {result.message}"
        )
