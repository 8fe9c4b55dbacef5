"""What several plugins share (kube's ``pkg/scheduler/framework/plugins/helper``): the Skip
status, ``DefaultNormalizeScore``, ``TolerationsTolerateTaint``, PreFilterExtensions for
stateless plugins, and the per-node memo and batch helpers the plugins' speed rests on."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import Any, Final, Protocol, TypeVar

from kube.objects import Pod, Taint, Toleration
from scheduler.framework import Code, CycleState, FilterBatchResult, Status
from scheduler.snapshot import NodeInfo

__all__ = [
    "MEMO_LIMIT",
    "SKIP",
    "NoPreFilterExtensions",
    "default_normalize_score",
    "distinct_objects",
    "remember",
    "split_by_filter",
    "tolerations_tolerate_taint",
]

SKIP: Final = Status(Code.Skip)

MEMO_LIMIT: Final = 32
"""Entries one ``NodeInfo.memo`` may hold before it is emptied (many pod shapes)."""


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


def default_normalize_score(max_priority: int, reverse: bool, scores: list[int]) -> None:
    """``helper.DefaultNormalizeScore``: scale to the largest score, optionally reversed."""
    max_count = max(scores, default=0)
    if max_count <= 0:
        if reverse:
            scores[:] = [max_priority] * len(scores)
        return
    if reverse:
        scores[:] = [max_priority - max_priority * s // max_count for s in scores]
    else:
        scores[:] = [max_priority * s // max_count for s in scores]


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


def distinct_objects(items: Sequence[T]) -> dict[int, T]:
    """The distinct objects of ``items`` by identity, first seen first (batch answers repeat a
    few shared objects)."""
    # One object per id, so the later pairs of a repeated object change nothing and each key
    # keeps the place of its first pair: the whole walk runs in C.
    return dict(zip(map(id, items), items, strict=True))


def remember(memo: dict[Hashable, Any], key: Hashable, value: T) -> T:
    """Store ``value`` in a ``NodeInfo.memo`` and return it (bounded by ``MEMO_LIMIT``).

    A result that depends only on the node and a few numbers of the pod (its "shape") may be
    kept in ``NodeInfo.memo`` under ``(plugin name, shape)``: the memo is emptied whenever the
    node changes, and between two decisions only the node the last pod went to changes.
    """
    if len(memo) >= MEMO_LIMIT:
        memo.clear()
    memo[key] = value
    return value
