"""The controllers in the played drain: what replaces an evicted or preempted pod, as kube's
ReplicaSet, ReplicationController, Job and StatefulSet controllers do, and what a plan cannot
predict about it.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, MutableMapping
from typing import Final

from evictor.plan.clock import Clock
from evictor.plan.scheduling import Scheduling
from evictor.plan.types import Replacement, Workload
from kube.objects import Pod
from scheduler.schedule import unmodelled_features

__all__ = ["KINDS", "Controllers", "owner_title", "unmodelled"]

KINDS: Final = {
    ("apps", "ReplicaSet"),
    ("apps", "StatefulSet"),
    ("apps", "DaemonSet"),
    ("batch", "Job"),
    ("", "ReplicationController"),
}

WorkloadKey = tuple[str, str, str]


def _workload_key(pod: Pod) -> WorkloadKey | None:
    ref = pod.controller_ref()
    if ref is None:
        return None
    return (ref.kind, pod.namespace, ref.name)


def _known_kind(api_version: str, kind: str) -> bool:
    group = api_version.split("/", 1)[0] if "/" in api_version else ""
    return (group, kind) in KINDS


def _ordinal(set_name: str, pod_name: str) -> int | None:
    prefix = f"{set_name}-"
    if not pod_name.startswith(prefix):
        return None
    tail = pod_name[len(prefix) :]
    return int(tail) if tail.isdigit() else None


def owner_title(pod: Pod, workloads: Mapping[WorkloadKey, Workload]) -> str:
    ref = pod.controller_ref()
    if ref is None:
        return ""
    wl = workloads.get((ref.kind, pod.namespace, ref.name))
    return wl.title if wl is not None else f"{ref.kind} {ref.name}"


def unmodelled(
    pod: Pod | None, workloads: Mapping[WorkloadKey, Workload], scheduling: Scheduling
) -> tuple[str, ...]:
    """What makes this pod's replacement unpredictable: an owner of a kind not modelled, or
    what the scheduler here does not evaluate (``scheduler.schedule.unmodelled_features``:
    PersistentVolumeClaim volumes, resource claims; a ``schedulerName`` no profile of the
    configuration has). Such a replacement takes room where the modelled plugins put it but
    never counts as Ready."""
    if pod is None:
        return ()
    ref = pod.controller_ref()
    if ref is None:
        return ()
    if not _known_kind(ref.api_version, ref.kind):
        return (
            f"owner {ref.kind} {ref.name} ({ref.api_version}) is not a kind this plan"
            " models: whether and where a replacement comes is unknown",
        )
    if ref.kind == "DaemonSet":
        return ()
    # The pod's own volumes count too: a StatefulSet adds its claims to each pod, and the
    # pod that comes back under the same name mounts the same claim.
    features = unmodelled_features(pod)
    wl = workloads.get((ref.kind, pod.namespace, ref.name))
    if wl is not None and wl.template is not None:
        features += unmodelled_features(wl.template)
    for template in (pod, wl.template if wl is not None else None):
        elsewhere = scheduling.elsewhere(template) if template is not None else ""
        if elsewhere:
            features.append(elsewhere)
    return tuple(dict.fromkeys(features))


class Controllers:
    """The workloads' controllers. A ReplicaSet, ReplicationController or Job replaces a pod
    at once (a terminating pod is not active); a StatefulSet recreates it under the same name
    once the old pod is gone (``OrderedReady``: lowest ordinal first, never while a pod of the
    set terminates). A controller syncs when one of its pods changes, in the order they did.

    ``members`` maps a pod to its workload, ``active`` a workload to its active pods (not
    finished, not terminating); ``owed`` holds the replacements recorded when a pod went and
    not created yet; ``others`` the replacements of pods the drain did not evict.
    """

    def __init__(
        self,
        workloads: Mapping[WorkloadKey, Workload],
        *,
        pods: MutableMapping[str, Pod],
        scheduling: Scheduling,
        clock: Clock,
    ) -> None:
        self.workloads = workloads
        self._pods = pods
        self._scheduling = scheduling
        self._clock = clock
        self._names = itertools.count(1)
        self.active: dict[WorkloadKey, set[str]] = {}
        self.members: dict[str, WorkloadKey] = {}
        for pod in pods.values():
            wk = _workload_key(pod)
            if wk is None or wk not in workloads:
                continue
            wl = workloads[wk]
            ref = pod.controller_ref()
            if ref is not None and wl.uid and ref.uid and ref.uid != wl.uid:
                continue
            self.members[pod.key] = wk
            if pod.phase not in ("Succeeded", "Failed") and not pod.is_terminating:
                self.active.setdefault(wk, set()).add(pod.key)
        # workloads to sync, in the order they were touched (a dict: sets pop in hash order,
        # which differs from process to process, and the controllers act in event order)
        self.dirty: dict[WorkloadKey, None] = dict.fromkeys(workloads)
        # replacements a controller owes, in the order their pods went: (pod name, replacement)
        self.owed: dict[WorkloadKey, list[tuple[str, Replacement]]] = {}
        self.others: list[Replacement] = []

    def touch(self, key: str) -> None:
        """The pod ``key`` changed (OrderedReady waits for Running and Ready)."""
        wk = self.members.get(key)
        if wk is not None:
            self.dirty[wk] = None

    def terminating(self, key: str) -> None:
        wk = self.members.get(key)
        if wk is not None:
            self.active.get(wk, set()).discard(key)
            self.dirty[wk] = None

    def gone(self, key: str) -> None:
        wk = self.members.pop(key, None)
        if wk is not None:
            self.active.get(wk, set()).discard(key)
            self.dirty[wk] = None

    def sync(self) -> bool:
        changed = False
        while self.dirty:
            wk = next(iter(self.dirty))
            del self.dirty[wk]
            wl = self.workloads.get(wk)
            if wl is None or wl.kind == "DaemonSet":
                continue
            if wl.kind == "StatefulSet":
                changed |= self._sync_statefulset(wl)
            else:
                active = self.active.setdefault(wk, set())
                for _ in range(max(wl.replicas - len(active), 0)):
                    self._create(wl, None)
                    changed = True
        return changed

    def _sync_statefulset(self, wl: Workload) -> bool:
        present: dict[int, Pod] = {}
        for key, wk in self.members.items():
            if wk != wl.key or key not in self._pods:
                continue
            pod = self._pods[key]
            ordinal = _ordinal(wl.name, pod.name)
            if ordinal is not None:
                present[ordinal] = pod
        missing = [i for i in range(wl.replicas) if i not in present]
        if not missing:
            return False
        if not wl.ordered_ready:
            for i in missing:
                self._create(wl, f"{wl.name}-{i}")
            return True
        if any(p.is_terminating for p in present.values()):
            return False
        first = missing[0]
        if any(not present[i].node_name for i in range(first) if i in present):
            return False  # a lower ordinal is not Running and Ready yet
        self._create(wl, f"{wl.name}-{first}")
        return True

    def _create(self, wl: Workload, name: str | None) -> None:
        owed = self.owed.get(wl.key, [])
        replacement: Replacement | None = None
        for i, (old, rep) in enumerate(owed):
            if name is None or old == name:  # a StatefulSet recreates that very name
                replacement = rep
                del owed[i]
                break
        if replacement is None:
            replacement = Replacement(owner=wl.title)
            self.others.append(replacement)
        if wl.template is None:
            replacement.unmodelled = (f"{wl.title} has no pod template to read",)
            return
        if name is None:
            while True:
                name = f"{wl.name}-plan{next(self._names)}"
                if f"{wl.namespace}/{name}" not in self._pods:
                    break
        else:
            replacement.name = name
        labels = dict(wl.template.labels)
        if wl.kind == "StatefulSet":
            labels["statefulset.kubernetes.io/pod-name"] = name
            ordinal = _ordinal(wl.name, name)
            if ordinal is not None:
                labels["apps.kubernetes.io/pod-index"] = str(ordinal)
        pod = wl.template.with_changes(
            name=name, namespace=wl.namespace, uid=f"plan-{name}", labels=labels, node_name=""
        )
        admitted = self._scheduling.admit(pod)
        if admitted is None:
            replacement.unschedulable = "refused by Priority admission"
            return
        pod = admitted
        elsewhere = self._scheduling.elsewhere(pod)
        features = (
            *replacement.unmodelled,
            *unmodelled_features(pod),
            *((elsewhere,) if elsewhere else ()),
        )
        replacement.unmodelled = tuple(dict.fromkeys(features))
        self._pods[pod.key] = pod
        self.members[pod.key] = wl.key
        self.active.setdefault(wl.key, set()).add(pod.key)
        self._scheduling.enqueue(pod, replacement)
        self._clock.record("create", pod.key, detail=wl.title)

    def owe(self, pod: Pod, *, note: str = "") -> Replacement | None:
        """The replacement ``pod``'s controller will create, recorded before it exists."""
        wk = self.members.get(pod.key)
        if wk is None:
            return None
        wl = self.workloads[wk]
        owed = self.owed.setdefault(wk, [])
        if wl.kind == "DaemonSet":
            return None
        if wl.kind == "StatefulSet":
            ordinal = _ordinal(wl.name, pod.name)
            if ordinal is None or ordinal >= wl.replicas:
                return None
        elif len(self.active.get(wk, ())) + len(owed) >= wl.replicas:
            return None  # scaled down, or a finished Job: it keeps no more pods
        rep = Replacement(owner=wl.title, replaces=pod.key)
        if note:
            rep.owner = f"{wl.title}, replacing {pod.key} ({note})"
            self.others.append(rep)
        owed.append((pod.name, rep))
        return rep
