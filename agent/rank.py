"""``eviction-agent rank``: the current observations, thresholds and the ranking, explained.

The kubelet never says why it picked a pod. Here every position names the comparator of the
kubelet's chain that put the pod ahead of the next one (``exceeds requests`` → ``priority`` →
``usage above request`` for memory and disk, ``priority`` → ``processes`` for PIDs), with the
figures it compared — the same chain the manager sorts with, so the explanation cannot drift from
the decision.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from agent.eviction import (
    EvictionManager,
    Signal,
    Summary,
    exceed_disk_requests,
    exceed_memory_requests,
    get_threshold_quantity,
    kubelet_view,
    make_signal_observations,
    memory,
    priority,
    process,
    sort_thresholds_by_eviction_priority,
    thresholds_met,
)
from agent.eviction.helpers import (
    SIGNAL_TO_RESOURCE,
    disk,
    memory_usage,
    pod_disk_usage,
    process_usage,
)
from agent.eviction.pods import (
    EPHEMERAL_STORAGE,
    RESOURCE_INODES,
    get_resource_request,
    is_critical_pod,
)
from agent.eviction.preference import preference_of, requested_preference
from agent.eviction.quantity import format_request
from agent.eviction.types import FsStatsType, StatsFunc
from kube.objects import Pod

__all__ = ["explain", "pick_signal"]

Cmp = Callable[[Pod, Pod], int]


def _disk_measured(manager: EvictionManager, signal: str) -> tuple[str, ...]:
    F = FsStatsType
    image_fs = bool(manager.dedicated_image_fs)
    split = bool(manager.split_container_image_fs)
    nodefs_signals = (Signal.NODE_FS_AVAILABLE, Signal.NODE_FS_INODES_FREE)
    if image_fs and not split:
        return (F.LOGS, F.LOCAL_VOLUME_SOURCE) if signal in nodefs_signals else (F.ROOT, F.IMAGES)
    if image_fs and split:
        if signal in (Signal.IMAGE_FS_AVAILABLE, Signal.IMAGE_FS_INODES_FREE):
            return (F.IMAGES,)
        return (F.LOGS, F.LOCAL_VOLUME_SOURCE, F.ROOT)
    return (F.IMAGES, F.ROOT, F.LOGS, F.LOCAL_VOLUME_SOURCE)


def _chain(
    manager: EvictionManager, signal: str, stats: StatsFunc
) -> tuple[list[tuple[str, Cmp]], Callable[[Pod], dict[str, Any]]]:
    if signal in (Signal.MEMORY_AVAILABLE, Signal.ALLOCATABLE_MEMORY_AVAILABLE):

        def mem_facts(pod: Pod) -> dict[str, Any]:
            s = stats(pod)
            request = get_resource_request(pod, "memory")
            if s is None:
                return {"stats": False, "request": format_request(request)}
            usage = memory_usage(s.memory)
            return {
                "stats": True,
                "usage": format_request(usage),
                "request": format_request(request),
                "exceedsRequest": usage > request,
                "usageAboveRequest": usage - request,
            }

        return [
            ("exceeds its memory request", exceed_memory_requests(stats)),
            ("lower priority", priority),
            ("more memory above its request", memory(stats)),
        ], mem_facts
    if signal == Signal.PID_AVAILABLE:

        def pid_facts(pod: Pod) -> dict[str, Any]:
            s = stats(pod)
            if s is None:
                return {"stats": False}
            return {"stats": True, "processes": process_usage(s.process_stats)}

        return [("lower priority", priority), ("more processes", process(stats))], pid_facts
    measured = _disk_measured(manager, signal)
    resource = RESOURCE_INODES if "inodes" in signal.lower() else EPHEMERAL_STORAGE

    def disk_facts(pod: Pod) -> dict[str, Any]:
        s = stats(pod)
        request = get_resource_request(pod, resource)
        if s is None:
            return {"stats": False}
        usage = pod_disk_usage(s, pod, measured, volumes=manager.pod_volumes)[resource]
        return {
            "stats": True,
            "usage": usage,
            "request": request,
            "exceedsRequest": usage > request,
        }

    return [
        (
            "exceeds its disk request",
            exceed_disk_requests(stats, measured, resource, volumes=manager.pod_volumes),
        ),
        ("lower priority", priority),
        (
            "more disk usage above its request",
            disk(stats, measured, resource, volumes=manager.pod_volumes),
        ),
    ], disk_facts


def pick_signal(manager: EvictionManager, summary: Summary) -> str:
    """The signal the manager would reclaim now: the first met threshold, else memory."""
    observations, _ = make_signal_observations(summary)
    met = thresholds_met(manager.thresholds, observations, False)
    if met:
        sort_thresholds_by_eviction_priority(met)
        for t in met:
            if t.signal in SIGNAL_TO_RESOURCE:
                return t.signal
    return Signal.MEMORY_AVAILABLE


def explain(
    manager: EvictionManager, summary: Summary, pods: Sequence[Pod], signal: str | None = None
) -> dict[str, Any]:
    """Observations, thresholds (with whether each is met now) and the explained ranking.

    ``pods``: the node's pods as the API has them; they are ranked and judged as the kubelet
    sees them on the node ``summary`` describes (``kubelet_view``), as the daemon judges them."""
    observations, stats = make_signal_observations(summary)
    chosen = signal or pick_signal(manager, summary)
    seen = kubelet_view(pods, node_pod_uids=(s.pod_ref.uid for s in summary.pods)).pods
    ranked = manager.rank(chosen, seen, summary)
    chain, facts = _chain(manager, chosen, stats)
    thresholds = []
    for t in manager.thresholds:
        if not t.operator:
            continue
        obs = observations.get(t.signal)
        quantity = get_threshold_quantity(t.value, obs.capacity) if obs else None
        thresholds.append(
            {
                "signal": t.signal,
                "kind": "soft" if t.grace_period else "hard",
                "value": t.value.text,
                "quantity": quantity,
                "gracePeriodSeconds": t.grace_period,
                "met": bool(obs is not None and quantity is not None and obs.available < quantity),
            }
        )
    rows = []
    for i, pod in enumerate(ranked):
        nxt = ranked[i + 1] if i + 1 < len(ranked) else None
        if nxt is None:
            reason = "last"
        else:
            reason = f"tie with {nxt.namespace}/{nxt.name}: listing order kept (stable sort)"
            for name, cmp in chain:
                if cmp(pod, nxt) < 0:
                    reason = f"before {nxt.namespace}/{nxt.name}: {name}"
                    if stats(pod) is None and stats(nxt) is not None:
                        reason = f"before {nxt.namespace}/{nxt.name}: no stats (ranked first)"
                    break
        skip = ""
        allowed = manager.config.eviction_preference_namespaces
        honoured = preference_of(pod, allowed=allowed)
        if is_critical_pod(pod):
            skip = "critical pod: never evicted"
        elif honoured == "never":
            skip = "eviction-preference: never"
        rows.append(
            {
                "rank": i + 1,
                "pod": {"namespace": pod.namespace, "name": pod.name, "uid": pod.uid},
                "priority": pod.priority,
                "preference": honoured,
                "preferenceIgnored": (requested_preference(pod) if honoured is None else None),
                "skipped": skip or None,
                "reason": reason,
                **facts(pod),
            }
        )
    return {
        "signal": chosen,
        "observations": {
            s: {"available": o.available, "capacity": o.capacity} for s, o in observations.items()
        },
        "thresholds": thresholds,
        "pods": rows,
    }
