"""NodePorts: the pod's host ports must be free on the node.

``pkg/scheduler/framework/plugins/nodeports``: the wanted ports are the ``hostPort`` entries of
the app containers and of sidecar (restartable init) containers (``schedutil.GetHostPorts``).
A conflict (``check_conflict``) is Unschedulable ``node(s) didn't have free ports for the
requested pod ports`` (preemption can free a port). PreFilter answers Skip for a pod without
host ports.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from kube.objects import Pod
from scheduler.framework import Code, CycleState, FilterBatchResult, QueueingHint, Status
from scheduler.plugins.helper import SKIP, NoPreFilterExtensions
from scheduler.snapshot import NodeInfo, Snapshot, host_ports

__all__ = [
    "DEFAULT_BIND_ALL_HOST_IP",
    "ERR_REASON",
    "NAME",
    "HostPort",
    "NodePorts",
    "check_conflict",
    "fits_ports",
    "is_schedulable_after_pod_deleted",
]

NAME: Final = "NodePorts"
ERR_REASON: Final = "node(s) didn't have free ports for the requested pod ports"
DEFAULT_BIND_ALL_HOST_IP: Final = "0.0.0.0"

_PRE_FILTER_KEY: Final = "PreFilter" + NAME
_REJECT: Final = Status(Code.Unschedulable, ERR_REASON, plugin=NAME)

HostPort = tuple[str, str, int]
"""``(host_ip, protocol, host_port)`` as in ``NodeInfo.used_ports``."""


def check_conflict(used: Mapping[HostPort, int], ip: str, protocol: str, port: int) -> bool:
    """``HostPortInfo.CheckConflict``: a wanted ``(hostIP, protocol, hostPort)`` conflicts with
    a port in use on the node when protocol and port are equal and either the wanted IP is
    ``0.0.0.0`` (any IP in use conflicts) or the port is in use on ``0.0.0.0`` or on the same
    IP. An empty IP means ``0.0.0.0`` and an empty protocol ``TCP``."""
    if port <= 0:
        return False
    ip = ip or DEFAULT_BIND_ALL_HOST_IP
    protocol = protocol or "TCP"
    if ip == DEFAULT_BIND_ALL_HOST_IP:
        return any(p == port and proto == protocol for _, proto, p in used)
    return (DEFAULT_BIND_ALL_HOST_IP, protocol, port) in used or (ip, protocol, port) in used


def fits_ports(want: Sequence[HostPort], used: Mapping[HostPort, int]) -> bool:
    """``fitsPorts``: no wanted port conflicts with the ports in use."""
    return not any(check_conflict(used, ip, proto, port) for ip, proto, port in want)


class NodePorts(NoPreFilterExtensions):
    name = NAME

    def pre_filter(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> Status | None:
        want = tuple(host_ports(pod))
        if not want:
            return SKIP
        state.write(_PRE_FILTER_KEY, want)
        return None

    def _want(self, state: CycleState, pod: Pod) -> tuple[HostPort, ...]:
        want: tuple[HostPort, ...] | None = state.read(_PRE_FILTER_KEY)
        return want if want is not None else tuple(host_ports(pod))

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        used = node_info.used_ports
        if not used or fits_ports(self._want(state, pod), used):
            return None
        return _REJECT

    def filter_nodes(
        self, state: CycleState, pod: Pod, node_infos: list[NodeInfo]
    ) -> FilterBatchResult:
        want = self._want(state, pod)
        if not want:
            return node_infos, []
        verdicts = [not ni.used_ports or fits_ports(want, ni.used_ports) for ni in node_infos]
        if all(verdicts):
            return node_infos, []
        pairs = list(zip(node_infos, verdicts, strict=True))
        return [ni for ni, ok in pairs if ok], [(ni, _REJECT) for ni, ok in pairs if not ok]


def is_schedulable_after_pod_deleted(pod: Pod, old: object, new: object) -> QueueingHint:
    """``isSchedulableAfterPodDeleted``: a deleted pod frees a port only when it was bound (or
    nominated) and held one the rejected pod wants."""
    if not isinstance(old, Pod):
        return QueueingHint.Queue
    if not old.node_name and not old.nominated_node_name:
        return QueueingHint.QueueSkip
    freed = list(host_ports(old))
    if not freed:
        return QueueingHint.QueueSkip
    in_use: dict[HostPort, int] = {}
    for p in freed:
        in_use[p] = in_use.get(p, 0) + 1
    if fits_ports(list(host_ports(pod)), in_use):
        return QueueingHint.QueueSkip
    return QueueingHint.Queue
