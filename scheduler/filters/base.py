"""What the filter plugins share: the optional batch extension and small helpers.

kube-scheduler calls ``Filter`` once per node, in parallel goroutines. Python pays a function
call and several attribute reads per plugin per node, which dominates a 5000-node cluster, so a
plugin may also offer ``filter_nodes``: the same verdicts for a whole list of nodes at once,
usually a list comprehension that lets the nodes with nothing to check through without a call.
``filter_nodes`` must agree with ``filter`` node by node (the tests check this with random
clusters); the scheduler uses it whenever a node has no nominated pods to account for.

A result that depends only on the node and a few numbers of the pod (its "shape") may be kept
in ``NodeInfo.memo`` under ``(plugin name, shape)``: the memo is emptied whenever the node
changes, and between two decisions only the node the last pod went to changes.

A plugin may also narrow the nodes to evaluate after PreFilter (``PreFilterResult``, only
NodeAffinity does in the default profile) with ``pre_filter_result``.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any, Final, Protocol, TypeVar, runtime_checkable

from kube.objects import Pod, Taint, Toleration
from scheduler.framework import Code, CycleState, Status
from scheduler.snapshot import NodeInfo

__all__ = [
    "MEMO_LIMIT",
    "SKIP",
    "BatchFilterPlugin",
    "FilterBatchResult",
    "NoPreFilterExtensions",
    "PreFilterResultPlugin",
    "remember",
    "split_by_filter",
    "tolerations_tolerate_taint",
]

SKIP: Final = Status(Code.Skip)

MEMO_LIMIT: Final = 32
"""Entries one ``NodeInfo.memo`` may hold before it is emptied (many pod shapes)."""

FilterBatchResult = tuple[list[NodeInfo], list[tuple[NodeInfo, Status]]]
"""The nodes that passed (in input order) and the rejected nodes with their status."""


@runtime_checkable
class BatchFilterPlugin(Protocol):
    """A filter plugin that can judge many nodes in one call."""

    name: str

    def filter_nodes(
        self, state: CycleState, pod: Pod, node_infos: list[NodeInfo]
    ) -> FilterBatchResult: ...


@runtime_checkable
class PreFilterResultPlugin(Protocol):
    """A plugin whose PreFilter may restrict the nodes to evaluate (``PreFilterResult``)."""

    name: str

    def pre_filter_result(self, state: CycleState) -> frozenset[str] | None:
        """The node names to evaluate, or None for all nodes."""
        ...


class NoPreFilterExtensions:
    """For plugins whose PreFilter state does not depend on the node's pods."""

    __slots__ = ()

    def add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_add: Pod, node_info: NodeInfo
    ) -> Status | None:
        return None

    def remove_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: Pod, node_info: NodeInfo
    ) -> Status | None:
        return None


def split_by_filter(
    plugin_filter: _Filter, state: CycleState, pod: Pod, node_infos: Iterable[NodeInfo]
) -> FilterBatchResult:
    """``filter`` applied node by node, in the batch shape."""
    passed: list[NodeInfo] = []
    rejected: list[tuple[NodeInfo, Status]] = []
    for ni in node_infos:
        status = plugin_filter(state, pod, ni)
        if status is None or status.code is Code.Success:
            passed.append(ni)
        else:
            rejected.append((ni, status))
    return passed, rejected


class _Filter(Protocol):
    def __call__(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None: ...


def tolerations_tolerate_taint(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    """``TolerationsTolerateTaint``."""
    return any(t.tolerates(taint) for t in tolerations)


T = TypeVar("T")


def remember(memo: dict[Hashable, Any], key: Hashable, value: T) -> T:
    """Store ``value`` in a ``NodeInfo.memo`` and return it (bounded by ``MEMO_LIMIT``)."""
    if len(memo) >= MEMO_LIMIT:
        memo.clear()
    memo[key] = value
    return value
