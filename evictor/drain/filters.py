"""kubectl drain's pod filters (``k8s.io/kubectl/pkg/drain/filters.go``), pure: which pods of a
node a drain deletes, which it skips, and which refuse the node, with kubectl's messages.

The drain helper (``evictor.drain.helper``) and the drain planner (``evictor.plan``) both run
this chain; it imports nothing that does I/O.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Final

from kube.critical import CONFIG_MIRROR_ANNOTATION_KEY
from kube.objects import Pod

__all__ = [
    "DAEMONSET_FATAL",
    "DAEMONSET_WARNING",
    "LOCAL_STORAGE_FATAL",
    "LOCAL_STORAGE_WARNING",
    "MIRROR_POD_ANNOTATION",
    "UNMANAGED_FATAL",
    "UNMANAGED_WARNING",
    "DrainOptions",
    "OwnerLookupError",
    "PodDelete",
    "PodDeleteList",
    "PodDeleteStatus",
    "PodFilter",
    "StatusType",
    "daemonset_owners",
    "get_pods_for_deletion",
]

DAEMONSET_FATAL: Final = "DaemonSet-managed Pods (use --ignore-daemonsets to ignore)"
DAEMONSET_WARNING: Final = "ignoring DaemonSet-managed Pods"
LOCAL_STORAGE_FATAL: Final = "Pods with local storage (use --delete-emptydir-data to override)"
LOCAL_STORAGE_WARNING: Final = "deleting Pods with local storage"
UNMANAGED_FATAL: Final = "Pods that declare no controller (use --force to override)"
UNMANAGED_WARNING: Final = "deleting Pods that declare no controller"
MIRROR_POD_ANNOTATION: Final = CONFIG_MIRROR_ANNOTATION_KEY  # corev1.MirrorPodAnnotationKey

_TERMINAL: Final = ("Succeeded", "Failed")


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
    """A controller of kind DaemonSet in the ``apps`` group (kubectl ≤ 1.34 checks the kind
    only; newer kubectl checks the group too, as here)."""
    return (
        kind == "DaemonSet"
        and api_version.split("/", maxsplit=1)[0] == "apps"
        and "/" in api_version
    )


def daemonset_owners(pods: Iterable[Pod]) -> set[tuple[str, str]]:
    """The ``(namespace, name)`` of every DaemonSet the chain asks ``owner_exists`` about."""
    return {
        (p.namespace, ref.name)
        for p in pods
        if (ref := p.controller_ref()) is not None
        and _is_daemonset_ref(ref.api_version, ref.kind)
        and p.phase not in _TERMINAL
    }


def get_pods_for_deletion(
    pods: Iterable[Pod],
    *,
    options: DrainOptions,
    owner_exists: Callable[[str, str], bool],
    now: float | None = None,
) -> PodDeleteList:
    """kubectl's filter chain on each pod, in kubectl's order: skip deleted, DaemonSet, mirror,
    local storage, unreplicated, then ``options.additional_filters``.

    A pod's chain stops at the first filter that says "do not delete", and the status of the
    *last* filter that ran is the pod's. That keeps two kubectl quirks on purpose: the "deleting
    Pods with local storage" warning and the orphaned-DaemonSet NotFound warning are overwritten
    by a later filter's "okay", so kubectl never prints them. Completed pods (Succeeded/Failed)
    always pass the DaemonSet, local-storage and unreplicated filters
    (kubernetes/kubernetes#26080).

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
