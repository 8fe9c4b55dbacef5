"""NodeResourcesFit's PreFilter and Filter: does the node have room for the pod's requests?
(Its Score is ``least_allocated``.)

Reproduces ``fitsRequest`` of ``pkg/scheduler/framework/plugins/noderesources/fit.go``
(``fits_request``), with a whole-cluster answer of our own (``uniform_verdict``). Its Filter
args, ``ignoredResources`` and ``ignoredResourceGroups`` (``NodeResourcesFitArgs``), leave
extended resources unchecked by name or by the group before their ``/``: a device plugin
managed elsewhere (an extender, a DRA driver) is not this filter's to count.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from kube.objects import Node, Pod
from scheduler.framework import SUCCESS, Code, CycleState, FilterBatchResult, QueueingHint, Status
from scheduler.plugins.helper import NoPreFilterExtensions, remember
from scheduler.snapshot import NodeInfo, Snapshot

__all__ = [
    "NAME",
    "IgnoredResources",
    "InsufficientResource",
    "NodeResourcesFit",
    "fits_request",
    "insufficient_resources",
    "is_extended_resource_name",
    "is_scalar_resource_name",
    "is_schedulable_after_node_change",
    "is_schedulable_after_pod_event",
]

NAME: Final = "NodeResourcesFit"
_BASIC: Final = ("cpu", "memory", "ephemeral-storage")


def is_scalar_resource_name(name: str) -> bool:
    """``schedutil.IsScalarResourceName``: extended, hugepages, prefixed-native, attachable."""
    if name.startswith(("hugepages-", "attachable-volumes-")):
        return True
    if "/" not in name:
        return False
    if "kubernetes.io/" in name:
        return True  # prefixed native resource
    return not name.startswith("requests.")


def is_extended_resource_name(name: str) -> bool:
    """``v1helper.IsExtendedResourceName``: a domain-prefixed name outside
    ``kubernetes.io/``, not a quota's ``requests.`` name."""
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


@dataclass(frozen=True, slots=True)
class IgnoredResources:
    """``ignoredResources`` and ``ignoredResourceGroups``: extended resources Filter skips."""

    names: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.names or self.groups)

    def skips(self, name: str) -> bool:
        if not is_extended_resource_name(name):
            return False
        return name in self.names or name.split("/", 1)[0] in self.groups


_NOTHING_IGNORED: Final = IgnoredResources()


def fits_request(
    pod: Pod, node_info: NodeInfo, *, ignored: IgnoredResources = _NOTHING_IGNORED
) -> Status | None:
    """The NodeResourcesFit verdict for ``pod`` on ``node_info`` (None when it fits).

    * ``len(pods) + 1 > allocatable.pods`` gives ``Too many pods``;
    * a pod requesting nothing is only checked for its pod slot;
    * for cpu, memory, ephemeral-storage and each scalar (extended, hugepages, prefixed native)
      resource with a non-zero request: ``request > allocatable - requested`` gives
      ``Insufficient <resource>``;
    * all failures are reported; the code is Unschedulable, or UnschedulableAndUnresolvable
      when some request exceeds the node's allocatable itself, since no preemption can help.

    Unknown native resource names (no domain, not hugepages) are ignored, as ``Resource.Add``
    ignores them."""
    allocatable = node_info.allocatable
    requested = node_info.requested
    reasons: list[str] = []
    unresolvable = False
    if len(node_info.pods) + 1 > allocatable.get("pods", 0):
        reasons.append("Too many pods")
    for name, want in pod.requests.items():
        if want <= 0 or (name not in _BASIC and not is_scalar_resource_name(name)):
            continue
        if ignored and ignored.skips(name):
            continue
        have = allocatable.get(name, 0)
        if want > have - requested.get(name, 0):
            reasons.append(f"Insufficient {name}")
            if want > have:
                unresolvable = True
    if not reasons:
        return None
    # fitsRequest reports pods, cpu, memory, ephemeral-storage, then scalars.
    order = {"Too many pods": 0, "Insufficient cpu": 1, "Insufficient memory": 2}
    order["Insufficient ephemeral-storage"] = 3
    reasons.sort(key=lambda r: order.get(r, 4))
    code = Code.UnschedulableAndUnresolvable if unresolvable else Code.Unschedulable
    return Status(code, reasons)


@dataclass(frozen=True, slots=True)
class InsufficientResource:
    """``noderesources.InsufficientResource``: one resource the node lacks (cpu in millicores)."""

    resource_name: str
    reason: str
    requested: int
    used: int
    capacity: int


def insufficient_resources(pod: Pod, node_info: NodeInfo) -> list[InsufficientResource]:
    """``noderesources.Fits``: every resource the node lacks for ``pod``, in upstream's order
    (pods, cpu, memory, ephemeral-storage, then scalar resources by name) — what the kubelet's
    admission turns into ``OutOf<resource>``."""
    allocatable = node_info.allocatable
    requested = node_info.requested
    out: list[InsufficientResource] = []
    allowed = allocatable.get("pods", 0)
    if len(node_info.pods) + 1 > allowed:
        out.append(InsufficientResource("pods", "Too many pods", 1, len(node_info.pods), allowed))
    wanted = _wanted(pod)
    rank = {name: i for i, name in enumerate(_BASIC)}
    wanted.sort(key=lambda item: (rank.get(item[0], len(_BASIC)), item[0]))
    for name, want in wanted:
        have = allocatable.get(name, 0)
        used = requested.get(name, 0)
        if want > have - used:
            out.append(InsufficientResource(name, f"Insufficient {name}", want, used, have))
    return out


def _wanted(pod: Pod, ignored: IgnoredResources = _NOTHING_IGNORED) -> list[tuple[str, int]]:
    """The requests fitsRequest checks: non-zero, a resource it knows about, not ignored."""
    return [
        (name, want)
        for name, want in pod.requests.items()
        if want > 0
        and (name in _BASIC or is_scalar_resource_name(name))
        and not (ignored and ignored.skips(name))
    ]


class NodeResourcesFit(NoPreFilterExtensions):
    """The Filter half of the plugin; requests are precomputed on the ``Pod``."""

    name = NAME

    def __init__(
        self,
        *,
        ignored_resources: Sequence[str] = (),
        ignored_resource_groups: Sequence[str] = (),
    ) -> None:
        self.ignored = IgnoredResources(
            frozenset(ignored_resources), frozenset(ignored_resource_groups)
        )

    def pre_filter(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> Status | None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return fits_request(pod, node_info, ignored=self.ignored)

    def uniform_verdict(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> Status | None:
        """The verdict every node of ``snapshot`` gets (Success, or the rejection tagged with
        this plugin) when it is the same on all of them; None when it is not, or when the pod
        asks for a resource without a column (scalar resources).

        Why: a failed scheduling cycle on a big cluster (the preemption path) asks this filter
        about every node, and in Python a step per node costs milliseconds. The verdict on a
        node depends only on a few booleans — pod slot left, and per requested resource
        whether it is short and whether it exceeds the allocatable itself — so when
        ``min``/``max`` over the snapshot's ``ResourceColumns`` show that each boolean is the
        same on every node, every node gets the verdict ``fits_request`` gives on any one of
        them. It must equal ``filter`` on each node."""
        nodes = snapshot.node_info_list
        if not nodes:
            return None
        span = snapshot.resource_columns().span
        pods = span("free:pods")
        if pods is None or pods[0] < 1 <= pods[1]:
            return None  # some nodes have a pod slot left, some do not
        for name, want in _wanted(pod, self.ignored):
            free = span("free:" + name)
            if free is None:
                return None  # a scalar resource: no column
            if free[0] < want <= free[1]:
                return None  # short on some nodes only
            if free[1] < want:  # short everywhere: "more than allocatable" must agree too
                allocatable = span("allocatable:" + name)
                if allocatable is None or allocatable[0] < want <= allocatable[1]:
                    return None
        status = fits_request(pod, nodes[0], ignored=self.ignored)
        return SUCCESS if status is None else status.with_plugin(NAME)

    def filter_nodes(
        self, state: CycleState, pod: Pod, node_infos: list[NodeInfo]
    ) -> FilterBatchResult:
        ignored = self.ignored
        wanted = _wanted(pod, ignored)
        # A str key: its hash is computed once, a tuple's on every lookup.
        key = NAME + repr(wanted)
        fits = _fit_check(pod, wanted, ignored)
        # A node's verdict (True, or its tagged rejection) depends only on the node and the
        # requests in the key, so it is remembered until the node changes (NodeInfo.memo).
        passed: list[NodeInfo] = []
        rejected: list[tuple[NodeInfo, Status]] = []
        for ni in node_infos:
            verdict: Status | bool | None = ni.memo.get(key)
            if verdict is None:
                verdict = remember(ni.memo, key, True if fits(ni) else _rejection(pod, ni, ignored))
            if verdict is True:
                passed.append(ni)
            elif isinstance(verdict, Status):
                rejected.append((ni, verdict))
        return passed, rejected


def _rejection(pod: Pod, node_info: NodeInfo, ignored: IgnoredResources) -> Status:
    status = fits_request(pod, node_info, ignored=ignored)
    assert status is not None
    return status.with_plugin(NAME)


def _fit_check(
    pod: Pod, wanted: list[tuple[str, int]], ignored: IgnoredResources
) -> Callable[[NodeInfo], bool]:
    """``fits_request(pod, ni) is None``, spelled out for the common request shapes."""
    if not wanted:
        return lambda ni: len(ni.pods) < ni.allocatable.get("pods", 0)
    if len(wanted) == 1:
        ((r0, w0),) = wanted
        return lambda ni: (
            len(ni.pods) < ni.allocatable.get("pods", 0)
            and w0 <= ni.allocatable.get(r0, 0) - ni.requested.get(r0, 0)
        )
    if len(wanted) == 2:
        (r0, w0), (r1, w1) = wanted
        return lambda ni: (
            len(ni.pods) < ni.allocatable.get("pods", 0)
            and w0 <= ni.allocatable.get(r0, 0) - ni.requested.get(r0, 0)
            and w1 <= ni.allocatable.get(r1, 0) - ni.requested.get(r1, 0)
        )
    return lambda ni: fits_request(pod, ni, ignored=ignored) is None


def _counted(name: str, value: int) -> bool:
    """A request ``fits_request`` checks: non-zero, basic or scalar."""
    return value > 0 and (name in _BASIC or is_scalar_resource_name(name))


def _is_resource_scale_down(target: Pod, original: Pod, modified: Pod) -> bool:
    """``isResourceScaleDown``: a bound pod gave back some resource the target requests (an
    unbound pod frees nothing, unless it is the target itself shrinking)."""
    if not modified.node_name:
        return modified.uid == target.uid
    for name, value in target.requests.items():
        if _counted(name, value) and original.requests.get(name, 0) > modified.requests.get(
            name, 0
        ):
            return True
    return False


def is_schedulable_after_pod_event(pod: Pod, old: object, new: object) -> QueueingHint:
    """``isSchedulableAfterPodEvent``: a bound pod deleted, or scaled down in a resource the
    rejected pod requests."""
    if new is None:
        if isinstance(old, Pod) and not old.node_name:
            return QueueingHint.QueueSkip
        return QueueingHint.Queue
    if not isinstance(old, Pod) or not isinstance(new, Pod):
        return QueueingHint.Queue
    return QueueingHint.Queue if _is_resource_scale_down(pod, old, new) else QueueingHint.QueueSkip


def _requested_resources_increased(pod: Pod, original: Node, modified: Node) -> bool:
    """``haveAnyRequestedResourcesIncreased``: more pod slots, or more allocatable of a
    resource the pod requests."""
    if modified.allocatable.get("pods", 0) > original.allocatable.get("pods", 0):
        return True
    return any(
        _counted(name, value)
        and modified.allocatable.get(name, 0) > original.allocatable.get(name, 0)
        for name, value in pod.requests.items()
    )


def is_schedulable_after_node_change(pod: Pod, old: object, new: object) -> QueueingHint:
    """``isSchedulableAfterNodeChange``: the pod fits the node's allocatable (on an empty node)
    and the node is new or grew in something the pod requests."""
    if not isinstance(new, Node):
        return QueueingHint.Queue
    if fits_request(pod, NodeInfo(new)) is not None:
        return QueueingHint.QueueSkip
    if not isinstance(old, Node) or _requested_resources_increased(pod, old, new):
        return QueueingHint.Queue
    return QueueingHint.QueueSkip
