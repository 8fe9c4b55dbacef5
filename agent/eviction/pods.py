"""What the eviction manager needs to know about a pod that ``kube.objects.Pod`` does not say: its
requests and ephemeral-storage limits as the kubelet computes them for eviction, its volumes, the
UID its stats are filed under, and the node's pods as the kubelet sees them (``kubelet_view``),
which every critical-pod check of the agent judges.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from kube.critical import (
    API_SERVER_SOURCE,
    CONFIG_MIRROR_ANNOTATION_KEY,
    CONFIG_SOURCE_ANNOTATION_KEY,
    is_critical_pod,
)
from kube.objects import Pod
from kube.quantity import QuantityError, quantity_value
from kube.resourcehelper import aggregate_limits, aggregate_requests

__all__ = [
    "EPHEMERAL_STORAGE",
    "MEMORY",
    "RESOURCE_INODES",
    "RESOURCE_PIDS",
    "KubeletView",
    "VolumeInfo",
    "VolumesFunc",
    "get_resource_request",
    "is_critical_pod",
    "is_static_pod_uid",
    "kubelet_view",
    "local_volume_names",
    "pod_ephemeral_storage_limit",
    "pod_volume_infos",
    "stats_uid",
    "volume_infos_from_manifest",
]

MEMORY: Final = "memory"
EPHEMERAL_STORAGE: Final = "ephemeral-storage"
RESOURCE_INODES: Final = "inodes"
RESOURCE_PIDS: Final = "pids"
# The kubelet's UID for a pod read from a file or URL: the hex MD5 of its source. The API
# server's UIDs are dashed UUIDs, so no API pod has one of this shape.
_STATIC_POD_UID: Final = re.compile(r"[0-9a-f]{32}")


def stats_uid(pod: Pod) -> str:
    """The UID the node's stats name this pod by: a mirror pod's static pod UID, else its own.

    The kubelet names a static pod by the hash of its source and runs it, cgroup and stats, under
    that UID; the API holds a mirror pod with a UID of its own and the hash in
    ``kubernetes.io/config.mirror`` (``pkg/kubelet/pod/mirror_client.go``). The kubelet ranks its
    own static pod; the agent ranks the mirror pod, so it finds the stats by the annotation, as the
    kubelet's pod manager translates a mirror pod to its static pod. Read on the kubelet's view of
    the pod (``kubelet_view``), where only a trusted mirror pod keeps ``config.mirror``.
    """
    return pod.annotations.get(CONFIG_MIRROR_ANNOTATION_KEY) or pod.uid


def is_static_pod_uid(uid: str) -> bool:
    """Whether ``uid`` has the shape the kubelet gives a static pod (32 lowercase hex digits)."""
    return _STATIC_POD_UID.fullmatch(uid) is not None


@dataclass(frozen=True, slots=True)
class KubeletView:
    """The node's pods as the kubelet sees them (``kubelet_view``)."""

    pods: list[Pod]
    # static pod UID → its mirror pod (as in ``pods``), for each trusted claim
    mirrors: Mapping[str, Pod] = field(default_factory=dict)
    # static pod UID running on the node → the pods that all claim it (none trusted)
    disputed: Mapping[str, tuple[Pod, ...]] = field(default_factory=dict)


def kubelet_view(pods: Iterable[Pod], *, node_pod_uids: Iterable[str]) -> KubeletView:
    """``pods`` (the node's pods as the API has them) as the kubelet would see them on the node
    whose stats name the pods ``node_pod_uids``. Order is kept; a pod that needs no change is
    returned as it is. Taking the view of a view changes nothing.

    ``kube.critical`` answers for the kubelet's own copy of a pod, but the agent reads API objects,
    whose annotations anyone who can create a pod writes. So:

    - ``kubernetes.io/config.source`` is ``api`` on every pod: the kubelet overwrites it on each pod
      it receives from the API server (``pkg/kubelet/config/config.go``), so a pod created with
      ``config.source: file`` is an ordinary pod to the kubelet, and so to the agent;
    - ``kubernetes.io/config.mirror: H`` is kept — the pod is a mirror pod, critical, its stats
      found under H — only when a static pod with UID H runs on this node (the node's stats name it:
      a pod cgroup ``pod<H>``, or a podRef of the kubelet's summary, H being the kubelet's hash of
      the pod's source, 32 hex digits; ``pkg/kubelet/config/common.go``) and exactly one pod bound
      to the node claims H. When two or more claim it none is trusted (the loop logs them; a
      control-plane static pod stays critical by its ``system-node-critical`` priority). Any other
      claim is dropped: the pod is ordinary, ranked by its own UID's stats. (A real kubelet never
      runs a pod whose API object carries ``config.mirror``, and deletes it as an orphaned mirror
      pod unless a static pod of its name runs there: ``IsMirrorPodOf``.)

    Priority ≥ 2000000000 is kept as it is: admission resolved it from the PriorityClass, which a
    ResourceQuota can deny per namespace.
    """
    pods = list(pods)
    static = {uid for uid in node_pod_uids if is_static_pod_uid(uid)}
    claims: dict[str, list[Pod]] = {}
    for pod in pods:
        claimed = pod.annotations.get(CONFIG_MIRROR_ANNOTATION_KEY)
        if claimed is not None:
            claims.setdefault(claimed, []).append(pod)
    trusted = {uid: by[0] for uid, by in claims.items() if uid in static and len(by) == 1}
    disputed = {uid: tuple(by) for uid, by in claims.items() if uid in static and len(by) > 1}
    out: list[Pod] = []
    mirrors: dict[str, Pod] = {}
    for pod in pods:
        annotations = pod.annotations
        source = annotations.get(CONFIG_SOURCE_ANNOTATION_KEY)
        claimed = annotations.get(CONFIG_MIRROR_ANNOTATION_KEY)
        mirror = claimed is not None and trusted.get(claimed) is pod
        if source in (None, API_SERVER_SOURCE) and (claimed is None or mirror):
            seen = pod
        else:
            kept = {
                k: v for k, v in annotations.items() if k != CONFIG_MIRROR_ANNOTATION_KEY or mirror
            }
            if source is not None:
                kept[CONFIG_SOURCE_ANNOTATION_KEY] = API_SERVER_SOURCE
            seen = pod.with_changes(annotations=kept)
        if mirror and claimed is not None:
            mirrors[claimed] = seen
        out.append(seen)
    return KubeletView(out, mirrors, disputed)


def get_resource_request(pod: Pod, resource: str, *, pod_level_resources: bool = True) -> int:
    """``GetResourceRequestQuantity``: the pod's request for ``resource`` in whole units.

    As ``v1resource.GetResourceRequestQuantity`` computes it for ranking: containers plus
    restartable-init (sidecar) containers, maxed with ordinary init containers, pod-level requests
    when ``PodLevelResources`` is on and set, overhead only when the total is non-zero.
    """
    if resource == RESOURCE_INODES:
        return 0
    if pod_level_resources and resource in pod.pod_requests:
        return pod.pod_requests[resource]
    total = aggregate_requests(pod.containers, pod.init_containers).get(resource, 0)
    if total != 0:
        total += pod.overhead.get(resource, 0)
    return total


def pod_ephemeral_storage_limit(pod: Pod) -> int | None:
    """``PodLimits(pod)[ephemeral-storage]``; None when no container sets the limit."""
    total = aggregate_limits(pod.containers, pod.init_containers).get(EPHEMERAL_STORAGE)
    if total is not None:
        total += pod.overhead.get(EPHEMERAL_STORAGE, 0)
    return total


@dataclass(frozen=True, slots=True)
class VolumeInfo:
    """A pod volume as the eviction manager looks at it."""

    name: str
    source: str  # "emptyDir", "hostPath", "configMap", …
    medium: str = ""  # emptyDir.medium: "" (node disk), "Memory", "HugePages…"
    size_limit: int | None = None  # emptyDir.sizeLimit in bytes


VolumesFunc = Callable[[Pod], Sequence[VolumeInfo]]


def pod_volume_infos(pod: Pod) -> tuple[VolumeInfo, ...]:
    """Volumes from the Pod value, with the emptyDir medium and size limit it carries.

    An emptyDir over its limit is a local-storage eviction, and only one on the default medium
    counts as the pod's disk usage (``IsLocalEphemeralVolume``; a ``Memory`` emptyDir is tmpfs,
    charged to the pod's memory cgroup and so to its working set).
    """
    return tuple(VolumeInfo(v.name, v.source, v.medium, v.size_limit) for v in pod.volumes)


def volume_infos_from_manifest(manifest: Mapping[str, Any]) -> tuple[VolumeInfo, ...]:
    """Volumes with emptyDir medium and sizeLimit from a pod manifest; bad entries are skipped."""
    spec = manifest.get("spec")
    volumes = spec.get("volumes") if isinstance(spec, Mapping) else None
    out: list[VolumeInfo] = []
    for v in volumes if isinstance(volumes, list) else ():
        if not isinstance(v, Mapping) or not isinstance(v.get("name"), str):
            continue
        source = next((k for k in v if k != "name"), "")
        medium = ""
        size_limit = None
        empty_dir = v.get("emptyDir")
        if source == "emptyDir" and isinstance(empty_dir, Mapping):
            medium = empty_dir.get("medium") or ""
            raw = empty_dir.get("sizeLimit")
            if raw is not None:
                try:
                    size_limit = quantity_value(raw)
                except QuantityError:
                    size_limit = None
        out.append(VolumeInfo(v["name"], source, str(medium), size_limit))
    return tuple(out)


def local_volume_names(volumes: Iterable[VolumeInfo]) -> list[str]:
    """``localVolumeNames``: hostPath plus ``IsLocalEphemeralVolume`` (gitRepo, configMap and
    emptyDir on the default medium)."""
    return [
        v.name
        for v in volumes
        if v.source in ("hostPath", "gitRepo", "configMap")
        or (v.source == "emptyDir" and v.medium == "")
    ]
