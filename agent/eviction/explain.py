"""Why each pod sits where it does in a ranking — for ``eviction-agent rank`` and the logs.

The kubelet logs only the ranked list. Operators asking "why this pod first?" need the comparator
inputs, so we recompute them for a list already ranked by the manager's ranker: whether stats were
found, whether usage exceeds the request, the priority, and usage above the request (or the process
count for PIDs), plus whether the pod may be evicted at all (critical, ``eviction-preference``).
Nothing here changes an order.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from agent.eviction.helpers import (
    SIGNAL_TO_RESOURCE,
    fs_stats_to_measure,
    memory_usage,
    pod_disk_usage,
    process_usage,
)
from agent.eviction.pods import (
    EPHEMERAL_STORAGE,
    MEMORY,
    RESOURCE_PIDS,
    VolumesFunc,
    get_resource_request,
    is_critical_pod,
    pod_volume_infos,
)
from agent.eviction.preference import is_eviction_forbidden, preference_of
from agent.eviction.quantity import BINARY_SI, DECIMAL_SI, format_quantity
from agent.eviction.types import StatsFunc
from kube.objects import Pod

__all__ = ["RankEntry", "explain_ranking"]


@dataclass(frozen=True, slots=True)
class RankEntry:
    """One pod's place in a ranking and the comparator inputs that put it there."""

    position: int
    pod: Pod
    resource: str
    has_stats: bool
    priority: int
    usage: int | None  # working set, disk bytes/inodes, or processes
    request: int
    exceeds_request: bool | None  # None for PIDs (no request step)
    evictable: bool
    blocked_by: str  # "critical pod", "eviction-preference: never" or ""
    preference: str | None

    @property
    def reason(self) -> str:
        fmt = BINARY_SI if self.resource in (MEMORY, EPHEMERAL_STORAGE) else DECIMAL_SI
        if not self.has_stats:
            text = "no stats (ranked first by the kubelet)"
        elif self.exceeds_request is None:
            text = f"priority {self.priority}, {self.usage} processes"
        else:
            usage = format_quantity(self.usage or 0, fmt)
            request = format_quantity(self.request, fmt)
            above = format_quantity((self.usage or 0) - self.request, fmt)
            verb = "exceeds" if self.exceeds_request else "within"
            text = (
                f"{verb} request ({usage} used, {request} requested), priority "
                f"{self.priority}, {above} above request"
            )
        if self.preference == "avoid":
            text += "; eviction-preference: avoid"
        if self.blocked_by:
            text += f"; never evicted: {self.blocked_by}"
        return text


def explain_ranking(
    signal: str,
    ranked: Sequence[Pod],
    stats: StatsFunc,
    *,
    with_image_fs: bool = False,
    image_container_split_fs: bool = False,
    volumes: VolumesFunc = pod_volume_infos,
    pod_level_resources: bool = True,
    preference_namespaces: Collection[str] = (),
) -> list[RankEntry]:
    """Comparator inputs for each pod of ``ranked`` under ``signal``.

    ``ranked``: pods of the kubelet's view (``kubelet_view``), as the manager ranks them.

    ``preference_namespaces``: where ``eviction-preference`` is honoured (the manager's setting).
    """
    resource = SIGNAL_TO_RESOURCE[signal]
    measured = fs_stats_to_measure(signal, with_image_fs, image_container_split_fs)
    out = []
    for i, pod in enumerate(ranked):
        pod_stats = stats(pod)
        usage: int | None = None
        request = 0
        exceeds: bool | None = None
        if resource == RESOURCE_PIDS:
            usage = None if pod_stats is None else process_usage(pod_stats.process_stats)
        elif resource == MEMORY:
            request = get_resource_request(pod, MEMORY, pod_level_resources=pod_level_resources)
            if pod_stats is not None:
                usage = memory_usage(pod_stats.memory)
        else:
            request = get_resource_request(pod, resource)
            if pod_stats is not None:
                usage = pod_disk_usage(pod_stats, pod, measured, volumes=volumes)[resource]
        if pod_stats is not None and resource != RESOURCE_PIDS:
            exceeds = (usage or 0) > request
        blocked = ""
        if is_critical_pod(pod):
            blocked = "critical pod"
        elif is_eviction_forbidden(pod, allowed=preference_namespaces):
            blocked = "eviction-preference: never"
        out.append(
            RankEntry(
                position=i,
                pod=pod,
                resource=resource,
                has_stats=pod_stats is not None,
                priority=pod.priority,
                usage=usage,
                request=request,
                exceeds_request=exceeds,
                evictable=not blocked,
                blocked_by=blocked,
                preference=preference_of(pod, allowed=preference_namespaces),
            )
        )
    return out
