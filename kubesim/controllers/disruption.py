"""The disruption controller: keeps every PodDisruptionBudget's status, as kube-controller-manager.

Reproduces ``pkg/controller/disruption/disruption.go`` as pure functions over a budget and its
pods (``compute_status``, ``fail_safe_status``) and a watch-driven ``DisruptionController``
that writes what they answer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from kube.times import format_time, parse_time
from kubesim.core.conditions import is_pod_ready, set_status_condition
from kubesim.core.errors import StatusError, qualified_resource
from kubesim.core.objects import controller_ref, pdb_selects
from kubesim.core.store import DELETED, Event, clone

if TYPE_CHECKING:
    from kubesim.cluster import Cluster

__all__ = [
    "DELETION_TIMEOUT",
    "STATIC_STATUS_ANNOTATION",
    "DisruptionController",
    "ExpectedCount",
    "SyncError",
    "build_disrupted_pod_map",
    "compute_status",
    "count_healthy_pods",
    "disruptions_allowed",
    "get_expected_pod_count",
    "scaled_value",
]

log = logging.getLogger("kubesim")

DELETION_TIMEOUT: Final = 120.0  # seconds, before time_scale
STATIC_STATUS_ANNOTATION: Final = "kubesim.io/static-status"
WATCHED: Final = (
    "pods",
    "poddisruptionbudgets",
    "replicationcontrollers",
    "replicasets",
    "deployments",
    "statefulsets",
)
SCALABLE_KINDS: Final = frozenset(
    {"Deployment", "ReplicaSet", "ReplicationController", "StatefulSet"}
)


class SyncError(Exception):
    """A PDB whose status cannot be computed; the message goes into the SyncFailed condition."""


# --- pure computations -------------------------------------------------------------------------


def scaled_value(value: int | str, total: int) -> int:
    """``intstr.GetScaledValueFromIntOrPercent(value, total, roundUp=true)``."""
    if isinstance(value, bool):
        raise SyncError(f"invalid value for IntOrString: invalid type: {value!r}")
    if isinstance(value, int):
        return value
    text = str(value)
    if text.isdigit():
        return int(text)
    if not text.endswith("%") or not text[:-1].isdigit():
        raise SyncError(f'invalid value for IntOrString: invalid value "{text}"')
    percent = int(text[:-1])
    return (percent * total + 99) // 100


# (controller owner reference, namespace) -> (uid, scale) or None; raises SyncError
ScaleFinder = Callable[[Mapping[str, Any], str], "tuple[str, int] | None"]


@dataclass(frozen=True, slots=True)
class ExpectedCount:
    expected: int
    desired: int
    unmanaged: tuple[str, ...] = ()


def get_expected_scale(
    pods: Iterable[Mapping[str, Any]], find: ScaleFinder
) -> tuple[int, tuple[str, ...]]:
    """``getExpectedScale``: the sum of the pods' controllers' scales, and unmanaged pods."""
    scales: dict[str, int] = {}
    unmanaged: list[str] = []
    for pod in pods:
        meta = pod.get("metadata") or {}
        ref = controller_ref(pod)
        if ref is None:
            unmanaged.append(str(meta.get("name", "")))
            continue
        if str(ref.get("uid", "")) in scales:
            continue
        found = find(ref, str(meta.get("namespace", "")))
        if found is None:
            raise SyncError(f'found no controllers for pod "{meta.get("name", "")}"')
        scales[found[0]] = found[1]
    return sum(scales.values()), tuple(unmanaged)


def get_expected_pod_count(
    pdb: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], find: ScaleFinder
) -> ExpectedCount:
    """``getExpectedPodCount``: ``expectedPods`` and ``desiredHealthy``.

    With ``maxUnavailable`` (int or %) or a percentage ``minAvailable`` the expected count is
    the sum of the scales of the pods' controllers (``get_expected_scale``: a ReplicaSet owned
    by a Deployment counts as the Deployment, a ReplicationController, ReplicaSet or
    StatefulSet by its replicas, UIDs must match the owner references). Pods without a
    controller are "unmanaged" and add nothing. A pod whose controller cannot be found is an
    error (``found no controllers for pod "NAME"``), and so is one owned by a kind without a
    scale subresource (``daemonsets.apps does not implement the scale subresource``). An
    integer ``minAvailable`` needs no controller: expected is the number of pods and desired
    the integer. Percentages round up (``GetScaledValueFromIntOrPercent(..., true)``).
    """
    spec = pdb.get("spec") or {}
    max_unavailable = spec.get("maxUnavailable")
    min_available = spec.get("minAvailable")
    if max_unavailable is not None:
        expected, unmanaged = get_expected_scale(pods, find)
        desired = max(0, expected - scaled_value(max_unavailable, expected))
        return ExpectedCount(expected, desired, unmanaged)
    if min_available is not None:
        if isinstance(min_available, int) and not isinstance(min_available, bool):
            return ExpectedCount(len(pods), min_available)
        expected, unmanaged = get_expected_scale(pods, find)
        return ExpectedCount(expected, scaled_value(min_available, expected), unmanaged)
    return ExpectedCount(0, 0)


def build_disrupted_pod_map(
    pods: Iterable[Mapping[str, Any]],
    disrupted: Mapping[str, float],
    *,
    now: float,
    timeout: float,
) -> tuple[dict[str, float], float | None]:
    """``buildDisruptedPodMap``: live entries and when the oldest one expires.

    Entries of pods that are gone or terminating are dropped, and so are entries older than
    ``DeletionTimeout`` (2 minutes, × ``time_scale`` here): the pod counts again. The budget is
    synced again when the oldest entry expires (the recheck queue)."""
    result: dict[str, float] = {}
    recheck: float | None = None
    if not disrupted:
        return result, None
    for pod in pods:
        meta = pod.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            continue
        name = str(meta.get("name", ""))
        when = disrupted.get(name)
        if when is None:
            continue
        expires = when + timeout
        if expires < now:
            log.info("kubesim: pod %s was expected to be deleted but it wasn't", name)
            continue
        if recheck is None or expires < recheck:
            recheck = expires
        result[name] = when
    return result, recheck


def count_healthy_pods(
    pods: Iterable[Mapping[str, Any]], disrupted: Mapping[str, float], *, now: float, timeout: float
) -> int:
    """``countHealthyPods``: Ready pods that are neither being deleted nor listed in
    ``disruptedPods`` within the deletion timeout."""
    healthy = 0
    for pod in pods:
        meta = pod.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            continue
        when = disrupted.get(str(meta.get("name", "")))
        if when is not None and when + timeout > now:
            continue
        if is_pod_ready(pod):
            healthy += 1
    return healthy


def disruptions_allowed(current_healthy: int, desired_healthy: int, expected: int) -> int:
    allowed = current_healthy - desired_healthy
    return 0 if expected <= 0 or allowed <= 0 else allowed


def compute_status(
    pdb: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    find: ScaleFinder,
    *,
    disrupted: Mapping[str, float],
    now: float,
    timeout: float,
) -> tuple[dict[str, Any], float | None]:
    """The status ``trySync`` + ``updatePdbStatus`` would write, and the next recheck time.

    The pods are those of the budget's namespace its selector matches (the PDB lister's
    policy/v1 rule: ``{}`` selects every pod, an absent selector none).
    ``disruptionsAllowed = currentHealthy - desiredHealthy``, 0 when negative or when
    ``expectedPods`` is 0; ``observedGeneration = generation``; the ``DisruptionAllowed``
    condition True/SufficientPods or False/InsufficientPods. Raises SyncError when the expected
    count cannot be computed (the caller then writes ``fail_safe_status``).
    """
    counts = get_expected_pod_count(pdb, pods, find)
    live, recheck = build_disrupted_pod_map(pods, disrupted, now=now, timeout=timeout)
    healthy = count_healthy_pods(pods, live, now=now, timeout=timeout)
    old = pdb.get("status") or {}
    status: dict[str, Any] = {}
    generation = int((pdb.get("metadata") or {}).get("generation") or 0)
    if generation:
        status["observedGeneration"] = generation
    if live:
        status["disruptedPods"] = {name: format_time(when) for name, when in live.items()}
    status["disruptionsAllowed"] = disruptions_allowed(healthy, counts.desired, counts.expected)
    status["currentHealthy"] = healthy
    status["desiredHealthy"] = counts.desired
    status["expectedPods"] = counts.expected
    status["conditions"] = clone(old.get("conditions") or [])
    allowed = status["disruptionsAllowed"] > 0
    set_status_condition(
        status["conditions"],
        type_="DisruptionAllowed",
        status="True" if allowed else "False",
        reason="SufficientPods" if allowed else "InsufficientPods",
        message="",
        observed_generation=generation,
        now=now,
    )
    return status, recheck


def fail_safe_status(pdb: Mapping[str, Any], error: str, *, now: float) -> dict[str, Any]:
    """``failSafe``: no disruptions allowed, condition False/SyncFailed with the error as its
    message, the rest unchanged — ``observedGeneration`` too, so evictions get the "still being
    processed" 429 until the budget can be computed."""
    status: dict[str, Any] = clone(pdb.get("status") or {})
    status["disruptionsAllowed"] = 0
    conditions = status.setdefault("conditions", [])
    set_status_condition(
        conditions,
        type_="DisruptionAllowed",
        status="False",
        reason="SyncFailed",
        message=error,
        observed_generation=int(status.get("observedGeneration") or 0),
        now=now,
    )
    return status


def _same_status(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Equal but for condition transition times, which ``updatePdbStatus`` does not compare."""

    def strip(status: Mapping[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in status.items() if k != "conditions"}
        out["conditions"] = [
            {k: v for k, v in c.items() if k != "lastTransitionTime"}
            for c in status.get("conditions") or []
            if isinstance(c, Mapping)
        ]
        for key in ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"):
            out[key] = int(out.get(key) or 0)
        out["observedGeneration"] = int(out.get("observedGeneration") or 0)
        out["disruptedPods"] = dict(out.get("disruptedPods") or {})
        return out

    return strip(old) == strip(new)


# --- the controller ----------------------------------------------------------------------------


class DisruptionController:
    """Watch-driven PDB status writer.

    Driven by store events (pods, PDBs, ReplicationControllers, ReplicaSets, Deployments,
    StatefulSets), so a status follows a change within the same event-loop burst, not after a
    poll; the status is written only when it differs (``updatePdbStatus``). A test can pin a
    budget's status: the annotation ``kubesim.io/static-status: "true"`` on it, or
    ``Simulator.pin_pdb(namespace, name, status)``, makes this controller leave the status
    alone (the eviction subresource still decrements it, as it would a stale budget). Events
    (``NoPods``, ``UnmanagedPods``, ``NotDeleted``) and the stale ``DisruptionTarget`` cleanup
    are not reproduced.
    """

    name = "disruption"

    def __init__(
        self,
        *,
        deletion_timeout: float | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self._deletion_timeout = deletion_timeout
        self._clock = clock
        self.pinned: set[tuple[str, str]] = set()
        self._cluster: Cluster | None = None
        self._dirty: set[tuple[str, str]] = set()
        self._wake: asyncio.Event | None = None
        self._rechecks: dict[tuple[str, str], tuple[float, asyncio.TimerHandle]] = {}
        # (namespace, pdb, pod, stamp) -> when this controller first saw the entry; entries are
        # written with whole seconds, this keeps the timeout precise at small time scales.
        self._first_seen: dict[tuple[str, str, str, str], float] = {}

    # --- configuration ----------------------------------------------------------------------

    def deletion_timeout(self) -> float:
        if self._deletion_timeout is not None:
            return self._deletion_timeout
        scale = self._cluster.time_scale if self._cluster is not None else 1.0
        return DELETION_TIMEOUT * scale

    def now(self) -> float:
        if self._clock is not None:
            return self._clock()
        assert self._cluster is not None
        return self._cluster.registry.clock()

    def pin(self, namespace: str, name: str) -> None:
        self.pinned.add((namespace, name))

    def unpin(self, namespace: str, name: str) -> None:
        self.pinned.discard((namespace, name))
        self.enqueue(namespace, name)

    def enqueue(self, namespace: str, name: str) -> None:
        self._dirty.add((namespace, name))
        if self._wake is not None:
            self._wake.set()

    # --- the loop ---------------------------------------------------------------------------

    async def run(self, cluster: Cluster) -> None:
        self._cluster = cluster
        self._wake = asyncio.Event()
        store = cluster.store
        subs = [store.subscribe(s) for s in WATCHED]
        pumps = [asyncio.create_task(self._pump(sub)) for sub in subs]
        try:
            for pdb in list(store.items("poddisruptionbudgets")):
                meta = pdb.get("metadata") or {}
                self.enqueue(str(meta.get("namespace", "")), str(meta.get("name", "")))
            while True:
                await self._wake.wait()
                self._wake.clear()
                # Let a burst of writes land before computing (one sync per PDB per burst).
                await asyncio.sleep(0)
                dirty, self._dirty = self._dirty, set()
                for key in sorted(dirty):
                    self.sync(*key)
        finally:
            for task in pumps:
                task.cancel()
            for sub in subs:
                store.unsubscribe(sub)
            for _, handle in self._rechecks.values():
                handle.cancel()
            self._rechecks.clear()
            self._cluster = None
            self._wake = None

    async def _pump(self, sub: Any) -> None:
        while True:
            ev = await sub.queue.get()
            try:
                self._on_event(ev)
            except Exception:  # one bad object must not stop the controller
                log.exception("kubesim: disruption controller event failed")

    def _on_event(self, ev: Event) -> None:
        cluster = self._cluster
        if cluster is None:
            return
        namespace = ev.key[0]
        if ev.storage == "poddisruptionbudgets":
            if ev.type == DELETED:
                self._forget(namespace, ev.key[1])
            else:
                self.enqueue(namespace, ev.key[1])
            return
        pdbs = list(cluster.store.items("poddisruptionbudgets", namespace))
        if ev.storage != "pods":
            for pdb in pdbs:
                self.enqueue(namespace, str((pdb.get("metadata") or {}).get("name", "")))
            return
        label_sets = [self._labels(o) for o in (ev.obj, ev.prev) if o is not None]
        for pdb in pdbs:
            if any(pdb_selects(pdb, labels) for labels in label_sets):
                self.enqueue(namespace, str((pdb.get("metadata") or {}).get("name", "")))

    def _forget(self, namespace: str, name: str) -> None:
        entry = self._rechecks.pop((namespace, name), None)
        if entry is not None:
            entry[1].cancel()
        self._first_seen = {
            k: v for k, v in self._first_seen.items() if (k[0], k[1]) != (namespace, name)
        }

    # --- one PDB ----------------------------------------------------------------------------

    def is_static(self, pdb: Mapping[str, Any]) -> bool:
        meta = pdb.get("metadata") or {}
        key = (str(meta.get("namespace", "")), str(meta.get("name", "")))
        annotations = meta.get("annotations") or {}
        return key in self.pinned or annotations.get(STATIC_STATUS_ANNOTATION) == "true"

    def sync(self, namespace: str, name: str) -> None:
        """``DisruptionController.sync`` for one PDB (no-op when gone or static)."""
        cluster = self._cluster
        if cluster is None:
            return
        pdb_rt = cluster.scheme.for_kind("policy/v1", "PodDisruptionBudget")
        assert pdb_rt is not None
        pdb = cluster.store.get("poddisruptionbudgets", (namespace, name))
        if pdb is None or self.is_static(pdb):
            return
        now = self.now()
        timeout = self.deletion_timeout()
        pods = [
            p for p in cluster.store.items("pods", namespace) if pdb_selects(pdb, self._labels(p))
        ]
        recheck: float | None = None
        try:
            status, recheck = compute_status(
                pdb,
                pods,
                self._find_scale,
                disrupted=self._disrupted_times(namespace, name, pdb, now),
                now=now,
                timeout=timeout,
            )
        except SyncError as exc:
            status = fail_safe_status(pdb, str(exc), now=now)
        if not _same_status(pdb.get("status") or {}, status):
            new = clone(pdb)
            new["status"] = status
            try:
                cluster.registry.update(pdb_rt, namespace, name, new, subresource="status")
            except StatusError as err:
                log.warning("kubesim: PDB %s/%s status write failed: %s", namespace, name, err)
        if recheck is not None:
            self._schedule_recheck(namespace, name, recheck, now)

    @staticmethod
    def _labels(pod: Mapping[str, Any]) -> Mapping[str, str]:
        labels = (pod.get("metadata") or {}).get("labels")
        return labels if isinstance(labels, Mapping) else {}

    def _disrupted_times(
        self, namespace: str, name: str, pdb: Mapping[str, Any], now: float
    ) -> dict[str, float]:
        raw = (pdb.get("status") or {}).get("disruptedPods") or {}
        out: dict[str, float] = {}
        seen: dict[tuple[str, str, str, str], float] = {}
        for pod_name, stamp in raw.items() if isinstance(raw, Mapping) else ():
            try:
                parsed = parse_time(stamp)
            except ValueError:
                continue
            key = (namespace, name, str(pod_name), str(stamp))
            first = self._first_seen.get(key, now)
            seen[key] = first
            # The true time lies in [parsed, parsed + 1): the first sighting narrows it.
            out[str(pod_name)] = max(parsed, min(first, parsed + 0.999))
        self._first_seen = {
            k: v for k, v in self._first_seen.items() if (k[0], k[1]) != (namespace, name)
        }
        self._first_seen.update(seen)
        return out

    def _schedule_recheck(self, namespace: str, name: str, when: float, now: float) -> None:
        key = (namespace, name)
        current = self._rechecks.get(key)
        if current is not None and current[0] <= when and not current[1].cancelled():
            return
        if current is not None:
            current[1].cancel()
        loop = asyncio.get_running_loop()
        handle = loop.call_later(max(0.0, when - now) + 0.01, self._recheck, key)
        self._rechecks[key] = (when, handle)

    def _recheck(self, key: tuple[str, str]) -> None:
        self._rechecks.pop(key, None)
        self.enqueue(*key)

    # --- controller lookups (the finders) ---------------------------------------------------

    def _find_scale(self, ref: Mapping[str, Any], namespace: str) -> tuple[str, int] | None:
        cluster = self._cluster
        assert cluster is not None
        api_version = str(ref.get("apiVersion", ""))
        group = api_version.rpartition("/")[0]
        if api_version.count("/") > 1:
            raise SyncError(f"unexpected GroupVersion string: {api_version}")
        kind = str(ref.get("kind", ""))
        name = str(ref.get("name", ""))
        uid = str(ref.get("uid", ""))
        if kind == "ReplicationController" and group == "":  # getPodReplicationController
            rc = cluster.store.get("replicationcontrollers", (namespace, name))
            if rc is not None and _uid(rc) == uid:
                return uid, _replicas(rc)
        if kind == "ReplicaSet" and group in ("apps", "extensions"):
            rs = cluster.store.get("replicasets", (namespace, name))
            if rs is not None and _uid(rs) == uid:
                owner = controller_ref(rs)
                if owner is None:
                    return uid, _replicas(rs)
                if owner.get("kind") == "Deployment":
                    owner_group = str(owner.get("apiVersion", "")).rpartition("/")[0]
                    if owner_group in ("apps", "extensions"):
                        dep = cluster.store.get(
                            "deployments", (namespace, str(owner.get("name", "")))
                        )
                        if dep is not None and _uid(dep) == str(owner.get("uid", "")):
                            return _uid(dep), _replicas(dep)
                    return None
                return uid, _replicas(rs)
        if kind == "StatefulSet" and group == "apps":
            ss = cluster.store.get("statefulsets", (namespace, name))
            if ss is not None and _uid(ss) == uid:
                return uid, _replicas(ss)
        # getScaleController: the scale subresource of whatever the reference names.
        rt = cluster.scheme.for_kind(api_version, kind)
        if rt is None:
            raise SyncError(f'no matches for kind "{kind}" in version "{api_version}"')
        if kind not in SCALABLE_KINDS:
            raise SyncError(
                f"{qualified_resource(rt.plural, rt.group)} does not implement the scale"
                " subresource"
            )
        return None


def _uid(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("uid", ""))


def _replicas(obj: Mapping[str, Any]) -> int:
    replicas = (obj.get("spec") or {}).get("replicas")
    return 1 if replicas is None else int(replicas)  # SetDefaults: replicas 1
